"""Tests of panm_jax/kernels/stack_rnn.py: the Stack-RNN's continuous stack (Joulin & Mikolov 2015)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from panm_jax.kernels import stack_rnn as K
from panm_jax.kernels.scan import scan
from tests.conftest import x64

S, W = 6, 3
PUSH, POP, NOOP = np.eye(3)


# ---- a float64 NumPy transcription of Joulin & Mikolov 2015, Eq. 4-5 with the no-op -------------


def ref_step(stack, actions, value):
    """One step, cell by cell, from the paper's equations (below the bottom reads as zero)."""
    size = len(stack)
    a_push, a_pop, a_noop = actions
    new = np.zeros_like(stack)
    for i in range(size):
        above = value if i == 0 else stack[i - 1]  # what a push moves into cell i
        below = stack[i + 1] if i + 1 < size else np.zeros_like(stack[0])  # what a pop moves into cell i
        new[i] = a_push * above + a_pop * below + a_noop * stack[i]
    return new


def ref_rollout(stack, actions, values):
    stacks = []
    for a, v in zip(actions, values):
        stack = ref_step(stack, a, v)
        stacks.append(stack.copy())
    return np.stack(stacks)


def random_controls(rng, steps, width=W, dtype=np.float64):
    actions = rng.dirichlet(np.ones(3), size=steps)
    values = rng.normal(size=(steps, width))
    return K.Controls(actions=jnp.asarray(actions, dtype), value=jnp.asarray(values, dtype))


@jax.jit
def rollout(state, controls):
    """Scan ``step``; returns (final state, (reads [T, W], stacks [T, S, W]))."""
    return scan(K.step, state, controls, trace_fn=lambda s: s.stack)


# ---- 1. equals the float64 transcription --------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_reference_float64(seed):
    rng = np.random.default_rng(seed)
    T = 25  # more pushes than cells: values fall off the bottom
    with x64():
        init = rng.normal(size=(S, W))
        controls = random_controls(rng, T)
        final, (reads, stacks) = rollout(K.State(jnp.asarray(init)), controls)
        assert stacks.dtype == jnp.float64
        want = ref_rollout(init, np.asarray(controls.actions), np.asarray(controls.value))
        np.testing.assert_allclose(np.asarray(stacks), want, rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.asarray(reads), want[:, 0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.asarray(final.stack), want[-1], rtol=0, atol=1e-12)


def test_one_cell_stack_matches_reference():
    # S = 1: a push replaces the only cell (the old one falls off), a pop brings up a zero.
    rng = np.random.default_rng(3)
    with x64():
        controls = random_controls(rng, 10)
        _, (_, stacks) = rollout(K.init_state(1, W, jnp.float64), controls)
        want = ref_rollout(np.zeros((1, W)), np.asarray(controls.actions), np.asarray(controls.value))
        np.testing.assert_allclose(np.asarray(stacks), want, rtol=0, atol=1e-12)


# ---- 2. hard actions are a discrete stack -------------------------------------------------------


def test_push_a_push_b_pop_reads_a():
    a, b = np.array([1.0, 0, 0]), np.array([0, 1.0, 0])
    state = K.init_state(4, W)
    state, r1 = K.step(state, K.Controls(jnp.asarray(PUSH), jnp.asarray(a)))
    state, r2 = K.step(state, K.Controls(jnp.asarray(PUSH), jnp.asarray(b)))
    np.testing.assert_array_equal(r1, a)
    np.testing.assert_array_equal(r2, b)
    np.testing.assert_array_equal(state.stack[:2], [b, a])
    state, r3 = K.step(state, K.Controls(jnp.asarray(POP), jnp.asarray(b)))  # the value is ignored by a pop
    np.testing.assert_array_equal(r3, a)
    np.testing.assert_array_equal(state.stack, [a, np.zeros(W), np.zeros(W), np.zeros(W)])
    state, r4 = K.step(state, K.Controls(jnp.asarray(POP), jnp.asarray(b)))
    np.testing.assert_array_equal(r4, np.zeros(W))  # popping the last element leaves an empty (zero) stack
    state, r5 = K.step(state, K.Controls(jnp.asarray(POP), jnp.asarray(b)))
    np.testing.assert_array_equal(state.stack, np.zeros((4, W)))  # popping an empty stack keeps it empty


def test_hard_actions_follow_a_python_list_stack():
    # Random push / pop / no-op sequences against a list used as a stack of capacity S.
    rng = np.random.default_rng(4)
    state = K.init_state(S, W)
    stack: list[np.ndarray] = []
    for _ in range(60):
        k = rng.integers(3)
        value = rng.normal(size=W).astype(np.float32)
        state, read = K.step(state, K.Controls(jnp.asarray(np.eye(3)[k], jnp.float32), jnp.asarray(value)))
        if k == 0:
            stack = [value] + stack[: S - 1]  # the bottom cell falls off a full stack
        elif k == 1:
            stack = stack[1:]
        want = np.zeros((S, W), np.float32)
        if stack:
            want[: len(stack)] = np.stack(stack)
        np.testing.assert_array_equal(np.asarray(state.stack), want)
        np.testing.assert_array_equal(np.asarray(read), want[0])


def test_push_onto_a_full_stack_drops_the_bottom():
    state = K.State(jnp.asarray(np.arange(S * W, dtype=np.float32).reshape(S, W)))
    new, _ = K.step(state, K.Controls(jnp.asarray(PUSH, jnp.float32), jnp.full(W, -1.0)))
    np.testing.assert_array_equal(new.stack[0], -np.ones(W))
    np.testing.assert_array_equal(new.stack[1:], state.stack[:-1])


def test_soft_actions_mix_the_three_discrete_results():
    # The soft step is the a_t-weighted mixture of the push, pop and no-op results (linearity).
    rng = np.random.default_rng(5)
    state = K.State(jnp.asarray(rng.normal(size=(S, W)), jnp.float32))
    value = jnp.asarray(rng.normal(size=W), jnp.float32)
    a = jnp.asarray([0.2, 0.5, 0.3], jnp.float32)
    soft, _ = K.step(state, K.Controls(a, value))
    hard = [K.step(state, K.Controls(jnp.asarray(e, jnp.float32), value))[0].stack for e in np.eye(3)]
    np.testing.assert_allclose(soft.stack, sum(float(a[k]) * hard[k] for k in range(3)), atol=1e-6)


def test_read_top():
    stack = jnp.arange(S * W, dtype=jnp.float32).reshape(S, W)
    np.testing.assert_array_equal(K.read_top(K.State(stack), 2), stack[:2])
    np.testing.assert_array_equal(K.read_top(K.State(stack)), stack[:1])


# ---- 3. invariants ----------------------------------------------------------------------------


def test_noop_leaves_the_state_unchanged():
    rng = np.random.default_rng(6)
    state = K.State(jnp.asarray(rng.normal(size=(S, W)), jnp.float32))
    new, read = jax.jit(K.step)(state, K.Controls(jnp.asarray(NOOP, jnp.float32), jnp.ones(W)))
    np.testing.assert_array_equal(new.stack, state.stack)
    np.testing.assert_array_equal(read, state.stack[0])


class TestMaskedStep(chex.TestCase):
    # Jitted and eager: eagerly the mask and the controls are concrete (and the value checks run), under jit
    # they are traced; the masked step must be the same no-op both ways.

    @chex.variants(with_jit=True, without_jit=True)
    def test_masked_step_leaves_the_state_unchanged_and_reads_zero(self):
        step = self.variant(K.step)
        rng = np.random.default_rng(7)
        state = K.State(jnp.asarray(rng.normal(size=(S, W)), jnp.float32))
        controls = K.Controls(jnp.asarray(PUSH, jnp.float32), jnp.ones(W))
        new, read = step(state, controls, jnp.bool_(False))
        chex.assert_trees_all_equal(new, state)
        np.testing.assert_array_equal(read, np.zeros(W))
        new, read = step(state, controls, jnp.bool_(True))
        np.testing.assert_array_equal(read, np.ones(W))  # an unmasked step does push


def test_masked_scan_equals_the_unmasked_prefix():
    rng = np.random.default_rng(8)
    T, k = 12, 7
    controls = random_controls(rng, T, dtype=np.float32)
    init = K.init_state(S, W)
    mask = jnp.arange(T) < k
    prefix = jax.tree_util.tree_map(lambda x: x[:k], controls)
    want, _ = rollout(init, prefix)
    # through the step's own mask argument ...
    got, reads = jax.lax.scan(lambda s, cm: K.step(s, cm[0], cm[1]), init, (controls, mask))
    # equal up to rounding: the two scans are compiled separately (XLA may fuse differently)
    np.testing.assert_allclose(got.stack, want.stack, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(reads[k:], np.zeros((T - k, W)))
    # ... and through scan's mask
    got2, _ = jax.jit(lambda c, m: scan(K.step, init, c, m))(controls, mask)
    np.testing.assert_allclose(got2.stack, want.stack, rtol=1e-6, atol=1e-7)


def test_cells_stay_in_the_convex_hull_of_the_values():
    # Every cell is a sub-convex combination of pushed values and zeros: with values in (0, 1)
    # (the sigmoid of controls_from_interface) every cell stays in [0, 1].
    raw = 4.0 * jax.random.normal(jax.random.key(0), (40, K.interface_size(W)))
    controls = K.controls_from_interface(raw, W)
    _, (_, stacks) = rollout(K.init_state(S, W), controls)
    assert float(stacks.min()) >= 0.0 and float(stacks.max()) <= 1.0


# ---- 4. gradients -----------------------------------------------------------------------------


def test_check_grads_through_a_few_steps():
    rng = np.random.default_rng(9)
    with x64():
        init = jnp.asarray(rng.normal(size=(S, W)))
        controls = random_controls(rng, 5)

        def f(init, controls):
            final, (reads, _) = rollout(K.State(init), controls)
            return jnp.sum(jnp.sin(reads)) + jnp.sum(final.stack**2)

        check_grads(jax.jit(f), (init, controls), order=1, modes=["fwd", "rev"], eps=1e-6, atol=1e-7, rtol=1e-7)


def test_gradient_through_the_interface_is_finite_and_nonzero():
    raw = jax.random.normal(jax.random.key(1), (8, K.interface_size(W)))

    def loss(raw):
        _, (reads, _) = rollout(K.init_state(S, W), K.controls_from_interface(raw, W))
        return jnp.sum(reads[-1])

    g = jax.jit(jax.grad(loss))(raw)
    chex.assert_shape(g, raw.shape)
    chex.assert_tree_all_finite(g)
    assert float(jnp.abs(g).sum()) > 0


# ---- 5. jit / vmap / scan, no retrace ---------------------------------------------------------


def test_vmap_equals_per_example_steps():
    rng = np.random.default_rng(10)
    B = 4
    states = K.State(jnp.asarray(rng.normal(size=(B, S, W)), jnp.float32))
    raw = jnp.asarray(rng.normal(size=(B, K.interface_size(W))), jnp.float32)
    controls = K.controls_from_interface(raw, W)  # leading batch axis kept
    chex.assert_shape([controls.actions, controls.value], [(B, 3), (B, W)])
    new, reads = jax.jit(jax.vmap(K.step))(states, controls)
    for b in range(B):
        one, r = K.step(K.State(states.stack[b]), K.Controls(controls.actions[b], controls.value[b]))
        got = jax.tree_util.tree_map(lambda x: x[b], (new, reads))
        chex.assert_trees_all_close(got, (one, r), rtol=1e-7, atol=1e-6)


def test_no_retrace_for_new_values(trace_counter):
    counted = trace_counter(chex.assert_max_traces(K.step, n=1))  # chex fails at the retrace itself
    f = jax.jit(counted)
    rng = np.random.default_rng(11)
    state = K.init_state(S, W)
    for _ in range(3):
        c = random_controls(rng, 1, dtype=np.float32)
        state, _ = f(state, K.Controls(c.actions[0], c.value[0]))
    assert counted.count == 1


def test_bfloat16_state_keeps_its_dtype():
    state = K.init_state(S, W, jnp.bfloat16)
    new, read = jax.jit(K.step)(state, K.Controls(jnp.asarray(PUSH, jnp.float32), jnp.full(W, 0.5)))
    assert new.stack.dtype == jnp.bfloat16 and read.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(read, np.float32), np.full(W, 0.5))


# ---- 6. interface and entry checks ------------------------------------------------------------


def test_controls_from_interface():
    raw = jnp.arange(2 * K.interface_size(W), dtype=jnp.float32).reshape(2, -1) / 4 - 1
    c = K.controls_from_interface(raw, W)
    assert K.interface_size(W) == 3 + W and K.Controls._fields == ("actions", "value")
    assert K.ACTIONS == ("push", "pop", "noop")
    np.testing.assert_allclose(c.actions, jax.nn.softmax(raw[:, :3], axis=-1), rtol=1e-6)
    np.testing.assert_allclose(c.actions.sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(c.value, 1 / (1 + np.exp(-np.asarray(raw[:, 3:]))), rtol=1e-6)


def test_bad_arguments_raise_named_errors():
    state = K.init_state(4, W)
    good = K.Controls(jnp.asarray([0.2, 0.3, 0.5]), jnp.zeros(W))
    cases = [
        (lambda: K.init_state(0, W), r"^size: expected a positive integer, got 0$"),
        (lambda: K.init_state(4, 2.5), r"^width: expected a positive integer, got 2\.5$"),
        (lambda: K.init_state(4, W, jnp.int32), r"^dtype: expected a real floating dtype .*, got int32$"),
        (
            lambda: K.step(state, good._replace(actions=jnp.ones(2) / 2)),
            r"^controls\.actions: expected shape \[3\] = \(3\), got \(2,\)$",
        ),
        (
            lambda: K.step(state, good._replace(value=jnp.zeros(W + 1))),
            r"^controls\.value: expected shape \[W\] = \(3\), got \(4,\)$",
        ),
        (
            lambda: K.step(K.State(jnp.zeros(4)), good),
            r"^state\.stack: expected shape \[S, W\] = \(\?, \?\), got \(4,\)$",
        ),
        (lambda: K.step(state, good, jnp.ones(2)), r"^mask: expected shape \[\] = \(\), got \(2,\)$"),
        (
            lambda: K.step(K.State(jnp.zeros((4, W), jnp.int32)), good),
            r"^state\.stack: expected a real floating array .*, got dtype int32$",
        ),
        (
            lambda: K.step(state, good._replace(actions=jnp.asarray([1.5, -0.5, 0.0]))),
            r"^controls\.actions: expected values in \[0, 1\], got 1\.5$",
        ),
        (
            lambda: K.step(state, good._replace(actions=jnp.asarray([0.5, 0.5, 0.5]))),
            r"^controls\.actions: expected probabilities summing to 1, got sum 1\.5$",
        ),
        (
            lambda: K.controls_from_interface(jnp.zeros(W + 2), W),
            r"^raw: expected shape \[\.\.\., 3 \+ W\] = \(\.\.\., 6\), got \(5,\)$",
        ),
        (
            lambda: K.controls_from_interface(jnp.zeros(W + 3, jnp.int32), W),
            r"^raw: expected a real floating array .*, got dtype int32$",
        ),
        (lambda: K.interface_size(0), r"^width: expected a positive integer, got 0$"),
        (lambda: K.read_top(state, 5), r"^k: expected at most S = 4 cells, got 5$"),
    ]
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()


def test_value_checks_are_eager_only():
    # Under jit the actions are traced: shapes are still checked, values are not (no host sync).
    state = K.init_state(4, W)
    bad = K.Controls(jnp.asarray([0.5, 0.5, 0.5]), jnp.zeros(W))
    new, _ = jax.jit(K.step)(state, bad)
    chex.assert_shape(new.stack, (4, W))
    with pytest.raises(ValueError, match=r"^controls\.value: expected shape \[W\]"):
        jax.jit(K.step)(state, bad._replace(value=jnp.zeros(2)))


def test_push_linear_pushes_the_value_as_it_is_and_a_wrong_push_is_named():
    raw = jnp.asarray([[1.0, -2.0, 0.5, -3.0, 2.0, 5e3, -7.0], [0.0, 0.0, 0.0, 1e9, -1e9, 0.0, 0.25]], jnp.float32)
    linear, squashed = K.controls_from_interface(raw, 4, "linear"), K.controls_from_interface(raw, 4)
    np.testing.assert_array_equal(linear.actions, squashed.actions)  # the actions do not change
    np.testing.assert_allclose(squashed.value, jax.nn.sigmoid(raw[:, 3:]), rtol=1e-6)
    np.testing.assert_array_equal(linear.value, [[-3.0, 2.0, 5e3, -7.0], [1e4, -1e4, 0.0, 0.25]])  # bounded at 1e4
    with pytest.raises(ValueError, match=r"push: expected one of \['sigmoid', 'linear'\], got 'tanh'"):
        K.controls_from_interface(raw, 4, "tanh")
