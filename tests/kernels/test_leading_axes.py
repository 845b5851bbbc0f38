"""The one leading-axes rule of ``panm_jax.kernels`` (its docstring), for every kernel family.

``init_state(..., batch_shape)`` puts the batch in front of every field, and a
``step`` on a ``[2, 3]`` batch equals the steps of its six examples one by one
(states and reads, with a mask that pads some examples), for the NTM, DNC,
Stack, Queue, DeQue, Stack-RNN, SRNN and Tape-RNN. The per-example steps are the
kernels' one-example calls; the batched call must not mix examples up (the
controls differ per example, so a swapped or broadcast axis fails).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from panm_jax.errors import UserError
from panm_jax.kernels import deque, dnc, ntm, queue, srnn, stack, stack_rnn, tape_rnn

LEAD = (2, 3)

# name -> (init_state(batch_shape), interface size, controls_from_interface(raw))
KERNELS = {
    "ntm": (
        lambda b: ntm.init_state(5, 4, 2, 1, batch_shape=b),
        ntm.interface_size(4, 2, 1),
        lambda raw: ntm.controls_from_interface(raw, 4, 2, 1),
        ntm.step,
    ),
    "dnc": (
        lambda b: dnc.init_state(5, 4, 2, 2, batch_shape=b),
        dnc.interface_size(4, 2, 2),
        lambda raw: dnc.controls_from_interface(raw, 4, 2, 2),
        dnc.step,
    ),
    "stack": (lambda b: stack.init_state(4, 3, batch_shape=b), stack.interface_size(3), None, stack.step),
    "queue": (lambda b: queue.init_state(4, 3, batch_shape=b), queue.interface_size(3), None, queue.step),
    "deque": (lambda b: deque.init_state(4, 3, batch_shape=b), deque.interface_size(3), None, deque.step),
    "stack_rnn": (
        lambda b: stack_rnn.init_state(4, 3, batch_shape=b),
        stack_rnn.interface_size(3),
        None,
        stack_rnn.step,
    ),
    "srnn": (lambda b: srnn.init_state(4, 3, batch_shape=b), srnn.interface_size(3), None, srnn.step),
    "tape_rnn": (
        lambda b: tape_rnn.init_state(5, 3, jump_length=2, batch_shape=b),
        tape_rnn.interface_size(3),
        None,
        tape_rnn.step,
    ),
}
MODULES = {"stack": stack, "queue": queue, "deque": deque, "stack_rnn": stack_rnn, "srnn": srnn, "tape_rnn": tape_rnn}


def _controls(name, raw):
    activate = KERNELS[name][2]
    return activate(raw) if activate is not None else MODULES[name].controls_from_interface(raw, 3)


def _example(tree, index):
    return jax.tree.map(lambda x: x[index], tree)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_init_state_puts_the_batch_in_front_of_every_field(name):
    init = KERNELS[name][0]
    one, batched = init(()), init(LEAD)
    for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(batched), strict=True):
        assert b.shape == (*LEAD, *a.shape) and b.dtype == a.dtype
        np.testing.assert_array_equal(np.asarray(b), np.broadcast_to(np.asarray(a), b.shape))


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_a_step_on_a_batch_equals_the_steps_of_its_examples(name):
    init, size, _, step = KERNELS[name]
    step = jax.jit(step)  # eager steps of six examples would take seconds; the rule holds under jit too
    rng = np.random.default_rng(7)
    raws = jnp.asarray(rng.normal(size=(2, *LEAD, size)) * 2.0, jnp.float32)
    masks = [None, jnp.asarray([[1, 0, 1], [0, 1, 1]], bool)]  # the second step pads two examples

    state = init(LEAD)
    singles = [init(()) for _ in range(6)]
    for raw, mask in zip(raws, masks, strict=True):
        controls = _controls(name, raw)
        state, read = step(state, controls, mask)
        for k, index in enumerate(np.ndindex(*LEAD)):
            one_mask = None if mask is None else mask[index]
            singles[k], one_read = step(singles[k], _example(controls, index), one_mask)
            for got, want in zip(jax.tree.leaves((state, read)), jax.tree.leaves((singles[k], one_read)), strict=True):
                np.testing.assert_allclose(np.asarray(got[index]), np.asarray(want), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_controls_without_the_state_leading_axes_are_named(name):
    init, size, _, step = KERNELS[name]
    controls = _controls(name, jnp.zeros((3, 2, size)))  # [3, 2] against a [2, 3] state
    with pytest.raises(ValueError, match=r"controls\.\S+: expected .*got"):
        step(init(LEAD), controls)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_batch_shape_must_be_a_tuple_of_sizes(name):
    init = KERNELS[name][0]
    for bad in (3, (2, -1), (2.5,)):
        with pytest.raises(UserError, match="batch_shape: expected"):
            init(bad)


@pytest.mark.parametrize("name", ["dnc", "ntm", "srnn", "stack_rnn", "tape_rnn"])
def test_a_batched_step_is_the_program_of_vmap(name):
    # These kernels map their one-example step over the leading axes at trace time: a call on a
    # batch must trace to exactly the program of the caller's own jax.vmap (no cost for the rule).
    init, size, _, step = KERNELS[name]
    state, controls = init((4,)), _controls(name, jnp.zeros((4, size)))
    assert str(jax.make_jaxpr(step)(state, controls)) == str(jax.make_jaxpr(jax.vmap(step))(state, controls))


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_a_mask_other_than_0_or_1_is_refused_by_name(name):
    init, size, _, step = KERNELS[name]
    raw = jnp.asarray(np.random.default_rng(3).normal(size=(size,)), jnp.float32)
    state, controls = init(()), _controls(name, raw)
    for good in (True, 0, 1, 1.0, jnp.asarray(0.0, jnp.bfloat16)):
        step(state, controls, jnp.asarray(good))
    bad = {
        "complex": (jnp.asarray(1 + 0j), r"mask: expected a bool, integer or real floating array, got dtype complex"),
        "nan": (
            jnp.asarray(np.nan, jnp.float32),
            r"mask: expected 0 \(a padding step\) or 1 \(a real step\), got .*nan",
        ),
        "two": (jnp.asarray(2), r"mask: expected 0 \(a padding step\) or 1 \(a real step\), got .*2"),
        "half": (jnp.asarray(0.5), r"mask: expected 0 \(a padding step\) or 1 \(a real step\), got .*0\.5"),
    }
    for mask, message in bad.values():
        with pytest.raises(UserError, match=message):
            step(state, controls, mask)
    batched = init(LEAD)
    controls = _controls(name, jnp.broadcast_to(raw, (*LEAD, size)))
    with pytest.raises(UserError, match=r"mask: expected 0 \(a padding step\) or 1"):
        step(batched, controls, jnp.ones(LEAD).at[1, 2].set(-1.0))
