"""The PANM conventions of ``docs/_conventions_pointer.md``, one test per row.

Each test builds the other convention (the paper's: Le et al. 2024, "Plug, Play,
and Generalize: Length Extrapolation with Pointer-Augmented Neural Memory", TMLR;
or the authors' public code, github.com/thaihungle/PANM, ``baselines/panm.py``)
by hand, in NumPy, from this library's functions, and checks the relation the
page states. Largest deviations are printed (``pytest -s``).
"""

from __future__ import annotations

import math
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from panm_jax.kernels import pointer
from panm_jax.models.panm import PANM, PANMConfig

# Sizes that differ per axis: H heads, L slots (REAL of them real), b address bits, D width.
H, L, REAL, BITS, D = 2, 7, 5, 6, 4
MASK = np.array([1.0] * REAL + [0.0] * (L - REAL))


def _f32(x):
    return jnp.asarray(x, jnp.float32)


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ---- bit order ------------------------------------------------------------------------------


def test_msb_first_codes_are_the_reversed_columns():
    # The paper prints addresses most-significant bit first; column k of ours is bit k.
    base, length = 45, 30  # 45 .. 74 mod 64: wraps past 63
    ours = np.asarray(pointer.binary_addresses(jnp.int32(base), length, BITS), int)
    msb_first = ["".join(str(bit) for bit in row[::-1]) for row in ours]
    assert msb_first == [format((base + j) % 2**BITS, f"0{BITS}b") for j in range(length)]
    assert not np.array_equal(ours, ours[:, ::-1])  # the order matters for these codes
    # The paper's example (§2.2): a_B = 3, b = 4 gives the addresses 3, 4, 5 ...
    three = np.asarray(pointer.binary_addresses(jnp.int32(3), 3, 4), int)
    assert ["".join(map(str, row[::-1])) for row in three] == ["0011", "0100", "0101"]
    # ... which the paper prints as {0010, 0011, 0100}: read MSB first those are 2, 3, 4,
    # the bank from a_B = 2 (an off-by-one in the printed example, not a bit-order difference).
    two = np.asarray(pointer.binary_addresses(jnp.int32(2), 3, 4), int)
    assert ["".join(map(str, row[::-1])) for row in two] == ["0010", "0011", "0100"]


def test_authors_code_is_lsb_first_like_ours_and_weights_port_by_reversing_rows():
    # The authors' code: binary(x) = (x & 2 ** arange(b)) != 0, i.e. element k is bit k.
    values = np.arange(2**BITS)
    theirs = ((values[:, None] & (2 ** np.arange(BITS))[None, :]) != 0).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(pointer.binary_addresses(jnp.int32(0), 2**BITS, BITS)), theirs)
    # Porting a first layer W [b, hidden] that reads MSB-first codes: W[::-1] reads ours, and a
    # soft pointer p = A w converts the same way (Eq. 3 is linear in the columns).
    rng = np.random.default_rng(0)
    codes = np.asarray(pointer.binary_addresses(jnp.int32(37), L, BITS))
    w_msb = rng.normal(size=(BITS, 3))
    np.testing.assert_allclose(codes[:, ::-1] @ w_msb, codes @ w_msb[::-1], rtol=1e-12)
    weights = _f32(_softmax(rng.normal(size=(H, L))))
    np.testing.assert_array_equal(
        np.asarray(pointer.pointer_values(weights, _f32(codes)))[:, ::-1],
        np.asarray(pointer.pointer_values(weights, _f32(codes[:, ::-1]))),
    )


# ---- base address ----------------------------------------------------------------------------


def test_authors_rolled_bank_is_our_bank_from_minus_start():
    # The authors' code draws start_p = random.randint(0, 2^b) (both ends included) and takes
    # torch.roll(bank_from_0, start_p)[:L]: slot i then holds (i - start_p) mod 2^b, which is
    # our bank from a_B = -start_p mod 2^b (start_p = 0 and 2^b both give a_B = 0).
    full = np.asarray(pointer.binary_addresses(jnp.int32(0), 2**BITS, BITS))
    for start_p in (0, 1, 17, 2**BITS - 1, 2**BITS):
        theirs = np.roll(full, start_p, axis=0)[:L]
        ours = np.asarray(pointer.binary_addresses(jnp.int32(-start_p % 2**BITS), L, BITS))
        np.testing.assert_array_equal(theirs, ours)
        if start_p % 2**BITS:
            assert not np.array_equal(theirs, np.asarray(pointer.binary_addresses(jnp.int32(start_p), L, BITS)))


def test_base_is_random_in_training_and_zero_at_evaluation():
    # Algorithm 1 line 3 and App. B: a_B ~ U{0 .. 2^b - 1} in training, a_B = 0 at test time
    # (our default); random_base_at_eval=True draws it at evaluation too (the authors' code).
    # PANM.__call__ draws the base and hands it to the decoder; a recording decoder and a
    # zero encoder stand in for the trained parts (no parameters to build).
    batch, bits = 16, 5
    x, mask = jnp.zeros((batch, 2, 3)), jnp.ones((batch, 2), bool)
    seen = {}

    def decoder(memory, mask, base, num_outputs, **kwargs):
        seen["base"] = np.asarray(base)
        return jnp.zeros((memory.shape[0], num_outputs, 2))

    bases = {}
    for random_eval, train in ((False, True), (False, False), (True, False)):
        stand_in = types.SimpleNamespace(
            config=PANMConfig(address_bits=bits, random_base_at_eval=random_eval),
            input_size=3,
            encoder=lambda inputs, mask: (jnp.zeros(inputs.shape[:2] + (4,)), None),
            decoder=decoder,
        )
        PANM.__call__(stand_in, x, mask, 1, train=train, key=jax.random.key(2))
        bases[random_eval, train] = seen.pop("base")
    for key, base in bases.items():
        assert base.shape == (batch,) and np.all((0 <= base) & (base < 2**bits)), key
    np.testing.assert_array_equal(bases[False, False], 0)  # evaluation: a_B = 0
    assert len(set(bases[False, True].tolist())) > 4  # training: drawn per example
    assert len(set(bases[True, False].tolist())) > 4  # random_base_at_eval: drawn at evaluation too
    with pytest.raises(ValueError, match="key: expected a PRNG key"):
        PANM.__call__(stand_in, x, mask, 1, train=False, key=None)


# ---- score function and inverse temperature ------------------------------------------------


def test_cosine_with_beta_one_is_the_papers_eq_2():
    rng = np.random.default_rng(3)
    h, g = rng.normal(size=(H, D)), rng.normal(size=(L, D))
    w = pointer.address_attention(_f32(h), _f32(g), _f32(MASK), inverse_temperature=1.0)
    # Eq. 2: softmax over 1 <= n <= l(X) of h . g(A[n]) / (|h| |g(A[n])|).
    cos = (h @ g[:REAL].T) / np.linalg.norm(h, axis=1, keepdims=True) / np.linalg.norm(g[:REAL], axis=1)
    eq2 = _softmax(cos)
    err = float(np.max(np.abs(np.asarray(w)[:, :REAL] - eq2)))
    print(f"cosine, beta = 1 vs the paper's Eq. 2 by hand: max abs error {err:.1e}")
    assert err < 1e-6
    # beta != 1 is not the paper: it is softmax(beta cos), visibly sharper.
    w5 = np.asarray(pointer.address_attention(_f32(h), _f32(g), _f32(MASK), inverse_temperature=5.0))
    np.testing.assert_allclose(w5[:, :REAL], _softmax(5.0 * cos), atol=1e-6)
    assert np.max(np.abs(w5[:, :REAL] - eq2)) > 0.05
    # Why beta exists: at beta = 1 over 81 slots the best case (cos 1 at one slot, -1 at the
    # other 80) puts e / (e + 80 / e) ~= 0.084 on the slot.
    e = jnp.ones((1, D))
    best = float(pointer.address_attention(e, jnp.concatenate([e, -jnp.ones((80, D))]), jnp.ones((81,)))[0, 0])
    assert best == pytest.approx(math.e / (math.e + 80 / math.e), rel=1e-5) and best < 0.09


def test_scaled_dot_with_projections_is_the_authors_multihead_attention():
    # The authors' Mode 1: torch MultiheadAttention(embed_dim=E, num_heads=1, kdim=b) with the
    # query q(h) and the keys A_map(A): weights softmax((q W_q + b_q) . (k W_k + b_k) / sqrt(E)),
    # read (w (M W_v + b_v)) W_o + b_o. Ours: score="scaled_dot", beta = 1, on the projected
    # vectors, then dereference of the value-projected memory and the output projection.
    rng = np.random.default_rng(4)
    e = D
    query, keys, memory = rng.normal(size=(1, e)), rng.normal(size=(L, BITS)), rng.normal(size=(L, e))
    w_q, w_k, w_v, w_o = (rng.normal(size=s) for s in ((e, e), (BITS, e), (e, e), (e, e)))
    b_q, b_k, b_v, b_o = (rng.normal(size=e) for _ in range(4))
    q, k = query @ w_q + b_q, keys @ w_k + b_k
    theirs_w = _softmax(q @ k.T / math.sqrt(e))  # no padding mask in their code: all L slots
    theirs_read = (theirs_w @ (memory @ w_v + b_v)) @ w_o + b_o
    ours_w = pointer.address_attention(_f32(q), _f32(k), jnp.ones((L,)), score="scaled_dot", inverse_temperature=1.0)
    ours_read = np.asarray(pointer.dereference(ours_w, _f32(memory @ w_v + b_v))) @ w_o + b_o
    errs = (
        float(np.max(np.abs(np.asarray(ours_w) - theirs_w))),
        float(np.max(np.abs(ours_read - theirs_read)) / np.max(np.abs(theirs_read))),
    )
    print(
        f"scaled_dot + projections vs the authors' attention by hand: weights {errs[0]:.1e}, read (relative) "
        f"{errs[1]:.1e}"
    )
    assert max(errs) < 1e-5
    # Without the value/output projections our Mode 1 reads M w (the paper), not their read.
    assert np.max(np.abs(np.asarray(pointer.dereference(ours_w, _f32(memory))) - theirs_read)) > 0.1


def test_module_learns_a_positive_inverse_temperature_starting_at_the_config_value():
    # The PANM module is not beta = 1: tau = softplus(parameter), one per head, initialised at
    # PANMConfig.inverse_temperature (5.0 by default) and trained.
    assert PANMConfig().inverse_temperature == 5.0
    for config in (
        PANMConfig(hidden=4, mlp_hidden=4, address_bits=3),
        PANMConfig(hidden=4, mlp_hidden=4, address_bits=3, inverse_temperature=1.0),
    ):
        decoder = PANM(config, 3, 2, rngs=nnx.Rngs(0)).decoder
        for param in (decoder.pointer_temperature, decoder.mode2_temperature):
            np.testing.assert_allclose(np.asarray(jax.nn.softplus(param[...])), config.inverse_temperature, rtol=1e-6)
    with pytest.raises(ValueError, match="inverse_temperature: expected a finite positive number, got 0.0"):
        PANMConfig(inverse_temperature=0.0)


def test_held_temperature_one_is_eq_2_and_5_as_printed_and_is_not_trained():
    # learn_temperature=False: tau_a = tau_c = inverse_temperature, no parameter. At 1 it is the
    # paper's bare cosine: the same function as the learned module with softplus(param) set to 1.
    small = dict(hidden=4, mlp_hidden=4, address_bits=4)
    held = PANM(PANMConfig(**small, inverse_temperature=1.0, learn_temperature=False), 3, 2, rngs=nnx.Rngs(0))
    learned = PANM(PANMConfig(**small), 3, 2, rngs=nnx.Rngs(0))
    assert not hasattr(held.decoder, "pointer_temperature") and not hasattr(held.decoder, "mode2_temperature")
    n_held = sum(np.size(x) for x in jax.tree_util.tree_leaves(nnx.state(held, nnx.Param)))
    n_learned = sum(np.size(x) for x in jax.tree_util.tree_leaves(nnx.state(learned, nnx.Param)))
    assert n_learned - n_held == 2 + 1  # tau_a for 2 Mode-1 heads, tau_c for 1 Mode-2 head
    inverse_softplus_one = math.log(math.e - 1.0)
    learned.decoder.pointer_temperature[...] = jnp.full((2,), inverse_softplus_one, jnp.float32)
    learned.decoder.mode2_temperature[...] = jnp.full((1,), inverse_softplus_one, jnp.float32)
    x = jax.nn.one_hot(np.random.default_rng(7).integers(0, 3, size=(2, 6)), 3)
    mask = jnp.ones((2, 6))
    out_held, traces_held = held(x, mask, 6, return_traces=True)
    out_learned, traces_learned = learned(x, mask, 6, return_traces=True)
    np.testing.assert_allclose(np.asarray(out_held), np.asarray(out_learned), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        np.asarray(traces_held.pointer_weights), np.asarray(traces_learned.pointer_weights), atol=1e-6
    )
    # At the default 5.0 the weights differ: the held temperature is what is used.
    sharp = PANM(PANMConfig(**small, learn_temperature=False), 3, 2, rngs=nnx.Rngs(0))
    _, traces_sharp = sharp(x, mask, 6, return_traces=True)
    assert np.max(np.abs(np.asarray(traces_sharp.pointer_weights) - np.asarray(traces_held.pointer_weights))) > 0.01
    with pytest.raises(ValueError, match="learn_temperature: expected"):
        PANMConfig(learn_temperature="no")


# ---- relational_access return order ---------------------------------------------------------


def test_relational_access_returns_values_then_weights_unlike_dereference_arguments():
    rng = np.random.default_rng(5)
    queries, memory = _f32(rng.normal(size=(H, D))), _f32(rng.normal(size=(L, D)))
    read = pointer.relational_access(queries, memory, _f32(MASK), inverse_temperature=3.0)
    values, weights = read
    assert (values.shape, weights.shape) == ((H, D), (H, L))
    assert read.values is values and read.weights is weights
    np.testing.assert_array_equal(np.asarray(values), np.asarray(pointer.dereference(weights, memory)))
    # Passing the first element where dereference expects the weights is caught (D != L here).
    with pytest.raises(ValueError, match=r"memory: expected shape \[L, D\] = \(4, \?\), got \(7, 4\)"):
        pointer.dereference(read[0], memory)


# ---- masked softmax ---------------------------------------------------------------------------


@pytest.mark.parametrize("beta", [1.0, 1e12, 0.0, -3.0])
def test_masked_softmax_equals_the_softmax_of_the_unpadded_example(beta):
    # The paper's softmax runs over 1 <= n <= l(X); a peer without padding computes it on the
    # l(X) real slots alone. Ours on the padded row: the same numbers there, 0 on the padding.
    rng = np.random.default_rng(6)
    scores = -np.abs(rng.normal(size=(H, L)))  # negative scores: beta = 1e12 puts them below -1e9
    w = np.asarray(pointer.masked_softmax(_f32(scores), _f32(MASK), beta), np.float64)
    x = beta * np.asarray(_f32(scores), np.float64)[:, :REAL]
    unpadded = _softmax(x)
    err = float(np.max(np.abs(w[:, :REAL] - unpadded)))
    print(f"masked softmax, beta {beta:g}, vs the softmax of the unpadded example: max abs error {err:.1e}")
    assert err < 1e-6
    np.testing.assert_array_equal(w[:, REAL:], 0.0)
    if beta == 0.0:
        np.testing.assert_array_equal(w[:, :REAL], np.float32(1.0) / np.float32(REAL))  # uniform over the real slots
    if beta < 0:
        assert np.all(np.argmax(w, -1) == np.argmin(scores[:, :REAL], -1))  # points away from the best match
    # A fully masked row (an empty example) is all zeros, where a -inf mask would give NaN.
    np.testing.assert_array_equal(np.asarray(pointer.masked_softmax(_f32(scores), jnp.zeros((L,)), beta)), 0.0)
