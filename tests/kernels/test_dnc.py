"""Tests for panm_jax/kernels/dnc.py: reference, invariants, scenarios, gradients, transforms.

Sizes differ per axis (N = 7, W = 5, R = 3) so that a transposed axis fails. The
reference (tests/reference/dnc_ref.py) is a float64 NumPy transcription of seed
002's DNC equations; the kernel runs in float32 on the same (float32-rounded) inputs.
Run with ``-s`` to see the max abs errors of the reference comparisons.
"""

from __future__ import annotations

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
P = dnc.interface_size(R, W)
TOL = 1e-5  # float32 kernel vs float64 reference, max abs error over every field
INV_TOL = 1e-6  # float32 round-off allowed on the invariants' bounds

# ---------------------------------------------------------------- module-level helpers


def _step_fn(state, controls, mask=None, read_previous_memory=False):
    return dnc.step(state, controls, mask, read_previous_memory=read_previous_memory)


_step = jax.jit(_step_fn, static_argnames=("read_previous_memory",))


def _rollout_raw(state, raw, read_previous_memory=False):
    """Scan ``step`` over raw interface vectors ``[T, P]``; trace every state."""
    r, w = state.reads.shape

    def body(s, x):
        return dnc.step(s, dnc.controls_from_interface(x, r, w), read_previous_memory=read_previous_memory)

    (final, (reads, states)) = scan_lib.scan(body, state, raw, trace_fn=lambda s: s)
    return final, reads, states


_rollout = jax.jit(_rollout_raw, static_argnames=("read_previous_memory",))


def _random_raw(rng, *lead, r=R, w=W, scale=2.0):
    """Raw interface vectors, float32 (the reference upcasts the same values)."""
    return (scale * rng.normal(size=(*lead, dnc.interface_size(r, w)))).astype(np.float32)


def _random_state(rng, n=N, w=W, r=R, dtype=np.float32) -> dnc.DNCState:
    """A valid state: usage in [0, 1], weights summing to <= 1, a valid link matrix."""
    link = rng.uniform(size=(n, n)) * (1.0 - np.eye(n))
    link /= max(link.sum(0).max(), link.sum(1).max()) / rng.uniform(0.5, 1.0)
    state = dnc.DNCState(
        memory=rng.normal(size=(n, w)),
        usage=rng.uniform(size=n),
        link=link,
        precedence=rng.dirichlet(np.ones(n)) * rng.uniform(),
        read_weights=rng.dirichlet(np.ones(n), size=r) * rng.uniform(size=(r, 1)),
        write_weights=rng.dirichlet(np.ones(n)) * rng.uniform(),
        reads=rng.normal(size=(r, w)),
    )
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype), state)


def _ref_state(state: dnc.DNCState) -> dict:
    return {k: np.asarray(v, np.float64) for k, v in state._asdict().items()}


def _max_errors(state: dnc.DNCState, ref: dict) -> dict[str, float]:
    return {k: float(np.max(np.abs(np.asarray(v, np.float64) - ref[k]))) for k, v in state._asdict().items()}


def _controls(**overrides) -> dnc.DNCControls:
    """Hand-built activated controls: by default no write, content reads, nothing freed."""
    base = dict(
        read_keys=jnp.zeros((R, W)),
        read_strengths=jnp.ones((R,)),
        write_key=jnp.zeros((W,)),
        write_strength=jnp.array(1.0),
        erase=jnp.ones((W,)),
        write_vector=jnp.zeros((W,)),
        free_gates=jnp.zeros((R,)),
        allocation_gate=jnp.array(1.0),
        write_gate=jnp.array(0.0),
        read_modes=jnp.tile(jnp.array([0.0, 1.0, 0.0]), (R, 1)),
    )
    base.update({k: jnp.asarray(v, jnp.float32) for k, v in overrides.items()})
    return dnc.DNCControls(**base)


def _allocating_write(vector) -> dnc.DNCControls:
    """Write ``vector`` wherever the allocation points (g^a = g^w = 1, full erase)."""
    return _controls(write_vector=vector, allocation_gate=1.0, write_gate=1.0)


def _one_hot(i, n=N):
    return jnp.zeros((n,)).at[i].set(1.0)


# ---------------------------------------------------------------- 1. equals the reference


def test_interface_size_is_seed_003_formula():
    # s q + 5 s + 3 q + 3 with s = R = 3 heads and q = W = 5.
    assert dnc.interface_size(R, W) == 3 * 5 + 5 * 3 + 3 * 5 + 3 == 48
    assert dnc_ref.interface_size(R, W) == P


def test_controls_from_interface_matches_reference_and_keeps_batch_axes():
    rng = np.random.default_rng(0)
    raw = _random_raw(rng, 4, 2)  # [B, T, P]
    controls = dnc.controls_from_interface(raw, R, W)
    for b in range(4):
        for t in range(2):
            ref = dnc_ref.controls_from_interface(raw[b, t].astype(np.float64), R, W)
            for name, value in controls._asdict().items():
                np.testing.assert_allclose(value[b, t], ref[name], atol=1e-6, err_msg=name)
    assert controls.read_keys.shape == (4, 2, R, W)
    assert controls.read_modes.shape == (4, 2, R, 3)
    assert controls.write_strength.shape == (4, 2)
    assert bool(jnp.all(controls.read_strengths >= 1.0)) and bool(jnp.all(controls.write_strength >= 1.0))
    np.testing.assert_allclose(controls.read_modes.sum(-1), 1.0, atol=1e-6)


@pytest.mark.parametrize("read_previous_memory", [False, True])
def test_one_step_matches_reference(read_previous_memory):
    rng = np.random.default_rng(1)
    errors = {}
    for _ in range(3):
        state = _random_state(rng)
        raw = _random_raw(rng)
        controls = dnc.controls_from_interface(raw, R, W)
        new_state, reads = _step(state, controls, read_previous_memory=read_previous_memory)
        ref_state, ref_reads = dnc_ref.step(
            _ref_state(state), dnc_ref.controls_from_interface(raw, R, W), read_previous_memory
        )
        for k, v in _max_errors(new_state, ref_state).items():
            errors[k] = max(errors.get(k, 0.0), v)
        np.testing.assert_array_equal(reads, new_state.reads)
        errors["step_reads"] = max(errors.get("step_reads", 0.0), float(np.max(np.abs(reads - ref_reads))))
    print(f"\none step (read_previous_memory={read_previous_memory}) max abs error:", errors)
    assert max(errors.values()) < TOL, errors


@pytest.mark.parametrize("read_previous_memory", [False, True])
def test_rollout_matches_reference(read_previous_memory):
    # Starts from a random valid state, whose slots all differ. From the empty
    # memory see the float64 test below: there, untouched slots get usages that
    # differ by ~1e-12 (the allocation's u^k factors), below float32 resolution, so a
    # float32 sort sees exact ties where float64 sees an order, and the write goes to
    # another (equally unused) slot: the allocation is discontinuous at ties.
    rng = np.random.default_rng(2)
    T = 30
    state = _random_state(rng)
    raw = _random_raw(rng, T)
    final, reads, _ = _rollout(state, raw, read_previous_memory=read_previous_memory)
    ref_final, ref_reads = dnc_ref.rollout(
        _ref_state(state),
        [dnc_ref.controls_from_interface(raw[t], R, W) for t in range(T)],
        read_previous_memory,
    )
    errors = _max_errors(final, ref_final)
    errors["reads_over_time"] = float(np.max(np.abs(np.asarray(reads, np.float64) - ref_reads)))
    print(f"\n{T}-step rollout (read_previous_memory={read_previous_memory}) max abs error:", errors)
    assert max(errors.values()) < TOL, errors


def test_rollout_from_empty_memory_matches_reference_in_float64():
    # The kernel in float64 resolves the near-ties of the empty memory (see above)
    # as the float64 reference does, so it writes to the same slots step for step.
    # What remains (~5e-7) is addressing.NORM_EPS inside the kernel's cosine against
    # the reference's literal one, on rows whose norm is still small.
    rng = np.random.default_rng(2)
    T = 30
    raw = _random_raw(rng, T)
    with x64():
        final, reads, _ = jax.jit(_rollout_raw)(dnc.init_state(N, W, R, jnp.float64), jnp.asarray(raw, jnp.float64))
        assert final.memory.dtype == jnp.float64
    ref_final, ref_reads = dnc_ref.rollout(
        dnc_ref.init_state(N, W, R), [dnc_ref.controls_from_interface(raw[t], R, W) for t in range(T)]
    )
    errors = _max_errors(final, ref_final)
    errors["reads_over_time"] = float(np.max(np.abs(np.asarray(reads) - ref_reads)))
    print(f"\n{T}-step rollout from empty memory, float64 kernel, max abs error:", errors)
    assert max(errors.values()) < TOL, errors


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


# ---------------------------------------------------------------- 2. invariants


def _assert_invariants(states: dnc.DNCState, reads: jax.Array) -> None:
    """Check every invariant on states stacked over any leading axes."""
    s = jax.tree_util.tree_map(lambda x: np.asarray(x, np.float64), states)
    for name, value in s._asdict().items():
        assert np.all(np.isfinite(value)), f"{name} is not finite"
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


def test_invariants_hold_along_a_random_rollout():
    rng = np.random.default_rng(4)
    _, reads, states = _rollout(dnc.init_state(N, W, R), _random_raw(rng, 30))
    _assert_invariants(states, reads)


def test_invariants_hold_from_random_valid_states():
    rng = np.random.default_rng(5)
    for _ in range(3):
        new_state, reads = _step(_random_state(rng), dnc.controls_from_interface(_random_raw(rng), R, W))
        _assert_invariants(new_state, reads)


def test_ten_thousand_step_rollout_stays_finite():
    # One jit of a 10,000-step scan with random controls at small N; also exercises
    # usage driven to 0 and 1 and repeated near-ties in the sort.
    n, w, r, steps = 8, 4, 2, 10_000
    raw = jax.random.normal(jax.random.PRNGKey(0), (steps, dnc.interface_size(r, w))) * 3.0

    @jax.jit
    def run(raw):
        def body(s, x):
            return dnc.step(s, dnc.controls_from_interface(x, r, w))

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
    np.testing.assert_allclose(state.write_weights, _one_hot(0), atol=0)
    np.testing.assert_allclose(state.memory[0], A_VEC, atol=0)
    state, _ = _step(state, _allocating_write(B_VEC))
    np.testing.assert_allclose(state.usage, _one_hot(0), atol=0)
    np.testing.assert_allclose(state.write_weights, _one_hot(1), atol=0)
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
    np.testing.assert_allclose(kept.write_weights, jnp.zeros(N), atol=0)

    freed_controls = _allocating_write(new_vector)._replace(free_gates=jnp.array([0.0, 1.0, 0.0]))
    freed, _ = _step(state, freed_controls)
    np.testing.assert_allclose(freed.usage, 1.0 - _one_hot(3), atol=0)
    np.testing.assert_allclose(freed.write_weights, _one_hot(3), atol=0)
    np.testing.assert_allclose(freed.memory[3], new_vector, atol=0)


def test_read_previous_memory_cannot_find_this_steps_write():
    # Write a into empty slot 0 and look for it by content in the same step. With
    # M_t (default) the key a matches row 0 (cosine 1, others 0); with M_{t-1}
    # (seed 002 as printed) memory is still all zero, so content weights are uniform.
    controls = _allocating_write(A_VEC)._replace(
        read_keys=jnp.tile(A_VEC, (R, 1)), read_strengths=jnp.full((R,), 50.0)
    )
    state = dnc.init_state(N, W, R)
    after, reads = _step(state, controls)
    assert float(after.read_weights[0, 0]) > 0.99
    np.testing.assert_allclose(reads[0], A_VEC, atol=1e-2)
    before, _ = _step(state, controls, read_previous_memory=True)
    np.testing.assert_allclose(before.read_weights, jnp.full((R, N), 1.0 / N), atol=1e-6)


# ---------------------------------------------------------------- 4. gradients


def _flat_outputs(new_state, reads):
    return jnp.concatenate([jnp.ravel(x) for x in (*new_state, reads)])


def test_check_grads_through_step():
    with x64():
        rng = np.random.default_rng(6)
        state = _random_state(rng, dtype=np.float64)
        raw = jnp.asarray(_random_raw(rng), jnp.float64)
        for read_previous_memory in (False, True):

            def f(state, raw):
                controls = dnc.controls_from_interface(raw, R, W)
                return _flat_outputs(*dnc.step(state, controls, read_previous_memory=read_previous_memory))

            check_grads(jax.jit(f), (state, raw), order=1, modes=("rev",))


def _link_inputs(rng, n=N, r=R, zero_diagonal=True):
    link = rng.uniform(0.0, 0.3, size=(n, n))
    if zero_diagonal:
        link *= 1.0 - np.eye(n)
    return (link, rng.dirichlet(np.ones(n)) * 0.8, rng.dirichlet(np.ones(n)) * 0.9,
            rng.dirichlet(np.ones(n), size=r) * 0.9)


def _link_then_directions(link, precedence, weights, read_weights):
    new_link = dnc.link(link, precedence, weights)
    return (new_link, *dnc.directional_weights(new_link, read_weights))


@pytest.mark.parametrize("zero_diagonal", [True, False])
def test_link_and_directions_vjp_equals_autodiff_of_the_two_equations(zero_diagonal):
    # The hand-written VJP against autodiff through `link` and `directional_weights`
    # (each tested against the NumPy reference above), in float64, for every input
    # and every output's cotangent at once. A link with a nonzero diagonal is
    # outside the kernel's invariant, but the VJP's expansion must hold for it too.
    with x64():
        rng = np.random.default_rng(11)
        inputs = tuple(jnp.asarray(x, jnp.float64) for x in _link_inputs(rng, zero_diagonal=zero_diagonal))
        cotangents = (rng.normal(size=(N, N)), rng.normal(size=(R, N)), rng.normal(size=(R, N)))
        fused, fused_vjp = jax.vjp(dnc.link_and_directions, *inputs)
        plain, plain_vjp = jax.vjp(_link_then_directions, *inputs)
        for a, b in zip(fused, plain):
            np.testing.assert_array_equal(a, b)
        for name, a, b in zip(("link", "precedence", "weights", "read_weights"),
                              fused_vjp(cotangents), plain_vjp(cotangents)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)
        # Batched (as the modules call it) and against finite differences.
        batched = [jnp.stack([x, 0.5 * x]) for x in inputs]
        g_fused = jax.grad(lambda *a: sum(jnp.sum(jnp.sin(o)) for o in jax.vmap(dnc.link_and_directions)(*a)),
                           argnums=(0, 1, 2, 3))(*batched)
        g_plain = jax.grad(lambda *a: sum(jnp.sum(jnp.sin(o)) for o in jax.vmap(_link_then_directions)(*a)),
                           argnums=(0, 1, 2, 3))(*batched)
        for a, b in zip(g_fused, g_plain):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        check_grads(dnc.link_and_directions, inputs, order=1, modes=("rev",))


def test_masked_step_passes_gradients_as_if_the_step_were_absent():
    # A rollout with a masked step in the middle equals, in value and gradient, the
    # rollout without it; the masked step's controls get a zero gradient. (The link
    # skips the masked select: it gets zero write weights instead.)
    rng = np.random.default_rng(12)
    state = _random_state(rng)
    raw = jnp.asarray(_random_raw(rng, 4))
    mask = jnp.array([1, 1, 0, 1])

    def loss(state, raw, mask):
        def body(s, inputs):  # the kernel's own mask, as the models pass it
            x, m = inputs
            return dnc.step(s, dnc.controls_from_interface(x, R, W), m)

        final, reads = scan_lib.scan(body, state, (raw, mask))
        return jnp.sum(_flat_outputs(final, reads[-1]) ** 2)

    grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
    with_gap, (g_state, g_raw) = grad(state, raw, mask)
    without, (g_state_ref, g_raw_ref) = grad(state, raw[jnp.array([0, 1, 3])], jnp.ones(3))
    np.testing.assert_allclose(with_gap, without, rtol=1e-6)
    for a, b in zip(jax.tree_util.tree_leaves(g_state), jax.tree_util.tree_leaves(g_state_ref)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g_raw[jnp.array([0, 1, 3])], g_raw_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(g_raw[2], jnp.zeros(P))


def _grad_of_everything(state, controls):
    def loss(state, controls):
        new_state, reads = dnc.step(state, controls)
        return jnp.sum(_flat_outputs(new_state, reads) ** 2)

    return jax.grad(loss, argnums=(0, 1))(state, controls)


_grad_step = jax.jit(_grad_of_everything)
_grad_raw = jax.jit(
    jax.grad(lambda state, raw: jnp.sum(dnc.step(state, dnc.controls_from_interface(raw, R, W))[1] ** 2), argnums=1)
)


@pytest.mark.parametrize("usage_value", [0.0, 0.5, 1.0])
def test_gradients_finite_at_ties_zero_memory_zero_keys(usage_value):
    # All-equal usage (a full tie in the sort), usage exactly 0 or 1, zero memory
    # and zero keys (cosine 0/0 without the norm epsilon).
    state = dnc.init_state(N, W, R)._replace(
        usage=jnp.full((N,), usage_value), read_weights=jnp.full((R, N), 1.0 / N)
    )
    controls = _controls(write_gate=1.0, allocation_gate=0.5, write_vector=jnp.zeros(W), free_gates=jnp.full((R,), 0.5))
    grads = _grad_step(state, controls)
    for leaf in jax.tree_util.tree_leaves(grads):
        assert bool(jnp.all(jnp.isfinite(leaf)))
    # And through the activations from a raw all-zero interface vector.
    g_raw = _grad_raw(state, jnp.zeros(P))
    assert bool(jnp.all(jnp.isfinite(g_raw)))


# ---------------------------------------------------------------- 5. transforms


def test_masked_step_leaves_state_unchanged_and_reads_zero():
    rng = np.random.default_rng(7)
    state = _random_state(rng)
    controls = dnc.controls_from_interface(_random_raw(rng), R, W)
    masked, reads = _step(state, controls, jnp.array(0))
    for name, old, new in zip(dnc.DNCState._fields, state, masked):
        np.testing.assert_array_equal(new, old, err_msg=name)
    np.testing.assert_array_equal(reads, jnp.zeros((R, W)))
    kept, kept_reads = _step(state, controls, jnp.array(True))
    plain, plain_reads = _step(state, controls)
    for name, a, b in zip(dnc.DNCState._fields, kept, plain):
        np.testing.assert_array_equal(a, b, err_msg=name)
    np.testing.assert_array_equal(kept_reads, plain_reads)


def test_vmap_equals_a_loop_over_examples():
    rng = np.random.default_rng(8)
    batch = 4
    states = [_random_state(rng) for _ in range(batch)]
    raws = _random_raw(rng, batch)
    masks = jnp.array([1, 0, 1, 1])
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)
    batched_controls = dnc.controls_from_interface(raws, R, W)
    b_state, b_reads = jax.jit(jax.vmap(_step_fn))(stacked, batched_controls, masks)
    for i in range(batch):
        s, reads = _step(states[i], dnc.controls_from_interface(raws[i], R, W), masks[i])
        for name, a, b in zip(dnc.DNCState._fields, s, b_state):
            np.testing.assert_allclose(b[i], a, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(b_reads[i], reads, atol=1e-6)


def test_second_call_does_not_retrace(trace_counter):
    rng = np.random.default_rng(9)
    counter = trace_counter(dnc.step)
    jitted = jax.jit(counter)
    for _ in range(2):
        state = _random_state(rng)
        controls = dnc.controls_from_interface(_random_raw(rng), R, W)
        jax.block_until_ready(jitted(state, controls))
    assert counter.count == 1


# ---------------------------------------------------------------- bad input


def test_wrong_control_shape_names_the_field():
    state = dnc.init_state(N, W, R)
    controls = _controls(read_keys=jnp.zeros((R, W - 1)))
    with pytest.raises(ValueError, match=r"controls\.read_keys: expected shape \[R, W\] = \(3, 5\), got \(3, 4\)"):
        dnc.step(state, controls)
    with pytest.raises(ValueError, match=r"controls\.read_modes: expected shape \[R, 3\] = \(3, 3\), got \(2, 3\)"):
        dnc.step(state, _controls(read_modes=jnp.zeros((2, 3))))
    with pytest.raises(ValueError, match=r"controls\.write_gate: expected shape \[\] = \(\), got \(1,\)"):
        dnc.step(state, _controls(write_gate=jnp.zeros((1,))))


def test_wrong_state_or_mask_shape_names_the_field():
    state = dnc.init_state(N, W, R)
    with pytest.raises(ValueError, match=r"state\.link: expected shape \[N, N\] = \(7, 7\), got \(7, 6\)"):
        dnc.step(state._replace(link=jnp.zeros((N, N - 1))), _controls())
    with pytest.raises(ValueError, match=r"state\.memory: expected shape \[N, W\] = \(\?, \?\), got \(7,\)"):
        dnc.step(state._replace(memory=jnp.zeros((N,))), _controls())
    with pytest.raises(ValueError, match=r"state\.reads: expected shape \[R, W\] = \(3, 5\), got \(2, 5\)"):
        dnc.step(state._replace(reads=jnp.zeros((2, W))), _controls())
    with pytest.raises(ValueError, match=r"mask: expected shape \[\] = \(\), got \(4,\)"):
        dnc.step(state, _controls(), jnp.ones((4,)))


def test_bad_interface_and_sizes_raise_named_errors():
    with pytest.raises(ValueError, match=r"raw: expected shape \[\.\.\., P\] = \(\.\.\., 48\).*got \(2, 47\)"):
        dnc.controls_from_interface(jnp.zeros((2, P - 1)), R, W)
    with pytest.raises(ValueError, match=r"raw: expected shape .* got \(\)"):
        dnc.controls_from_interface(jnp.zeros(()), R, W)
    with pytest.raises(ValueError, match=r"num_slots \(N\): expected a positive integer, got 0"):
        dnc.init_state(0, W, R)
    with pytest.raises(ValueError, match=r"word_size \(W\): expected a positive integer, got 2\.5"):
        dnc.init_state(N, 2.5, R)
    with pytest.raises(ValueError, match=r"num_reads \(R\): expected a positive integer, got -1"):
        dnc.interface_size(-1, W)
