"""The kernels' entry checks: dtypes everywhere, value ranges in eager calls.

A dtype that is not real floating (int32, complex64, bool) is named at trace
time, with or without ``jit``: it would otherwise fail deep inside a step
("logistic does not accept dtype int32") or round every weighting to 0 or 1. A
value outside its range (a usage of 2, a push strength of 5, a negative key
strength) is named in an eager call, where it is concrete; under ``jit`` the
same call traces without any check of values and runs (nothing is synced to the
host inside a compiled step).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from panm_jax.kernels import deque, dnc, ntm, pointer, queue, stack
from panm_jax.kernels.validation import RANGE_SLACK, check_in_range

N, W, R, H = 5, 3, 2, 1


def _ntm():
    state = ntm.init_state(N, W, R, H)
    raw = jnp.zeros(ntm.interface_size(W, R, H), jnp.float32)
    return state, ntm.controls_from_interface(raw, W, R, H)


def _dnc():
    state = dnc.init_state(N, W, R, H)
    raw = jnp.zeros(dnc.interface_size(W, R, H), jnp.float32)
    return state, dnc.controls_from_interface(raw, W, R, H)


def _stack(kind: str):
    kernel = {"stack": stack, "queue": queue, "deque": deque}[kind]
    state = kernel.init_state(4, W)
    controls = kernel.controls_from_interface(jnp.zeros(kernel.interface_size(W)), W)
    return state, controls, kernel.step


# ---- dtypes ---------------------------------------------------------------------------------------

INIT_STATES = {
    "ntm": lambda dtype: ntm.init_state(N, W, R, H, dtype=dtype),
    "dnc": lambda dtype: dnc.init_state(N, W, R, H, dtype=dtype),
    "stack": lambda dtype: stack.init_state(4, W, dtype),
    "queue": lambda dtype: queue.init_state(4, W, dtype),
    "deque": lambda dtype: deque.init_state(4, W, dtype),
    "pointer": lambda dtype: pointer.binary_addresses(jnp.int32(0), 4, 3, dtype=dtype),
}


@pytest.mark.parametrize("kernel", sorted(INIT_STATES))
@pytest.mark.parametrize("dtype", [jnp.int32, jnp.complex64, jnp.bool_, "not-a-dtype"])
def test_init_names_a_dtype_that_is_not_real_floating(kernel, dtype):
    with pytest.raises(ValueError, match=r"^dtype: expected a real floating dtype \(float32, bfloat16, \.\.\.\), got "):
        INIT_STATES[kernel](dtype)


@pytest.mark.parametrize("kernel", sorted(INIT_STATES))
@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16, jnp.float32])
def test_init_accepts_every_real_floating_dtype(kernel, dtype):
    leaves = jax.tree_util.tree_leaves(INIT_STATES[kernel](dtype))
    assert jnp.dtype(dtype) in {x.dtype for x in leaves}


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, "0.1", None])
def test_ntm_memory_init_must_be_a_finite_number(value):
    with pytest.raises(ValueError, match=r"^memory_init: expected a finite number, got "):
        ntm.init_state(N, W, R, H, memory_init=value)


@pytest.mark.parametrize("name", ["ntm", "dnc", "stack", "deque"])
@pytest.mark.parametrize("dtype", [jnp.int32, jnp.complex64])
def test_controls_from_interface_names_a_raw_vector_that_is_not_real_floating(name, dtype):
    calls = {
        "ntm": (ntm.interface_size(W, R, H), lambda raw: ntm.controls_from_interface(raw, W, R, H)),
        "dnc": (dnc.interface_size(W, R, H), lambda raw: dnc.controls_from_interface(raw, W, R, H)),
        "stack": (stack.interface_size(W), lambda raw: stack.controls_from_interface(raw, W)),
        "deque": (deque.interface_size(W), lambda raw: deque.controls_from_interface(raw, W)),
    }
    size, call = calls[name]
    raw = jnp.zeros(size, dtype)
    match = rf"^raw: expected a real floating array \(float32, bfloat16, \.\.\.\), got dtype {jnp.dtype(dtype)}"
    with pytest.raises(ValueError, match=match):
        call(raw)
    with pytest.raises(ValueError, match=match):  # the same under jit: dtypes are static
        jax.jit(call)(raw)


def test_step_names_an_integer_state_field_under_jit_too():
    state, controls = _ntm()
    bad = state._replace(read_weights=state.read_weights.astype(jnp.int32))
    for call in (ntm.step, jax.jit(ntm.step)):
        with pytest.raises(ValueError, match=r"^state\.read_weights: expected a real floating array .*int32"):
            call(bad, controls)
    state, controls = _dnc()
    bad = controls._replace(write_gate=jnp.asarray(controls.write_gate, jnp.int32))
    with pytest.raises(ValueError, match=r"^controls\.write_gate: expected a real floating array .*int32"):
        jax.jit(dnc.step)(state, bad)
    state, controls, step = _stack("stack")
    bad = controls._replace(value=controls.value.astype(jnp.complex64))
    with pytest.raises(ValueError, match=r"^controls\.value: expected a real floating array .*complex64"):
        jax.jit(step)(state, bad)


def test_pointer_memory_must_be_real_floating():
    queries, keys = jnp.ones((2, 3)), jnp.ones((4, 3), jnp.int32)
    with pytest.raises(ValueError, match=r"expected a real floating array .*int32"):
        pointer.attention_scores(queries, keys)


# ---- value ranges: named in eager calls, not checked (and free) under jit ------------------------


def _eager_and_jit(step, state, controls, match):
    with pytest.raises(ValueError, match=match):
        step(state, controls)
    new_state, _ = jax.jit(step)(state, controls)  # traced: no value check, no host sync
    jax.block_until_ready(new_state)


def test_dnc_state_out_of_range_is_named_eagerly():
    state, controls = _dnc()
    _eager_and_jit(
        dnc.step,
        state._replace(usage=state.usage.at[1].set(2.0)),
        controls,
        r"^state\.usage: expected values in \[0, 1\], got 2$",
    )
    _eager_and_jit(
        dnc.step,
        state,
        controls._replace(read_strengths=-controls.read_strengths - 1.0),
        r"^controls\.read_strengths: expected values in \[0, inf\], got -",
    )
    _eager_and_jit(
        dnc.step,
        state,
        controls._replace(write_gate=jnp.full_like(controls.write_gate, np.nan)),
        r"^controls\.write_gate: expected values in \[0, 1\], got nan$",
    )


def test_ntm_controls_out_of_range_are_named_eagerly():
    state, controls = _ntm()
    write = controls.write._replace(sharpen=jnp.full_like(controls.write.sharpen, 0.5))
    _eager_and_jit(
        ntm.step,
        state,
        controls._replace(write=write),
        r"^controls\.write\.sharpen: expected values in \[1, inf\], got 0\.5$",
    )
    read = controls.read._replace(gate=jnp.full_like(controls.read.gate, -0.5))
    _eager_and_jit(
        ntm.step, state, controls._replace(read=read), r"^controls\.read\.gate: expected values in \[0, 1\], got -0\.5$"
    )
    _eager_and_jit(
        ntm.step,
        state,
        controls._replace(erase=controls.erase + 3.0),
        r"^controls\.erase: expected values in \[0, 1\], got 3\.5$",
    )


@pytest.mark.parametrize("kind", ["stack", "queue", "deque"])
def test_stack_push_and_pop_out_of_range_are_named_eagerly(kind):
    state, controls, step = _stack(kind)
    field = "push_top" if kind == "deque" else "push"
    _eager_and_jit(
        step,
        state,
        controls._replace(**{field: jnp.float32(5.0)}),
        rf"^controls\.{field}: expected values in \[0, 1\], got 5$",
    )
    field = "pop_bottom" if kind == "deque" else "pop"
    _eager_and_jit(
        step,
        state,
        controls._replace(**{field: jnp.float32(-1.0)}),
        rf"^controls\.{field}: expected values in \[0, 1\], got -1$",
    )
    _eager_and_jit(
        step,
        state._replace(strengths=state.strengths.at[0].set(1.5)),
        controls,
        r"^state\.strengths: expected values in \[0, 1\], got 1\.5$",
    )


def test_a_rounding_outside_the_range_passes():
    check_in_range("x", np.array([-RANGE_SLACK / 2, 1 + RANGE_SLACK / 2]), 0.0, 1.0)
    with pytest.raises(ValueError, match=r"^x: expected values in \[0, 1\], got 1\.01$"):
        check_in_range("x", np.array([0.5, 1.01]), 0.0, 1.0)


def test_eager_steps_of_valid_inputs_run_as_before():
    # The checks reject nothing that the kernels produce: 20 eager steps from random interfaces.
    key = jax.random.key(0)
    state, _ = _dnc()
    ntm_state, _ = _ntm()
    s_state, _, s_step = _stack("deque")
    for _ in range(20):
        key, k1, k2, k3 = jax.random.split(key, 4)
        raw = 3.0 * jax.random.normal(k1, (dnc.interface_size(W, R, H),))
        state, _ = dnc.step(state, dnc.controls_from_interface(raw, W, R, H))
        raw = 3.0 * jax.random.normal(k2, (ntm.interface_size(W, R, H),))
        ntm_state, _ = ntm.step(ntm_state, ntm.controls_from_interface(raw, W, R, H))
        raw = 3.0 * jax.random.normal(k3, (deque.interface_size(W),))
        s_state, _ = s_step(s_state, deque.controls_from_interface(raw, W))
    assert all(
        bool(jnp.all(jnp.isfinite(x)))
        for x in jax.tree_util.tree_leaves((state, ntm_state, s_state))
        if jnp.issubdtype(x.dtype, jnp.floating)
    )
