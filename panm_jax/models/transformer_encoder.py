"""The encoder-only Transformer of Delétang et al. 2023 (``transformer_encoder``), with their positional encodings.

Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR 2023),
§4 and their released model: the input tokens and then ``T_out`` blank tokens
form ONE sequence of ``T = n + T_out`` tokens (``n`` real input steps), a
bidirectional (unmasked) Transformer encoder reads all of it, and output ``k`` is
a linear layer on the encoder's output at blank token ``k``. Per layer (post-LN,
as theirs)::

    e      = sqrt(D) W_e [x_t; blank_t]  (+ PE(p_t) for "sin_cos"; dropout)   W_e: no bias
    a      = LN(h + Dropout(MHA(h)))                                         every token attends to every real token
    h      = LN(a + Dropout(W_2 relu(W_1 a + b_1) + b_2))                    W_1: [D, 4D]
    logits = W_y h + b_y  at the blank tokens                               [B, T_out, K]

Defaults (theirs): ``hidden = D = 64``, ``num_layers = 5``, ``num_heads = 8``,
feed-forward width ``4 D``, dropout 0.1 (training only: ``train=True`` with a
``key``), ``positions = "sin_cos"``. The blank token is one extra input feature
set to 1 (their "empty" token). The scaled embeddings are clipped to
``EMBEDDING_BOUND`` (far above a token's), so that any finite input gives finite
logits: a post-LN layer attends over its input before normalising it. Attention projections here have biases (theirs
have none; our choice, the shared ``MultiHeadAttention``).

Positional encodings (``positions``), each as their code computes it:

* ``"sin_cos"``: added to the embeddings, ``PE(p) = [sin(p w_0) .. sin(p w_{D/2-1}),
  cos(p w_0) .. cos(p w_{D/2-1})]`` with ``w_i = 10000^(-2i/D)`` and positions counted
  back from the end of the sequence, ``p_t = T - t`` (``T .. 1``: their causal
  sinusoid table);
* ``"relative"``: Transformer-XL relative logits in every layer
  (``MultiHeadAttention(relative=True)``: Dai et al. 2019);
* ``"alibi"``: logits ``+ m_h (-|i - j| + 0.5 [j < i])``, ``m_h = 2^(-8 (h + 1) / H)``
  (Press et al. 2022's slopes for a power-of-two ``H``; the half breaks the symmetry
  of a bidirectional encoder, as theirs does);
* ``"rotary"``: queries and keys rotated by their position (Su et al. 2021), pairs of
  adjacent features, ``w_i = 10000^(-2i/d_h)``;
* ``"none"``: no position information.

Padding: the real tokens of an example are its ``n`` real input steps and its
``T_out`` blank steps; positions count real tokens only (a padded input step
takes no position and is no key), so padding inside the input changes no logit.
The blank tokens attend to each other, so ``T_out`` itself is part of the input:
appending output steps changes every output (unlike the recurrent models), and an
evaluation must give each length its exact output count (``range_evaluate(...,
buckets="per-length")``). No aligned mode (``AlignedModeError``).
``return_traces=True`` adds ``{"attention": [B, L, H, T, T]}``.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax import checks
from panm_jax.models.registry import prepare_inputs, refuse_aligned
from panm_jax.modules.transformer import LayerNorm, MultiHeadAttention, masked_softmax
from panm_jax.options import check_options, option

__all__ = [
    "EMBEDDING_BOUND",
    "POSITIONS",
    "TransformerEncoderConfig",
    "TransformerEncoderModel",
    "alibi_bias",
    "alibi_slopes",
    "rotate",
    "sin_cos_encoding",
]

POSITIONS = ("sin_cos", "relative", "alibi", "rotary", "none")
MAX_TIMESCALE = 10_000.0  # their sinusoid's and rotary's base
# Embeddings are clipped to this magnitude before the first layer: a one-hot token's is about 1, and the bound
# keeps every attention logit finite for any finite input (the first attention reads the raw embeddings).
EMBEDDING_BOUND = 1e6


@dataclasses.dataclass(frozen=True)
class TransformerEncoderConfig:
    """Hyperparameters (module docstring: sources)."""

    hidden: int = option(64, checks.positive_int, doc="D, the embedding width (their embedding_dim)")
    num_layers: int = option(5, checks.positive_int, doc="encoder layers (Delétang et al. 2023: 5)")
    num_heads: int = option(
        8, checks.positive_int, doc="attention heads, a divisor of hidden (Delétang et al. 2023: 8)"
    )
    widening_factor: int = option(4, checks.positive_int, doc="the feed-forward width is widening_factor * D")
    dropout: float = option(0.1, checks.number, 0.0, 1.0, hi_open=True, doc="the dropout rate, in training only")
    positions: str = option(
        "sin_cos", checks.one_of, POSITIONS, doc="how positions enter the attention (Delétang et al. 2023: sin_cos)"
    )

    def __post_init__(self):
        check_options(self)
        if self.hidden % self.num_heads:
            raise ValueError(f"num_heads: expected a divisor of hidden = {self.hidden}, got {self.num_heads}")
        if self.positions == "rotary" and (self.hidden // self.num_heads) % 2:
            raise ValueError(
                f"num_heads: rotary positions need an even head width hidden / num_heads, got "
                f"{self.hidden} / {self.num_heads}"
            )


def sin_cos_encoding(positions: jax.Array, width: int) -> jax.Array:
    """``[..., D]``: ``[sin(p w_0) .. sin(p w_{h-1}), cos(p w_0) .. cos(p w_{h-1})]``, ``w_i = 10000^(-2i/D)``,
    ``h = ceil(D / 2)`` (an odd ``D`` drops the last cosine)."""
    inv_freq = MAX_TIMESCALE ** (-jnp.arange(0, width, 2, dtype=jnp.float32) / width)  # [h]
    angles = jnp.asarray(positions, jnp.float32)[..., None] * inv_freq
    return jnp.concatenate([jnp.sin(angles), jnp.cos(angles)], axis=-1)[..., :width]


def alibi_slopes(num_heads: int) -> jax.Array:
    """``[H]``: ALiBi's head slopes, ``2^(-8 (h + 1) / H)`` for a power-of-two ``H``; otherwise those of the
    power of two below, then every other slope of the power of two above (Press et al.'s rule)."""

    def power_of_two(n: int) -> list[float]:
        return [2 ** (-8 * (h + 1) / n) for h in range(n)]

    lower = 2 ** math.floor(math.log2(num_heads))
    slopes = power_of_two(lower) + power_of_two(2 * lower)[0::2][: num_heads - lower]
    return jnp.asarray(slopes, jnp.float32)


def alibi_bias(positions: jax.Array, num_heads: int) -> jax.Array:
    """``[..., H, T, T]``: ``m_h (-|p_i - p_j| + 0.5 [p_j < p_i])`` for query ``i``, key ``j``."""
    p = jnp.asarray(positions, jnp.float32)
    diff = p[..., :, None] - p[..., None, :]  # p_i - p_j
    bias = -jnp.abs(diff) + 0.5 * (diff > 0)
    return alibi_slopes(num_heads)[:, None, None] * bias[..., None, :, :]


def rotate(x: jax.Array, positions: jax.Array) -> jax.Array:
    """Rotary encoding of ``x [B, T, H, d]`` at ``positions [B, T]``: each adjacent pair ``(x_{2i}, x_{2i+1})``
    rotated by the angle ``p w_i``, ``w_i = 10000^(-2i/d)``."""
    d = x.shape[-1]
    inv_freq = MAX_TIMESCALE ** (-jnp.arange(d // 2, dtype=jnp.float32) / (d // 2))
    angles = jnp.repeat(jnp.asarray(positions, jnp.float32)[..., None] * inv_freq, 2, axis=-1)[:, :, None, :]
    pairs = x.reshape(*x.shape[:-1], d // 2, 2)
    swapped = jnp.stack([-pairs[..., 1], pairs[..., 0]], axis=-1).reshape(x.shape)  # (-x_{2i+1}, x_{2i})
    return x * jnp.cos(angles).astype(x.dtype) + swapped * jnp.sin(angles).astype(x.dtype)


def _dropout(x: jax.Array, rate: float, key: jax.Array | None) -> jax.Array:
    if key is None or rate == 0:
        return x
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0).astype(x.dtype)


class _Layer(nnx.Module):
    """One post-LN encoder layer (the module docstring)."""

    def __init__(self, config: TransformerEncoderConfig, *, rngs: nnx.Rngs):
        d = config.hidden
        self.config = config
        self.attention = MultiHeadAttention(d, config.num_heads, relative=config.positions == "relative", rngs=rngs)
        self.norm_attention = LayerNorm(d, rngs=rngs)
        self.ffn_in = nnx.Linear(d, config.widening_factor * d, rngs=rngs)
        self.ffn_out = nnx.Linear(config.widening_factor * d, d, rngs=rngs)
        self.norm_ffn = LayerNorm(d, rngs=rngs)

    def __call__(self, h, mask, positions, keys):
        """``h [B, T, D]``, ``mask [B, 1, 1, T]`` (real keys), ``positions [B, T]``; ``keys``: two dropout keys or
        ``None``. Returns ``(h, weights [B, H, T, T])``."""
        att = self.attention
        q, (k, v) = att.project_query(h), att.project_key_value(h)
        kind = self.config.positions
        if kind == "rotary":
            q, k = rotate(q, positions), rotate(k, positions)
        if kind == "relative":
            logits = att.logits(q, k, q_positions=positions, k_positions=positions, max_distance=h.shape[1] - 1)
        else:
            logits = att.logits(q, k)
        if kind == "alibi":
            logits = logits + alibi_bias(positions, att.num_heads).astype(logits.dtype)
        weights = masked_softmax(logits, mask)
        heads = jnp.einsum("...hqk,...khd->...qhd", weights, v)
        out = att.output(heads.reshape(*heads.shape[:-2], att.d_model))
        rate = self.config.dropout
        a = self.norm_attention(h + _dropout(out, rate, None if keys is None else keys[0]))
        f = self.ffn_out(jax.nn.relu(self.ffn_in(a)))
        return self.norm_ffn(a + _dropout(f, rate, None if keys is None else keys[1])), weights


class TransformerEncoderModel(nnx.Module):
    """The encoder-only Transformer over the input and ``T_out`` blank tokens (the module docstring)."""

    def __init__(self, config: TransformerEncoderConfig, input_size: int, output_size: int, *, rngs: nnx.Rngs):
        self.config = config
        self.input_size = input_size
        d = config.hidden
        init = nnx.initializers.truncated_normal(stddev=0.02)  # their embedding initialiser
        self.embed = nnx.Linear(input_size + 1, d, use_bias=False, kernel_init=init, rngs=rngs)  # W_e
        self.layers = nnx.List([_Layer(config, rngs=rngs) for _ in range(config.num_layers)])
        self.readout = nnx.Linear(d, output_size, rngs=rngs)  # W_y, b_y

    def __call__(
        self,
        inputs: jax.Array,
        input_mask: jax.Array,
        num_outputs: int,
        *,
        aligned: bool = False,
        train: bool = False,
        key: jax.Array | None = None,
        return_traces: bool = False,
    ):
        """``(inputs [B, T_in, D_in], input_mask [B, T_in], T_out) -> logits [B, T_out, K]``; dropout only with
        ``train=True`` and a ``key``."""
        refuse_aligned("transformer_encoder", aligned)
        inputs, input_mask = prepare_inputs(inputs, input_mask, num_outputs, self.input_size)
        batch, t_in, _ = inputs.shape
        dtype = inputs.dtype
        read = jnp.concatenate([inputs, jnp.zeros((batch, t_in, 1), dtype)], axis=-1)
        blank = jnp.zeros((batch, num_outputs, self.input_size + 1), dtype).at[..., -1].set(1)
        x = jnp.concatenate([read, blank], axis=1)  # [B, T, D_in + 1]
        real = jnp.concatenate([input_mask, jnp.ones((batch, num_outputs), bool)], axis=1)  # [B, T]
        positions = jnp.cumsum(real, axis=1) - 1  # 0..n + T_out - 1 over the real tokens
        d = self.config.hidden
        h = jnp.clip(self.embed(x) * jnp.asarray(math.sqrt(d), dtype), -EMBEDDING_BOUND, EMBEDDING_BOUND)
        drawing = train and key is not None and self.config.dropout > 0
        keys = jax.random.split(key, 2 * len(self.layers) + 1) if drawing else None
        if self.config.positions == "sin_cos":
            total = jnp.sum(real, axis=1, keepdims=True)  # n + T_out
            h = h + sin_cos_encoding(total - positions, d).astype(dtype)  # counted back from the end: T .. 1
            h = _dropout(h, self.config.dropout, None if keys is None else keys[-1])
        mask = real[:, None, None, :]  # [B, 1(H), 1(T_q), T]
        attention = []
        for i, layer in enumerate(self.layers):
            h, w = layer(h, mask, positions, None if keys is None else keys[2 * i : 2 * i + 2])
            attention.append(w)
        logits = self.readout(h[:, t_in:])
        return (logits, {"attention": jnp.stack(attention, axis=1)}) if return_traces else logits


def _build(config: TransformerEncoderConfig, input_size: int, output_size: int, rngs: nnx.Rngs):
    return TransformerEncoderModel(config, input_size, output_size, rngs=rngs)
