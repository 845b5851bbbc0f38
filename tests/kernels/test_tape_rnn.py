"""Tests of panm_jax/kernels/tape_rnn.py: the Tape-RNN's continuous tape (Delétang et al. 2023)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from panm_jax.kernels import tape_rnn as K
from panm_jax.kernels.scan import scan
from tests.conftest import x64

S, W, L = 7, 3, 3
STAY, LEFT, RIGHT, JUMP_LEFT, JUMP_RIGHT = np.eye(5)


# ---- a float64 NumPy transcription of the Tape-RNN update ---------------------------------------


def ref_step(tape, actions, value, jump):
    """Write under the head (cell 0), then the five moves, cell by cell, indices mod S."""
    size = len(tape)
    written = tape.copy()
    written[0] = value
    a_stay, a_left, a_right, a_jl, a_jr = actions
    new = np.zeros_like(tape)
    for i in range(size):
        new[i] = (
            a_stay * written[i]
            + a_left * written[(i + 1) % size]  # the tape moved one cell left
            + a_right * written[(i - 1) % size]  # one cell right
            + a_jl * written[(i + jump) % size]  # L cells left
            + a_jr * written[(i - jump) % size]
        )  # L cells right
    return new


def ref_rollout(tape, actions, values, jump):
    tapes = []
    for a, v in zip(actions, values):
        tape = ref_step(tape, a, v, jump)
        tapes.append(tape.copy())
    return np.stack(tapes)


def random_controls(rng, steps, width=W, dtype=np.float64):
    actions = rng.dirichlet(np.ones(5), size=steps)
    values = rng.normal(size=(steps, width))
    return K.Controls(actions=jnp.asarray(actions, dtype), value=jnp.asarray(values, dtype))


def hard(action, value):
    return K.Controls(jnp.asarray(action, jnp.float32), jnp.asarray(value, jnp.float32))


@jax.jit
def rollout(state, controls):
    """Scan ``step``; returns (final state, (reads [T, W], tapes [T, S, W]))."""
    return scan(K.step, state, controls, trace_fn=lambda s: s.tape)


# ---- 1. equals the float64 transcription --------------------------------------------------------


@pytest.mark.parametrize("seed,jump", [(0, 3), (1, 1), (2, 0), (3, 9)])  # 9 > S: taken mod S
def test_matches_reference_float64(seed, jump):
    rng = np.random.default_rng(seed)
    T = 20
    with x64():
        init = rng.normal(size=(S, W))
        controls = random_controls(rng, T)
        state = K.State(jnp.asarray(init), jnp.int32(jump))
        final, (reads, tapes) = rollout(state, controls)
        assert tapes.dtype == jnp.float64
        want = ref_rollout(init, np.asarray(controls.actions), np.asarray(controls.value), jump)
        np.testing.assert_allclose(np.asarray(tapes), want, rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.asarray(reads), want[:, 0], rtol=0, atol=1e-12)
        assert int(final.jump) == jump


# ---- 2. hard actions are a discrete tape ---------------------------------------------------------


def test_write_left_twice_then_jump_right_returns_to_the_start():
    # Write a, b, c on consecutive cells (the tape moving left after each write, so the head
    # advances along the contents), then jump back L = 2 cells: the head is over a again.
    a, b, c = np.eye(W)
    state = K.init_state(S, W, jump_length=2)
    state, r1 = K.step(state, hard(LEFT, a))
    np.testing.assert_array_equal(r1, np.zeros(W))  # the head moved on to an empty cell
    np.testing.assert_array_equal(state.tape[-1], a)  # a is one cell to the head's left (mod S)
    state, _ = K.step(state, hard(LEFT, b))
    state, r3 = K.step(state, hard(JUMP_RIGHT, c))
    np.testing.assert_array_equal(r3, a)
    np.testing.assert_array_equal(state.tape[:3], [a, b, c])  # a under the head, then b, c to its right


def test_write_right_reads_back_in_reverse():
    a, b = np.eye(W)[:2]
    state = K.init_state(S, W)
    state, _ = K.step(state, hard(RIGHT, a))
    state, _ = K.step(state, hard(RIGHT, b))
    state, r = K.step(state, hard(LEFT, np.zeros(W)))  # write 0 over the empty cell, move back
    np.testing.assert_array_equal(r, b)
    state, r = K.step(state, hard(LEFT, b))  # rewrite b, move back again
    np.testing.assert_array_equal(r, a)


def test_moves_wrap_around_the_circular_tape():
    # S single moves, or one jump of S cells, bring the head back to the cell it started on.
    a = np.ones(W)
    state = K.init_state(4, W, jump_length=4)
    state, _ = K.step(state, hard(LEFT, a))
    for _ in range(3):
        state, r = K.step(state, hard(LEFT, np.zeros(W)))
    np.testing.assert_array_equal(r, a)
    state = K.init_state(4, W, jump_length=4)
    state, r = K.step(state, hard(JUMP_LEFT, a))
    np.testing.assert_array_equal(r, a)


def test_hard_actions_follow_a_discrete_turing_tape():
    # A content array C and a head position p: each action writes C[p] = w, then moves p by
    # (0, +1, -1, +L, -L). The kernel's tape is C seen from the head: T[i] = C[(p + i) mod S].
    rng = np.random.default_rng(4)
    state = K.init_state(S, W, jump_length=L)
    contents, head = np.zeros((S, W), np.float32), 0
    step = jax.jit(K.step)
    for _ in range(60):
        k = int(rng.integers(5))
        value = rng.normal(size=W).astype(np.float32)
        state, read = step(state, hard(np.eye(5)[k], value))
        contents[head] = value
        head = (head + (0, 1, -1, L, -L)[k]) % S
        want = contents[(head + np.arange(S)) % S]
        np.testing.assert_array_equal(np.asarray(state.tape), want)
        np.testing.assert_array_equal(np.asarray(read), want[0])


def test_soft_actions_mix_the_five_discrete_results():
    rng = np.random.default_rng(5)
    state = K.State(jnp.asarray(rng.normal(size=(S, W)), jnp.float32), jnp.int32(L))
    value = jnp.asarray(rng.normal(size=W), jnp.float32)
    a = jnp.asarray([0.1, 0.2, 0.3, 0.15, 0.25], jnp.float32)
    soft, _ = K.step(state, K.Controls(a, value))
    results = [K.step(state, K.Controls(jnp.asarray(e, jnp.float32), value))[0].tape for e in np.eye(5)]
    np.testing.assert_allclose(soft.tape, sum(float(a[k]) * results[k] for k in range(5)), atol=1e-6)


# ---- 3. invariants ----------------------------------------------------------------------------


def test_writing_back_the_read_and_staying_leaves_the_state_unchanged():
    rng = np.random.default_rng(6)
    state = K.State(jnp.asarray(rng.normal(size=(S, W)), jnp.float32), jnp.int32(L))
    new, read = jax.jit(K.step)(state, K.Controls(jnp.asarray(STAY, jnp.float32), state.tape[0]))
    np.testing.assert_array_equal(new.tape, state.tape)
    np.testing.assert_array_equal(read, state.tape[0])


def test_hard_moves_permute_the_written_tape():
    # Each hard action is a permutation of the cells after the write: no cell is lost or mixed.
    rng = np.random.default_rng(7)
    state = K.State(jnp.asarray(rng.normal(size=(S, W)), jnp.float32), jnp.int32(L))
    value = jnp.asarray(rng.normal(size=W), jnp.float32)
    written = np.asarray(state.tape).copy()
    written[0] = np.asarray(value)
    for e in np.eye(5):
        new, _ = K.step(state, K.Controls(jnp.asarray(e, jnp.float32), value))
        np.testing.assert_array_equal(np.sort(np.asarray(new.tape), axis=0), np.sort(written, axis=0))


class TestMaskedStep(chex.TestCase):
    # Jitted and eager: eagerly the mask and the controls are concrete (and the value checks run), under jit
    # they are traced; the masked step must be the same no-op both ways.

    @chex.variants(with_jit=True, without_jit=True)
    def test_masked_step_leaves_the_state_unchanged_and_reads_zero(self):
        step = self.variant(K.step)
        rng = np.random.default_rng(8)
        state = K.State(jnp.asarray(rng.normal(size=(S, W)), jnp.float32), jnp.int32(L))
        controls = hard(LEFT, np.ones(W))
        new, read = step(state, controls, jnp.bool_(False))
        chex.assert_trees_all_equal(new, state)  # the tape and the jump length
        assert int(new.jump) == L
        np.testing.assert_array_equal(read, np.zeros(W))
        new, _ = step(state, controls, jnp.bool_(True))
        np.testing.assert_array_equal(new.tape[-1], np.ones(W))  # an unmasked step does write and move


def test_masked_scan_equals_the_unmasked_prefix():
    rng = np.random.default_rng(9)
    T, k = 12, 5
    controls = random_controls(rng, T, dtype=np.float32)
    init = K.init_state(S, W, jump_length=L)
    mask = jnp.arange(T) < k
    prefix = jax.tree_util.tree_map(lambda x: x[:k], controls)
    want, _ = rollout(init, prefix)
    got, reads = jax.lax.scan(lambda s, cm: K.step(s, cm[0], cm[1]), init, (controls, mask))
    # equal up to rounding: the two scans are compiled separately (XLA may fuse differently)
    np.testing.assert_allclose(got.tape, want.tape, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(reads[k:], np.zeros((T - k, W)))
    got2, _ = jax.jit(lambda c, m: scan(K.step, init, c, m))(controls, mask)
    np.testing.assert_allclose(got2.tape, want.tape, rtol=1e-6, atol=1e-7)


# ---- 4. gradients -----------------------------------------------------------------------------


def test_check_grads_through_a_few_steps():
    rng = np.random.default_rng(10)
    with x64():
        init = jnp.asarray(rng.normal(size=(S, W)))
        controls = random_controls(rng, 5)

        def f(init, controls):
            final, (reads, _) = rollout(K.State(init, jnp.int32(L)), controls)
            return jnp.sum(jnp.sin(reads)) + jnp.sum(final.tape**2)

        check_grads(jax.jit(f), (init, controls), order=1, modes=["fwd", "rev"], eps=1e-6, atol=1e-7, rtol=1e-7)


def test_gradient_through_the_interface_is_finite_and_nonzero():
    raw = jax.random.normal(jax.random.key(1), (8, K.interface_size(W)))

    def loss(raw):
        _, (reads, _) = rollout(K.init_state(S, W, jump_length=L), K.controls_from_interface(raw, W))
        return jnp.sum(reads[-1])

    g = jax.jit(jax.grad(loss))(raw)
    chex.assert_shape(g, raw.shape)
    chex.assert_tree_all_finite(g)
    assert float(jnp.abs(g).sum()) > 0


# ---- 5. jit / vmap / scan, no retrace ---------------------------------------------------------


def test_vmap_over_examples_with_different_jump_lengths():
    rng = np.random.default_rng(11)
    B, T = 3, 9
    jumps = jnp.asarray([1, 2, 5], jnp.int32)
    init = jax.vmap(lambda j: K.init_state(S, W, jump_length=j))(jumps)
    chex.assert_shape([init.tape, init.jump], [(B, S, W), (B,)])
    raw = jnp.asarray(rng.normal(size=(B, T, K.interface_size(W))), jnp.float32)
    controls = K.controls_from_interface(raw, W)  # leading [B, T] axes kept
    final, (reads, _) = jax.vmap(rollout)(init, controls)
    for b in range(B):
        want = ref_rollout(
            np.zeros((S, W)),
            np.asarray(controls.actions[b], np.float64),
            np.asarray(controls.value[b], np.float64),
            int(jumps[b]),
        )
        chex.assert_trees_all_close((final.tape[b], reads[b]), (want[-1], want[:, 0]), rtol=1e-7, atol=1e-5)


def test_no_retrace_for_new_values_or_jump_lengths(trace_counter):
    counted = trace_counter(chex.assert_max_traces(K.step, n=1))  # chex fails at the retrace itself
    f = jax.jit(counted)
    rng = np.random.default_rng(12)
    for jump in (1, 2, 4):
        state = K.init_state(S, W, jump_length=jump)
        c = random_controls(rng, 1, dtype=np.float32)
        state, _ = f(state, K.Controls(c.actions[0], c.value[0]))
    assert counted.count == 1


def test_bfloat16_state_keeps_its_dtype():
    state = K.init_state(S, W, jnp.bfloat16)
    new, read = jax.jit(K.step)(state, hard(STAY, np.full(W, 0.5)))
    assert new.tape.dtype == jnp.bfloat16 and read.dtype == jnp.bfloat16 and new.jump.dtype == jnp.int32
    np.testing.assert_array_equal(np.asarray(read, np.float32), np.full(W, 0.5))


# ---- 6. interface and entry checks ------------------------------------------------------------


def test_controls_from_interface():
    raw = jnp.arange(2 * K.interface_size(W), dtype=jnp.float32).reshape(2, -1) / 4 - 1
    c = K.controls_from_interface(raw, W)
    assert K.interface_size(W) == 5 + W and K.Controls._fields == ("actions", "value")
    assert K.ACTIONS == ("write_stay", "write_left", "write_right", "jump_left", "jump_right")
    np.testing.assert_allclose(c.actions, jax.nn.softmax(raw[:, :5], axis=-1), rtol=1e-6)
    np.testing.assert_allclose(c.actions.sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(c.value, np.tanh(np.asarray(raw[:, 5:])), rtol=1e-6)


def test_bad_arguments_raise_named_errors():
    state = K.init_state(4, W)
    good = K.Controls(jnp.full(5, 0.2), jnp.zeros(W))
    cases = [
        (lambda: K.init_state(0, W), r"^size: expected a positive integer, got 0$"),
        (lambda: K.init_state(4, -1), r"^width: expected a positive integer, got -1$"),
        (lambda: K.init_state(4, W, jnp.complex64), r"^dtype: expected a real floating dtype .*, got complex64$"),
        (lambda: K.init_state(4, W, jump_length=-1), r"^jump_length: expected a non-negative integer, got -1$"),
        (lambda: K.init_state(4, W, jump_length=True), r"^jump_length: expected a non-negative integer, got True$"),
        (lambda: K.init_state(4, W, jump_length=1.5), r"^jump_length: expected a non-negative integer or an integer"),
        (
            lambda: K.init_state(4, W, jump_length=jnp.ones(2, jnp.int32)),
            r"^jump_length: expected shape \[\] = \(\), got \(2,\)$",
        ),
        (
            lambda: K.init_state(4, W, jump_length=jnp.int32(-2)),
            r"^jump_length: expected values in \[0, inf\], got -2$",
        ),
        (
            lambda: K.step(state, good._replace(actions=jnp.ones(3) / 3)),
            r"^controls\.actions: expected shape \[5\] = \(5\), got \(3,\)$",
        ),
        (
            lambda: K.step(state, good._replace(value=jnp.zeros(2))),
            r"^controls\.value: expected shape \[W\] = \(3\), got \(2,\)$",
        ),
        (
            lambda: K.step(state._replace(tape=jnp.zeros(4)), good),
            r"^state\.tape: expected shape \[S, W\] = \(\?, \?\), got \(4,\)$",
        ),
        (
            lambda: K.step(state._replace(jump=jnp.float32(1)), good),
            r"^state\.jump: expected an integer array, got dtype float32$",
        ),
        (
            lambda: K.step(state._replace(jump=jnp.ones(1, jnp.int32)), good),
            r"^state\.jump: expected shape \[\] = \(\), got \(1,\)$",
        ),
        (lambda: K.step(state, good, jnp.ones(2)), r"^mask: expected shape \[\] = \(\), got \(2,\)$"),
        (
            lambda: K.step(state, good._replace(value=jnp.zeros(W, jnp.int32))),
            r"^controls\.value: expected a real floating array .*, got dtype int32$",
        ),
        (
            lambda: K.step(state, good._replace(actions=jnp.asarray([2.0, -1.0, 0, 0, 0]))),
            r"^controls\.actions: expected values in \[0, 1\], got 2$",
        ),
        (
            lambda: K.step(state, good._replace(actions=jnp.full(5, 0.1))),
            r"^controls\.actions: expected probabilities summing to 1, got sum 0\.5$",
        ),
        (
            lambda: K.controls_from_interface(jnp.zeros(W), W),
            r"^raw: expected shape \[\.\.\., 5 \+ W\] = \(\.\.\., 8\), got \(3,\)$",
        ),
        (
            lambda: K.controls_from_interface(jnp.zeros(5 + W, jnp.int32), W),
            r"^raw: expected a real floating array .*, got dtype int32$",
        ),
    ]
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()


def test_value_checks_are_eager_only():
    state = K.init_state(4, W)
    bad = K.Controls(jnp.full(5, 0.1), jnp.zeros(W))
    new, _ = jax.jit(K.step)(state, bad)
    chex.assert_shape(new.tape, (4, W))
    with pytest.raises(ValueError, match=r"^state\.jump: expected an integer array"):
        jax.jit(K.step)(state._replace(jump=jnp.float32(1)), bad)


def test_write_linear_writes_the_value_as_it_is_and_a_wrong_write_is_named():
    raw = jnp.asarray([[1.0, -2.0, 0.5, 0.0, 3.0, -3.0, 2.0, 5e3], [0.0] * 5 + [1e9, -1e9, 0.25]], jnp.float32)
    linear, squashed = K.controls_from_interface(raw, 3, "linear"), K.controls_from_interface(raw, 3)
    np.testing.assert_array_equal(linear.actions, squashed.actions)  # the actions do not change
    np.testing.assert_allclose(squashed.value, np.tanh(np.clip(np.asarray(raw[:, 5:]), -1e4, 1e4)), rtol=1e-6)
    np.testing.assert_array_equal(linear.value, [[-3.0, 2.0, 5e3], [1e4, -1e4, 0.25]])  # bounded at 1e4
    with pytest.raises(ValueError, match=r"write: expected one of \['tanh', 'linear'\], got 'relu'"):
        K.controls_from_interface(raw, 3, "relu")
