"""Tests of panm_jax/modules/transformer.py: attention, positions, layers, the causal controller."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from panm_jax.kernels.scan import scan
from panm_jax.modules.transformer import (
    EncoderLayer,
    MultiHeadAttention,
    TransformerController,
    causal_mask,
    masked_softmax,
    sinusoidal_encoding,
)

# Sizes that differ per axis: B = 2, T_q = 3, T_k = 5, D = 6, H = 2 (d_h = 3), D_kv = 4.
B, TQ, TK, D, H, DKV = 2, 3, 5, 6, 2, 4


def _np(x) -> np.ndarray:
    return np.asarray(x, np.float64)


def _linear(layer: nnx.Linear, x: np.ndarray) -> np.ndarray:
    out = x @ _np(layer.kernel[...])
    return out + _np(layer.bias[...]) if layer.bias is not None else out


def _sinusoid_ref(position: float, width: int) -> np.ndarray:
    """Vaswani et al. 2017 §3.5, one position, written out per feature."""
    pe = np.zeros(width)
    for f in range(width):
        i = f // 2
        angle = position / 10000.0 ** (2 * i / width)
        pe[f] = np.sin(angle) if f % 2 == 0 else np.cos(angle)
    return pe


def _mha_ref(mha: MultiHeadAttention, x, context, mask, positions=None):
    """float64 loop transcription of softmax(Q K^T / sqrt(d_h) [+ RPE]) V per head, then W^O.

    ``mask [B, T_q, T_k]`` (true = attend). ``positions = (q_pos [T_q], k_pos [T_k])``
    adds Transformer-XL's terms (q + u) k and (q + v) W_R R_{i-j} (Dai et al. 2019 §3.3).
    """
    q = _linear(mha.query, _np(x)).reshape(B, -1, H, D // H)
    k = _linear(mha.key, _np(context)).reshape(B, -1, H, D // H)
    v = _linear(mha.value, _np(context)).reshape(B, -1, H, D // H)
    t_q, t_k = q.shape[1], k.shape[1]
    heads = np.zeros((B, t_q, H, D // H))
    weights = np.zeros((B, H, t_q, t_k))
    for b in range(B):
        for h in range(H):
            for i in range(t_q):
                logits = np.full(t_k, -np.inf)
                for j in range(t_k):
                    if not mask[b, i, j]:
                        continue
                    if positions is None:
                        logits[j] = q[b, i, h] @ k[b, j, h]
                    else:
                        u, vb = _np(mha.content_bias[...])[h], _np(mha.position_bias[...])[h]
                        r = _sinusoid_ref(positions[0][i] - positions[1][j], D) @ _np(mha.position.kernel[...])
                        logits[j] = (q[b, i, h] + u) @ k[b, j, h] + (q[b, i, h] + vb) @ r.reshape(H, D // H)[h]
                    logits[j] /= np.sqrt(D // H)
                if np.isfinite(logits).any():
                    w = np.exp(logits - logits.max())
                    weights[b, h, i] = w / w.sum()
                heads[b, i, h] = weights[b, h, i] @ v[b, :, h]
    return _linear(mha.output, heads.reshape(B, t_q, D)), weights


def _random(shape, seed):
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape), jnp.float32)


def test_sinusoidal_encoding_matches_the_formula():
    positions = np.array([0.0, 1.0, 5.0, -3.0, 40.0])
    for width in (6, 7):  # an odd width drops the last cosine
        got = np.asarray(sinusoidal_encoding(jnp.asarray(positions), width))
        want = np.stack([_sinusoid_ref(p, width) for p in positions])
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_masked_softmax_zero_on_masked_and_empty_rows():
    logits = _random((3, 4), 0)
    mask = jnp.array([[1, 1, 0, 1], [0, 0, 0, 0], [1, 0, 0, 0]], bool)
    w = np.asarray(masked_softmax(logits, mask))
    assert np.all(w[~np.asarray(mask)] == 0.0)  # exactly zero, not merely small
    np.testing.assert_allclose(w.sum(-1), [1.0, 0.0, 1.0], atol=1e-6)  # an empty row is all zeros, not NaN
    grads = jax.grad(lambda x: jnp.sum(masked_softmax(x, mask) * jnp.arange(4.0)))(logits)
    assert bool(jnp.all(jnp.isfinite(grads)))
    assert np.all(np.asarray(grads)[1] == 0.0)


def _masked_softmax_ref(logits, mask):
    """float64 softmax over the valid entries of each row (0 elsewhere, a row with none all 0)."""
    logits, mask = np.asarray(logits, np.float64), np.broadcast_to(np.asarray(mask, bool), np.shape(logits))
    out = np.zeros(logits.shape)
    for index in np.ndindex(logits.shape[:-1]):
        valid = mask[index]
        if valid.any():
            x = logits[index][valid]
            e = np.exp(x - x.max())
            out[index + (valid,)] = e / e.sum()
    return out


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float16], ids=["float32", "float16"])
def test_masked_softmax_is_exact_at_the_ends_of_the_range(dtype):
    # Real logits at the dtype's most negative finite value (which the old masking constant,
    # that same value, tied with: half the mass went to the padding), logits f_max apart
    # (their difference overflows), and +-inf or NaN in masked entries (never used).
    top = float(jnp.finfo(dtype).max)
    logits = np.array(
        [
            [-top, -top, 0.0, 0.0],  # all valid entries at -f_max
            [top, -top, 1.0, 0.0],  # f_max - (-f_max) overflows
            [-top, 3.0, np.inf, np.nan],  # garbage in masked entries
            [5.0, -1.0, 2.0, 0.0],
        ]
    )  # an empty row
    mask = np.array([[1, 0, 0, 0], [1, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]], bool)
    x = jnp.asarray(logits, dtype)
    w = masked_softmax(x, jnp.asarray(mask))
    want = _masked_softmax_ref(np.where(mask, logits, 0.0), mask)
    err = float(np.max(np.abs(np.asarray(w, np.float64) - want)))
    print(f"transformer masked_softmax {jnp.dtype(dtype).name} at +-f_max: max abs error {err:.1e}")
    assert w.dtype == dtype and err == 0.0, (np.asarray(w), want)
    np.testing.assert_array_equal(np.asarray(w, np.float64).sum(-1), [1.0, 1.0, 1.0, 0.0])
    grads = jax.grad(lambda x: jnp.sum(masked_softmax(x, jnp.asarray(mask)).astype(jnp.float32) * jnp.arange(4.0)))(x)
    assert bool(jnp.all(jnp.isfinite(grads)))
    np.testing.assert_array_equal(np.asarray(grads)[~mask], 0.0)


def test_masked_softmax_matches_reference_with_broadcast_masks():
    # [B, H, T_q, T_k] logits from 1e-3 to 1e30 in size (one size per query row), a key mask [B, 1, 1, T_k] and a
    # causal mask [T_q, T_k] (both forms the attention uses).
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(B, H, TK, TK)) * np.array([1e-3, 1.0, 1e3, 1e30, 1e6])[:, None]  # per query row
    key_mask = np.arange(TK)[None, None, None, :] < np.array([TK, 2])[:, None, None, None]
    worst = 0.0
    for mask in (key_mask, np.asarray(causal_mask(TK)), key_mask & np.asarray(causal_mask(TK))):
        w = masked_softmax(jnp.asarray(logits, jnp.float32), jnp.asarray(mask))
        want = _masked_softmax_ref(np.asarray(jnp.asarray(logits, jnp.float32), np.float64), mask)
        worst = max(worst, float(np.max(np.abs(np.asarray(w, np.float64) - want))))
    print(f"transformer masked_softmax with broadcast masks: max abs error {worst:.1e}")
    assert worst < 1e-6


@pytest.mark.parametrize("relative", [False, True])
def test_attention_matches_float64_reference(relative):
    # Cross-attention (D_kv != D for the absolute kind) and self-attention (RPE) with a key
    # mask that pads example 1 after 3 keys, and one fully masked query row.
    mha = MultiHeadAttention(D, H, kv_features=None if relative else DKV, relative=relative, rngs=nnx.Rngs(1))
    if relative:  # u, v start at zero; make them count
        mha.content_bias[...] = _random((H, D // H), 7)
        mha.position_bias[...] = _random((H, D // H), 8)
    x = _random((B, TQ, D), 2)
    context = _random((B, TK, D if relative else DKV), 3)
    mask = np.ones((B, TQ, TK), bool)
    mask[1, :, 3:] = False
    mask[0, 2, :] = False
    q_pos, k_pos = np.arange(TQ) + 2, np.arange(TK)  # distances -2 .. 4
    kwargs = dict(q_positions=jnp.asarray(q_pos), k_positions=jnp.asarray(k_pos), max_distance=4) if relative else {}
    out, weights = mha(x, context, jnp.asarray(mask)[:, None], **kwargs)
    ref_out, ref_w = _mha_ref(mha, x, context, mask, (q_pos, k_pos) if relative else None)
    np.testing.assert_allclose(np.asarray(weights), ref_w, atol=2e-6)
    np.testing.assert_allclose(np.asarray(out), ref_out, atol=2e-5)
    assert np.all(np.asarray(weights)[np.broadcast_to(~mask[:, None], weights.shape)] == 0.0)


def test_relative_attention_depends_only_on_distances():
    mha = MultiHeadAttention(D, H, relative=True, rngs=nnx.Rngs(2))
    x = _random((B, TK, D), 4)
    mask = jnp.asarray(np.arange(TK)[None] < np.array([[5], [2]]))[:, None, None, :]  # example 1: 2 real keys
    base, w = mha(x, mask=mask)  # positions 0..T-1
    pos = jnp.arange(TK) + 37
    shifted, w_shifted = mha(x, mask=mask, q_positions=pos, k_positions=pos, max_distance=TK - 1)
    np.testing.assert_allclose(np.asarray(shifted), np.asarray(base), atol=1e-6)
    np.testing.assert_array_equal(np.asarray(w)[1, :, :, 2:], 0.0)  # padding is never attended
    # shifting the queries only changes the distances, hence the output
    moved, _ = mha(x, mask=mask, q_positions=pos + 1, k_positions=pos, max_distance=TK)
    assert float(jnp.max(jnp.abs(moved - base))) > 1e-4


def test_encoder_layer_is_causal_under_a_causal_mask():
    layer = EncoderLayer(D, H, 8, rngs=nnx.Rngs(3))
    x = _random((B, TK, D), 5)
    y, _ = layer(x, causal_mask(TK))
    y2, _ = layer(x.at[:, 3:].set(9.0), causal_mask(TK))  # change the future only
    np.testing.assert_allclose(np.asarray(y2[:, :3]), np.asarray(y[:, :3]), atol=1e-6)


def _controller(positions="absolute", **kw):
    kw = {"max_steps": 9, "num_layers": 2, "num_heads": 3, "positions": positions, **kw}
    return TransformerController(5, 12, rngs=nnx.Rngs(0), **kw)


@pytest.mark.parametrize("positions", ["absolute", "relative"])
def test_controller_step_by_step_equals_parallel_causal(positions):
    # The scan over single steps (cache) must equal the same layers run over the whole
    # sequence at once under a causal mask, with padding steps (mask 0) inside and at the end:
    # those carry the cache and the position counter unchanged.
    ctrl = _controller(positions)
    xs = _random((B, 7, 5), 6)
    mask = jnp.array([[1, 1, 0, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1, 1]], bool)

    @nnx.jit  # one compilation for all four forms
    def run(ctrl, xs, mask):
        parallel = ctrl.parallel(xs, mask)  # [B, T, D]
        final, stepped = jax.vmap(lambda c, x, m: scan(ctrl, c, x, m))(ctrl.init_carry((B,)), xs, mask)
        # batch axes inside the carry work without vmap too (time-major scan, no mask)
        _, unmasked = scan(ctrl, ctrl.init_carry((B,)), jnp.swapaxes(xs, 0, 1))
        return parallel, stepped, final, jnp.swapaxes(unmasked, 0, 1), ctrl.parallel(xs)

    parallel, stepped, final, unmasked, unmasked_parallel = run(ctrl, xs, mask)
    np.testing.assert_allclose(np.asarray(stepped), np.asarray(parallel), atol=1e-5)
    np.testing.assert_array_equal(np.asarray(final.step), [5, 7])
    assert final.keys.shape == (B, 2, 9, 3, 4)
    np.testing.assert_allclose(np.asarray(unmasked), np.asarray(unmasked_parallel), atol=1e-5)


def test_controller_second_call_does_not_retrace(trace_counter):
    ctrl = _controller()
    graphdef, params = nnx.split(ctrl)

    def run(params, xs, mask):
        c = nnx.merge(graphdef, params)
        return jax.vmap(lambda x, m: scan(c, c.init_carry(()), x, m)[1])(xs, mask)

    counter = trace_counter(chex.assert_max_traces(run, n=1))  # chex fails at the retrace itself
    jitted = jax.jit(counter)
    mask = jnp.ones((B, 7), bool)
    jitted(params, _random((B, 7, 5), 0), mask)
    jitted(params, _random((B, 7, 5), 1), mask.at[1, 4:].set(False))
    assert counter.count == 1


def test_controller_past_capacity_stays_finite_and_gradients_flow():
    ctrl = _controller(max_steps=3, num_layers=1)
    xs = _random((B, 6, 5), 7)

    def loss(c, xs):
        _, hs = scan(c, c.init_carry((B,)), jnp.swapaxes(xs, 0, 1))
        return jnp.sum(hs**2)

    value, grads = nnx.jit(nnx.value_and_grad(loss))(ctrl, xs)
    chex.assert_tree_all_finite((value, nnx.state(grads)))


def test_controller_rejects_bad_arguments():
    with pytest.raises(ValueError, match=r"num_heads: expected a divisor of hidden = 12, got 5"):
        TransformerController(5, 12, max_steps=4, num_heads=5, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"max_steps: expected a positive integer, got 0"):
        TransformerController(5, 12, max_steps=0, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"positions: expected one of \['absolute', 'relative'\], got 'rope'"):
        TransformerController(5, 12, max_steps=4, positions="rope", rngs=nnx.Rngs(0))
    ctrl = _controller()
    with pytest.raises(ValueError, match=r"x: expected last axis I = 5"):
        ctrl(ctrl.init_carry((B,)), jnp.zeros((B, 4)))
