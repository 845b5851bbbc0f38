"""Tests for panm_jax/kernels/dnc.py: reference, invariants, scenarios, gradients, transforms.

Sizes differ per axis (N = 7, W = 5, R = 3, and H = 1, 2, 3 write heads) so that a
transposed axis fails. The reference (tests/reference/dnc_ref.py) is a float64
NumPy transcription of Graves et al. 2016's DNC equations with DeepMind's ``dnc``
extension to several write heads; the kernel runs in float32 on the same
(float32-rounded) inputs. Run with ``-s`` to see the max abs errors of the
reference comparisons.
"""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from panm_jax.kernels import dnc
from panm_jax.kernels import scan as scan_lib
from tests.conftest import x64
from tests.reference import dnc_ref

N, W, R = 7, 5, 3
P = dnc.interface_size(W, R)
TOL = 1e-5  # float32 kernel vs float64 reference, max abs error over every field
INV_TOL = 1e-6  # float32 round-off allowed on the invariants' bounds

# ---------------------------------------------------------------- module-level helpers


def _step_fn(state, controls, mask=None, read_previous_memory=False):
    return dnc.step(state, controls, mask, read_previous_memory=read_previous_memory)


_step = jax.jit(_step_fn, static_argnames=("read_previous_memory",))


def _rollout_raw(state, raw, read_previous_memory=False):
    """Scan ``step`` over raw interface vectors ``[T, P]``; trace every state."""
    r, w = state.reads.shape
    h = state.write_weights.shape[0]

    def body(s, x):
        controls = dnc.controls_from_interface(x, word_size=w, num_reads=r, num_writes=h)
        return dnc.step(s, controls, read_previous_memory=read_previous_memory)

    (final, (reads, states)) = scan_lib.scan(body, state, raw, trace_fn=lambda s: s)
    return final, reads, states


_rollout = jax.jit(_rollout_raw, static_argnames=("read_previous_memory",))


def _random_raw(rng, *lead, r=R, w=W, h=1, scale=2.0):
    """Raw interface vectors, float32 (the reference upcasts the same values)."""
    size = dnc.interface_size(word_size=w, num_reads=r, num_writes=h)
    return (scale * rng.normal(size=(*lead, size))).astype(np.float32)


def _random_link(rng, n):
    link = rng.uniform(size=(n, n)) * (1.0 - np.eye(n))
    return link / (max(link.sum(0).max(), link.sum(1).max()) / rng.uniform(0.5, 1.0))


def _random_state(rng, n=N, w=W, r=R, h=1, dtype=np.float32) -> dnc.DNCState:
    """A valid state: usage in [0, 1], weights summing to <= 1, valid link matrices."""
    state = dnc.DNCState(
        memory=rng.normal(size=(n, w)),
        usage=rng.uniform(size=n),
        link=np.stack([_random_link(rng, n) for _ in range(h)]),
        precedence=rng.dirichlet(np.ones(n), size=h) * rng.uniform(size=(h, 1)),
        read_weights=rng.dirichlet(np.ones(n), size=r) * rng.uniform(size=(r, 1)),
        write_weights=rng.dirichlet(np.ones(n), size=h) * rng.uniform(size=(h, 1)),
        reads=rng.normal(size=(r, w)),
    )
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype), state)


def _ref_state(state: dnc.DNCState) -> dict:
    return {k: np.asarray(v, np.float64) for k, v in state._asdict().items()}


def _max_errors(state: dnc.DNCState, ref: dict) -> dict[str, float]:
    return {k: float(np.max(np.abs(np.asarray(v, np.float64) - ref[k]))) for k, v in state._asdict().items()}


def _modes(*per_head, h=1):
    """Read modes ``[R, 2H + 1]`` from one-hot mode names per read head."""
    names = [f"b{k}" for k in range(h)] + ["c"] + [f"f{k}" for k in range(h)]
    return jnp.stack([jnp.zeros(2 * h + 1).at[names.index(m)].set(1.0) for m in per_head])


def _controls(h=1, **overrides) -> dnc.DNCControls:
    """Hand-built activated controls: by default no write, content reads, nothing freed."""
    base = dict(
        read_keys=jnp.zeros((R, W)),
        read_strengths=jnp.ones((R,)),
        write_key=jnp.zeros((h, W)),
        write_strength=jnp.ones((h,)),
        erase=jnp.ones((h, W)),
        write_vector=jnp.zeros((h, W)),
        free_gates=jnp.zeros((R,)),
        allocation_gate=jnp.ones((h,)),
        write_gate=jnp.zeros((h,)),
        read_modes=_modes("c", "c", "c", h=h),
    )
    base.update({k: jnp.asarray(v, jnp.float32) for k, v in overrides.items()})
    return dnc.DNCControls(**base)


def _allocating_write(*vectors) -> dnc.DNCControls:
    """Head h writes ``vectors[h]`` wherever its allocation points (g^a = g^w = 1, full erase)."""
    h = len(vectors)
    return _controls(h, write_vector=jnp.stack(vectors), allocation_gate=jnp.ones(h), write_gate=jnp.ones(h))


def _one_hot(i, n=N):
    return jnp.zeros((n,)).at[i].set(1.0)


# ---------------------------------------------------------------- 1. equals the reference


@pytest.mark.parametrize("h", [1, 2, 3])
def test_interface_size_formula(h):
    # R W + 3 H W + 3 H + R (2H + 3); for H = 1 Graves et al. 2016's W R + 3 W + 5 R + 3.
    assert dnc.interface_size(W, R, h) == R * W + 3 * h * W + 3 * h + R * (2 * h + 3) == dnc_ref.interface_size(R, W, h)
    assert dnc.interface_size(W, R) == 3 * 5 + 3 * 5 + 5 * 3 + 3 == 48 == P


@pytest.mark.parametrize(("h", "layout"), [(1, "graves2016"), (1, "table1"), (2, "graves2016"), (3, "table1")])
def test_controls_from_interface_matches_reference_and_keeps_batch_axes(h, layout):
    rng = np.random.default_rng(0)
    raw = _random_raw(rng, 4, 2, h=h)  # [B, T, P]
    controls = dnc.controls_from_interface(raw, W, R, h, layout=layout)
    for b in range(4):
        for t in range(2):
            ref = dnc_ref.controls_from_interface(raw[b, t].astype(np.float64), R, W, h, layout)
            for name, value in controls._asdict().items():
                np.testing.assert_allclose(value[b, t], ref[name], atol=1e-6, err_msg=name)
    assert controls.read_keys.shape == (4, 2, R, W)
    assert controls.read_modes.shape == (4, 2, R, 2 * h + 1)
    assert controls.write_key.shape == controls.erase.shape == controls.write_vector.shape == (4, 2, h, W)
    assert controls.write_strength.shape == controls.allocation_gate.shape == controls.write_gate.shape == (4, 2, h)
    assert bool(jnp.all(controls.read_strengths >= 1.0)) and bool(jnp.all(controls.write_strength >= 1.0))
    np.testing.assert_allclose(controls.read_modes.sum(-1), 1.0, atol=1e-6)


def test_the_two_layouts_differ_only_in_where_the_read_modes_are():
    # table1 puts the R (2H + 1) mode logits right after the R W + R read numbers;
    # moving that block to the end gives the graves2016 vector with the same controls.
    rng = np.random.default_rng(13)
    for h in (1, 2):
        raw = _random_raw(rng, h=h)
        head, modes = R * W + R, R * (2 * h + 1)
        as_graves = np.concatenate([raw[:head], raw[head + modes :], raw[head : head + modes]])
        table1 = dnc.controls_from_interface(raw, W, R, h, layout="table1")
        graves = dnc.controls_from_interface(as_graves, W, R, h)
        for name, a, b in zip(dnc.DNCControls._fields, table1, graves):
            np.testing.assert_array_equal(a, b, err_msg=name)
        assert not np.allclose(table1.read_modes, dnc.controls_from_interface(raw, W, R, h).read_modes)


@pytest.mark.parametrize(("h", "read_previous_memory"), [(1, False), (1, True), (2, False), (2, True), (3, False)])
def test_one_step_matches_reference(h, read_previous_memory):
    rng = np.random.default_rng(1)
    errors = {}
    for _ in range(3):
        state = _random_state(rng, h=h)
        raw = _random_raw(rng, h=h)
        controls = dnc.controls_from_interface(raw, W, R, h)
        new_state, reads = _step(state, controls, read_previous_memory=read_previous_memory)
        ref_state, ref_reads = dnc_ref.step(
            _ref_state(state), dnc_ref.controls_from_interface(raw, R, W, h), read_previous_memory
        )
        for k, v in _max_errors(new_state, ref_state).items():
            errors[k] = max(errors.get(k, 0.0), v)
        np.testing.assert_array_equal(reads, new_state.reads)
        errors["step_reads"] = max(errors.get("step_reads", 0.0), float(np.max(np.abs(reads - ref_reads))))
    print(f"\none step (H={h}, read_previous_memory={read_previous_memory}) max abs error:", errors)
    assert max(errors.values()) < TOL, errors


@pytest.mark.parametrize(("h", "read_previous_memory"), [(1, False), (1, True), (2, False), (3, False)])
def test_rollout_matches_reference(h, read_previous_memory):
    # Starts from a random valid state, whose slots all differ. From the empty
    # memory see the float64 test below: there, untouched slots get usages that
    # differ by ~1e-12 (the allocation's u^k factors), below float32 resolution, so a
    # float32 sort sees exact ties where float64 sees an order, and the write goes to
    # another (equally unused) slot: the allocation is discontinuous at ties.
    rng = np.random.default_rng(2)
    T = 30
    state = _random_state(rng, h=h)
    raw = _random_raw(rng, T, h=h)
    final, reads, _ = _rollout(state, raw, read_previous_memory=read_previous_memory)
    ref_final, ref_reads = dnc_ref.rollout(
        _ref_state(state),
        [dnc_ref.controls_from_interface(raw[t], R, W, h) for t in range(T)],
        read_previous_memory,
    )
    errors = _max_errors(final, ref_final)
    errors["reads_over_time"] = float(np.max(np.abs(np.asarray(reads, np.float64) - ref_reads)))
    print(f"\n{T}-step rollout (H={h}, read_previous_memory={read_previous_memory}) max abs error:", errors)
    assert max(errors.values()) < TOL, errors


@pytest.mark.parametrize("h", [1, 2, 3])
def test_rollout_from_empty_memory_matches_reference_in_float64(h):
    # The kernel in float64 resolves the near-ties of the empty memory (see above)
    # as the float64 reference does, so it writes to the same slots step for step.
    rng = np.random.default_rng(2)
    T = 30
    raw = _random_raw(rng, T, h=h)
    with x64():
        final, reads, _ = jax.jit(_rollout_raw)(
            dnc.init_state(N, W, R, h, dtype=jnp.float64), jnp.asarray(raw, jnp.float64)
        )
        assert final.memory.dtype == jnp.float64
    ref_final, ref_reads = dnc_ref.rollout(
        dnc_ref.init_state(N, W, R, h), [dnc_ref.controls_from_interface(raw[t], R, W, h) for t in range(T)]
    )
    errors = _max_errors(final, ref_final)
    errors["reads_over_time"] = float(np.max(np.abs(np.asarray(reads) - ref_reads)))
    print(f"\n{T}-step rollout from empty memory (H={h}), float64 kernel, max abs error:", errors)
    assert max(errors.values()) < 1e-12, errors


def test_allocation_matches_reference_with_ties_and_bounds():
    # Ties (equal usage), usage exactly 0 and exactly 1, and random values.
    cases = [
        np.zeros(N),
        np.ones(N),
        np.full(N, 0.5),
        np.array([0.3, 0.0, 0.3, 1.0, 0.0, 0.7, 0.3]),
        np.random.default_rng(3).uniform(size=N),
    ]
    for u in cases:
        u32 = u.astype(np.float32)
        a = dnc.allocation(jnp.asarray(u32))
        np.testing.assert_allclose(a, dnc_ref.allocation(u32.astype(np.float64)), atol=1e-6)
        # sum_j a[phi[j]] telescopes to 1 - prod_i u[i].
        np.testing.assert_allclose(a.sum(), 1.0 - np.prod(u32.astype(np.float64)), atol=1e-6)


def test_usage_is_exactly_one_after_a_full_write_and_never_above_one():
    # u + (1 - u) w: exactly 1 at w = 1 (psi = 1), exactly u at w = 0, never above 1,
    # for float32 u spread over [0, 1] with 0, 1, the values just below 1 and the
    # smallest ones. (The paper's u + w - u w rounds to 1 - 2^-24 for ~20 % of them.)
    rng = np.random.default_rng(14)
    below_one = 1.0 - np.arange(1, 2001, dtype=np.float64) * 2.0**-24
    tiny = np.ldexp(1.0, -np.arange(1, 126))
    u = np.concatenate([[0.0, 1.0], below_one, tiny, rng.uniform(size=100_000)]).astype(np.float32)
    ones, zeros = np.ones_like(u), np.zeros_like(u)
    full = np.asarray(dnc.usage(jnp.asarray(u), jnp.asarray(ones), jnp.asarray(ones)))
    np.testing.assert_array_equal(full, ones)
    assert np.mean((u + ones - u * ones) != 1.0) > 0.1  # what the rearrangement fixes
    np.testing.assert_array_equal(np.asarray(dnc.usage(jnp.asarray(u), jnp.asarray(zeros), jnp.asarray(ones))), u)
    w = rng.uniform(size=u.shape).astype(np.float32)
    w[:1000] = 1.0 - rng.uniform(size=1000).astype(np.float32) * 2.0**-20  # w near 1 too
    assert np.all(np.asarray(dnc.usage(jnp.asarray(u), jnp.asarray(w), jnp.asarray(ones))) <= 1.0)
    # Several write heads: a full write by any head gives exactly 1.
    heads = np.stack([w, ones, np.flip(w)])
    for order in ([0, 1, 2], [1, 0, 2], [2, 0, 1]):
        out = np.asarray(dnc.usage(jnp.asarray(u), jnp.asarray(heads[order]), jnp.asarray(ones)))
        np.testing.assert_array_equal(out, ones)


def test_several_heads_usage_and_allocation_equal_their_definitions():
    # usage: u + (1 - u)(1 - prod_h (1 - w_h)) (DeepMind's aggregate) to rounding;
    # write_allocations: head h sorts the usage raised by heads 1..h-1.
    with x64():
        rng = np.random.default_rng(15)
        u = jnp.asarray(rng.uniform(size=N))
        w = jnp.asarray(rng.dirichlet(np.ones(N), size=3) * 0.9)
        psi = jnp.asarray(rng.uniform(size=N))
        want = (u + (1 - u) * (1 - jnp.prod(1 - w, axis=0))) * psi
        np.testing.assert_allclose(dnc.usage(u, w, psi), want, rtol=1e-15, atol=1e-15)
        np.testing.assert_array_equal(dnc.usage(u, w[0], psi), dnc.usage(u, w[:1], psi))
        g_a, g_w = jnp.asarray([0.9, 0.6, 0.8]), jnp.asarray([0.7, 1.0, 0.5])
        allocations = dnc.write_allocations(u, g_a, g_w)
        simulated = np.asarray(u)
        for h in range(3):
            np.testing.assert_allclose(allocations[h], dnc_ref.allocation(simulated), atol=1e-15)
            simulated = simulated + (1 - simulated) * float(g_a[h] * g_w[h]) * np.asarray(allocations[h])


# ---------------------------------------------------------------- 2. invariants


def _assert_invariants(states: dnc.DNCState, reads: jax.Array) -> None:
    """Check every invariant on states stacked over any leading axes."""
    s = jax.tree_util.tree_map(lambda x: np.asarray(x, np.float64), states)
    chex.assert_tree_all_finite(s)  # names the non-finite fields
    assert np.all(s.usage >= -INV_TOL) and np.all(s.usage <= 1 + INV_TOL), "usage in [0, 1]"
    assert np.all(s.write_weights >= -INV_TOL) and np.all(s.write_weights.sum(-1) <= 1 + INV_TOL)
    assert np.all(s.read_weights >= -INV_TOL) and np.all(s.read_weights.sum(-1) <= 1 + INV_TOL)
    assert np.all(s.precedence >= -INV_TOL) and np.all(s.precedence.sum(-1) <= 1 + INV_TOL)
    assert np.all(s.link >= -INV_TOL) and np.all(s.link <= 1 + INV_TOL), "link in [0, 1]"
    assert np.all(np.diagonal(s.link, axis1=-2, axis2=-1) == 0.0), "link diagonal is exactly 0"
    assert np.all(s.link.sum(-1) <= 1 + INV_TOL) and np.all(s.link.sum(-2) <= 1 + INV_TOL)
    # r[i, k] = sum_n w[i, n] M[n, k] with w >= 0, sum w <= 1: |r[i, k]| <= max_n |M[n, k]|.
    bound = np.max(np.abs(s.memory), axis=-2)[..., None, :]  # [..., 1, W]
    assert np.all(np.abs(np.asarray(reads)) <= bound + INV_TOL), "reads bounded by memory"


@pytest.mark.parametrize("h", [1, 3])
def test_invariants_hold_along_a_random_rollout(h):
    rng = np.random.default_rng(4)
    _, reads, states = _rollout(dnc.init_state(N, W, R, h), _random_raw(rng, 30, h=h))
    _assert_invariants(states, reads)


def test_invariants_hold_from_random_valid_states():
    rng = np.random.default_rng(5)
    for h in (1, 1, 2):
        new_state, reads = _step(_random_state(rng, h=h), dnc.controls_from_interface(_random_raw(rng, h=h), W, R, h))
        _assert_invariants(new_state, reads)


def test_ten_thousand_step_rollout_stays_finite():
    # One jit of a 10,000-step scan with random controls at small N; also exercises
    # usage driven to 0 and 1 and repeated near-ties in the sort.
    n, w, r, steps = 8, 4, 2, 10_000
    raw = jax.random.normal(jax.random.PRNGKey(0), (steps, dnc.interface_size(word_size=w, num_reads=r))) * 3.0

    @jax.jit
    def run(raw):
        def body(s, x):
            return dnc.step(s, dnc.controls_from_interface(x, word_size=w, num_reads=r))

        return scan_lib.scan(body, dnc.init_state(n, w, r), raw)

    final, reads = run(raw)
    assert bool(jnp.all(jnp.isfinite(reads))), "reads over 10,000 steps"
    _assert_invariants(final, final.reads)


# ---------------------------------------------------------------- 3. hand-built scenarios

A_VEC = jnp.array([1.0, 0.0, 0.0, 0.0, 0.0])
B_VEC = jnp.array([0.0, 2.0, 0.0, 0.0, 0.0])
C_VEC = jnp.array([0.0, 0.0, 3.0, 0.0, 0.0])


def test_empty_memory_allocates_slot_0_then_slot_1():
    # Empty memory: all usages are 0 (a tie); the stable sort puts slot 0 first, so
    # a[0] = (1 - 0) * 1 = 1 and every later slot gets (1 - 0) * 0 = 0. The next
    # step's usage is u = 0 + w^w_{t-1} = e_0, so slot 0 is full and the first free
    # slot in index order is slot 1.
    state = dnc.init_state(N, W, R)
    state, _ = _step(state, _allocating_write(A_VEC))
    np.testing.assert_allclose(state.write_weights, _one_hot(0)[None], atol=0)
    np.testing.assert_allclose(state.memory[0], A_VEC, atol=0)
    state, _ = _step(state, _allocating_write(B_VEC))
    np.testing.assert_allclose(state.usage, _one_hot(0), atol=0)
    np.testing.assert_allclose(state.write_weights, _one_hot(1)[None], atol=0)
    np.testing.assert_allclose(state.memory[1], B_VEC, atol=0)


def _write_a_b_c() -> dnc.DNCState:
    state = dnc.init_state(N, W, R)
    for vector in (A_VEC, B_VEC, C_VEC):
        state, _ = _step(state, _allocating_write(vector))
    return state


def test_forward_from_a_reads_b_and_backward_from_c_reads_b():
    # a, b, c land in slots 0, 1, 2 (allocation in usage order). When slot 1 is
    # written, p_{t-1} = e_0, so L[1, 0] = 1; when slot 2 is written, L[2, 1] = 1
    # and L[1, 0] keeps 1 (1 - w[1] - w[0] = 1). Forward from a one-hot read on
    # slot 0 is L e_0 = column 0 = e_1, i.e. b; backward from slot 2 is L^T e_2 =
    # row 2 = e_1, i.e. b again. The step writes nothing (g^w = 0), so L is kept.
    state = _write_a_b_c()
    np.testing.assert_allclose(state.memory[:3], jnp.stack([A_VEC, B_VEC, C_VEC]), atol=0)
    read_on = jnp.stack([_one_hot(0), _one_hot(2), _one_hot(1)])  # heads read a, c, b
    state = state._replace(read_weights=read_on)
    modes = jnp.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # forward, backward, forward
    np.testing.assert_array_equal(modes, _modes("f0", "b0", "f0"))
    state, reads = _step(state, _controls(read_modes=modes))
    np.testing.assert_allclose(state.read_weights, jnp.stack([_one_hot(1), _one_hot(1), _one_hot(2)]), atol=0)
    np.testing.assert_allclose(reads, jnp.stack([B_VEC, B_VEC, C_VEC]), atol=0)


def test_freeing_a_read_slot_makes_it_allocatable_again():
    # Fill all N slots (N allocating writes), then one more step: u = 1 everywhere,
    # so allocation is 0 everywhere (each a[phi[j]] has a factor 1 - u = 0) and an
    # allocating write writes nothing. If instead head 1 last read slot 3 and its
    # free gate is 1, psi[3] = 1 - 1 * 1 = 0, so u[3] = 0 and slot 3 (the only
    # free one) gets allocation 1: the write goes to slot 3.
    state = dnc.init_state(N, W, R)
    for i in range(N):
        state, _ = _step(state, _allocating_write(jnp.full((W,), float(i + 1))))
    state = state._replace(read_weights=jnp.zeros((R, N)).at[1, 3].set(1.0))
    new_vector = jnp.full((W,), -5.0)

    kept, _ = _step(state, _allocating_write(new_vector))
    np.testing.assert_allclose(kept.usage, jnp.ones(N), atol=0)
    np.testing.assert_allclose(kept.write_weights, jnp.zeros((1, N)), atol=0)

    freed_controls = _allocating_write(new_vector)._replace(free_gates=jnp.array([0.0, 1.0, 0.0]))
    freed, _ = _step(state, freed_controls)
    np.testing.assert_allclose(freed.usage, 1.0 - _one_hot(3), atol=0)
    np.testing.assert_allclose(freed.write_weights, _one_hot(3)[None], atol=0)
    np.testing.assert_allclose(freed.memory[3], new_vector, atol=0)


def test_two_write_heads_allocate_in_turn_and_keep_their_own_links():
    # Empty memory, both heads allocating with g^a = g^w = 1: head 0 takes slot 0;
    # head 1 sorts u + (1 - u) a_0 = e_0 and takes slot 1. Next step the usage is
    # 1 - (1 - e_0)(1 - e_1) = e_0 + e_1: head 0 takes slot 2, head 1 slot 3. Each
    # head's link records its own order only: L[0, 2, 0] = 1, L[1, 3, 1] = 1.
    d_vec = jnp.array([0.0, 0.0, 0.0, 4.0, 0.0])
    state = dnc.init_state(N, W, R, 2)
    state, _ = _step(state, _allocating_write(A_VEC, B_VEC))
    np.testing.assert_allclose(state.write_weights, jnp.stack([_one_hot(0), _one_hot(1)]), atol=0)
    state, _ = _step(state, _allocating_write(C_VEC, d_vec))
    np.testing.assert_allclose(state.usage, _one_hot(0) + _one_hot(1), atol=0)
    np.testing.assert_allclose(state.write_weights, jnp.stack([_one_hot(2), _one_hot(3)]), atol=0)
    np.testing.assert_allclose(state.memory[:4], jnp.stack([A_VEC, B_VEC, C_VEC, d_vec]), atol=0)
    want_link = np.zeros((2, N, N))
    want_link[0, 2, 0] = want_link[1, 3, 1] = 1.0
    np.testing.assert_allclose(state.link, want_link, atol=0)
    np.testing.assert_allclose(state.precedence, jnp.stack([_one_hot(2), _one_hot(3)]), atol=0)
    # Modes (b_0, b_1, c, f_0, f_1): forward along head 0 from a, forward along head
    # 1 from b, backward along head 1 from d.
    state = state._replace(read_weights=jnp.stack([_one_hot(0), _one_hot(1), _one_hot(3)]))
    state, reads = _step(state, _controls(2, read_modes=_modes("f0", "f1", "b1", h=2)))
    np.testing.assert_allclose(reads, jnp.stack([C_VEC, d_vec, B_VEC]), atol=0)
    # The other head's link leads nowhere from there.
    state = state._replace(read_weights=jnp.stack([_one_hot(0), _one_hot(1), _one_hot(3)]))
    _, reads = _step(state, _controls(2, read_modes=_modes("f1", "f0", "b0", h=2)))
    np.testing.assert_allclose(reads, jnp.zeros((R, W)), atol=0)


def test_read_previous_memory_cannot_find_this_steps_write():
    # Write a into empty slot 0 and look for it by content in the same step. With
    # M_t (default) the key a matches row 0 (cosine 1, others 0); with M_{t-1}
    # (as some presentations print it) memory is still all zero, so content weights are uniform.
    controls = _allocating_write(A_VEC)._replace(read_keys=jnp.tile(A_VEC, (R, 1)), read_strengths=jnp.full((R,), 50.0))
    state = dnc.init_state(N, W, R)
    after, reads = _step(state, controls)
    assert float(after.read_weights[0, 0]) > 0.99
    np.testing.assert_allclose(reads[0], A_VEC, atol=1e-2)
    before, _ = _step(state, controls, read_previous_memory=True)
    np.testing.assert_allclose(before.read_weights, jnp.full((R, N), 1.0 / N), atol=1e-6)


# ---------------------------------------------------------------- 4. gradients


def _flat_outputs(new_state, reads):
    return jnp.concatenate([jnp.ravel(x) for x in (*new_state, reads)])


@pytest.mark.parametrize("h", [1, 3])
def test_check_grads_through_step(h):
    with x64():
        rng = np.random.default_rng(6)
        state = _random_state(rng, h=h, dtype=np.float64)
        raw = jnp.asarray(_random_raw(rng, h=h), jnp.float64)
        for read_previous_memory in (False, True) if h == 1 else (False,):

            def f(state, raw):
                controls = dnc.controls_from_interface(raw, W, R, h)
                return _flat_outputs(*dnc.step(state, controls, read_previous_memory=read_previous_memory))

            check_grads(jax.jit(f), (state, raw), order=1, modes=("rev",))


def _link_inputs(rng, n=N, r=R, zero_diagonal=True):
    link = rng.uniform(0.0, 0.3, size=(n, n))
    if zero_diagonal:
        link *= 1.0 - np.eye(n)
    return (
        link,
        rng.dirichlet(np.ones(n)) * 0.8,
        rng.dirichlet(np.ones(n)) * 0.9,
        rng.dirichlet(np.ones(n), size=r) * 0.9,
    )


def _link_then_directions(link, precedence, weights, read_weights):
    new_link = dnc.link(link, precedence, weights)
    backward, forward = dnc.directional_weights(new_link, read_weights)
    return dnc.LinkAndDirections(link=new_link, backward=backward, forward=forward)


@pytest.mark.parametrize("zero_diagonal", [True, False])
def test_link_and_directions_vjp_equals_autodiff_of_the_two_equations(zero_diagonal):
    # The hand-written VJP against autodiff through `link` and `directional_weights`
    # (each tested against the NumPy reference above), in float64, for every input
    # and every output's cotangent at once. A link with a nonzero diagonal is
    # outside the kernel's invariant, but the VJP's expansion must hold for it too.
    with x64():
        rng = np.random.default_rng(11)
        inputs = tuple(jnp.asarray(x, jnp.float64) for x in _link_inputs(rng, zero_diagonal=zero_diagonal))
        cotangents = dnc.LinkAndDirections(rng.normal(size=(N, N)), rng.normal(size=(R, N)), rng.normal(size=(R, N)))
        fused, fused_vjp = jax.vjp(dnc.link_and_directions, *inputs)
        plain, plain_vjp = jax.vjp(_link_then_directions, *inputs)
        for a, b in zip(fused, plain):
            np.testing.assert_array_equal(a, b)
        for name, a, b in zip(
            ("link", "precedence", "weights", "read_weights"), fused_vjp(cotangents), plain_vjp(cotangents)
        ):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)
        # Batched (as the modules call it) and against finite differences.
        batched = [jnp.stack([x, 0.5 * x]) for x in inputs]
        g_fused = jax.grad(
            lambda *a: sum(jnp.sum(jnp.sin(o)) for o in jax.vmap(dnc.link_and_directions)(*a)), argnums=(0, 1, 2, 3)
        )(*batched)
        g_plain = jax.grad(
            lambda *a: sum(jnp.sum(jnp.sin(o)) for o in jax.vmap(_link_then_directions)(*a)), argnums=(0, 1, 2, 3)
        )(*batched)
        for a, b in zip(g_fused, g_plain):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        check_grads(dnc.link_and_directions, inputs, order=1, modes=("rev",))
        # Mapped over three write heads sharing the read weights, as `step` calls it.
        heads = [jnp.stack([x, 0.5 * x, 0.25 * x]) for x in inputs[:3]]
        in_axes = (0, 0, 0, None)
        g_fused = jax.grad(
            lambda *a: sum(jnp.sum(jnp.sin(o)) for o in jax.vmap(dnc.link_and_directions, in_axes)(*a)),
            argnums=(0, 1, 2, 3),
        )(*heads, inputs[3])
        g_plain = jax.grad(
            lambda *a: sum(jnp.sum(jnp.sin(o)) for o in jax.vmap(_link_then_directions, in_axes)(*a)),
            argnums=(0, 1, 2, 3),
        )(*heads, inputs[3])
        for a, b in zip(g_fused, g_plain):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("h", [2])
def test_masked_step_passes_gradients_as_if_the_step_were_absent(h):
    # A rollout with a masked step in the middle equals, in value and gradient, the
    # rollout without it; the masked step's controls get a zero gradient. (The link
    # skips the masked select: it gets zero write weights instead.)
    rng = np.random.default_rng(12)
    state = _random_state(rng, h=h)
    raw = jnp.asarray(_random_raw(rng, 4, h=h))
    mask = jnp.array([1, 1, 0, 1])

    def loss(state, raw, mask):
        def body(s, inputs):  # the kernel's own mask, as the models pass it
            x, m = inputs
            return dnc.step(s, dnc.controls_from_interface(x, W, R, h), m)

        final, reads = scan_lib.scan(body, state, (raw, mask))
        return jnp.sum(_flat_outputs(final, reads[-1]) ** 2)

    grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
    with_gap, (g_state, g_raw) = grad(state, raw, mask)
    without, (g_state_ref, g_raw_ref) = grad(state, raw[jnp.array([0, 1, 3])], jnp.ones(3))
    np.testing.assert_allclose(with_gap, without, rtol=1e-6)
    chex.assert_trees_all_close(g_state, g_state_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g_raw[jnp.array([0, 1, 3])], g_raw_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(g_raw[2], jnp.zeros(dnc.interface_size(W, R, h)))


def _grad_of_everything(state, controls):
    def loss(state, controls):
        new_state, reads = dnc.step(state, controls)
        return jnp.sum(_flat_outputs(new_state, reads) ** 2)

    return jax.grad(loss, argnums=(0, 1))(state, controls)


_grad_step = jax.jit(_grad_of_everything)
_grad_raw = jax.jit(
    jax.grad(lambda state, raw: jnp.sum(dnc.step(state, dnc.controls_from_interface(raw, W, R))[1] ** 2), argnums=1)
)


@pytest.mark.parametrize("usage_value", [0.0, 0.5, 1.0])
def test_gradients_finite_at_ties_zero_memory_zero_keys(usage_value):
    # All-equal usage (a full tie in the sort), usage exactly 0 or 1, zero memory
    # and zero keys (cosine 0/0 without the norm epsilon).
    state = dnc.init_state(N, W, R)._replace(usage=jnp.full((N,), usage_value), read_weights=jnp.full((R, N), 1.0 / N))
    controls = _controls(write_gate=[1.0], allocation_gate=[0.5], free_gates=jnp.full((R,), 0.5))
    grads = _grad_step(state, controls)
    chex.assert_tree_all_finite(grads)
    # And through the activations from a raw all-zero interface vector.
    g_raw = _grad_raw(state, jnp.zeros(P))
    chex.assert_shape(g_raw, (P,))
    chex.assert_tree_all_finite(g_raw)


@pytest.mark.parametrize("h", [2])
def test_stop_usage_write_gradient_cuts_exactly_the_usage_path(h):
    # w^w_{t+1} as a function of step t's write gates. Step t+1 allocates only
    # (g^a = 1: no content path) and frees nothing (f = 0: psi = 1, no path through
    # the read weights), so w^w_{t+1} depends on g^w_t only through u_{t+1}, i.e.
    # through w^w_t inside `usage`. With the option that path is cut: the Jacobian
    # is exactly 0 and the values are identical. Without it, the Jacobian is
    # non-zero and equals a central finite difference (float64).
    with x64():
        rng = np.random.default_rng(16)
        state = _random_state(rng, h=h, dtype=np.float64)
        c_t = dnc.controls_from_interface(jnp.asarray(_random_raw(rng, h=h), jnp.float64), W, R, h)
        c_next = dnc.controls_from_interface(jnp.asarray(_random_raw(rng, h=h), jnp.float64), W, R, h)
        c_next = c_next._replace(allocation_gate=jnp.ones(h), free_gates=jnp.zeros(R))

        @functools.partial(jax.jit, static_argnums=1)
        def next_write_weights(gate, stop):
            s, _ = dnc.step(state, c_t._replace(write_gate=gate), stop_usage_write_gradient=stop)
            s, _ = dnc.step(s, c_next, stop_usage_write_gradient=stop)
            return s.write_weights  # [H, N]

        gate = c_t.write_gate
        plain = jax.jacrev(next_write_weights)(gate, False)  # [H, N, H]
        stopped = jax.jacrev(next_write_weights)(gate, True)
        np.testing.assert_array_equal(stopped, jnp.zeros_like(stopped))
        np.testing.assert_array_equal(next_write_weights(gate, True), next_write_weights(gate, False))
        eps = 1e-6

        def central(k):
            up, down = gate.at[k].add(eps), gate.at[k].add(-eps)
            return (next_write_weights(up, False) - next_write_weights(down, False)) / (2 * eps)

        finite = jnp.stack([central(k) for k in range(h)], axis=-1)
        print(
            f"\nH={h}: d w^w_(t+1) / d g^w_t, max |autodiff|:",
            float(jnp.max(jnp.abs(plain))),
            "max |autodiff - finite difference|:",
            float(jnp.max(jnp.abs(plain - finite))),
        )
        assert float(jnp.max(jnp.abs(plain))) > 1e-3
        np.testing.assert_allclose(plain, finite, atol=1e-8)


# ---------------------------------------------------------------- 5. transforms


@pytest.mark.parametrize("h", [1, 2])
def test_masked_step_leaves_state_unchanged_and_reads_zero(h):
    rng = np.random.default_rng(7)
    state = _random_state(rng, h=h)
    controls = dnc.controls_from_interface(_random_raw(rng, h=h), W, R, h)
    masked, reads = _step(state, controls, jnp.array(0))
    for name, old, new in zip(dnc.DNCState._fields, state, masked):
        np.testing.assert_array_equal(new, old, err_msg=name)
    np.testing.assert_array_equal(reads, jnp.zeros((R, W)))
    # An unmasked step equals the step without a mask (to rounding: the link's
    # jnp.where on the write weights can change how XLA fuses the link update).
    kept, kept_reads = _step(state, controls, jnp.array(True))
    plain, plain_reads = _step(state, controls)
    chex.assert_trees_all_close((kept, kept_reads), (plain, plain_reads), rtol=1e-6, atol=1e-7)


def test_vmap_equals_a_loop_over_examples():
    rng = np.random.default_rng(8)
    batch, h = 4, 2
    states = [_random_state(rng, h=h) for _ in range(batch)]
    raws = _random_raw(rng, batch, h=h)
    masks = jnp.array([1, 0, 1, 1])
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)
    batched_controls = dnc.controls_from_interface(raws, W, R, h)
    b_state, b_reads = jax.jit(jax.vmap(_step_fn))(stacked, batched_controls, masks)
    for i in range(batch):
        s, reads = _step(states[i], dnc.controls_from_interface(raws[i], W, R, h), masks[i])
        one = jax.tree_util.tree_map(lambda x: x[i], (b_state, b_reads))
        chex.assert_trees_all_close(one, (s, reads), rtol=1e-7, atol=1e-6)  # np.testing's default rtol


def test_second_call_does_not_retrace(trace_counter):
    rng = np.random.default_rng(9)
    counter = trace_counter(chex.assert_max_traces(dnc.step, n=1))  # chex fails at the retrace itself
    jitted = jax.jit(counter)
    for _ in range(2):
        state = _random_state(rng)
        controls = dnc.controls_from_interface(_random_raw(rng), W, R)
        jax.block_until_ready(jitted(state, controls))
    assert counter.count == 1


# ---------------------------------------------------------------- bad input


def test_wrong_control_shape_names_the_field():
    state = dnc.init_state(N, W, R)
    controls = _controls(read_keys=jnp.zeros((R, W - 1)))
    with pytest.raises(ValueError, match=r"controls\.read_keys: expected shape \[R, W\] = \(3, 5\), got \(3, 4\)"):
        dnc.step(state, controls)
    with pytest.raises(
        ValueError, match=r"controls\.read_modes: expected shape \[R, 2H \+ 1\] = \(3, 3\), got \(2, 3\)"
    ):
        dnc.step(state, _controls(read_modes=jnp.zeros((2, 3))))
    with pytest.raises(ValueError, match=r"controls\.write_gate: expected shape \[H\] = \(1\), got \(\)"):
        dnc.step(state, _controls(write_gate=jnp.zeros(())))
    # Two write heads: five modes per read head, [2, W] write vectors.
    state2 = dnc.init_state(N, W, R, 2)
    with pytest.raises(ValueError, match=r"controls\.write_key: expected shape \[H, W\] = \(2, 5\), got \(1, 5\)"):
        dnc.step(state2, _controls())
    with pytest.raises(
        ValueError, match=r"controls\.read_modes: expected shape \[R, 2H \+ 1\] = \(3, 5\), got \(3, 3\)"
    ):
        dnc.step(state2, _controls(2, read_modes=_modes("c", "c", "c")))
    with pytest.raises(ValueError, match=r"read_modes: expected shape \[R, 2H \+ 1\] = \(3, 5\), got \(3, 3\)"):
        dnc.read_weights(_modes("c", "c", "c"), jnp.zeros((2, R, N)), jnp.zeros((R, N)), jnp.zeros((2, R, N)))


def test_wrong_state_or_mask_shape_names_the_field():
    state = dnc.init_state(N, W, R)
    with pytest.raises(ValueError, match=r"state\.link: expected shape \[H, N, N\] = \(1, 7, 7\), got \(1, 7, 6\)"):
        dnc.step(state._replace(link=jnp.zeros((1, N, N - 1))), _controls())
    with pytest.raises(ValueError, match=r"state\.precedence: expected shape \[H, N\] = \(1, 7\), got \(7,\)"):
        dnc.step(state._replace(precedence=jnp.zeros((N,))), _controls())
    with pytest.raises(ValueError, match=r"state\.memory: expected shape \[N, W\] = \(\?, \?\), got \(7,\)"):
        dnc.step(state._replace(memory=jnp.zeros((N,))), _controls())
    with pytest.raises(ValueError, match=r"state\.reads: expected shape \[R, W\] = \(3, 5\), got \(2, 5\)"):
        dnc.step(state._replace(reads=jnp.zeros((2, W))), _controls())
    with pytest.raises(ValueError, match=r"mask: expected shape \[\] = \(\), got \(4,\)"):
        dnc.step(state, _controls(), jnp.ones((4,)))


def test_bad_interface_and_sizes_raise_named_errors():
    with pytest.raises(ValueError, match=r"raw: expected shape \[\.\.\., P\] = \(\.\.\., 48\).*got \(2, 47\)"):
        dnc.controls_from_interface(jnp.zeros((2, P - 1)), W, R)
    with pytest.raises(ValueError, match=r"raw: expected shape .* got \(\)"):
        dnc.controls_from_interface(jnp.zeros(()), W, R)
    with pytest.raises(ValueError, match=r"num_slots \(N\): expected a positive integer, got 0"):
        dnc.init_state(0, W, R)
    with pytest.raises(ValueError, match=r"word_size \(W\): expected a positive integer, got 2\.5"):
        dnc.init_state(N, 2.5, R)
    with pytest.raises(ValueError, match=r"num_reads \(R\): expected a positive integer, got -1"):
        dnc.interface_size(word_size=W, num_reads=-1)
    with pytest.raises(ValueError, match=r"num_writes \(H\): expected a positive integer, got 0"):
        dnc.init_state(N, W, R, 0)
    with pytest.raises(ValueError, match=r"raw: expected shape \[\.\.\., P\] = \(\.\.\., 72\).* H = 2, got \(48,\)"):
        dnc.controls_from_interface(jnp.zeros(P), W, R, 2)
    with pytest.raises(ValueError, match=r"layout: expected one of \['graves2016', 'table1'\], got 'deepmind'"):
        dnc.controls_from_interface(jnp.zeros(P), W, R, layout="deepmind")
