"""Tests of panm_jax/kernels/stack.py, queue.py and deque.py: the neural Stack, Queue and DeQue (Grefenstette et
al. 2015, Learning to Transduce with Unbounded Memory, §3.1-3.3)."""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from panm_jax.kernels import deque, queue, stack
from panm_jax.kernels.scan import scan
from tests.conftest import x64
from tests.reference import stack_ref as ref

C, W = 40, 5  # reference rollouts: T = C = 40 steps, word size 5
TOL = 1e-6
KERNELS = {"stack": stack, "queue": queue, "deque": deque}


# ---- shared jitted helpers -----------------------------------------------------


def _rollout(step, init, controls):
    """Scan ``step`` over ``controls`` ([T, ...] leaves); every state and read per step."""
    return scan(step, init, controls, trace_fn=lambda state: state)


@functools.partial(jax.jit, static_argnames=("kind", "capacity"))
def rollout(kind: str, capacity: int, controls):
    """``kind`` in {stack, queue, deque}; returns (final, (reads [T, ...], states [T, ...]))."""
    dtype = jax.tree_util.tree_leaves(controls)[0].dtype
    kernel = KERNELS[kind]
    width = controls[2].shape[-1]
    return _rollout(kernel.step, kernel.init_state(capacity, width, dtype), controls)


jit_stack_step = jax.jit(stack.step)
jit_queue_step = jax.jit(queue.step)
jit_deque_step = jax.jit(deque.step)


def random_controls(rng, steps, width, dtype=np.float64):
    """Stack/Queue controls as in training: d, u in (0, 1), v in (-1, 1)."""
    return stack.StackControls(
        push=jnp.asarray(rng.uniform(0.0, 1.0, steps), dtype),
        pop=jnp.asarray(rng.uniform(0.0, 1.0, steps), dtype),
        value=jnp.asarray(np.tanh(rng.normal(size=(steps, width))), dtype),
    )


def random_deque_controls(rng, steps, width, dtype=np.float64):
    top = random_controls(rng, steps, width, dtype)
    bottom = random_controls(rng, steps, width, dtype)
    return deque.DequeControls(top.push, top.pop, top.value, bottom.push, bottom.pop, bottom.value)


def ctl(d, u, v):
    return stack.StackControls(jnp.float32(d), jnp.float32(u), jnp.asarray(v, jnp.float32))


def dctl(d_top, u_top, v_top, d_bot, u_bot, v_bot):
    return deque.DequeControls(
        jnp.float32(d_top),
        jnp.float32(u_top),
        jnp.asarray(v_top, jnp.float32),
        jnp.float32(d_bot),
        jnp.float32(u_bot),
        jnp.asarray(v_bot, jnp.float32),
    )


E = np.eye(W, dtype=np.float32)  # one-hot rows: the read says which rows it mixes


# ---- 1. equals the float64 reference ------------------------------------------


def linear_errors(kind: str, seed: int, dtype) -> dict[str, float]:
    """Max abs error of a C-step Stack/Queue rollout against the reference."""
    rng = np.random.default_rng(seed)
    controls = random_controls(rng, C, W, dtype)
    _, (reads, states) = rollout(kind, C, controls)
    want = ref.rollout(
        ref.stack_step if kind == "stack" else ref.queue_step,
        np.asarray(controls.push, np.float64),
        np.asarray(controls.pop, np.float64),
        np.asarray(controls.value, np.float64),
    )
    err = {"values": 0.0, "strengths": 0.0, "reads": 0.0}
    for t, (V, s, r) in enumerate(want, start=1):
        values = np.asarray(states.values[t - 1], np.float64)
        strengths = np.asarray(states.strengths[t - 1], np.float64)
        assert int(states.size[t - 1]) == t
        assert np.all(values[t:] == 0) and np.all(strengths[t:] == 0)  # unwritten slots stay empty
        err["values"] = max(err["values"], np.abs(values[:t] - V).max())
        err["strengths"] = max(err["strengths"], np.abs(strengths[:t] - s).max())
        err["reads"] = max(err["reads"], np.abs(np.asarray(reads[t - 1], np.float64) - r).max())
    assert not bool(states.overflow[-1])
    return err


def deque_errors(seed: int, dtype) -> dict[str, float]:
    """Max abs error of a C-step DeQue rollout against the reference."""
    rng = np.random.default_rng(seed)
    controls = random_deque_controls(rng, C, W, dtype)
    _, (reads, states) = rollout("deque", C, controls)
    as64 = lambda x: np.asarray(x, np.float64)  # noqa: E731
    want = ref.deque_rollout(*(as64(c) for c in controls))
    err = {"values": 0.0, "strengths": 0.0, "reads": 0.0}
    for t, (V, s, r_top, r_bot) in enumerate(want, start=1):
        values, strengths = as64(states.values[t - 1]), as64(states.strengths[t - 1])
        lo, hi = C - t, C + t  # rows [C - t, C + t) are written after t steps
        assert np.all(values[:lo] == 0) and np.all(values[hi:] == 0)
        assert np.all(strengths[:lo] == 0) and np.all(strengths[hi:] == 0)
        err["values"] = max(err["values"], np.abs(values[lo:hi] - V).max())
        err["strengths"] = max(err["strengths"], np.abs(strengths[lo:hi] - s).max())
        err["reads"] = max(
            err["reads"], np.abs(as64(reads.top[t - 1]) - r_top).max(), np.abs(as64(reads.bottom[t - 1]) - r_bot).max()
        )
    return err


@pytest.mark.parametrize("kind", ["stack", "queue"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_linear_matches_reference_float64(kind, seed):
    with x64():
        err = linear_errors(kind, seed, np.float64)
    assert max(err.values()) < TOL, err


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_deque_matches_reference_float64(seed):
    with x64():
        err = deque_errors(seed, np.float64)
    assert max(err.values()) < TOL, err


@pytest.mark.parametrize("kind", ["stack", "queue", "deque"])
def test_float32_close_to_reference(kind):
    # float32 (the default) against the float64 reference also meets 1e-6 (measured ~2e-7).
    err = deque_errors(0, np.float32) if kind == "deque" else linear_errors(kind, 0, np.float32)
    assert max(err.values()) < TOL, err


def test_one_step_matches_reference():
    # One step from a hand-set mid-rollout state (strengths with gaps and zeros).
    rng = np.random.default_rng(3)
    s0 = [0.3, 0.0, 0.6, 0.25, 0.9]
    V0 = [rng.normal(size=W) for _ in s0]
    d, u, v = 0.4, 0.7, rng.normal(size=W)
    for kind, kstep, rstep in [("stack", stack.step, ref.stack_step), ("queue", queue.step, ref.queue_step)]:
        with x64():
            state = stack.init_state(8, W, jnp.float64)
            state = state._replace(
                values=state.values.at[: len(s0)].set(np.array(V0)),
                strengths=state.strengths.at[: len(s0)].set(np.array(s0)),
                size=jnp.int32(len(s0)),
            )
            new, r = jax.jit(kstep)(state, stack.StackControls(jnp.float64(d), jnp.float64(u), jnp.asarray(v)))
            V, s, r_ref, _ = rstep(V0, s0, d, u, v)
            np.testing.assert_allclose(np.asarray(new.strengths[:6]), s, atol=1e-12, err_msg=kind)
            np.testing.assert_allclose(np.asarray(new.values[:6]), np.array(V), atol=1e-12, err_msg=kind)
            np.testing.assert_allclose(np.asarray(r), r_ref, atol=1e-12, err_msg=kind)


# ---- 2. hand-built scenarios ---------------------------------------------------


def run_steps(step, state, controls):
    reads = []
    for c in controls:
        state, r = step(state, c)
        reads.append(r)
    return state, reads


def test_stack_figure_1a():
    # Grefenstette et al. 2015, Figure 1a, with v1, v2, v3 one-hot.
    state, reads = run_steps(
        jit_stack_step,
        stack.init_state(4, W),
        [
            ctl(0.8, 0.0, E[0]),  # t=1: s = [0.8]; read takes 0.8 of v1 (less than 1 is on the stack)
            ctl(0.5, 0.1, E[1]),  # t=2: pop 0.1 off v1 -> [0.7, 0.5]; read 0.5 v2, then the 0.5 left from v1
            ctl(0.9, 0.9, E[2]),  # t=3: pop 0.9 = all 0.5 of v2 + 0.4 of v1 -> [0.3, 0, 0.9]; read 0.9 v3 + 0.1 v1
        ],
    )
    np.testing.assert_allclose(reads[0], 0.8 * E[0], atol=1e-6)
    np.testing.assert_allclose(reads[1], 0.5 * E[1] + 0.5 * E[0], atol=1e-6)
    np.testing.assert_allclose(reads[2], 0.9 * E[2] + 0.1 * E[0], atol=1e-6)
    np.testing.assert_allclose(state.strengths, [0.3, 0.0, 0.9, 0.0], atol=1e-6)
    assert int(state.size) == 3


def test_queue_figure_1a_controls():
    # The same controls on a Queue: pops and reads start at the front (v1).
    state, reads = run_steps(
        jit_queue_step,
        queue.init_state(4, W),
        [
            ctl(0.8, 0.0, E[0]),  # t=1: [0.8]; read 0.8 v1
            ctl(0.5, 0.1, E[1]),  # t=2: pop 0.1 off the front v1 -> [0.7, 0.5]; read 0.7 v1 + 0.3 v2
            ctl(0.9, 0.9, E[2]),  # t=3: pop 0.9 = all 0.7 of v1 + 0.2 of v2 -> [0, 0.3, 0.9]; read 0.3 v2 + 0.7 v3
        ],
    )
    np.testing.assert_allclose(reads[0], 0.8 * E[0], atol=1e-6)
    np.testing.assert_allclose(reads[1], 0.7 * E[0] + 0.3 * E[1], atol=1e-6)
    np.testing.assert_allclose(reads[2], 0.3 * E[1] + 0.7 * E[2], atol=1e-6)
    np.testing.assert_allclose(state.strengths, [0.0, 0.3, 0.9, 0.0], atol=1e-6)


def test_push_a_push_b_pop():
    a, b, zero = E[0], E[1], np.zeros(W)
    controls = [ctl(1, 0, a), ctl(1, 0, b), ctl(0, 1, zero)]  # push a, push b, pop (push nothing)
    _, stack_reads = run_steps(jit_stack_step, stack.init_state(3, W), controls)
    _, queue_reads = run_steps(jit_queue_step, queue.init_state(3, W), controls)
    # Stack: b, the last in, was on top and is popped: a is read.
    np.testing.assert_allclose(stack_reads[1], b, atol=1e-6)
    np.testing.assert_allclose(stack_reads[2], a, atol=1e-6)
    # Queue: a, the first in, was at the front and is popped: b is read.
    np.testing.assert_allclose(queue_reads[1], a, atol=1e-6)
    np.testing.assert_allclose(queue_reads[2], b, atol=1e-6)


def test_deque_push_a_push_b_pop_each_end():
    a, b, z = E[0], E[1], np.zeros(W)
    # Push a then b at the top, pop the top: a Stack, the top read is a.
    _, reads = run_steps(
        jit_deque_step,
        deque.init_state(3, W),
        [dctl(1, 0, a, 0, 0, z), dctl(1, 0, b, 0, 0, z), dctl(0, 1, z, 0, 0, z)],
    )
    np.testing.assert_allclose(reads[2].top, a, atol=1e-6)
    # Push a then b at the top, pop the bottom: a Queue, a (the oldest, lowest) leaves, b is read at both ends.
    _, reads = run_steps(
        jit_deque_step,
        deque.init_state(3, W),
        [dctl(1, 0, a, 0, 0, z), dctl(1, 0, b, 0, 0, z), dctl(0, 0, z, 0, 1, z)],
    )
    np.testing.assert_allclose(reads[1].bottom, a, atol=1e-6)
    np.testing.assert_allclose(reads[2].bottom, b, atol=1e-6)
    np.testing.assert_allclose(reads[2].top, b, atol=1e-6)
    # Push a then b at the bottom, pop the top: the mirror image, a (now highest) leaves, b is read.
    _, reads = run_steps(
        jit_deque_step,
        deque.init_state(3, W),
        [dctl(0, 0, z, 1, 0, a), dctl(0, 0, z, 1, 0, b), dctl(0, 1, z, 0, 0, z)],
    )
    np.testing.assert_allclose(reads[1].top, a, atol=1e-6)
    np.testing.assert_allclose(reads[2].top, b, atol=1e-6)


def test_deque_reduces_to_stack_and_queue():
    # With the bottom push at 0 the bottom rows are empty (strength 0), so a DeQue
    # pushed and popped at the top is a Stack (top read), and one pushed at the top
    # and popped at the bottom is a Queue (bottom read), on any controls.
    T = 12
    c = random_controls(np.random.default_rng(4), T, W, np.float32)
    zeros, zeros_w = jnp.zeros(T), jnp.zeros((T, W))
    _, (stack_reads, _) = rollout("stack", T, c)
    _, (queue_reads, _) = rollout("queue", T, c)
    _, (as_stack, _) = rollout("deque", T, deque.DequeControls(c.push, c.pop, c.value, zeros, zeros, zeros_w))
    _, (as_queue, _) = rollout("deque", T, deque.DequeControls(c.push, zeros, c.value, zeros, c.pop, zeros_w))
    np.testing.assert_allclose(as_stack.top, stack_reads, atol=1e-6)
    np.testing.assert_allclose(as_queue.bottom, queue_reads, atol=1e-6)


# ---- 3. invariants --------------------------------------------------------------


@pytest.mark.parametrize("kind", ["stack", "queue", "deque"])
def test_invariants(kind):
    rng = np.random.default_rng(5)
    T = 16
    if kind == "deque":
        controls = random_deque_controls(rng, T, W, np.float32)
    else:
        controls = random_controls(rng, T, W, np.float32)
    _, (reads, states) = rollout(kind, T, controls)
    s, V = np.asarray(states.strengths), np.asarray(states.values)
    assert np.all(s >= 0) and np.all(s <= 1)  # strengths stay in [0, 1]
    weight_fns = {
        "stack": [stack.read_weights],
        "queue": [queue.read_weights],
        "deque": [stack.read_weights, queue.read_weights],
    }[kind]
    read_list = [reads.top, reads.bottom] if kind == "deque" else [reads]
    for fn, r in zip(weight_fns, read_list):
        w = np.asarray(jax.vmap(fn)(states.strengths))
        assert np.all(w >= 0) and np.all(w <= s + 1e-7)  # 0 <= w[i] <= s[i]
        assert np.all(w.sum(-1) <= 1 + 1e-6)  # at most one unit is read
        np.testing.assert_allclose(w.sum(-1), np.minimum(1.0, s.sum(-1)), atol=1e-5)
        # the read is the combination of rows with those weights (sub-convex: sum <= 1)
        np.testing.assert_allclose(r, np.einsum("tc,tcw->tw", w, V), atol=1e-6)


# ---- 4. gradients ---------------------------------------------------------------


@pytest.mark.parametrize("kind", ["stack", "queue", "deque"])
def test_check_grads(kind):
    # Random controls of a 6-step rollout: generic points, away from the ties of max/min.
    T, width = 6, 3
    with x64():
        rng = np.random.default_rng(6)
        if kind == "deque":
            controls = random_deque_controls(rng, T, width)
        else:
            controls = random_controls(rng, T, width)

        def f(controls):
            final, (reads, _) = rollout(kind, T, controls)
            return reads, final.strengths

        check_grads(f, (controls,), order=1, modes=["rev"], eps=1e-6, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("kind", ["stack", "queue", "deque"])
@pytest.mark.parametrize("fill", [0.0, 1.0])
def test_no_nan_gradients(kind, fill):
    # All-zero controls (empty structure, zero vectors: every max/min is at a tie)
    # and saturated controls (every pop empties the structure).
    T = 8
    full = jnp.full(T, fill)
    if kind == "deque":
        controls = deque.DequeControls(full, full, jnp.zeros((T, W)), full, full, jnp.zeros((T, W)))
    else:
        controls = stack.StackControls(full, full, jnp.zeros((T, W)))

    def loss(controls):
        final, (reads, _) = rollout(kind, T, controls)
        return sum(jnp.sum(r) for r in jax.tree_util.tree_leaves(reads)) + jnp.sum(final.strengths)

    grads = jax.grad(loss)(controls)
    chex.assert_tree_all_finite(grads)


def test_long_rollout_finite():
    T = 1000
    controls = random_controls(np.random.default_rng(7), T, W, np.float32)
    final, (reads, _) = rollout("stack", T, controls)
    chex.assert_tree_all_finite((reads, final.strengths))


# ---- footnote 1: derivative to the left argument at ties --------------------------


def test_jax_default_splits_ties_and_left_helpers_do_not():
    x = y = jnp.float32(0.5)
    # jnp.maximum / jnp.minimum split the derivative at a tie, which is why the
    # kernels use left_max / left_min.
    assert jax.grad(jnp.maximum, argnums=(0, 1))(x, y) == (0.5, 0.5)
    assert jax.grad(stack.left_max, argnums=(0, 1))(x, y) == (1.0, 0.0)
    assert jax.grad(stack.left_min, argnums=(0, 1))(x, y) == (1.0, 0.0)
    # away from ties they are max and min
    assert float(stack.left_max(1.0, 2.0)) == 2.0 and float(stack.left_min(1.0, 2.0)) == 1.0
    assert jax.grad(stack.left_max, argnums=(0, 1))(1.0, 2.0) == (0.0, 1.0)


def test_pop_and_read_ties_follow_footnote():
    # Pop u = 0.5 off s = [0.25, 0.5]: at slot 1, max(0, 0.5 - max(0, 0.5 - 0)) is a tie
    # of the outer max, and at slot 0 the inner max(0, 0.5 - 0.5) is a tie. The left
    # argument is the constant 0 in both, so the popped strengths do not depend on u
    # there: ds'/du = 0 (jnp.maximum would give -0.5 and -0.25).
    s = jnp.array([0.25, 0.5, 0.0], jnp.float32)
    jac_u = jax.jacobian(stack.pop_strengths, argnums=1)(s, jnp.float32(0.5))
    np.testing.assert_array_equal(jac_u, [0.0, 0.0, 0.0])
    jac_s = jax.jacobian(stack.pop_strengths, argnums=0)(s, jnp.float32(0.5))
    np.testing.assert_array_equal(jac_s, [[1, 0, 0], [0, 0, 0], [0, 0, 0]])
    # Read s = [0.25, 0.75]: at slot 0, min(s[0], max(0, 1 - 0.75)) = min(0.25, 0.25) is a
    # tie; the derivative goes to the left argument s[0], none to s[1].
    jac = jax.jacobian(stack.read_weights)(jnp.array([0.25, 0.75], jnp.float32))
    np.testing.assert_array_equal(jac, [[1, 0], [0, 1]])
    # The Queue mirrors it: at slot 1, min(0.75, max(0, 1 - 0.25)) is a tie.
    jac = jax.jacobian(queue.read_weights)(jnp.array([0.25, 0.75], jnp.float32))
    np.testing.assert_array_equal(jac, [[1, 0], [0, 1]])


# ---- 5. transforms: mask, vmap, no retrace --------------------------------------


def _random_deque_state(rng, steps):
    state = deque.init_state(6, W)
    c = random_deque_controls(rng, steps, W, np.float32)
    for t in range(steps):
        state, _ = jit_deque_step(state, jax.tree_util.tree_map(lambda x: x[t], c))
    return state, jax.tree_util.tree_map(lambda x: x[0], random_deque_controls(rng, 1, W, np.float32))


def _random_linear_state(rng, steps):
    state = stack.init_state(6, W)
    c = random_controls(rng, steps, W, np.float32)
    for t in range(steps):
        state, _ = jit_stack_step(state, jax.tree_util.tree_map(lambda x: x[t], c))
    return state, jax.tree_util.tree_map(lambda x: x[0], random_controls(rng, 1, W, np.float32))


@pytest.mark.parametrize("kind", ["stack", "queue", "deque"])
def test_masked_step_changes_nothing(kind):
    rng = np.random.default_rng(8)
    step = {"stack": jit_stack_step, "queue": jit_queue_step, "deque": jit_deque_step}[kind]
    state, controls = (_random_deque_state if kind == "deque" else _random_linear_state)(rng, 3)
    new, read = step(state, controls, jnp.float32(0))
    chex.assert_trees_all_equal(new, state)
    chex.assert_trees_all_equal(read, jax.tree_util.tree_map(jnp.zeros_like, read))
    chex.assert_shape(read, (W,))  # every read (one, or top and bottom of a DeQue) is a word
    # mask 1 is the unmasked step
    new1, read1 = step(state, controls, jnp.bool_(True))
    new2, read2 = step(state, controls)
    chex.assert_trees_all_equal((new1, read1), (new2, read2))


def test_masked_steps_in_scan():
    # Padding steps interleaved with real ones give the same final state as the real ones alone.
    rng = np.random.default_rng(9)
    c = random_controls(rng, 6, W, np.float32)
    mask = jnp.array([1, 0, 1, 1, 0, 0], bool)
    keep = np.flatnonzero(np.asarray(mask))
    final_masked, reads = jax.jit(lambda c, m: scan(stack.step, stack.init_state(6, W), c, m))(c, mask)
    final_real, reads_real = jax.jit(lambda c: scan(stack.step, stack.init_state(6, W), c))(
        jax.tree_util.tree_map(lambda x: x[keep], c)
    )
    chex.assert_trees_all_equal(final_masked, final_real)
    np.testing.assert_array_equal(reads[keep], reads_real)
    np.testing.assert_array_equal(reads[~np.asarray(mask)], 0)


@pytest.mark.parametrize("kind", ["stack", "queue", "deque"])
def test_vmap_equals_loop(kind):
    B, T = 3, 5
    rng = np.random.default_rng(10)
    if kind == "deque":
        controls = random_deque_controls(rng, B * T, W, np.float32)
    else:
        controls = random_controls(rng, B * T, W, np.float32)
    controls = jax.tree_util.tree_map(lambda x: x.reshape((B, T) + x.shape[1:]), controls)
    batched = jax.vmap(lambda c: rollout(kind, T, c))(controls)
    for b in range(B):
        single = rollout(kind, T, jax.tree_util.tree_map(lambda x: x[b], controls))
        chex.assert_trees_all_close(jax.tree_util.tree_map(lambda x: x[b], batched), single, rtol=1e-7, atol=1e-6)


@pytest.mark.parametrize("kind", ["stack", "deque"])
def test_no_retrace_on_new_values(kind, trace_counter):
    step = deque.step if kind == "deque" else stack.step
    counter = trace_counter(chex.assert_max_traces(step, n=1))  # chex fails at the retrace itself
    jitted = jax.jit(counter)
    rng = np.random.default_rng(11)
    make = _random_deque_state if kind == "deque" else _random_linear_state
    state1, controls1 = make(rng, 1)
    state2, controls2 = make(rng, 2)
    jax.block_until_ready(jitted(state1, controls1))
    jax.block_until_ready(jitted(state2, controls2))
    assert counter.count == 1


@pytest.mark.parametrize("kind", ["stack", "queue", "deque"])
def test_leading_axes_equal_one_structure_at_a_time(kind):
    # controls_from_interface and step take any leading axes natively: [2, 3] structures, each
    # with its own state, controls and mask, equal the one-structure calls index by index.
    kernel = KERNELS[kind]
    rng = np.random.default_rng(12)
    lead = (2, 3)
    raw = jnp.asarray(rng.normal(size=(*lead, kernel.interface_size(W))), jnp.float32)
    controls = kernel.controls_from_interface(raw, W)
    state = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (*lead, *x.shape)), kernel.init_state(4, W))
    state, _ = jax.jit(kernel.step)(state, controls)  # a first step, so the strengths differ per structure
    controls = kernel.controls_from_interface(raw[:, ::-1], W)
    mask = jnp.asarray([[True, False, True], [False, True, True]])
    new, read = jax.jit(kernel.step)(state, controls, mask)
    for i in np.ndindex(*lead):
        pick = functools.partial(jax.tree_util.tree_map, lambda x, i=i: x[i])
        one = kernel.controls_from_interface(raw[:, ::-1][i], W)
        chex.assert_trees_all_close(pick(controls), one, rtol=1e-7, atol=1e-7)
        want = jax.jit(kernel.step)(pick(state), one, mask[i])
        chex.assert_trees_all_close((pick(new), pick(read)), want, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match=r"controls\.value: expected shape \[\.\.\., W\] = \(2, 3, 5\), got \(3, 5\)"):
        stack.step(
            jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (*lead, *x.shape)), stack.init_state(4, W)),
            stack.StackControls(jnp.zeros(lead), jnp.zeros(lead), jnp.zeros((3, W))),
        )


# ---- capacity and overflow --------------------------------------------------------


@pytest.mark.parametrize("kind", ["stack", "queue"])
def test_overflow_drops_push_and_sets_flag(kind):
    step = jit_stack_step if kind == "stack" else jit_queue_step
    a, b, c = E[0], E[1], E[2]
    state = stack.init_state(2, W)
    state, _ = step(state, ctl(1, 0, a))
    state, _ = step(state, ctl(1, 0, b))
    assert int(state.size) == 2 and not bool(state.overflow)  # full, no overflow yet
    full = state
    # A third push arrives with both rows written: it is dropped (b is not overwritten),
    # the flag is set, the size stays C.
    state, read = step(state, ctl(1, 0, c))
    assert bool(state.overflow) and int(state.size) == 2
    np.testing.assert_array_equal(state.values, full.values)
    np.testing.assert_array_equal(state.strengths, full.strengths)
    np.testing.assert_allclose(read, b if kind == "stack" else a, atol=1e-6)
    # The pop of an overflowing step still applies, and the flag stays set.
    state, read = step(state, ctl(1, 1, c))
    assert bool(state.overflow) and int(state.size) == 2
    np.testing.assert_allclose(read, a if kind == "stack" else b, atol=1e-6)
    state, _ = step(state, ctl(0, 0, c))
    assert bool(state.overflow)


def test_deque_overflow_drops_both_pushes():
    a, b = E[0], E[1]
    state = deque.init_state(1, W)
    state, _ = jit_deque_step(state, dctl(1, 0, a, 1, 0, b))  # rows [0, 1] = [b, a]
    assert int(state.size) == 1 and not bool(state.overflow)
    np.testing.assert_array_equal(state.values, [b, a])
    full = state
    new, read = jit_deque_step(state, dctl(1, 0, E[2], 1, 0, E[3]))
    assert bool(new.overflow) and int(new.size) == 1
    np.testing.assert_array_equal(new.values, full.values)  # neither end overwritten
    np.testing.assert_array_equal(new.strengths, full.strengths)
    np.testing.assert_allclose(read.top, a, atol=1e-6)
    np.testing.assert_allclose(read.bottom, b, atol=1e-6)


# ---- interface and validation --------------------------------------------------------


def test_controls_from_interface():
    raw = jnp.arange(2 + W, dtype=jnp.float32) - 3.0
    c = stack.controls_from_interface(raw, W)
    np.testing.assert_allclose(c.push, jax.nn.sigmoid(raw[0]))
    np.testing.assert_allclose(c.pop, jax.nn.sigmoid(raw[1]))
    np.testing.assert_allclose(c.value, jnp.tanh(raw[2:]))
    assert stack.interface_size(W) == 2 + W and deque.interface_size(W) == 2 * (2 + W)
    raw2 = jnp.concatenate([raw, -raw])
    d = deque.controls_from_interface(raw2, W)
    np.testing.assert_allclose(d.push_top, jax.nn.sigmoid(raw[0]))
    np.testing.assert_allclose(d.pop_bottom, jax.nn.sigmoid(-raw[1]))
    np.testing.assert_allclose(d.value_bottom, jnp.tanh(-raw[2:]))
    q = queue.controls_from_interface(raw, W)
    np.testing.assert_allclose(q.value, c.value)


def test_bad_arguments_raise_named_errors():
    state = stack.init_state(4, W)
    good = ctl(0.5, 0.5, np.zeros(W))
    with pytest.raises(ValueError, match=r"controls\.value: expected shape \[W\] = \(5\), got \(4,\)"):
        stack.step(state, good._replace(value=jnp.zeros(4)))
    with pytest.raises(ValueError, match=r"controls\.push: expected shape \[\] = \(\), got \(1,\)"):
        queue.step(state, good._replace(push=jnp.zeros(1)))
    with pytest.raises(ValueError, match=r"state\.strengths: expected shape \[C\] = \(4\), got \(3,\)"):
        stack.step(state._replace(strengths=jnp.zeros(3)), good)
    with pytest.raises(ValueError, match=r"state\.values: expected shape \[\.\.\., C, W\], got \(4,\)"):
        stack.step(state._replace(values=jnp.zeros(4)), good)
    with pytest.raises(ValueError, match=r"mask: expected shape \[\] = \(\), got \(2,\)"):
        stack.step(state, good, jnp.ones(2))
    dstate = deque.init_state(2, W)
    dgood = dctl(0.5, 0.5, np.zeros(W), 0.5, 0.5, np.zeros(W))
    with pytest.raises(ValueError, match=r"controls\.value_bottom: expected shape \[W\] = \(5\), got \(6,\)"):
        deque.step(dstate, dgood._replace(value_bottom=jnp.zeros(6)))
    with pytest.raises(ValueError, match=r"state\.values: expected an even number of rows"):
        deque.step(dstate._replace(values=jnp.zeros((3, W)), strengths=jnp.zeros(3)), dgood)
    with pytest.raises(ValueError, match=r"raw: expected shape \[\.\.\., 2 \+ W\] = \(\.\.\., 7\), got \(6,\)"):
        stack.controls_from_interface(jnp.zeros(6), W)
    with pytest.raises(ValueError, match=r"raw: expected shape \[\.\.\., 2 \(2 \+ W\)\] = \(\.\.\., 14\), got \(7,\)"):
        deque.controls_from_interface(jnp.zeros(7), W)
    with pytest.raises(ValueError, match=r"capacity: expected a positive integer, got 0"):
        stack.init_state(0, W)
    with pytest.raises(ValueError, match=r"width: expected a positive integer, got 2.5"):
        deque.init_state(3, 2.5)
    with pytest.raises(ValueError, match=r"dtype: expected a real floating dtype .*, got int32"):
        queue.init_state(3, W, jnp.int32)
