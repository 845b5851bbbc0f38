"""Tests of panm_jax/kernels/srnn.py: the stack of the SRNN of Suzgun et al. 2019 (soft push / pop)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from panm_jax.kernels import srnn as K
from panm_jax.kernels.scan import scan
from tests.conftest import x64

S, W = 5, 3


# ---- a float64 NumPy transcription of Suzgun et al. 2019 (Stack-RNN, softmax gate) --------------


def ref_step(stack, a_push, a_pop, element):
    """s_t[0] = a_push n_t + a_pop s_{t-1}[1];  s_t[i] = a_push s_{t-1}[i-1] + a_pop s_{t-1}[i+1]."""
    new = np.zeros_like(stack)
    for i in range(len(stack)):
        above = element if i == 0 else stack[i - 1]
        below = stack[i + 1] if i + 1 < len(stack) else np.zeros(stack.shape[1])  # below the bottom: zero
        new[i] = a_push * above + a_pop * below
    return new


def _rollout_inputs(seed, steps=8):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(steps, 2))
    actions = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    values = 1 / (1 + np.exp(-rng.normal(size=(steps, W))))
    return actions, values


def test_a_rollout_matches_the_float64_transcription():
    actions, values = _rollout_inputs(0)
    with x64():
        state = K.init_state(S, W, jnp.float64)

        def body(state, x):
            state, read = K.step(state, K.Controls(*x))
            return state, (state.stack, read)

        _, (stacks, reads) = jax.jit(lambda s, a, v: scan(body, s, (a, v)))(state, actions, values)
    want = np.zeros((S, W))
    for t in range(len(actions)):
        want = ref_step(want, actions[t, 0], actions[t, 1], values[t])
        np.testing.assert_allclose(np.asarray(stacks[t]), want, rtol=1e-14, atol=1e-15)
        np.testing.assert_array_equal(np.asarray(reads[t]), np.asarray(stacks[t][0]))


def test_hard_actions_push_and_pop_exactly():
    state = K.init_state(3, 1)
    push, pop = jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0])
    for v in (0.25, 0.5, 0.75, 1.0):  # the fourth push drops the bottom cell (0.25) off the stack
        state, read = K.step(state, K.Controls(push, jnp.array([v])))
        assert float(read[0]) == v
    np.testing.assert_array_equal(state.stack[:, 0], [1.0, 0.75, 0.5])
    state, read = K.step(state, K.Controls(pop, jnp.array([0.9])))
    np.testing.assert_array_equal(state.stack[:, 0], [0.75, 0.5, 0.0])
    assert float(read[0]) == 0.75


def test_a_masked_step_keeps_the_state_and_reads_zeros():
    state = K.State(jnp.arange(S * W, dtype=jnp.float32).reshape(S, W))
    new, read = K.step(state, K.Controls(jnp.array([0.3, 0.7]), jnp.full((W,), 0.5)), jnp.array(0))
    np.testing.assert_array_equal(new.stack, state.stack)
    np.testing.assert_array_equal(read, np.zeros(W))


def test_init_state_takes_leading_axes():
    # A step on leading axes equals the steps of its examples: tests/kernels/test_leading_axes.py.
    assert K.init_state(S, W, batch_shape=(2, 3)).stack.shape == (2, 3, S, W)


def test_controls_from_interface_softmax_and_sigmoid():
    raw = jnp.array([0.3, -1.2, 0.0, 2.0, -2.0])
    controls = K.controls_from_interface(raw, W)
    np.testing.assert_allclose(controls.actions, jax.nn.softmax(raw[:2]), rtol=1e-6)
    np.testing.assert_allclose(controls.value, jax.nn.sigmoid(raw[2:]), rtol=1e-6)


def test_gradients_match_finite_differences():
    actions, values = _rollout_inputs(2, steps=3)
    with x64():

        def f(stack, actions, values):
            state = K.State(stack)
            for t in range(len(actions)):
                state, _ = K.step(state, K.Controls(actions[t], values[t]))
            return jnp.sum(jnp.sin(state.stack))

        stack0 = jnp.asarray(np.random.default_rng(3).normal(size=(S, W)))
        check_grads(jax.jit(f), (stack0, jnp.asarray(actions), jnp.asarray(values)), order=1, modes=("fwd", "rev"))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: K.init_state(0, W), "depth"),
        (lambda: K.init_state(S, 0), "width"),
        (lambda: K.step(K.init_state(S, W), K.Controls(jnp.ones(3) / 3, jnp.ones(W))), "controls.actions"),
        (lambda: K.step(K.init_state(S, W), K.Controls(jnp.array([0.2, 0.2]), jnp.ones(W))), "summing to 1"),
        (lambda: K.controls_from_interface(jnp.ones(4), W), "raw"),
    ],
)
def test_bad_arguments_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()
