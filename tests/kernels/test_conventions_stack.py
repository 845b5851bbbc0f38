"""The Stack/Queue/DeQue conventions of docs/conventions.md."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from panm_jax.kernels import deque, stack

W = 3


def test_controls_follow_the_interface_layout_and_the_step_pops_before_it_pushes():
    # StackControls is (push d, pop u, value v): the order of the raw interface [d, u, v].
    raw = jnp.asarray([2.0, -1.0, 0.5, -0.5, 0.25])
    c = stack.controls_from_interface(raw, W)
    assert stack.StackControls._fields == ("push", "pop", "value")
    np.testing.assert_allclose(np.asarray(c.push), 1 / (1 + np.exp(-2.0)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(c.pop), 1 / (1 + np.exp(1.0)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(c.value), np.tanh([0.5, -0.5, 0.25]), rtol=1e-6)
    # The step applies the pop first (Grefenstette et al. 2015, Eq. 2): a full pop and a full
    # push in one step remove the old top and leave the new value on the stack.
    state = stack.init_state(4, W)
    old, new = np.eye(W)[0], np.eye(W)[1]
    state, _ = stack.step(state, stack.StackControls(push=jnp.float32(1), pop=jnp.float32(0), value=jnp.asarray(old)))
    state, read = stack.step(
        state, stack.StackControls(push=jnp.float32(1), pop=jnp.float32(1), value=jnp.asarray(new))
    )
    np.testing.assert_allclose(np.asarray(read), new, atol=1e-7)
    np.testing.assert_allclose(np.asarray(state.strengths)[:2], [0.0, 1.0], atol=1e-7)


def test_deque_controls_follow_the_interface_layout():
    # DequeControls is (push, pop, value) of the top, then of the bottom: the raw layout's two blocks.
    assert deque.DequeControls._fields == (
        "push_top",
        "pop_top",
        "value_top",
        "push_bottom",
        "pop_bottom",
        "value_bottom",
    )
    raw = jnp.arange(2 * (2 + W), dtype=jnp.float32) / 10
    c = deque.controls_from_interface(raw, W)
    top = stack.controls_from_interface(raw[: 2 + W], W)
    bottom = stack.controls_from_interface(raw[2 + W :], W)
    for got, want in zip(c, (*top, *bottom)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
