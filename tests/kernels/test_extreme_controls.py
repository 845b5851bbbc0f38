"""Value and gradient finite at extreme raw controls, for every kernel, in float32, bfloat16 and float16.

Every ``controls_from_interface`` bounds raw values to ``+-validation.raw_limit``
(``1e4``; ``128`` in float16) before its activations (``validation.bound_raw``). Each kernel runs a short
rollout from raw interfaces of random signs at the bound and far beyond it
(``1e30``; float16's largest finite value, ``65504``, in float16), one magnitude
per example of a batch, and the rollout's value and its gradients with respect to
the raw interfaces and to the initial state must be finite (a 16-bit NTM state's gradient saturates at
float16's largest value: ``addressing.widen``). Before the bound, NTM gradients overflowed in
float32 from ``|raw| ~ 1e18`` and DNC gradients from ``1e30``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from panm_jax.kernels import deque, dnc, ntm, queue, stack, stack_rnn, tape_rnn
from panm_jax.kernels.validation import RAW_LIMIT, bound_raw, raw_limit

STEPS = 4

# name -> (init_state(batch_shape, dtype), interface size, controls_from_interface(raw), step)
KERNELS = {
    "ntm": (
        lambda b, dt: ntm.init_state(8, 6, 1, 1, dtype=dt, batch_shape=b),
        ntm.interface_size(6, 1, 1),
        lambda raw: ntm.controls_from_interface(raw, 6, 1, 1),
        ntm.step,
    ),
    "dnc": (
        lambda b, dt: dnc.init_state(8, 6, 2, 1, dtype=dt, batch_shape=b),
        dnc.interface_size(6, 2, 1),
        lambda raw: dnc.controls_from_interface(raw, 6, 2, 1),
        dnc.step,
    ),
    **{
        name: (
            lambda b, dt, module=module: module.init_state(STEPS, 3, dt, batch_shape=b),
            module.interface_size(3),
            lambda raw, module=module: module.controls_from_interface(raw, 3),
            module.step,
        )
        for name, module in (("stack", stack), ("queue", queue), ("deque", deque))
    },
    "stack_rnn": (
        lambda b, dt: stack_rnn.init_state(4, 3, dt, batch_shape=b),
        stack_rnn.interface_size(3),
        lambda raw: stack_rnn.controls_from_interface(raw, 3),
        stack_rnn.step,
    ),
    "tape_rnn": (
        lambda b, dt: tape_rnn.init_state(5, 3, dt, jump_length=2, batch_shape=b),
        tape_rnn.interface_size(3),
        lambda raw: tape_rnn.controls_from_interface(raw, 3),
        tape_rnn.step,
    ),
}


def _magnitudes(dtype) -> list[float]:
    beyond = 1e30 if dtype != jnp.float16 else float(jnp.finfo(jnp.float16).max)
    return [raw_limit(dtype), beyond]


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16, jnp.float16], ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_value_and_gradient_are_finite_at_the_bound_and_beyond(name, dtype):
    init, size, activate, step = KERNELS[name]
    magnitudes = _magnitudes(dtype)
    signs = np.random.default_rng(5).choice([-1.0, 1.0], size=(STEPS, len(magnitudes), size))
    raw = jnp.asarray(signs * np.asarray(magnitudes)[None, :, None], dtype)  # [T, M, P]: example m at magnitude m
    assert np.all(np.isfinite(np.asarray(raw, np.float32)))

    def loss(start, raw):
        def body(state, x):
            return step(state, activate(x))

        final, reads = jax.lax.scan(body, start, raw)
        leaves = [x for x in jax.tree.leaves((final, reads)) if jnp.issubdtype(x.dtype, jnp.floating)]
        return sum(jnp.sum(jnp.sin(x.astype(jnp.float32))) for x in leaves)

    start = init((len(magnitudes),), dtype)
    value, (d_start, d_raw) = jax.jit(jax.value_and_grad(loss, argnums=(0, 1), allow_int=True))(start, raw)
    assert np.isfinite(float(value))
    assert np.all(np.isfinite(np.asarray(d_raw, np.float32))), name
    for path, leaf in jax.tree_util.tree_leaves_with_path(d_start):  # the initial state's gradient too
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            assert np.all(np.isfinite(np.asarray(leaf, np.float32))), f"{name}: d state{jax.tree_util.keystr(path)}"


def test_the_bound_is_1e4_and_128_in_float16():
    assert RAW_LIMIT == 1e4
    assert [raw_limit(d) for d in (jnp.float32, jnp.bfloat16, jnp.float16)] == [1e4, 1e4, 128.0]


def test_bound_raw_saturates_value_and_gradient():
    x = jnp.asarray([-1e30, -RAW_LIMIT, -3.0, 0.0, 5.0, RAW_LIMIT, 2e4, jnp.nan], jnp.float32)
    got = np.asarray(bound_raw(x))
    np.testing.assert_array_equal(got[:7], [-RAW_LIMIT, -RAW_LIMIT, -3.0, 0.0, 5.0, RAW_LIMIT, RAW_LIMIT])
    assert np.isnan(got[7])
    grad = np.asarray(jax.grad(lambda v: jnp.sum(bound_raw(v)[:7]))(x))
    np.testing.assert_array_equal(grad[:7], [0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0])
