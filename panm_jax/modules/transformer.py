"""Transformer pieces: masked multi-head attention, positions, pre-LN layers, a causal controller.

* ``sinusoidal_encoding``: the absolute positions of Vaswani et al. 2017 (§3.5).
* ``masked_softmax``: a softmax whose masked entries are exactly zero (padding is
  never attended) and whose fully masked rows are all zero (no NaN).
* ``MultiHeadAttention``: scaled dot-product attention,
  ``softmax(Q K^T / sqrt(d_h)) V`` per head, with a boolean mask; optionally with
  the relative positional encoding (RPE) of Transformer-XL (Dai et al. 2019, §3.3),
  the RPE that Le et al. 2024 (Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural Memory,
  TMLR) cites (App. A) and that its
  TRM+RPE baselines (§3.3, Table 4, the code of Csordás et al. 2021) use.
* ``LayerNorm``: layer normalisation finite at every input scale.
* ``EncoderLayer`` / ``DecoderLayer``: pre-LN layers (Xiong et al. 2020):
  ``x + Attn(LN(x))`` then ``x + FFN(LN(x))``; the stacks end with a final LN.
* ``TransformerController``: a causal Transformer run one step at a time inside
  ``scan`` with a fixed-size key/value cache, behind the controllers' interface
  (``init_carry``, ``__call__(carry, x) -> (carry, h)``), for the Transformer NTM
  and DNC of Reina Campo 2022 (MPSoC-NTM documentation, "Turing Machine" chapter).

Relative positions (why Transformer-XL's): the logit of query ``i`` and key ``j``
is ``((q_i + u) . k_j + (q_i + v) . W_R R_{i-j}) / sqrt(d_h)`` with ``R`` the
*fixed* sinusoid of the signed distance ``i - j`` and ``W_R``, ``u``, ``v``
learned. Only distances enter (shifting every position changes nothing), and
``R`` is defined at every distance, so a model trained on short sequences can
still be run, without new parameters, on distances it never saw; a learned table
of clipped distances (Shaw et al. 2018) or T5 buckets would map every long
distance onto the last learned entry instead. Whether the *learned* function of
distance extrapolates well is an empirical question (the benchmarks' business).

Shapes: ``B`` batch (any leading axes ``...``), ``T`` time (``T_q`` queries,
``T_k`` keys), ``D`` model width, ``H`` heads, ``d_h = D / H`` head width,
``S`` the controller's cache slots (``max_steps``), ``N_l`` layers.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax import checks
from panm_jax.modules.layers import MLP

__all__ = [
    "DecoderLayer",
    "EncoderLayer",
    "LayerNorm",
    "MultiHeadAttention",
    "TransformerCache",
    "TransformerController",
    "causal_mask",
    "masked_softmax",
    "sinusoidal_encoding",
]

# Base of the sinusoid wavelengths (Vaswani et al. 2017, §3.5).
SINUSOID_BASE = 10000.0
# LayerNorm epsilon: PyTorch's default, as in the baselines' code (the input of
# the first decoder layer can be constant across features, variance 0).
LAYER_NORM_EPS = 1e-5
POSITIONS = ("absolute", "relative")


def _check_heads(d_model: int, num_heads: int, d_name: str = "d_model") -> None:
    checks.positive_int(d_name, d_model)
    checks.positive_int("num_heads", num_heads)
    if d_model % num_heads:
        raise ValueError(f"num_heads: expected a divisor of {d_name} = {d_model}, got {num_heads}")


def sinusoidal_encoding(positions: jax.Array, width: int) -> jax.Array:
    """Sinusoidal position encoding of Vaswani et al. 2017, §3.5.

    ``PE[p, 2i] = sin(p / 10000^(2i/D))``, ``PE[p, 2i+1] = cos(p / 10000^(2i/D))``.
    Defined for any real (also negative) position, so it is how both the absolute
    encodings and the relative distances ``R_{i-j}`` are embedded.

    Args:
      positions: ``[...]`` integer or real positions.
      width: ``D``, the encoding width (odd widths drop the last cosine).

    Returns:
      ``[..., D]`` float32.
    """
    checks.positive_int("width", width)
    half = (width + 1) // 2
    inv_freq = SINUSOID_BASE ** (-2.0 * jnp.arange(half, dtype=jnp.float32) / width)  # [ceil(D/2)]
    angles = jnp.asarray(positions, jnp.float32)[..., None] * inv_freq  # [..., ceil(D/2)]
    pe = jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1)  # [..., ceil(D/2), 2]: interleaved
    return pe.reshape(*pe.shape[:-2], 2 * half)[..., :width]


def causal_mask(num_steps: int) -> jax.Array:
    """``[T, T]`` bool, true where key ``j <= `` query ``i`` (no attention to the future)."""
    return jnp.tril(jnp.ones((num_steps, num_steps), bool))


def masked_softmax(logits: jax.Array, mask: jax.Array | None) -> jax.Array:
    """Softmax over the last axis of ``logits`` where ``mask`` is true; exactly 0 elsewhere.

    ``w[..., j] = [mask_j] exp(x_j) / sum_{k: mask_k} exp(x_k)``, exactly, for any finite
    logits ``x`` (``[..., T_q, T_k]``, masked over ``T_k``): masked entries take no
    part in the arithmetic, so no masking constant can tie with or beat a real logit
    (a constant such as the dtype's most negative finite value ties with a real logit
    of that value and takes half its weight). Computed as::

        y_j  = x_j if mask_j else -inf                  (one select over the logits)
        m    = max_k y_k                                (under stop_gradient; 0 if no key is valid)
        e_j  = exp(y_j - m)                             (exactly 0 where masked; at most 1, 1 at the max)
        w_j  = e_j / sum_k e_k                          (the sum is >= 1 when any key is valid)

    ``x_j - m`` may round to ``-inf`` for logits ``f_max`` apart, whose ``exp`` is the
    true weight's rounding, 0. Masked entries are replaced by ``-inf`` before any
    arithmetic, so their value (even inf or NaN) reaches neither the weights nor the
    gradient (the select passes them a zero cotangent); a row with no valid key is all
    zeros with a zero gradient.

    Args:
      logits: ``[..., T_q, T_k]``.
      mask: bool, broadcastable to ``logits``; ``None`` for no mask.

    Returns:
      ``[..., T_q, T_k]`` weights in the dtype of ``logits``.
    """
    if mask is None:
        return jax.nn.softmax(logits, axis=-1)
    logits = jnp.asarray(logits)
    kept = jnp.where(jnp.asarray(mask, bool), logits, -jnp.inf)  # the mask broadcasts (e.g. [B, 1, 1, T_k])
    top = jnp.max(kept, axis=-1, keepdims=True)
    top = jax.lax.stop_gradient(jnp.where(jnp.isfinite(top), top, 0.0))  # an empty row: 0
    numerators = jnp.exp(kept - top)  # exp(-inf) = 0 where masked, empty rows included
    total = jnp.sum(numerators, axis=-1, keepdims=True)  # >= 1 unless the row is empty
    return (numerators / jnp.where(total > 0, total, 1.0)).astype(logits.dtype)


class MultiHeadAttention(nnx.Module):
    """Multi-head scaled dot-product attention (Vaswani et al. 2017, §3.2), optional RPE.

    ``head_h = softmax(mask(Q_h K_h^T / sqrt(d_h))) V_h``, ``out = W^O [head_1; ...; head_H]``
    with ``Q = x W^Q``, ``K = c W^K``, ``V = c W^V`` (``c`` the context; ``x`` itself
    for self-attention). With ``relative=True`` the logits are Transformer-XL's
    (Dai et al. 2019, §3.3, terms (a)-(d)):
    ``((q_i + u) . k_j + (q_i + v) . W_R R_{p_i - p_j}) / sqrt(d_h)`` where ``R`` is
    ``sinusoidal_encoding`` of the signed distance, ``W_R`` a learned ``[D, D]`` map
    and ``u``, ``v`` learned per-head biases (zero at init, as in Csordás et al. 2021).

    Call: ``(x [..., T_q, D], context [..., T_k, D_kv] | None, mask) ->
    (out [..., T_q, D], weights [..., H, T_q, T_k])``.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        *,
        kv_features: int | None = None,
        relative: bool = False,
        rngs: nnx.Rngs,
    ):
        _check_heads(d_model, num_heads)
        kv_features = d_model if kv_features is None else kv_features
        checks.positive_int("kv_features", kv_features)
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_width = d_model // num_heads
        self.relative = relative
        self.query = nnx.Linear(d_model, d_model, rngs=rngs)  # W^Q  [D, H d_h]
        self.key = nnx.Linear(kv_features, d_model, rngs=rngs)  # W^K  [D_kv, H d_h]
        self.value = nnx.Linear(kv_features, d_model, rngs=rngs)  # W^V  [D_kv, H d_h]
        self.output = nnx.Linear(d_model, d_model, rngs=rngs)  # W^O  [H d_h, D]
        if relative:
            self.position = nnx.Linear(d_model, d_model, use_bias=False, rngs=rngs)  # W_R [D, H d_h]
            self.content_bias = nnx.Param(jnp.zeros((num_heads, self.head_width)))  # u [H, d_h]
            self.position_bias = nnx.Param(jnp.zeros((num_heads, self.head_width)))  # v [H, d_h]

    def _heads(self, x: jax.Array) -> jax.Array:  # [..., T, H d_h] -> [..., T, H, d_h]
        return x.reshape(*x.shape[:-1], self.num_heads, self.head_width)

    def project_query(self, x: jax.Array) -> jax.Array:
        """``[..., T_q, D] -> [..., T_q, H, d_h]``."""
        return self._heads(self.query(x))

    def project_key_value(self, context: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``[..., T_k, D_kv] -> (keys, values)``, each ``[..., T_k, H, d_h]``."""
        return self._heads(self.key(context)), self._heads(self.value(context))

    def relative_logits(
        self, q: jax.Array, q_positions: jax.Array, k_positions: jax.Array, max_distance: int
    ) -> jax.Array:
        """Transformer-XL's position terms ``(q_i + v) . W_R R_{p_i - p_j}`` (unscaled).

        ``W_R R_d`` is computed once for every distance ``d`` in
        ``[-max_distance, max_distance]`` (a ``[2M+1, H, d_h]`` table), then each
        query-key pair gathers its distance. Distances beyond ``max_distance`` are
        clipped to it; callers set ``max_distance`` to the longest distance their
        positions can have, so no clipping happens in the models.

        Args:
          q: ``[..., T_q, H, d_h]`` projected queries.
          q_positions: ``[..., T_q]`` integer positions of the queries.
          k_positions: ``[..., T_k]`` integer positions of the keys.
          max_distance: static ``M >= 0``.

        Returns:
          ``[..., H, T_q, T_k]``.
        """
        distances = jnp.arange(-max_distance, max_distance + 1)  # [2M+1]
        table = self._heads(self.position(sinusoidal_encoding(distances, self.d_model)))  # [2M+1, H, d_h]
        table = table.astype(q.dtype)
        scores = jnp.einsum("...qhd,mhd->...hqm", q + self.position_bias[...].astype(q.dtype), table)
        rel = jnp.asarray(q_positions)[..., :, None] - jnp.asarray(k_positions)[..., None, :]  # [..., T_q, T_k]
        index = (jnp.clip(rel, -max_distance, max_distance) + max_distance).astype(jnp.int32)
        index = index[..., None, :, :]  # [..., 1(H), T_q, T_k]
        index = index.reshape((1,) * (scores.ndim - index.ndim) + index.shape)  # unbatched positions
        return jnp.take_along_axis(scores, index, axis=-1)

    def logits(
        self,
        q: jax.Array,
        k: jax.Array,
        *,
        q_positions: jax.Array | None = None,
        k_positions: jax.Array | None = None,
        max_distance: int | None = None,
    ) -> jax.Array:
        """Scaled attention logits ``[..., H, T_q, T_k]`` from ``q [..., T_q, H, d_h]``, ``k [..., T_k, H, d_h]``.

        With RPE, positions default to ``0..T-1`` and ``max_distance`` to
        ``max(T_q, T_k) - 1``; without it, positions are not used (ignored).
        """
        scale = 1.0 / math.sqrt(self.head_width)
        if not self.relative:
            return jnp.einsum("...qhd,...khd->...hqk", q, k) * scale
        content = jnp.einsum("...qhd,...khd->...hqk", q + self.content_bias[...].astype(q.dtype), k)  # (a) + (c)
        t_q, t_k = q.shape[-3], k.shape[-3]
        q_pos = jnp.arange(t_q) if q_positions is None else q_positions
        k_pos = jnp.arange(t_k) if k_positions is None else k_positions
        max_distance = max(t_q, t_k) - 1 if max_distance is None else max_distance
        return (content + self.relative_logits(q, q_pos, k_pos, max_distance)) * scale  # + (b) + (d)

    def attend(self, q, k, v, mask=None, **positions) -> tuple[jax.Array, jax.Array]:
        """``(out [..., T_q, D], weights [..., H, T_q, T_k])`` from projected ``q``, ``k``, ``v``.

        ``mask`` is bool, broadcastable to ``[..., H, T_q, T_k]`` (e.g. a key mask
        ``[B, 1, 1, T_k]``, a causal mask ``[T_q, T_k]``); masked keys get weight 0.
        """
        weights = masked_softmax(self.logits(q, k, **positions), mask)  # [..., H, T_q, T_k]
        heads = jnp.einsum("...hqk,...khd->...qhd", weights, v)  # [..., T_q, H, d_h]
        return self.output(heads.reshape(*heads.shape[:-2], self.d_model)), weights

    def __call__(self, x, context=None, mask=None, **positions) -> tuple[jax.Array, jax.Array]:
        q = self.project_query(x)
        k, v = self.project_key_value(x if context is None else context)
        return self.attend(q, k, v, mask, **positions)


class LayerNorm(nnx.LayerNorm):
    """Layer normalisation (Ba et al. 2016) that is finite for every finite input.

    ``LN(x) = gamma (x - mean x) / sqrt(var x + eps) + beta`` over the last axis, with
    ``eps = LAYER_NORM_EPS`` and the two-pass variance ``mean((x - mean x)^2)``.
    ``flax``'s ``LayerNorm`` squares ``x`` itself, which overflows float32 for rows
    beyond about ``1e19`` (a Transformer's residual stream carries its input's scale,
    and ``inf - inf`` then gives NaN). Here a row whose largest magnitude is at
    least 1 is first multiplied by the power of two ``2^-e`` that brings it into
    ``[1/2, 1)`` (exact), and ``eps`` by ``2^-2e``: LN is unchanged by a common
    scale of ``x`` and ``sqrt(eps)``, and with a power of two every rounding is the
    same, so the result equals the unscaled formula to the bit wherever that one is
    finite. Rows below 1 are not scaled. ``eps 2^-2e`` underflows to 0 for rows
    beyond about ``1e16``, where it is below the rounding of the mean anyway; a
    variance of exactly 0 there divides by 1 instead (value and gradient finite). The scale is a constant for
    differentiation (it is
    piecewise constant in ``x``). Parameters ``scale`` (gamma) and ``bias`` (beta)
    ``[D]`` as in ``flax.nnx.LayerNorm``.
    """

    def __init__(self, num_features: int, *, rngs: nnx.Rngs):
        super().__init__(num_features, epsilon=LAYER_NORM_EPS, use_fast_variance=False, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        x, gamma, beta = self.promote_dtype((jnp.asarray(x), self.scale[...], self.bias[...]), dtype=self.dtype)
        peak = jax.lax.stop_gradient(jnp.max(jnp.abs(x), axis=-1, keepdims=True))
        _, exponent = jnp.frexp(peak)  # peak = f 2^e, f in [1/2, 1)
        exponent = jnp.clip(exponent, 0, -jnp.finfo(x.dtype).minexp)  # scale down only; 2^-e stays normal
        factor = jnp.ldexp(jnp.ones_like(peak), -exponent)  # 2^-e, exact
        scaled = x * factor
        centred = scaled - jnp.mean(scaled, axis=-1, keepdims=True)
        denominator = jnp.mean(jnp.square(centred), axis=-1, keepdims=True) + self.epsilon * factor * factor
        denominator = jnp.where(denominator > 0, denominator, 1.0)  # var 0 and eps underflowed: centred is 0
        return centred * jax.lax.rsqrt(denominator) * gamma + beta


def _layer_norm(width: int, rngs: nnx.Rngs) -> LayerNorm:
    return LayerNorm(width, rngs=rngs)


class EncoderLayer(nnx.Module):
    """Pre-LN self-attention layer: ``x += SelfAttn(LN(x))``, ``x += FFN(LN(x))``.

    The Transformer encoder layer (with a key mask) and, with a causal mask, the
    layer of the causal controller. ``FFN`` is ``Linear -> ReLU -> Linear``
    (``layers.MLP``, Vaswani et al. 2017 Eq. 2).

    Call: ``(x [..., T, D], mask [..., T_q, T_k]-broadcastable) ->
    (x [..., T, D], weights [..., H, T, T])``; ``positions`` are passed to the
    attention (RPE).
    """

    def __init__(self, d_model: int, num_heads: int, ffn_hidden: int, *, relative: bool = False, rngs: nnx.Rngs):
        checks.positive_int("ffn_hidden", ffn_hidden)
        self.attention_norm = _layer_norm(d_model, rngs)
        self.attention = MultiHeadAttention(d_model, num_heads, relative=relative, rngs=rngs)
        self.ffn_norm = _layer_norm(d_model, rngs)
        self.ffn = MLP(d_model, ffn_hidden, d_model, rngs=rngs)

    def __call__(self, x: jax.Array, mask=None, **positions) -> tuple[jax.Array, jax.Array]:
        attended, weights = self.attention(self.attention_norm(x), mask=mask, **positions)
        x = x + attended
        return x + self.ffn(self.ffn_norm(x)), weights

    def step(
        self, x: jax.Array, keys: jax.Array, values: jax.Array, step: jax.Array, *, max_distance: int
    ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
        """One causal step with a key/value cache.

        Writes this step's key and value into slot ``step`` of the cache (nothing is
        written when ``step >= S``), then attends over slots ``0..step``: exactly
        what ``__call__`` with ``causal_mask`` computes at row ``step``.

        Args:
          x: ``[..., D]`` this step's input.
          keys, values: ``[..., S, H, d_h]`` the cache.
          step: ``[...]`` int32, this step's position (steps taken before it).
          max_distance: static, the RPE table half-width (``S - 1``).

        Returns:
          ``(x [..., D], keys, values, weights [..., H, S])``.
        """
        slots = jnp.arange(keys.shape[-3])  # [S]
        step = jnp.asarray(step)[..., None]  # [..., 1]
        h = self.attention_norm(x)[..., None, :]  # [..., 1, D]
        q = self.attention.project_query(h)  # [..., 1, H, d_h]
        k, v = self.attention.project_key_value(h)  # [..., 1, H, d_h]
        write = (slots == step)[..., None, None]  # [..., S, 1, 1]
        keys = jnp.where(write, k.astype(keys.dtype), keys)
        values = jnp.where(write, v.astype(values.dtype), values)
        visible = (slots <= step)[..., None, None, :]  # [..., 1(H), 1(T_q), S]
        positions = {}
        if self.attention.relative:
            positions = dict(q_positions=step, k_positions=slots, max_distance=max_distance)
        attended, weights = self.attention.attend(q, keys, values, visible, **positions)
        x = x + attended[..., 0, :]
        return x + self.ffn(self.ffn_norm(x)), keys, values, weights[..., 0, :]


class DecoderLayer(nnx.Module):
    """Pre-LN decoder layer: causal self-attention, cross-attention over the encoder, FFN.

    ``y += SelfAttn(LN(y))`` (``self_mask``; RPE if ``relative``),
    ``y += CrossAttn(LN(y), memory)`` (``memory_mask``; content only, as in the
    relative Transformer of Csordás et al. 2021), ``y += FFN(LN(y))``.

    Call: ``(y [..., T_out, D], memory [..., T_in, D_m], self_mask, memory_mask) ->
    (y, self_weights [..., H, T_out, T_out], cross_weights [..., H, T_out, T_in])``;
    the memory width ``D_m`` is ``memory_features`` (``D`` when not given).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        ffn_hidden: int,
        *,
        relative: bool = False,
        memory_features: int | None = None,
        rngs: nnx.Rngs,
    ):
        checks.positive_int("ffn_hidden", ffn_hidden)
        self.self_attention_norm = _layer_norm(d_model, rngs)
        self.self_attention = MultiHeadAttention(d_model, num_heads, relative=relative, rngs=rngs)
        self.cross_attention_norm = _layer_norm(d_model, rngs)
        self.cross_attention = MultiHeadAttention(d_model, num_heads, kv_features=memory_features, rngs=rngs)
        self.ffn_norm = _layer_norm(d_model, rngs)
        self.ffn = MLP(d_model, ffn_hidden, d_model, rngs=rngs)

    def __call__(self, y, memory, self_mask=None, memory_mask=None, **positions):
        attended, self_weights = self.self_attention(self.self_attention_norm(y), mask=self_mask, **positions)
        y = y + attended
        attended, cross_weights = self.cross_attention(self.cross_attention_norm(y), memory, mask=memory_mask)
        y = y + attended
        return y + self.ffn(self.ffn_norm(y)), self_weights, cross_weights


class TransformerCache(NamedTuple):
    """The carry of ``TransformerController``: a fixed-size cache of past keys/values."""

    keys: jax.Array  # [..., N_l, S, H, d_h] keys of steps 0..step-1, zero beyond
    values: jax.Array  # [..., N_l, S, H, d_h] values of steps 0..step-1, zero beyond
    step: jax.Array  # [...] int32, steps taken so far (the next step's position)


class TransformerController(nnx.Module):
    """A causal Transformer controller that runs one step at a time inside ``scan``.

    The Transformer controller of the NTM and DNC of Reina Campo 2022: at step ``t`` the input ``x_t`` is projected to
    ``D``, given its position (``"absolute"``: plus ``sinusoidal_encoding(t)``;
    ``"relative"``: Transformer-XL RPE in every self-attention), and passed
    through ``N_l`` pre-LN causal self-attention layers that attend over the keys
    and values of steps ``0..t`` (this one included), kept in a fixed-size cache
    of ``S = max_steps`` slots; a final LN gives ``h_t``. Stepping token by token
    equals ``parallel`` (all steps at once under a causal mask).

    A masked step (the ``scan`` wrapper's ``mask = 0``) leaves the carry, hence
    the step counter, unchanged, so positions count real steps only. Steps past
    ``max_steps`` are not cached: they still run, attending to the first
    ``max_steps`` steps (callers size ``max_steps`` to ``T_in + T_out``).

    Interface (as ``GRUCell`` / ``LSTMCell``): ``init_carry(batch_shape)``,
    ``__call__(carry, x [..., I]) -> (carry, h [..., D])``.
    """

    def __init__(
        self,
        in_features: int,
        hidden: int,
        *,
        max_steps: int,
        num_layers: int = 1,
        num_heads: int = 4,
        ffn_hidden: int | None = None,
        positions: str = "absolute",
        rngs: nnx.Rngs,
    ):
        checks.positive_int("in_features", in_features)
        _check_heads(hidden, num_heads, "hidden")
        checks.positive_int("max_steps", max_steps)
        checks.positive_int("num_layers", num_layers)
        ffn_hidden = hidden if ffn_hidden is None else ffn_hidden
        checks.positive_int("ffn_hidden", ffn_hidden)
        checks.one_of("positions", positions, POSITIONS)
        self.in_features = in_features
        self.hidden = hidden
        self.max_steps = max_steps
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.positions = positions
        relative = positions == "relative"
        self.input_proj = nnx.Linear(in_features, hidden, rngs=rngs)  # [I, D]
        self.layers = nnx.List(
            [EncoderLayer(hidden, num_heads, ffn_hidden, relative=relative, rngs=rngs) for _ in range(num_layers)]
        )
        self.final_norm = _layer_norm(hidden, rngs)

    def init_carry(self, batch_shape: tuple[int, ...], dtype=jnp.float32) -> TransformerCache:
        shape = (*batch_shape, self.num_layers, self.max_steps, self.num_heads, self.hidden // self.num_heads)
        return TransformerCache(jnp.zeros(shape, dtype), jnp.zeros(shape, dtype), jnp.zeros(batch_shape, jnp.int32))

    def _embed(self, x: jax.Array, positions: jax.Array) -> jax.Array:
        h = self.input_proj(x)
        if self.positions == "absolute":
            h = h + sinusoidal_encoding(positions, self.hidden).astype(h.dtype)
        return h

    def __call__(self, carry: TransformerCache, x: jax.Array) -> tuple[TransformerCache, jax.Array]:
        """One step: ``x [..., I]`` -> ``h [..., D]``, the cache gains this step."""
        if x.shape[-1] != self.in_features:
            raise ValueError(f"x: expected last axis I = {self.in_features}, got shape {x.shape}")
        h = self._embed(x, carry.step)
        keys, values = [], []
        for layer_index, layer in enumerate(self.layers):
            h, k, v, _ = layer.step(
                h,
                carry.keys[..., layer_index, :, :, :],
                carry.values[..., layer_index, :, :, :],
                carry.step,
                max_distance=self.max_steps - 1,
            )
            keys.append(k)
            values.append(v)
        carry = TransformerCache(jnp.stack(keys, axis=-4), jnp.stack(values, axis=-4), carry.step + 1)
        return carry, self.final_norm(h)

    def parallel(self, xs: jax.Array, mask: jax.Array | None = None) -> jax.Array:
        """All steps at once (teacher-forced): ``xs [..., T, I] -> h [..., T, D]``.

        The same layers under a causal mask; with ``mask [..., T]`` padding steps
        are neither attended nor counted as positions and output zeros, as the
        ``scan`` wrapper does for the step-by-step form.
        """
        num_steps = xs.shape[-2]
        if mask is None:
            mask = jnp.ones(xs.shape[:-1], bool)
        mask = jnp.asarray(mask, bool)
        positions = jnp.cumsum(mask, axis=-1) - 1  # [..., T]: real steps before and including t, minus 1
        h = self._embed(xs, positions)
        attend = causal_mask(num_steps) & mask[..., None, :]  # [..., T, T]
        pos = {}
        if self.positions == "relative":
            pos = dict(q_positions=positions, k_positions=positions, max_distance=max(self.max_steps, num_steps) - 1)
        for layer in self.layers:
            h, _ = layer(h, attend[..., None, :, :], **pos)
        return jnp.where(mask[..., None], self.final_norm(h), 0.0)
