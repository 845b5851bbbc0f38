"""Tests of panm_jax/kernels/ntm.py against tests/reference/ntm_ref.py (float64 loops).

The kernel stores the memory ``[W, N]`` (the transpose of the papers' ``M``: Graves,
Wayne & Danihelka 2014, Neural Turing Machines, see docs/references.md);
the reference keeps the papers' ``[N, W]``, so every comparison transposes.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from panm_jax.kernels import ntm
from panm_jax.kernels.scan import scan
from tests.conftest import x64
from tests.reference import ntm_ref as ref

# Sizes that differ per axis so a transposed axis fails.
N, W, R, H, S = 7, 5, 3, 2, 3
P = ntm.interface_size(W, R, H, S)
TOL = 1e-5


def _random_state(rng, dtype=np.float32) -> ntm.NTMState:
    def dist(*shape):
        x = rng.uniform(size=shape)
        return x / x.sum(-1, keepdims=True)

    return ntm.NTMState(
        memory=jnp.asarray(rng.normal(size=(N, W)).T, dtype),  # [W, N]
        read_weights=jnp.asarray(dist(R, N), dtype),
        write_weights=jnp.asarray(dist(H, N), dtype),
        reads=jnp.zeros((R, W), dtype),
    )


def _step_raw(state, raw, mask=None):
    return ntm.step(state, ntm.controls_from_interface(raw, W, R, H, S), mask)


_jit_step_raw = jax.jit(_step_raw)


@jax.jit
def _rollout(state, raws):
    return scan(_step_raw, state, raws)


# ---- 1. equals the reference --------------------------------------------------------


def test_interface_size_and_split_match_reference():
    assert P == R * (W + S + 3) + H * (3 * W + S + 3)
    raw = np.random.default_rng(0).normal(size=P)
    c = ntm.controls_from_interface(jnp.asarray(raw, jnp.float32), W, R, H, S)
    rh, wh = ref.split_interface(raw, W, R, H, S)
    for r in range(R):
        np.testing.assert_allclose(c.read.key[r], rh[r]["key"], atol=TOL)
        np.testing.assert_allclose(c.read.strength[r], rh[r]["beta"], atol=TOL)
        np.testing.assert_allclose(c.read.gate[r], rh[r]["g"], atol=TOL)
        np.testing.assert_allclose(c.read.shift[r], rh[r]["s"], atol=TOL)
        np.testing.assert_allclose(c.read.sharpen[r], rh[r]["gamma"], atol=TOL)
    for h in range(H):
        np.testing.assert_allclose(c.write.key[h], wh[h]["key"], atol=TOL)
        np.testing.assert_allclose(c.write.strength[h], wh[h]["beta"], atol=TOL)
        np.testing.assert_allclose(c.write.gate[h], wh[h]["g"], atol=TOL)
        np.testing.assert_allclose(c.write.shift[h], wh[h]["s"], atol=TOL)
        np.testing.assert_allclose(c.write.sharpen[h], wh[h]["gamma"], atol=TOL)
        np.testing.assert_allclose(c.erase[h], wh[h]["e"], atol=TOL)
        np.testing.assert_allclose(c.add[h], wh[h]["a"], atol=TOL)


def _max_errors(got: ntm.NTMState, reads, memory, read_w, write_w, want_reads):
    return {
        "memory": float(np.max(np.abs(np.asarray(got.memory).T - memory))),
        "read_weights": float(np.max(np.abs(np.asarray(got.read_weights) - read_w))),
        "write_weights": float(np.max(np.abs(np.asarray(got.write_weights) - write_w))),
        "reads": float(np.max(np.abs(np.asarray(reads) - want_reads))),
    }


def test_one_step_matches_reference():
    rng = np.random.default_rng(1)
    state = _random_state(rng)
    raw = rng.normal(size=P)
    got, reads = _jit_step_raw(state, jnp.asarray(raw, jnp.float32))
    m, rw, ww, rr = ref.step(
        np.asarray(state.memory, np.float64).T,
        np.asarray(state.read_weights, np.float64),
        np.asarray(state.write_weights, np.float64),
        raw,
        W,
        S,
    )
    errors = _max_errors(got, reads, m, rw, ww, rr)
    print("NTM one step, max abs error vs float64 reference:", errors)
    assert max(errors.values()) < TOL, errors


def test_twenty_step_rollout_matches_reference():
    rng = np.random.default_rng(2)
    state = _random_state(rng)
    raws = rng.normal(size=(20, P))
    got, reads = _rollout(state, jnp.asarray(raws, jnp.float32))
    m, rw, ww, rr = ref.rollout(
        np.asarray(state.memory, np.float64).T,
        np.asarray(state.read_weights, np.float64),
        np.asarray(state.write_weights, np.float64),
        raws,
        W,
        S,
    )
    errors = _max_errors(got, reads, m, rw, ww, rr)
    print("NTM 20-step rollout, max abs error vs float64 reference:", errors)
    assert max(errors.values()) < TOL, errors


def test_functions_match_reference_pieces():
    rng = np.random.default_rng(3)
    memory = rng.normal(size=(N, W))
    weights = rng.uniform(size=(H, N))
    weights /= weights.sum(-1, keepdims=True)
    erase = rng.uniform(size=(H, W))
    add = rng.normal(size=(H, W))
    got = ntm.write(
        jnp.asarray(memory.T, jnp.float32),
        jnp.asarray(weights, jnp.float32),
        jnp.asarray(erase, jnp.float32),
        jnp.asarray(add, jnp.float32),
    )
    np.testing.assert_allclose(np.asarray(got).T, ref.write(memory, weights, erase, add), atol=TOL)
    rw = rng.uniform(size=(R, N))
    got_r = ntm.read(jnp.asarray(memory.T, jnp.float32), jnp.asarray(rw, jnp.float32))
    for r in range(R):
        np.testing.assert_allclose(np.asarray(got_r[r]), ref.read(memory, rw[r]), atol=TOL)
    keys = rng.normal(size=(R, W))
    got_s = ntm.similarity(jnp.asarray(keys, jnp.float32), jnp.asarray(memory.T, jnp.float32))
    want_s = [[ref.cosine(keys[r], memory[i]) for i in range(N)] for r in range(R)]
    np.testing.assert_allclose(np.asarray(got_s), want_s, atol=TOL)


# ---- 2. invariants ---------------------------------------------------------------------


def test_weights_are_distributions_and_reads_are_convex_combinations():
    rng = np.random.default_rng(4)
    state = _random_state(rng)
    final, reads = _rollout(state, jnp.asarray(3.0 * rng.normal(size=(20, P)), jnp.float32))
    for weights in (final.read_weights, final.write_weights):
        assert bool(jnp.all((weights >= 0) & (weights <= 1)))
        np.testing.assert_allclose(np.asarray(weights.sum(-1)), 1.0, atol=1e-5)
    # r = w M with w a distribution: each coordinate lies between the min and max over the slots.
    lo, hi = final.memory.min(-1), final.memory.max(-1)
    assert bool(jnp.all((final.reads >= lo - 1e-5) & (final.reads <= hi + 1e-5)))
    assert bool(jnp.all(jnp.isfinite(reads)))


# ---- 3. hand-built scenarios --------------------------------------------------------------


def _location_head(k: int, shift: int, width: int = W) -> ntm.HeadControls:
    """k heads that ignore content (g = 0) and shift by `shift` exactly (one-hot s, gamma = 1)."""
    s = jnp.zeros((k, S)).at[:, shift + (S - 1) // 2].set(1.0)
    return ntm.HeadControls(
        key=jnp.zeros((k, width)), strength=jnp.zeros((k,)), gate=jnp.zeros((k,)), shift=s, sharpen=jnp.ones((k,))
    )


def test_one_hot_head_shifted_by_plus_one_moves_one_slot():
    # g = 0 keeps the previous one-hot weighting; s one-hot at +1 moves it one slot;
    # gamma = 1 leaves it as it is. From the initial slot 0 the heads reach slot 1.
    state = ntm.init_state(N, W, R, H)
    controls = ntm.NTMControls(
        read=_location_head(R, +1), write=_location_head(H, +1), erase=jnp.zeros((H, W)), add=jnp.zeros((H, W))
    )
    new, _ = ntm.step(state, controls)
    np.testing.assert_allclose(np.asarray(new.read_weights), np.tile(np.eye(N)[1], (R, 1)), atol=1e-6)
    np.testing.assert_allclose(np.asarray(new.write_weights), np.tile(np.eye(N)[1], (H, 1)), atol=1e-6)


def test_erase_one_then_add_v_leaves_v():
    # A one-hot write at slot 0 with e = 1 wipes the row (M(0) * (1 - 1*1) = 0), then adds v.
    # The read head, at slot 0 too, reads v back in the same step (reads see M_t).
    state = ntm.init_state(N, W, 1, 1)._replace(
        memory=jnp.asarray(np.random.default_rng(5).normal(size=(W, N)), jnp.float32)
    )
    v = jnp.arange(1.0, W + 1.0)
    controls = ntm.NTMControls(
        read=_location_head(1, 0), write=_location_head(1, 0), erase=jnp.ones((1, W)), add=v[None]
    )
    new, reads = ntm.step(state, controls)
    np.testing.assert_allclose(np.asarray(new.memory[:, 0]), np.asarray(v), atol=1e-6)  # slot 0 is column 0
    np.testing.assert_allclose(np.asarray(new.memory[:, 1:]), np.asarray(state.memory[:, 1:]), atol=1e-6)
    np.testing.assert_allclose(np.asarray(reads[0]), np.asarray(v), atol=1e-6)


def test_content_addressing_finds_the_matching_row():
    # g = 1 uses only content; a key equal to row 4 with a large beta points at row 4;
    # the "stay" shift and gamma = 1 keep it there.
    memory = jnp.asarray(np.random.default_rng(6).normal(size=(N, W)), jnp.float32)
    head = ntm.HeadControls(
        key=memory[4][None],
        strength=jnp.array([300.0]),
        gate=jnp.ones((1,)),
        shift=jnp.array([[0.0, 1.0, 0.0]]),
        sharpen=jnp.ones((1,)),
    )
    w = ntm.address(memory.T, jnp.eye(N)[:1], head)
    assert int(jnp.argmax(w[0])) == 4 and float(w[0, 4]) > 0.99


def test_two_write_heads_erase_multiplicatively_and_add_additively():
    # Both heads on slot 2 with e = 0.5: the row keeps (1 - 0.5)^2 = 0.25 of itself, then gets a1 + a2.
    memory = jnp.ones((W, N))
    weights = jnp.zeros((2, N)).at[:, 2].set(1.0)
    out = ntm.write(memory, weights, jnp.full((2, W), 0.5), jnp.stack([jnp.ones(W), 2 * jnp.ones(W)]))
    np.testing.assert_allclose(np.asarray(out[:, 2]), 0.25 + 3.0, atol=1e-6)
    np.testing.assert_allclose(np.asarray(out[:, 3]), 1.0, atol=1e-6)


# ---- 4. gradients ---------------------------------------------------------------------------


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(7)
    with x64():
        state = _random_state(rng, np.float64)
        raw = jnp.asarray(rng.normal(size=P))

        def f(memory, raw):
            new, reads = _step_raw(state._replace(memory=memory), raw)
            return reads, new.memory

        check_grads(f, (state.memory, raw), order=1, modes=("rev",), atol=1e-4, rtol=1e-4)


def _plain_memory_step(memory, prev_write, prev_read, write_head, read_head, erase, add, keep):
    # memory_step's equations through the public functions, differentiated by autodiff.
    write_weights = ntm.address(memory, prev_write, write_head)
    new_memory = ntm.write(memory, write_weights * keep, erase, add)
    read_weights = ntm.address(new_memory, prev_read, read_head)
    return new_memory, write_weights, read_weights, ntm.read(new_memory, read_weights)


@pytest.mark.parametrize("reads,writes", [(R, H), (1, 1)])
@pytest.mark.parametrize("keep", [1.0, 0.0, 0.37])
def test_memory_step_vjp_equals_autodiff(reads, writes, keep):
    # The hand-written VJP against autodiff through address/write/read, float64, every input's
    # cotangent (keep included), random cotangents on all four outputs.
    rng = np.random.default_rng(17)
    with x64():

        def dist(*shape):
            x = rng.uniform(size=shape)
            return jnp.asarray(x / x.sum(-1, keepdims=True))

        controls = ntm.controls_from_interface(
            jnp.asarray(rng.normal(size=ntm.interface_size(W, reads, writes, S))), W, reads, writes, S
        )
        args = (
            jnp.asarray(rng.normal(size=(W, N))),
            dist(writes, N),
            dist(reads, N),
            controls.write,
            controls.read,
            controls.erase,
            controls.add,
            jnp.asarray(keep),
        )
        out, vjp = jax.vjp(ntm.memory_step, *args)
        out_ref, vjp_ref = jax.vjp(_plain_memory_step, *args)
        chex.assert_trees_all_close(out, out_ref, rtol=1e-12, atol=1e-12)
        cotangents = tuple(jnp.asarray(rng.normal(size=o.shape)) for o in out)
        grads, grads_ref = vjp(cotangents), vjp_ref(cotangents)
        flat, flat_ref = jax.tree_util.tree_leaves(grads), jax.tree_util.tree_leaves(grads_ref)
        assert len(flat) == len(flat_ref) == 16
        chex.assert_trees_all_close(grads, grads_ref, rtol=1e-9, atol=1e-11)


def test_memory_step_vjp_equals_autodiff_at_exact_zero_weights():
    # gate 0, a one-hot previous weighting and a one-hot "stay" shift leave exact zeros in w~
    # (the initial state is one-hot), where sharpen's max(w~, 0) has a kink: the VJP takes
    # the same 1/2 there as jnp.maximum's derivative.
    rng = np.random.default_rng(18)
    with x64():

        def head(k):
            return ntm.HeadControls(
                key=jnp.asarray(rng.normal(size=(k, W))),
                strength=jnp.full((k,), 2.0),
                gate=jnp.zeros((k,)),
                shift=jnp.tile(jnp.array([0.0, 1.0, 0.0]), (k, 1)),
                sharpen=jnp.full((k,), 1.5),
            )

        one_hot = jnp.zeros((N,)).at[0].set(1.0)
        args = (
            jnp.asarray(rng.normal(size=(W, N))),
            jnp.tile(one_hot, (H, 1)),
            jnp.tile(one_hot, (R, 1)),
            head(H),
            head(R),
            jnp.asarray(rng.uniform(size=(H, W))),
            jnp.asarray(rng.normal(size=(H, W))),
            jnp.asarray(1.0),
        )
        out, vjp = jax.vjp(ntm.memory_step, *args)
        assert float(jnp.min(out[1])) < 1e-10  # the write weights are one-hot up to the sharpen's eps
        _, vjp_ref = jax.vjp(_plain_memory_step, *args)
        cotangents = tuple(jnp.asarray(rng.normal(size=o.shape)) for o in out)
        chex.assert_trees_all_close(vjp(cotangents), vjp_ref(cotangents), rtol=1e-9, atol=1e-11)


def test_gradients_finite_at_zero_memory_and_zero_keys():
    state = ntm.init_state(N, W, R, H, memory_init=0.0)
    raw = jnp.zeros((P,))  # zero keys, zero add vectors

    def loss(memory, raw):
        new, reads = _step_raw(state._replace(memory=memory), raw)
        return jnp.sum(reads**2) + jnp.sum(new.memory**2) + jnp.sum(new.read_weights**2)

    grads = jax.grad(loss, argnums=(0, 1))(state.memory, raw)
    chex.assert_shape(grads, [(W, N), (P,)])
    chex.assert_tree_all_finite(grads)


# ---- 5. transforms ---------------------------------------------------------------------------


def test_masked_step_changes_nothing():
    rng = np.random.default_rng(8)
    state = _random_state(rng)
    raw = jnp.asarray(rng.normal(size=P), jnp.float32)
    new, reads = _jit_step_raw(state, raw, jnp.array(0.0))
    chex.assert_trees_all_equal(new, state)
    np.testing.assert_array_equal(np.asarray(reads), 0.0)
    new1, reads1 = _jit_step_raw(state, raw, jnp.array(1.0))
    new_nomask, reads_nomask = _jit_step_raw(state, raw)
    chex.assert_trees_all_close((new1, reads1), (new_nomask, reads_nomask), rtol=1e-7, atol=1e-7)


def test_vmap_equals_python_loop():
    rng = np.random.default_rng(9)
    states = [_random_state(rng) for _ in range(3)]
    raws = jnp.asarray(rng.normal(size=(3, 4, P)), jnp.float32)
    batched_state = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)
    final, reads = jax.jit(jax.vmap(_rollout.__wrapped__))(batched_state, raws)
    for b in range(3):
        f_b, r_b = _rollout(states[b], raws[b])
        # reads and the whole final state (memory, weights, last reads), np.testing's default rtol
        one = jax.tree_util.tree_map(lambda x: x[b], (reads, final))
        chex.assert_trees_all_close(one, (r_b, f_b), rtol=1e-7, atol=1e-6)


def test_second_call_does_not_retrace(trace_counter):
    rng = np.random.default_rng(10)
    counter = trace_counter(chex.assert_max_traces(_step_raw, n=1))  # chex fails at the retrace itself
    run = jax.jit(counter)
    run(_random_state(rng), jnp.asarray(rng.normal(size=P), jnp.float32))
    run(_random_state(rng), jnp.asarray(rng.normal(size=P), jnp.float32))
    assert counter.count == 1


# ---- bad input ------------------------------------------------------------------------------------


def test_init_state_rejects_bad_sizes():
    with pytest.raises(ValueError, match=r"num_slots: expected a positive integer, got 0"):
        ntm.init_state(0, W)
    with pytest.raises(ValueError, match=r"word_size: expected a positive integer, got 2.5"):
        ntm.init_state(N, 2.5)
    with pytest.raises(ValueError, match=r"shift_width: expected an odd positive integer, got 4"):
        ntm.interface_size(W, R, H, 4)


def test_step_names_the_bad_argument():
    state = ntm.init_state(N, W, R, H)
    good = ntm.controls_from_interface(jnp.zeros((P,)), W, R, H, S)
    bad_key = good._replace(read=good.read._replace(key=jnp.zeros((R, W + 1))))
    with pytest.raises(ValueError, match=r"controls.read.key: expected shape \[R, W\] = \(3, 5\), got \(3, 6\)"):
        ntm.step(state, bad_key)
    with pytest.raises(ValueError, match=r"controls.erase: expected shape \[H, W\] = \(2, 5\), got \(5,\)"):
        ntm.step(state, good._replace(erase=jnp.zeros((W,))))
    even = good._replace(write=good.write._replace(shift=jnp.zeros((H, 4))))
    with pytest.raises(ValueError, match=r"controls.write.shift: expected an odd shift width S .* got S = 4"):
        ntm.step(state, even)
    with pytest.raises(ValueError, match=r"state.reads: expected shape \[R, W\] = \(3, 5\), got \(3, 4\)"):
        ntm.step(state._replace(reads=jnp.zeros((R, 4))), good)
    with pytest.raises(ValueError, match=r"state.memory: expected shape \[W, N\], got \(7,\)"):
        ntm.step(state._replace(memory=jnp.zeros((N,))), good)
    with pytest.raises(ValueError, match=r"mask: expected shape \[\] = \(\), got \(2,\)"):
        ntm.step(state, good, jnp.ones((2,)))
    with pytest.raises(
        ValueError, match=rf"raw: expected shape \[..., P\] with P = interface_size\(.*\) = {P}, got \({P - 1},\)"
    ):
        ntm.controls_from_interface(jnp.zeros((P - 1,)), W, R, H, S)


def test_errors_are_raised_at_trace_time_under_jit():
    state = ntm.init_state(N, W, R, H)
    with pytest.raises(ValueError, match=r"controls.add"):
        jax.jit(ntm.step)(
            state, ntm.controls_from_interface(jnp.zeros((P,)), W, R, H, S)._replace(add=jnp.zeros((H, W + 2)))
        )


def test_controls_from_interface_keeps_leading_axes():
    c = ntm.controls_from_interface(jnp.zeros((4, P)), W, R, H, S)
    assert c.read.key.shape == (4, R, W) and c.write.shift.shape == (4, H, S) and c.erase.shape == (4, H, W)
