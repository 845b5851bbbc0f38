"""Tests of panm_jax/kernels/pointer.py against tests/reference/pointer_ref.py (float64 loops)."""

from __future__ import annotations

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from panm_jax.kernels import pointer
from tests.conftest import x64
from tests.reference import pointer_ref as ref

# Sizes that differ per axis so a transposed axis fails.
H, L, A, D, HC = 2, 7, 5, 6, 3
REAL = 4  # real slots; the last L - REAL = 3 are padding
MASK = np.array([1.0] * REAL + [0.0] * (L - REAL))
TOL = 1e-5
SCORES = pointer.SCORES


def _f32(x):
    return jnp.asarray(x, jnp.float32)


def _inputs(rng, scale=1.0):
    """Random keys [H, D], embedded addresses [L, D], memory [L, D], queries [HC, D] (float64 NumPy)."""
    return (
        scale * rng.normal(size=(H, D)),
        scale * rng.normal(size=(L, D)),
        scale * rng.normal(size=(L, D)),
        scale * rng.normal(size=(HC, D)),
    )


def _betas(kind):
    """(beta for the H^a heads, beta for the H^c heads) of one kind."""
    if kind == "paper":
        return 1.0, 1.0
    if kind == "scalar":
        return 2.5, 3.0
    return np.array([0.7, 4.0]), np.array([1.5, 0.5, 6.0])  # per head


def _max_err(got, want) -> float:
    return float(np.max(np.abs(np.asarray(got, np.float64) - np.asarray(want, np.float64))))


# ---- 1. equals the reference --------------------------------------------------------


@pytest.mark.parametrize("bits,base,length", [(3, 6, 4), (5, 0, 7), (5, 29, 7), (10, 1020, 9), (4, -3, 5)])
def test_binary_addresses_and_end_address_match_reference(bits, base, length):
    got = pointer.binary_addresses(jnp.int32(base), length, bits)
    assert got.shape == (length, bits) and got.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(got), ref.binary_addresses(base, length, bits))
    assert int(pointer.end_address(jnp.int32(base), jnp.int32(length), bits)) == ref.end_address(base, length, bits)
    np.testing.assert_array_equal(
        np.asarray(pointer.address_bits(jnp.int32(base), bits)), ref.binary_code(base % 2**bits, bits)
    )


@pytest.mark.parametrize("beta_kind", ["paper", "scalar", "per_head"])
@pytest.mark.parametrize("score", SCORES)
def test_attention_dereference_and_relational_access_match_reference(score, beta_kind):
    rng = np.random.default_rng(1)
    keys, emb, memory, queries = _inputs(rng)
    beta_a, beta_c = _betas(beta_kind)
    addresses = ref.binary_addresses(13, L, A)

    w = pointer.address_attention(_f32(keys), _f32(emb), _f32(MASK), score=score, inverse_temperature=_f32(beta_a))
    p = pointer.pointer_values(w, _f32(addresses))
    v = pointer.dereference(w, _f32(memory))
    rv, rw = pointer.relational_access(
        _f32(queries), _f32(memory), _f32(MASK), score=score, inverse_temperature=_f32(beta_c)
    )

    w_ref = ref.address_attention(keys, emb, MASK, score, beta_a)
    rv_ref, rw_ref = ref.relational_access(queries, memory, MASK, score, beta_c)
    errors = {
        "w^a (Eq. 2)": _max_err(w, w_ref),
        "p^a (Eq. 3)": _max_err(p, ref.pointer_values(w_ref, addresses)),
        "*p^a (Mode 1)": _max_err(v, ref.dereference(w_ref, memory)),
        "w^c (Eq. 5)": _max_err(rw, rw_ref),
        "*p^c (Eq. 6)": _max_err(rv, rv_ref),
    }
    print(f"PANM pointer ({score}, beta {beta_kind}), max abs error vs float64 reference:", errors)
    assert max(errors.values()) < TOL, errors


@pytest.mark.parametrize("score", SCORES)
def test_attention_scores_and_masked_softmax_match_reference(score):
    rng = np.random.default_rng(2)
    queries, keys = rng.normal(size=(HC, D)), rng.normal(size=(L, D))
    s = pointer.attention_scores(_f32(queries), _f32(keys), score=score)
    f = ref.score_fn(score)
    s_ref = np.array([[f(queries[h], keys[n]) for n in range(L)] for h in range(HC)])
    beta = np.array([0.5, 2.0, 8.0])
    sm = pointer.masked_softmax(s, _f32(MASK), _f32(beta))
    errors = {"scores": _max_err(s, s_ref), "softmax": _max_err(sm, ref.masked_softmax(s_ref, MASK, beta))}
    print(f"PANM scores ({score}), max abs error vs float64 reference:", errors)
    assert max(errors.values()) < TOL, errors


# ---- 2. invariants ---------------------------------------------------------------------


@pytest.mark.parametrize("score", SCORES)
def test_weights_are_distributions_over_real_slots_and_reads_are_convex(score):
    rng = np.random.default_rng(3)
    keys, emb, memory, queries = (_f32(x) for x in _inputs(rng, scale=3.0))
    addresses = pointer.binary_addresses(jnp.int32(29), L, A)
    w = pointer.address_attention(keys, emb, _f32(MASK), score=score, inverse_temperature=_f32([0.3, 20.0]))
    rv, rw = pointer.relational_access(queries, memory, _f32(MASK), score=score, inverse_temperature=5.0)
    for weights in (w, rw):
        assert bool(jnp.all(weights >= 0))
        np.testing.assert_allclose(np.asarray(weights[:, :REAL].sum(-1)), 1.0, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(weights[:, REAL:]), 0.0)  # exactly 0 on padding
    p = pointer.pointer_values(w, addresses)
    assert bool(jnp.all((p >= 0) & (p <= 1 + 1e-6)))
    # A convex combination of the real rows lies, coordinate by coordinate, between
    # their minimum and maximum (the padded rows are excluded: they get weight 0).
    lo, hi = memory[:REAL].min(0), memory[:REAL].max(0)
    for values in (pointer.dereference(w, memory), rv):
        assert bool(jnp.all((values >= lo - 1e-5) & (values <= hi + 1e-5)))


# ---- 3. hand-built scenarios --------------------------------------------------------------


def test_binary_addresses_wrap_around_at_two_to_the_bits():
    # bits = 3: the space is 0..7, so from base 6 the bank runs 6, 7, then wraps to 0, 1.
    # LSB first: 6 = 0*1 + 1*2 + 1*4 -> [0, 1, 1]; 7 -> [1, 1, 1]; 0 -> [0, 0, 0]; 1 -> [1, 0, 0].
    got = pointer.binary_addresses(jnp.int32(6), 4, 3)
    np.testing.assert_array_equal(np.asarray(got), [[0, 1, 1], [1, 1, 1], [0, 0, 0], [1, 0, 0]])
    # The paper's §2.2 example: a_B = 3 with b = 4 gives the addresses 3, 4, 5.
    np.testing.assert_array_equal(
        np.asarray(pointer.binary_addresses(3, 3, 4)), [[1, 1, 0, 0], [0, 0, 1, 0], [1, 0, 1, 0]]
    )


def test_end_address_is_the_address_of_the_last_real_slot():
    # (6 + 4 - 1) mod 8 = 1: the bank above ends at address 1, and its last row is bin(1).
    a_e = pointer.end_address(jnp.int32(6), jnp.int32(4), 3)
    assert a_e.dtype == jnp.int32 and int(a_e) == 1
    np.testing.assert_array_equal(
        np.asarray(pointer.address_bits(a_e, 3)), np.asarray(pointer.binary_addresses(jnp.int32(6), 4, 3)[-1])
    )
    # At test time a_B = 0, so a length-10 input ends at address 9 (b = 10, no wrap).
    assert int(pointer.end_address(0, jnp.int32(10), 10)) == 9
    np.testing.assert_array_equal(np.asarray(pointer.address_bits(9, 10)), [1, 0, 0, 1, 0, 0, 0, 0, 0, 0])


def test_key_equal_to_an_address_embedding_points_at_it():
    # cos(g^a(A[2]), g^a(A[2])) = 1 is the largest score, so slot 2 has the largest weight;
    # a large inverse temperature makes the softmax one-hot there, so the pointer value
    # is A[2] (Eq. 3) and the dereference is M[2] (Mode 1).
    rng = np.random.default_rng(4)
    emb, memory = _f32(rng.normal(size=(L, D))), _f32(rng.normal(size=(L, D)))
    addresses = pointer.binary_addresses(jnp.int32(11), L, A)
    keys = jnp.stack([emb[2], emb[0]])  # head 0 -> slot 2, head 1 -> slot 0
    scores = pointer.attention_scores(keys, emb)
    np.testing.assert_allclose(np.asarray(scores[[0, 1], [2, 0]]), 1.0, atol=1e-6)
    w1 = pointer.address_attention(keys, emb, _f32(MASK))  # the paper's beta = 1: right slot, but soft
    assert [int(i) for i in jnp.argmax(w1, -1)] == [2, 0] and float(w1.max()) < 0.6
    w = pointer.address_attention(keys, emb, _f32(MASK), inverse_temperature=1000.0)
    assert float(w[0, 2]) > 0.999 and float(w[1, 0]) > 0.999
    np.testing.assert_allclose(
        np.asarray(pointer.pointer_values(w, addresses)), np.asarray(addresses[jnp.array([2, 0])]), atol=1e-3
    )
    np.testing.assert_allclose(
        np.asarray(pointer.dereference(w, memory)), np.asarray(memory[jnp.array([2, 0])]), atol=1e-2
    )


def test_plain_cosine_cannot_sharpen_over_81_slots():
    # The module docstring's claim: over 81 slots the best case (cos = 1 at one slot,
    # -1 at the other 80) gives softmax(cos) a maximum of e / (e + 80 e^-1) ~= 0.085.
    e = jnp.ones((1, D))
    emb = jnp.concatenate([e, -jnp.ones((80, D))])
    w = pointer.address_attention(e, emb, jnp.ones((81,)))
    bound = math.e / (math.e + 80 / math.e)
    np.testing.assert_allclose(float(w[0, 0]), bound, rtol=1e-5)
    assert bound < 0.09


def test_one_hot_weights_dereference_exactly_that_slot():
    # w = e_3: M w = M[3] and A w = A[3], exactly (1 * x + 0 * y = x in floating point).
    rng = np.random.default_rng(5)
    memory = _f32(rng.normal(size=(L, D)))
    addresses = pointer.binary_addresses(jnp.int32(30), L, A)
    w = jnp.zeros((H, L)).at[:, 3].set(1.0)
    np.testing.assert_array_equal(np.asarray(pointer.dereference(w, memory)), np.tile(np.asarray(memory[3]), (H, 1)))
    np.testing.assert_array_equal(
        np.asarray(pointer.pointer_values(w, addresses)), np.tile(np.asarray(addresses[3]), (H, 1))
    )


@pytest.mark.parametrize("score", SCORES)
def test_relational_access_with_a_memory_row_as_query_finds_it(score):
    # Mode 2: a query equal to M[1] scores highest at slot 1 (cosine 1; for the dot
    # product we make M[1] the longest real row, so q . M[1] = |M[1]|^2 is the maximum);
    # a large inverse temperature makes the read M[1].
    rng = np.random.default_rng(6)
    memory = rng.normal(size=(L, D))
    memory[1] *= 3.0
    memory = _f32(memory)
    values, weights = pointer.relational_access(
        memory[1][None], memory, _f32(MASK), score=score, inverse_temperature=1000.0
    )
    assert int(jnp.argmax(weights[0])) == 1 and float(weights[0, 1]) > 0.999
    np.testing.assert_allclose(np.asarray(values[0]), np.asarray(memory[1]), atol=1e-2)


@pytest.mark.parametrize("score", SCORES)
def test_appending_padded_slots_changes_no_output(score):
    # Padded slots get exactly 0 weight, so neither their content nor their number
    # changes the weights on the real slots, the pointer values or the reads.
    rng = np.random.default_rng(7)
    keys, emb, memory, queries = (_f32(x) for x in _inputs(rng))
    beta_a, beta_c = _f32([2.0, 5.0]), _f32([1.0, 3.0, 9.0])

    def run(emb, memory, base, length, mask):
        addresses = pointer.binary_addresses(base, length, A)
        w = pointer.address_attention(keys, emb, mask, score=score, inverse_temperature=beta_a)
        rv, rw = pointer.relational_access(queries, memory, mask, score=score, inverse_temperature=beta_c)
        return w, pointer.pointer_values(w, addresses), pointer.dereference(w, memory), rw, rv

    short = run(emb[:REAL], memory[:REAL], jnp.int32(29), REAL, jnp.ones((REAL,)))
    junk = _f32(100.0 * rng.normal(size=(9, D)))  # any finite content in the padding
    mask = jnp.concatenate([jnp.ones((REAL,)), jnp.zeros((9,))])
    long = run(
        jnp.concatenate([emb[:REAL], junk]), jnp.concatenate([memory[:REAL], -junk]), jnp.int32(29), REAL + 9, mask
    )
    w_s, p_s, v_s, rw_s, rv_s = short
    w_l, p_l, v_l, rw_l, rv_l = long
    chex.assert_trees_all_close(
        (w_l[:, :REAL], rw_l[:, :REAL], p_l, v_l, rv_l), (w_s, rw_s, p_s, v_s, rv_s), rtol=1e-6, atol=1e-6
    )
    np.testing.assert_array_equal(np.asarray(w_l[:, REAL:]), 0.0)
    np.testing.assert_array_equal(np.asarray(rw_l[:, REAL:]), 0.0)


# ---- 4. gradients ---------------------------------------------------------------------------


@pytest.mark.parametrize("score", SCORES)
def test_gradients_match_finite_differences(score):
    rng = np.random.default_rng(8)
    with x64():
        keys, emb, memory, queries = (jnp.asarray(x) for x in _inputs(rng))
        addresses = pointer.binary_addresses(jnp.int32(5), L, A, dtype=jnp.float64)
        mask = jnp.asarray(MASK)

        @jax.jit  # one compilation instead of op-by-op dispatch for every perturbation
        def mode1(keys, emb, memory, beta):
            w = pointer.address_attention(keys, emb, mask, score=score, inverse_temperature=beta)
            return pointer.pointer_values(w, addresses), pointer.dereference(w, memory)

        @jax.jit
        def mode2(queries, memory, beta):
            return pointer.relational_access(queries, memory, mask, score=score, inverse_temperature=beta)

        check_grads(mode1, (keys, emb, memory, jnp.asarray([1.5, 3.0])), order=1, modes=("rev",), atol=1e-4, rtol=1e-4)
        check_grads(mode2, (queries, memory, jnp.asarray(2.0)), order=1, modes=("rev",), atol=1e-4, rtol=1e-4)


def test_scaled_dot_and_masked_softmax_second_derivatives_match_finite_differences():
    # Forward and reverse mode, to second order (the scaled dot product has its own derivative
    # rule; the masked softmax differentiates through its shift), with beta of both signs and 0.
    rng = np.random.default_rng(27)
    with x64():
        keys, emb = jnp.asarray(rng.normal(size=(3, D))), jnp.asarray(rng.normal(size=(L, D)))
        mask = jnp.asarray(MASK)

        @jax.jit
        def attend(keys, emb, beta):
            return pointer.address_attention(keys, emb, mask, score="scaled_dot", inverse_temperature=beta)

        check_grads(
            attend, (keys, emb, jnp.asarray([1.5, 0.0, -2.0])), order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5
        )


@pytest.mark.parametrize("score", SCORES)
def test_gradients_finite_at_zero_key_zero_memory_and_fully_masked_row(score):
    rng = np.random.default_rng(9)
    emb = _f32(rng.normal(size=(L, D)))
    addresses = pointer.binary_addresses(jnp.int32(0), L, A)
    cot = _f32(rng.normal(size=(H, D)))

    def loss(keys, emb, memory, queries, beta, mask):
        w = pointer.address_attention(keys, emb, mask, score=score, inverse_temperature=beta)
        rv, rw = pointer.relational_access(queries, memory, mask, score=score, inverse_temperature=beta[0])
        return (
            jnp.sum(pointer.dereference(w, memory) * cot)
            + jnp.sum(pointer.pointer_values(w, addresses) ** 2)
            + jnp.sum(rv**2)
            + jnp.sum(rw * jnp.arange(L))
        )

    grad = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3, 4)))
    zeros_k, zeros_m, zeros_q = jnp.zeros((H, D)), jnp.zeros((L, D)), jnp.zeros((HC, D))
    beta = _f32([2.0, 7.0])
    for mask in (_f32(MASK), jnp.zeros((L,))):  # padded tail; fully masked (an empty example)
        for args in ((zeros_k, emb, zeros_m, zeros_q), (zeros_k, zeros_m, zeros_m, zeros_q)):
            grads = grad(*args, beta, mask)
            chex.assert_shape(grads, [(H, D), (L, D), (L, D), (HC, D), (H,)])  # keys, emb, memory, queries, beta
            chex.assert_tree_all_finite(grads)
    # Fully masked: all weights are 0, so the outputs are 0 and nothing can move them.
    w = pointer.address_attention(_f32(rng.normal(size=(H, D))), emb, jnp.zeros((L,)), score=score)
    np.testing.assert_array_equal(np.asarray(w), 0.0)
    grads = grad(_f32(rng.normal(size=(H, D))), emb, _f32(rng.normal(size=(L, D))), zeros_q, beta, jnp.zeros((L,)))
    for g in grads:
        np.testing.assert_array_equal(np.asarray(g), 0.0)


# ---- 5. transforms ---------------------------------------------------------------------------


def _example(base, length, keys, emb, memory, queries):
    """One example's pointer step, as the module will call it (base and length traced)."""
    mask = (jnp.arange(L) < length).astype(jnp.float32)
    addresses = pointer.binary_addresses(base, L, A)
    p0 = pointer.address_bits(pointer.end_address(base, length, A), A)
    w = pointer.address_attention(keys, emb, mask, inverse_temperature=_f32([2.0, 6.0]))
    rv, rw = pointer.relational_access(queries, memory, mask, score="scaled_dot", inverse_temperature=3.0)
    return p0, addresses, w, pointer.pointer_values(w, addresses), pointer.dereference(w, memory), rv, rw


def test_vmap_equals_python_loop():
    rng = np.random.default_rng(10)
    b = 3
    bases = jnp.asarray([0, 29, 17], jnp.int32)
    lengths = jnp.asarray([7, 2, 5], jnp.int32)
    keys, emb, memory, queries = (_f32(rng.normal(size=(b,) + s)) for s in ((H, D), (L, D), (L, D), (HC, D)))
    batched = jax.jit(jax.vmap(_example))(bases, lengths, keys, emb, memory, queries)
    for i in range(b):
        single = _example(bases[i], lengths[i], keys[i], emb[i], memory[i], queries[i])
        chex.assert_trees_all_close(jax.tree_util.tree_map(lambda x: x[i], batched), single, rtol=1e-7, atol=1e-6)
        # per-example bases reach binary_addresses through vmap: compare to the reference
        np.testing.assert_array_equal(np.asarray(batched[1][i]), ref.binary_addresses(int(bases[i]), L, A))
        np.testing.assert_array_equal(
            np.asarray(batched[0][i]), ref.binary_code(ref.end_address(int(bases[i]), int(lengths[i]), A), A)
        )


def test_second_call_does_not_retrace(trace_counter):
    rng = np.random.default_rng(11)
    counter = trace_counter(chex.assert_max_traces(_example, n=1))  # chex fails at the retrace itself
    run = jax.jit(counter)
    for base, length in ((3, 7), (30, 1)):
        args = (_f32(rng.normal(size=s)) for s in ((H, D), (L, D), (L, D), (HC, D)))
        run(jnp.int32(base), jnp.int32(length), *args)
    assert counter.count == 1


def test_binary_addresses_with_a_traced_base_under_jit():
    bank = jax.jit(lambda base: pointer.binary_addresses(base, L, A))
    for base in (0, 27, 31, 12345):
        np.testing.assert_array_equal(np.asarray(bank(jnp.int32(base))), ref.binary_addresses(base, L, A))


# ---- 6. bad input ------------------------------------------------------------------------------


def test_address_functions_reject_bad_sizes():
    for bits in (0, 31, 2.5, True):
        with pytest.raises(ValueError, match=rf"bits: expected an integer in \[1, 30\], got {bits!r}"):
            pointer.binary_addresses(0, L, bits)
    with pytest.raises(ValueError, match=r"bits: expected an integer in \[1, 30\], got 40"):
        pointer.end_address(0, jnp.int32(3), 40)
    with pytest.raises(ValueError, match=r"bits: expected an integer in \[1, 30\], got 0"):
        pointer.address_bits(0, 0)
    with pytest.raises(ValueError, match=r"length: expected a positive integer, got 0"):
        pointer.binary_addresses(0, 0, A)
    with pytest.raises(ValueError, match=r"base: expected an integer scalar, got dtype float32"):
        pointer.binary_addresses(jnp.float32(1.0), L, A)
    with pytest.raises(ValueError, match=r"base: expected shape \[\] = \(\), got \(2,\)"):
        pointer.binary_addresses(jnp.zeros((2,), jnp.int32), L, A)
    with pytest.raises(ValueError, match=r"length: expected an integer scalar, got dtype float32"):
        pointer.end_address(0, jnp.float32(3.0), A)
    with pytest.raises(ValueError, match=r"address: expected shape \[\] = \(\), got \(3,\)"):
        pointer.address_bits(jnp.zeros((3,), jnp.int32), A)
    # A negative l(X) used to wrap silently (end_address(0, -5, 8) was 250).
    with pytest.raises(ValueError, match=r"length: expected values in \[0, inf\], got -5"):
        pointer.end_address(0, jnp.int32(-5), 8)
    for draw in (pointer.off_bank_addresses, pointer.neighbour_addresses):
        with pytest.raises(ValueError, match=r"length: expected values in \[0, inf\], got -1"):
            draw(jax.random.key(0), 0, jnp.int32(-1), 2, A)


def test_attention_names_the_bad_argument():
    keys, emb, mask = jnp.zeros((H, D)), jnp.zeros((L, D)), jnp.ones((L,))
    with pytest.raises(ValueError, match=r"score: expected one of \['cosine', 'scaled_dot'\], got 'dot'"):
        pointer.address_attention(keys, emb, mask, score="dot")
    with pytest.raises(ValueError, match=r"score: expected one of \['cosine', 'scaled_dot'\], got 'softmax'"):
        pointer.attention_scores(keys, emb, score="softmax")
    with pytest.raises(ValueError, match=r"keys: expected shape \[H, D\], got \(6,\)"):
        pointer.address_attention(jnp.zeros((D,)), emb, mask)
    with pytest.raises(ValueError, match=r"embedded_addresses: expected shape \[L, D\] = \(\?, 6\), got \(7, 5\)"):
        pointer.address_attention(keys, jnp.zeros((L, D - 1)), mask)
    with pytest.raises(ValueError, match=r"mask: expected shape \[L\] = \(7\), got \(6,\)"):
        pointer.address_attention(keys, emb, jnp.ones((L - 1,)))
    with pytest.raises(
        ValueError,
        match=r"inverse_temperature: expected shape \[\] or \[H\] = \(\) or \(2,\), "
        r"got \(3,\)",
    ):
        pointer.address_attention(keys, emb, mask, inverse_temperature=jnp.ones((3,)))
    with pytest.raises(ValueError, match=r"scores: expected shape \[H, L\], got \(7,\)"):
        pointer.masked_softmax(jnp.zeros((L,)), mask)
    with pytest.raises(ValueError, match=r"addresses: expected shape \[L, A\] = \(7, \?\), got \(6, 5\)"):
        pointer.pointer_values(jnp.zeros((H, L)), jnp.zeros((L - 1, A)))
    with pytest.raises(ValueError, match=r"memory: expected shape \[L, D\] = \(7, \?\), got \(8, 6\)"):
        pointer.dereference(jnp.zeros((H, L)), jnp.zeros((L + 1, D)))
    with pytest.raises(ValueError, match=r"queries: expected shape \[Hc, D\], got \(3, 6, 1\)"):
        pointer.relational_access(jnp.zeros((HC, D, 1)), emb, mask)
    with pytest.raises(
        ValueError,
        match=r"inverse_temperature: expected shape \[\] or \[Hc\] = \(\) or \(3,\), "
        r"got \(2,\)",
    ):
        pointer.relational_access(jnp.zeros((HC, D)), emb, mask, inverse_temperature=jnp.ones((2,)))
    with pytest.raises(ValueError, match=r"memory: expected shape \[L, D\] = \(\?, 6\), got \(7, 4\)"):
        pointer.relational_access(jnp.zeros((HC, D)), jnp.zeros((L, 4)), mask)


def test_integers_beyond_int32_are_named_not_overflowed_or_cut():
    # A Python int beyond int32 used to raise OverflowError from jnp.asarray; a wider NumPy integer was cut
    # to its low 32 bits (causal_mask(mask, np.int64(2**40)) admitted slot 0 alone).
    int32 = r"expected integers in \[-2147483648, 2147483647\] \(addresses and slots are computed in int32\), got "
    with pytest.raises(ValueError, match=r"^base: " + int32 + "2147483648$"):
        pointer.binary_addresses(2**31, 8, A)
    with pytest.raises(ValueError, match=r"^base: " + int32 + "-18446744073709551616$"):
        pointer.binary_addresses(-(2**64), 8, A)
    with pytest.raises(ValueError, match=r"^length: expected an integer <= 2147483647 \(slot indices are int32\)"):
        pointer.binary_addresses(0, 2**31, A)
    with pytest.raises(ValueError, match=r"^length: " + int32 + "4294967299$"):
        pointer.end_address(0, np.int64(2**32 + 3), A)
    with pytest.raises(ValueError, match=r"^address: " + int32 + "1099511627776$"):
        pointer.address_bits(np.int64(2**40), A)
    with pytest.raises(ValueError, match=r"^step: " + int32 + "1099511627776$"):
        pointer.causal_mask(jnp.ones((2, L)), np.array([0, 2**40]))
    for draw in (pointer.off_bank_addresses, pointer.neighbour_addresses):
        with pytest.raises(ValueError, match=r"^count: expected an integer <= 2147483647 \(an int32 array axis\)"):
            draw(jax.random.key(0), 0, jnp.int32(3), 2**31, A)
    # The ends of int32 are fine.
    np.testing.assert_array_equal(
        np.asarray(pointer.binary_addresses(2**31 - 1, 2, A)), ref.binary_addresses(2**31 - 1, 2, A)
    )
    assert np.asarray(pointer.causal_mask(jnp.ones((L,)), -(2**31))).sum() == 0


def test_a_non_finite_inverse_temperature_is_named():
    keys, emb, mask = jnp.ones((H, D)), jnp.ones((L, D)), jnp.ones((L,))
    for beta, shown in ((np.nan, "nan"), (np.inf, "inf"), (np.array([1.0, -np.inf]), "-inf")):
        with pytest.raises(ValueError, match=rf"^inverse_temperature: expected finite values, got {shown}$"):
            pointer.address_attention(keys, emb, mask, inverse_temperature=beta)
    with pytest.raises(ValueError, match=r"^inverse_temperature: expected finite values, got nan$"):
        pointer.relational_access(jnp.ones((HC, D)), emb, mask, inverse_temperature=np.float32(np.nan))
    # Traced, it is the caller's: no check, no host sync.
    jax.jit(lambda b: pointer.masked_softmax(jnp.ones((H, L)), mask, b))(jnp.float32(2.0))


def test_errors_are_raised_at_trace_time_under_jit():
    with pytest.raises(ValueError, match=r"mask: expected shape \[L\]"):
        jax.jit(pointer.relational_access)(jnp.zeros((HC, D)), jnp.zeros((L, D)), jnp.ones((L + 2,)))
    with pytest.raises(ValueError, match=r"base: expected an integer scalar"):
        jax.jit(lambda b: pointer.binary_addresses(b, L, A))(jnp.float32(0.0))


# ---- 5. off_bank_addresses: the training distractors (the library's option) -----------------


@pytest.mark.parametrize("bits,base,length", [(4, 3, 5), (4, 14, 5), (5, 0, 31), (3, 6, 1)])
def test_off_bank_addresses_are_uniform_over_the_addresses_no_slot_holds(bits, base, length):
    # 14, 15, 0, 1, 2 is a bank that wraps; with 31 of 32 slots real only address 31 is free.
    drawn, valid = pointer.off_bank_addresses(jax.random.key(0), jnp.int32(base), jnp.int32(length), 4000, bits)
    drawn = np.asarray(drawn)
    free = ref.off_bank(base, length, bits)
    assert bool(np.all(valid)) and valid.shape == (4000,)
    assert drawn.shape == (4000,) and drawn.dtype == np.int32
    assert set(drawn.tolist()) == free  # only free addresses, and every one of them
    counts = np.array([np.sum(drawn == a) for a in sorted(free)])
    expected = 4000 / len(free)
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected)), counts  # 5 sigma of a binomial count


def test_off_bank_addresses_when_the_bank_fills_the_space_and_under_jit_vmap():
    _, valid = pointer.off_bank_addresses(jax.random.key(1), jnp.int32(5), jnp.int32(16), 3, 4)
    assert not bool(np.any(valid))  # no address is free: the caller masks the draws out
    keys = jax.random.split(jax.random.key(2), 3)
    draw = jax.jit(jax.vmap(lambda k, a, n: pointer.off_bank_addresses(k, a, n, 50, 5)))
    drawn, valid = draw(keys, jnp.array([0, 30, 7], jnp.int32), jnp.array([4, 6, 32], jnp.int32))
    assert np.asarray(valid).tolist() == [[True] * 50, [True] * 50, [False] * 50]
    for row, base, length in zip(np.asarray(drawn)[:2], (0, 30), (4, 6)):
        assert set(row.tolist()) <= ref.off_bank(base, length, 5)
    with pytest.raises(ValueError, match="count: expected a positive integer, got 0"):
        pointer.off_bank_addresses(jax.random.key(0), jnp.int32(0), jnp.int32(3), 0, 4)
    with pytest.raises(ValueError, match="length: expected an integer scalar"):
        pointer.off_bank_addresses(jax.random.key(0), jnp.int32(0), jnp.float32(3), 2, 4)


@pytest.mark.parametrize("bits,base,length", [(5, 3, 5), (5, 30, 4), (10, 1000, 12), (4, 0, 16)])
def test_neighbour_addresses_are_one_bit_from_the_bank_and_off_it(bits, base, length):
    # 30, 31, 0, 1 wraps; with 16 of 16 slots real every flip lands in the bank (no valid draw).
    drawn, valid = pointer.neighbour_addresses(jax.random.key(3), jnp.int32(base), jnp.int32(length), 3000, bits)
    drawn, valid = np.asarray(drawn), np.asarray(valid)
    bank = ref.bank(base, length, bits)
    neighbours = ref.one_bit_neighbours(base, length, bits)
    # A draw is valid exactly when it is off the bank; every draw is one bit from a bank address.
    np.testing.assert_array_equal(valid, [int(d) not in bank for d in drawn])
    assert all(any(bin(int(d) ^ a).count("1") == 1 for a in bank) for d in drawn)
    assert set(drawn[valid].tolist()) == neighbours  # and every off-bank neighbour turns up
    # P(valid) = (number of (slot, bit) pairs whose flip leaves the bank) / (l(X) b).
    p_valid = sum((a ^ (1 << j)) not in bank for a in bank for j in range(bits)) / (length * bits)
    assert abs(valid.mean() - p_valid) < 5 * np.sqrt(p_valid * (1 - p_valid) / 3000) + 1e-9


def test_neighbour_addresses_of_an_empty_bank_are_all_invalid():
    _, valid = pointer.neighbour_addresses(jax.random.key(0), jnp.int32(7), jnp.int32(0), 5, 4)
    assert not bool(np.any(valid))
    with pytest.raises(ValueError, match="count: expected a positive integer, got -2"):
        pointer.neighbour_addresses(jax.random.key(0), jnp.int32(0), jnp.int32(3), -2, 4)


# ---- 6. snap_to_address (the option snap_pointers) ------------------------------------------


def test_snap_to_address_rounds_each_bit_with_a_straight_through_gradient():
    rng = np.random.default_rng(15)
    p = rng.uniform(size=(H, A))
    p[0, 0], p[1, 1] = 0.5, 0.5000001  # the boundary: exactly 0.5 goes to 0
    got = pointer.snap_to_address(_f32(p))
    np.testing.assert_array_equal(np.asarray(got), [ref.snap(row) for row in np.asarray(_f32(p))])
    cot = _f32(rng.normal(size=(H, A)))
    grad = jax.grad(lambda x: jnp.sum(pointer.snap_to_address(x) * cot))(_f32(p))
    np.testing.assert_array_equal(np.asarray(grad), np.asarray(cot))  # d snap / d p = I


def test_a_pointer_with_a_majority_weight_snaps_to_that_address():
    # Weight 0.55 on slot 4 of a bank from 27 (5 bits) and 0.45 spread over the others: every
    # bit's weighted majority is slot 4's bit, so the snapped pointer is exactly A[4] = 31.
    addresses = pointer.binary_addresses(jnp.int32(27), L, A)
    w = np.full((1, L), 0.45 / (L - 1))
    w[0, 4] = 0.55
    soft = pointer.pointer_values(_f32(w), addresses)
    assert not np.all(np.isin(np.asarray(soft), [0.0, 1.0]))
    np.testing.assert_array_equal(np.asarray(pointer.snap_to_address(soft)), np.asarray(addresses[4:5]))


# ---- 7. extremes: any inverse temperature, huge and tiny scores, saturation ------------------

# One head per inverse temperature: positive, zero and negative, tiny and huge.
BETAS = (1e-30, 1.0, 1e3, 1e12, 1e30, 0.0, -1.0, -1e12)
SCALES = (1e-30, 1e-6, 1.0, 1e6, 1e19, 1e30)


def _softmax_case(rng, scale, dtype):
    """Scores [len(BETAS), L] at `scale` (one exact tie per row and one far outlier), as `dtype`."""
    scores = scale * rng.normal(size=(len(BETAS), L))
    scores[:, 1] = scores[:, 0]  # a tie between two real slots
    scores[:, 3] = -scale * 40.0  # a real slot far below the others
    return np.asarray(np.asarray(scores, dtype), np.float64)


def _softmax_grad_ref(scores, weights, betas, cot):
    """d/dS and d/dbeta of sum(w * cot), w the masked softmax of beta S (float64, real slots only)."""
    centred = (cot - np.sum(weights * cot, axis=1, keepdims=True)) * weights  # dL/d(beta S)
    return np.asarray(betas)[:, None] * centred, np.sum(centred * np.where(weights > 0, scores, 0.0), axis=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("scale", [1e-3, 1.0, 30.0, 1e6, 1e30])
def test_masked_softmax_is_the_softmax_over_real_slots_at_any_inverse_temperature(scale, dtype):
    # The softmax over the real slots for every finite beta: the old padding logit (-1e9) beat
    # every real logit once beta S < -1e9 (beta = 1e12, negative scores: the real weights summed
    # to 0), and beta S overflowed to inf for beta = 1e30 and scores of 1e30 (NaN weights).
    rng = np.random.default_rng(20)
    scores = _softmax_case(rng, scale, dtype)
    betas = np.asarray(BETAS)
    cot = rng.normal(size=scores.shape)
    tol = {np.float32: 2e-6, np.float64: 1e-14}[dtype]
    with x64():
        s, b, c, m = (jnp.asarray(x, dtype) for x in (scores, betas, cot, MASK))
        value_and_grad = jax.jit(
            jax.value_and_grad(lambda s, b: jnp.sum(pointer.masked_softmax(s, m, b) * c), argnums=(0, 1))
        )
        w = pointer.masked_softmax(s, m, b)
        _, (g_s, g_b) = value_and_grad(s, b)
        # A scalar beta, and the same numbers given as a per-head vector, agree.
        w_scalar = jnp.stack([pointer.masked_softmax(s[i : i + 1], m, b[i])[0] for i in range(len(BETAS))])
    want = ref.masked_softmax(scores, MASK, betas)
    err = _max_err(w, want)
    print(f"masked_softmax {np.dtype(dtype).name} scores ~{scale:g}, beta in {BETAS}: max abs error {err:.1e}")
    assert err < tol, err
    np.testing.assert_array_equal(np.asarray(w_scalar), np.asarray(w))
    np.testing.assert_allclose(np.asarray(w[:, :REAL]).sum(-1), 1.0, atol=4 * np.finfo(dtype).eps)
    np.testing.assert_array_equal(np.asarray(w[:, REAL:]), 0.0)
    np.testing.assert_array_equal(np.asarray(w[betas == 0.0]), want[betas == 0.0])  # beta = 0: uniform
    chex.assert_tree_all_finite((g_s, g_b))
    np.testing.assert_array_equal(np.asarray(g_s[:, REAL:]), 0.0)  # padding gets no gradient
    # Where the softmax is well conditioned (|beta| times the score spread at most 50), the
    # gradients equal their float64 formulas too.
    spread = np.abs(betas) * np.ptp(scores[:, :REAL], axis=1)
    rows = spread <= 50
    assert rows.sum() >= 2  # beta = 0 and 1e-30 at least
    g_s_ref, g_b_ref = _softmax_grad_ref(scores, want, betas, cot)
    g_err = _max_err(np.asarray(g_s)[rows], g_s_ref[rows]) / max(1.0, np.abs(g_s_ref[rows]).max())
    b_err = _max_err(np.asarray(g_b)[rows], g_b_ref[rows]) / max(1.0, np.abs(g_b_ref[rows]).max())
    print(f"   gradients (rows with |beta| spread <= 50): relative error d/dS {g_err:.1e}, d/dbeta {b_err:.1e}")
    assert max(g_err, b_err) < 1e3 * tol, (g_err, b_err)


def test_masked_softmax_ignores_padding_content_and_empty_rows_have_zero_gradient():
    # Padded scores never enter the arithmetic: +-inf or NaN there changes nothing and sends no
    # NaN into the gradient. A fully masked row is zero, with a zero gradient for every beta.
    rng = np.random.default_rng(21)
    scores = rng.normal(size=(len(BETAS), L))
    betas = _f32(BETAS)
    junk = scores.copy()
    junk[:, REAL:] = [np.inf, -np.inf, np.nan]
    grad = jax.jit(jax.grad(lambda s, b, m: jnp.sum(pointer.masked_softmax(s, m, b) * jnp.arange(L)), argnums=(0, 1)))
    clean = pointer.masked_softmax(_f32(scores), _f32(MASK), betas)
    dirty = pointer.masked_softmax(_f32(junk), _f32(MASK), betas)
    np.testing.assert_array_equal(np.asarray(dirty), np.asarray(clean))
    g_s, g_b = grad(_f32(junk), betas, _f32(MASK))
    chex.assert_tree_all_finite((g_s, g_b))
    empty = jnp.zeros((L,))
    for s in (_f32(scores), _f32(1e30 * scores), _f32(junk)):
        np.testing.assert_array_equal(np.asarray(pointer.masked_softmax(s, empty, betas)), 0.0)
        for g in grad(s, betas, empty):
            np.testing.assert_array_equal(np.asarray(g), 0.0)


def test_masked_softmax_keeps_16_bit_dtypes_and_handles_huge_beta_there():
    # float16 tops out at 65504: beta = 1e12 does not fit it, but beta is taken in float32.
    scores = jnp.asarray([[-1.0, -2.0, -3.0, 0.0, 0.0], [60000.0, -60000.0, 1.0, 0.0, 0.0]], jnp.float16)
    mask = jnp.asarray([1.0, 1.0, 1.0, 0.0, 0.0])
    for dtype in (jnp.float16, jnp.bfloat16):
        w = pointer.masked_softmax(scores.astype(dtype), mask, jnp.asarray([1e12, -1e30]))
        assert w.dtype == dtype
        np.testing.assert_array_equal(np.asarray(w, np.float32), [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0]])


def _scaled_dot_ref(queries, keys):
    """float64 q . k / sqrt(D), and the same clipped to float32's finite range."""
    exact = np.array([[ref.scaled_dot(q, k) for k in keys] for q in queries])
    top = float(np.finfo(np.float32).max)
    return exact, np.clip(exact, -top, top)


@pytest.mark.parametrize("q_scale", SCALES)
def test_scaled_dot_saturates_instead_of_overflowing(q_scale):
    # q . k / sqrt(D) for queries and keys at every scale pair: the plain einsum gives inf (or
    # inf - inf = NaN) from 1e19 on; the kernel equals the float64 value clipped to +-f_max, and
    # its gradient is finite, k / sqrt(D) where the score is inside the range and 0 where it saturates.
    rng = np.random.default_rng(22)
    queries = np.asarray(np.asarray(q_scale * rng.normal(size=(HC, D)), np.float32), np.float64)
    cot = rng.normal(size=(HC, L))
    grad = jax.jit(
        jax.grad(lambda q, k: jnp.sum(pointer.attention_scores(q, k, score="scaled_dot") * _f32(cot)), argnums=(0, 1))
    )
    worst, worst_grad = 0.0, 0.0
    for k_scale in SCALES:
        keys = np.asarray(np.asarray(k_scale * rng.normal(size=(L, D)), np.float32), np.float64)
        got = np.asarray(pointer.attention_scores(_f32(queries), _f32(keys), score="scaled_dot"), np.float64)
        exact, want = _scaled_dot_ref(queries, keys)
        # Rounding of a dot product: relative to sum_d |q_d k_d| / sqrt(D) (plus float32's
        # flush-to-zero of results below its smallest normal number).
        size = np.abs(queries) @ np.abs(keys).T / math.sqrt(D)
        err = np.abs(got - want) / np.maximum(np.minimum(size, np.finfo(np.float32).max), 1e-36)
        worst = max(worst, float(err.max()))
        assert np.all(np.isfinite(got)) and err.max() < 1e-6, (k_scale, err.max())
        g_q, g_k = (np.asarray(g, np.float64) for g in grad(_f32(queries), _f32(keys)))
        assert np.all(np.isfinite(g_q)) and np.all(np.isfinite(g_k))
        inside = np.abs(exact) <= np.finfo(np.float32).max
        g_q_ref = (cot * inside) @ keys / math.sqrt(D)
        g_k_ref = (cot * inside).T @ queries / math.sqrt(D)
        for g, g_ref in ((g_q, g_q_ref), (g_k, g_k_ref)):
            rel = _max_err(g, g_ref) / max(np.abs(g_ref).max(), 1e-30)
            worst_grad = max(worst_grad, rel)
            assert rel < 1e-5, (k_scale, rel)
    print(
        f"scaled_dot, queries ~{q_scale:g}, keys ~{SCALES}: max error {worst:.1e} (relative to sum |q k| / sqrt D), "
        f"gradient {worst_grad:.1e} (relative to its largest entry)"
    )


def test_scaled_dot_at_the_edge_of_the_finite_range():
    # q = [x, 0, ...], k = [y, 0, ...]: S = x y / sqrt(D). Just inside f_max the score is the
    # correctly rounded value (the plain product x y already overflows); at and beyond f_max it
    # is exactly +-f_max. The score is finite-valued everywhere; the remaining limit is that
    # scores beyond f_max tie there.
    top = float(np.finfo(np.float32).max)
    y = 2.0**100
    for fraction, sign in ((1 - 2.0**-20, 1.0), (0.5, -1.0), (1.0, 1.0), (1.0 + 2.0**-20, -1.0), (4.0, 1.0)):
        x = float(np.float32(sign * fraction * top * math.sqrt(D) / y))
        q = jnp.zeros((1, D)).at[0, 0].set(x)
        k = jnp.zeros((1, D)).at[0, 0].set(y)
        with np.errstate(over="ignore"):
            assert not np.isfinite(np.float32(x) * np.float32(y))  # the plain product overflows
        got = float(pointer.attention_scores(q, k, score="scaled_dot")[0, 0])
        exact = x * y / math.sqrt(D)
        want = float(np.clip(np.float32(np.clip(exact, -top, top)), -top, top))
        err = abs(got - want) / abs(want)
        print(f"scaled_dot at {fraction:.7f} f_max: got {got:.8e}, exact {exact:.8e}, relative error {err:.1e}")
        assert err <= np.finfo(np.float32).eps, (fraction, got, exact)
        if abs(exact) >= top:
            assert got == math.copysign(top, exact)
        g = float(jax.grad(lambda q: pointer.attention_scores(q, k, score="scaled_dot")[0, 0])(q)[0, 0])
        assert math.isfinite(g)
        if fraction != 1.0:  # (at exactly f_max the rounding decides whether it saturates)
            assert g == (0.0 if fraction > 1 else pytest.approx(y / math.sqrt(D), rel=1e-6)), (fraction, g)


def test_scaled_dot_saturates_at_the_16_bit_range():
    # 16-bit inputs are computed in float32 and saturate at their own dtype's largest value.
    for dtype in (jnp.float16, jnp.bfloat16):
        top = float(jnp.finfo(dtype).max)
        big = jnp.full((1, D), math.sqrt(top), dtype)  # q . k / sqrt(D) = sqrt(D) f_max
        q = jnp.concatenate([big, jnp.full((1, D), 2.0, dtype)])
        got = pointer.attention_scores(q, jnp.concatenate([big, -big]), score="scaled_dot")
        assert got.dtype == dtype
        want = [
            [top, -top],
            [
                float(jnp.asarray(2.0 * math.sqrt(D) * float(big[0, 0]), dtype)),
                float(jnp.asarray(-2.0 * math.sqrt(D) * float(big[0, 0]), dtype)),
            ],
        ]
        np.testing.assert_array_equal(np.asarray(got, np.float64), want)


def test_scaled_dot_equals_the_plain_einsum_where_that_fits():
    # No rescaling below the overflow threshold: bit for bit the plain product.
    rng = np.random.default_rng(23)
    for scale in (1e-9, 1.0, 1e15):  # products in the normal range
        q, k = _f32(scale * rng.normal(size=(HC, D))), _f32(scale * rng.normal(size=(L, D)))
        plain = jnp.einsum("hd,nd->hn", q, k) * (1.0 / math.sqrt(D))
        np.testing.assert_array_equal(np.asarray(pointer.attention_scores(q, k, score="scaled_dot")), np.asarray(plain))


@pytest.mark.parametrize("beta", [1.0, 1e12, -1e12])
def test_scaled_dot_attention_with_huge_vectors_and_beta(beta):
    # Mode 1 and Mode 2 with scaled-dot scores of up to ~1e38 and beyond, times beta = +-1e12:
    # finite, the float64 masked softmax of the clipped scores, exactly 0 on padding.
    rng = np.random.default_rng(24)
    worst = 0.0
    for scale in (1e18, 1e30):
        keys = np.asarray(np.asarray(scale * rng.normal(size=(H, D)), np.float32), np.float64)
        emb = np.asarray(np.asarray(scale * rng.normal(size=(L, D)), np.float32), np.float64)
        w = pointer.address_attention(_f32(keys), _f32(emb), _f32(MASK), score="scaled_dot", inverse_temperature=beta)
        _, clipped = _scaled_dot_ref(keys, emb)
        err = _max_err(w, ref.masked_softmax(clipped, MASK, beta))
        worst = max(worst, err)
        assert err < 1e-6
        np.testing.assert_array_equal(np.asarray(w[:, REAL:]), 0.0)
        g = jax.grad(
            lambda k: jnp.sum(
                pointer.address_attention(k, _f32(emb), _f32(MASK), score="scaled_dot", inverse_temperature=beta)
                * jnp.arange(L)
            )
        )(_f32(keys))
        assert bool(jnp.all(jnp.isfinite(g)))
    print(f"scaled_dot attention, beta {beta:g}, vectors ~1e18 and ~1e30: max abs error {worst:.1e}")


def _cosine_loss_ref(keys, emb, cot, beta):
    return float(np.sum(ref.address_attention(keys, emb, MASK, "cosine", beta) * cot))


def _finite_difference(f, x, step=1e-6):
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += step
        down[i] -= step
        grad[i] = (f(up) - f(down)) / (2 * step)
    return grad


def test_cosine_address_attention_value_and_gradient_at_every_scale():
    # Keys and embedded addresses at 1e-30 ... 1e30 in float32 (36 pairs): the weights are the
    # float64 reference's and the gradient (the float64 one at unit scale over the scale: the
    # cosine is scale invariant) is finite and equal to it. At 1e19 the squared norms overflow
    # float32; this relies on addressing.cosine_similarity being exactly scale invariant.
    rng = np.random.default_rng(25)
    keys, emb = rng.normal(size=(H, D)), rng.normal(size=(L, D))
    keys, emb = (np.asarray(np.asarray(x, np.float32), np.float64) for x in (keys, emb))
    cot, beta = rng.normal(size=(H, L)), np.array([3.0, 0.5])
    w_ref = ref.address_attention(keys, emb, MASK, "cosine", beta)
    g_k_ref = _finite_difference(lambda k: _cosine_loss_ref(k, emb, cot, beta), keys)
    g_e_ref = _finite_difference(lambda e: _cosine_loss_ref(keys, e, cot, beta), emb)
    value_and_grad = jax.jit(
        jax.value_and_grad(
            lambda k, e: jnp.sum(
                pointer.address_attention(k, e, _f32(MASK), inverse_temperature=_f32(beta)) * _f32(cot)
            ),
            argnums=(0, 1),
        )
    )
    attend = jax.jit(lambda k, e: pointer.address_attention(k, e, _f32(MASK), inverse_temperature=_f32(beta)))
    worst_w, worst_g = 0.0, 0.0
    for k_scale in SCALES:
        for e_scale in SCALES:
            k32, e32 = _f32(k_scale * keys), _f32(e_scale * emb)
            w = attend(k32, e32)
            _, (g_k, g_e) = value_and_grad(k32, e32)
            assert bool(jnp.all(jnp.isfinite(w))), (k_scale, e_scale)
            assert bool(jnp.all(jnp.isfinite(g_k)) & jnp.all(jnp.isfinite(g_e))), (k_scale, e_scale)
            worst_w = max(worst_w, _max_err(w, w_ref))
            rel = max(
                _max_err(np.asarray(g_k, np.float64) * k_scale, g_k_ref) / np.abs(g_k_ref).max(),
                _max_err(np.asarray(g_e, np.float64) * e_scale, g_e_ref) / np.abs(g_e_ref).max(),
            )
            worst_g = max(worst_g, rel)
            assert worst_w < 1e-5 and rel < 1e-4, (k_scale, e_scale, worst_w, rel)
    print(
        f"cosine address attention at scales {SCALES}: max abs error of w {worst_w:.1e}, "
        f"of the gradient (relative to its largest entry, rescaled to unit scale) {worst_g:.1e}"
    )


# ---- 8. relational_access returns named fields -----------------------------------------------


def test_relational_access_returns_named_values_and_weights():
    rng = np.random.default_rng(26)
    queries, memory = _f32(rng.normal(size=(HC, D))), _f32(rng.normal(size=(L, D)))
    read = pointer.relational_access(queries, memory, _f32(MASK), inverse_temperature=4.0)
    assert isinstance(read, pointer.RelationalRead) and read._fields == ("values", "weights")
    assert read.values.shape == (HC, D) and read.weights.shape == (HC, L)
    values, weights = read  # the tuple order is unchanged: values first
    assert values is read.values and weights is read.weights
    np.testing.assert_array_equal(np.asarray(read.values), np.asarray(pointer.dereference(read.weights, memory)))
    # Under jit and vmap the names survive (a NamedTuple is a pytree).
    batched = jax.jit(jax.vmap(lambda q, m: pointer.relational_access(q, m, _f32(MASK))))(
        jnp.stack([queries] * 2), jnp.stack([memory] * 2)
    )
    assert isinstance(batched, pointer.RelationalRead) and batched.weights.shape == (2, HC, L)
