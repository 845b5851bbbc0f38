"""The attention baselines of Le et al. 2024 behind the one model interface.

Le et al. 2024 ("Plug, Play, and Generalize: Length Extrapolation with
Pointer-Augmented Neural Memory", TMLR) §3.1 and App. D.1 compare PANM with
"sequential attention models" (Content, Location and Hybrid attention), the
Pointer Network and the Transformer, and §3.3 with the Transformer with relative
positional encoding (RPE) and the Universal Transformer. Six names are registered
here:

* ``lstm_attention``: LSTM encoder, LSTM decoder with attention over the encoder
  outputs: ``attention="content"`` (Bahdanau et al. 2014's additive score),
  ``"location"`` (Luong et al. 2015, Eq. 8) or ``"hybrid"`` (both contexts
  concatenated, Le et al. 2024 §3.1);
* ``pointer_network``: Vinyals et al. 2015's pointer attention, whose output is the
  attention-weighted sum of the input tokens (App. D.1);
* ``transformer``: encoder-decoder Transformer (Vaswani et al. 2017) with
  sinusoidal positions;
* ``transformer_rpe``: the same with Transformer-XL relative positions (Dai et al.
  2019) in the self-attentions, as in the TRM+RPE of Csordás et al. 2021 (§3.3);
* ``universal_transformer`` / ``universal_transformer_rpe``: the Universal
  Transformer (Dehghani et al. 2019), one shared encoder layer and one shared
  decoder layer applied ``steps`` times, without / with those relative positions:
  the U. TRM and U. TRM + RPE baselines of Le et al. 2024 (§3.3, Table 4).

All decode without teacher forcing by default (App. D.1: ``z_t = 0``); the
Transformers also take ``teacher_forcing=True`` (App. D.3, the SCAN and
Mathematics protocol: ``models.teacher_forcing``), and then ``targets``. All
answer ``model(inputs [B, T_in, D_in], input_mask [B, T_in], num_outputs, *,
train=False, key=None, return_traces=False) -> logits [B, T_out, K]`` (or
``(logits, traces)``). Nothing here is random at call time (no dropout: the
paper gives none and the algorithmic tasks draw fresh data every step), so
``train`` and ``key`` are accepted and ignored. Padded input steps
(``input_mask = 0``) get attention weight exactly 0 and carry no state, so
appending padding changes no logit.

Shapes: ``B`` batch, ``T_in`` input steps, ``T_out = num_outputs`` output steps,
``D_in`` input width, ``D`` hidden width, ``K`` classes, ``H`` heads, ``N_l``
layers.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax import checks
from panm_jax.kernels.scan import scan
from panm_jax.models.registry import prepare_inputs, refuse_aligned
from panm_jax.models.teacher_forcing import decoder_tokens
from panm_jax.modules.additive_attention import AdditiveAttention
from panm_jax.modules.controllers import LSTMCell
from panm_jax.modules.encoders import LSTMEncoder
from panm_jax.modules.transformer import (
    DecoderLayer,
    EncoderLayer,
    LayerNorm,
    causal_mask,
    masked_softmax,
    sinusoidal_encoding,
)
from panm_jax.options import check_options, option

__all__ = [
    "AdditiveAttention",
    "LSTMAttention",
    "LSTMAttentionConfig",
    "LSTMAttentionTraces",
    "PointerNetwork",
    "PointerNetworkConfig",
    "PointerNetworkTraces",
    "TransformerConfig",
    "TransformerSeq2Seq",
    "TransformerTraces",
    "UniversalTransformerConfig",
    "UniversalTransformerSeq2Seq",
]

ATTENTIONS = ("content", "location", "hybrid")
# Floor added to the pointer mixture before the log: classes that no attended
# input row carries (delimiter rows have no token channel set) have probability
# exactly 0, and log 0 = -inf would make the loss and its gradient infinite.
# 1e-6 caps a class's log-probability at about -13.8, far below any useful one.
POINTER_EPS = 1e-6


# ---------------------------------------------------------------------------------------------
# lstm_attention


@dataclasses.dataclass(frozen=True)
class LSTMAttentionConfig:
    """LSTM encoder-decoder with attention; defaults from Le et al. 2024, §3.1 / App. D.1.

    At the defaults, with the algorithmic tasks' 12-wide inputs and 10 classes:
    4.23M parameters (content), 4.63M (hybrid); App. D.1 reports "around 1-3
    millions" for its 512-wide baselines.
    """

    hidden: int = option(
        512, checks.positive_int, doc="D: encoder and decoder LSTMs (App. D.1: 512 for these baselines)"
    )
    attention: str = option(
        "content",
        checks.one_of,
        ATTENTIONS,
        doc='"content" (Bahdanau 2014), "location" (Luong 2015) or "hybrid" (§3.1)',
    )
    max_input_length: int = option(
        256, checks.positive_int, doc="location/hybrid: W_a scores this many positions (Luong Eq. 8)"
    )

    def __post_init__(self):
        check_options(self)


class LSTMAttentionTraces(NamedTuple):
    """What ``LSTMAttention`` returns beside its logits with ``return_traces=True``: where each output step attended."""

    attention: jax.Array  # [B, T_out, A, T_in] weights over the input; A = 1, or 2 for hybrid (content, location)


class LSTMAttention(nnx.Module):
    """LSTM encoder, LSTM decoder with global attention and input feeding (Luong et al. 2015).

    The encoder writes ``h_j [B, T_in, D]``; the decoder starts from its final
    state. At output step ``t`` (``z_t = 0``, so the decoder input is only the
    previous attentional vector: Luong's input feeding, §3.3):

    * ``s_t = LSTM(s_{t-1}, h~_{t-1})``, with ``h~_0 = 0``;
    * content: ``a_t = softmax_j(v^T tanh(W_q s_t + W_k h_j))`` (Bahdanau et al.'s
      additive score, the "Content Attention" Le et al. 2024 §3.1 cites);
      location: ``a_t = softmax(W_a s_t)[:T_in]`` (Luong et al. Eq. 8, one learned
      score per position up to ``max_input_length``); hybrid: both;
    * ``c_t = sum_j a_tj h_j`` (one per attention), ``h~_t = tanh(W_c [c_t; s_t])``,
      ``logits_t = W_o h~_t``.

    Padding keys are masked out of every softmax.
    """

    def __init__(self, config: LSTMAttentionConfig, input_size: int, output_size: int, *, rngs: nnx.Rngs):
        d = config.hidden
        self.config = config
        self.input_size = input_size
        self.encoder = LSTMEncoder(input_size, d, rngs=rngs)
        self.decoder = LSTMCell(d, d, rngs=rngs)  # input: h~_{t-1}; z_t = 0 contributes nothing
        self.content = AdditiveAttention(d, d, d, rngs=rngs) if config.attention != "location" else None
        self.location = nnx.Linear(d, config.max_input_length, rngs=rngs) if config.attention != "content" else None
        num_contexts = 2 if config.attention == "hybrid" else 1
        self.combine = nnx.Linear(num_contexts * d + d, d, rngs=rngs)  # W_c
        self.output = nnx.Linear(d, output_size, rngs=rngs)  # W_o

    def __call__(
        self, inputs, input_mask, num_outputs: int, *, aligned=False, train=False, key=None, return_traces=False
    ):
        refuse_aligned("lstm_attention", aligned)
        inputs, input_mask = prepare_inputs(inputs, input_mask, num_outputs, self.input_size)
        t_in = inputs.shape[1]
        if self.location is not None and t_in > self.config.max_input_length:
            raise ValueError(
                f"inputs: location attention scores at most max_input_length = "
                f"{self.config.max_input_length} steps, got T_in = {t_in}"
            )
        mask = jnp.asarray(input_mask, bool)
        encoded, state = self.encoder(inputs, mask)  # [B, T_in, D]
        keys = self.content.project_keys(encoded) if self.content is not None else None  # [B, T_in, D]

        def step(carry, _):
            state, feed = carry
            state, s = self.decoder(state, feed)  # s_t [B, D]
            weights = []
            if self.content is not None:
                weights.append(self.content(s, keys, mask))
            if self.location is not None:
                weights.append(masked_softmax(self.location(s)[:, :t_in], mask))
            weights = jnp.stack(weights, axis=1)  # [B, A, T_in]
            contexts = jnp.einsum("bat,btd->bad", weights, encoded)  # [B, A, D]
            attentional = jnp.tanh(self.combine(jnp.concatenate([contexts.reshape(s.shape[0], -1), s], -1)))
            return (state, attentional), (self.output(attentional), weights)

        feed = jnp.zeros_like(state.h)
        _, (logits, weights) = scan(step, (state, feed), None, length=num_outputs)
        logits = jnp.swapaxes(logits, 0, 1)  # [B, T_out, K]
        if return_traces:
            return logits, LSTMAttentionTraces(attention=jnp.swapaxes(weights, 0, 1))
        return logits


def _build_lstm_attention(config, input_size: int, output_size: int, rngs: nnx.Rngs) -> LSTMAttention:
    return LSTMAttention(config, input_size, output_size, rngs=rngs)


# ---------------------------------------------------------------------------------------------
# pointer_network


@dataclasses.dataclass(frozen=True)
class PointerNetworkConfig:
    """Pointer Network; Le et al. 2024, App. D.1: "hyperparameters are the same as attention models".

    2.66M parameters at the defaults with 12-wide inputs.
    """

    hidden: int = option(512, checks.positive_int, doc="D: encoder and decoder LSTMs and the attention width")
    token_offset: int = option(
        0, checks.nonnegative_int, doc="the one-hot token of an input row is channels [offset, offset + K)"
    )

    def __post_init__(self):
        check_options(self)


class PointerNetworkTraces(NamedTuple):
    """What ``PointerNetwork`` returns beside its logits with ``return_traces=True``: the input step each output
    points at, and the token distribution that pointing gives (the logits are its log)."""

    pointer: jax.Array  # [B, T_out, T_in] pointer attention weights a_tj
    probabilities: jax.Array  # [B, T_out, K] p_t = sum_j a_tj x_j[token channels]


class PointerNetwork(nnx.Module):
    """Pointer Network (Vinyals et al. 2015) predicting tokens, as Le et al. 2024, App. D.1 uses it.

    LSTM encoder ``e_j [B, T_in, D]``; LSTM decoder ``d_t`` from the encoder's
    final state on zero inputs (``z_t = 0``); pointer
    ``a_t = softmax_j(v^T tanh(W_1 e_j + W_2 d_t))`` (Vinyals Eq. 3) over the real
    input steps. App. D.1: "we produce the predicted token by performing weighted
    sum the input tokens using the PtrNet's attention weights":
    ``p_t = sum_j a_tj x_j[offset : offset + K]`` (the one-hot token channels of
    the input rows), and the model returns ``logits_t = log(max(p_t, 0) + eps)``
    (``POINTER_EPS``; the max only matters for inputs whose token channels are
    not one-hot). ``p_t`` sums to at most 1 (delimiter rows carry no token),
    so a softmax of these logits (the loss's) renormalises over the classes.
    """

    def __init__(self, config: PointerNetworkConfig, input_size: int, output_size: int, *, rngs: nnx.Rngs):
        if config.token_offset + output_size > input_size:
            raise ValueError(
                f"token_offset: the token channels [{config.token_offset}, {config.token_offset + output_size}) "
                f"must lie within the input width {input_size}"
            )
        d = config.hidden
        self.config = config
        self.input_size = input_size
        self.output_size = output_size
        self.encoder = LSTMEncoder(input_size, d, rngs=rngs)
        self.decoder = LSTMCell(1, d, rngs=rngs)  # its input is always 0: only the bias acts
        self.pointer = AdditiveAttention(d, d, d, rngs=rngs)

    def __call__(
        self, inputs, input_mask, num_outputs: int, *, aligned=False, train=False, key=None, return_traces=False
    ):
        refuse_aligned("pointer_network", aligned)
        inputs, input_mask = prepare_inputs(inputs, input_mask, num_outputs, self.input_size)
        mask = jnp.asarray(input_mask, bool)
        encoded, state = self.encoder(inputs, mask)
        keys = self.pointer.project_keys(encoded)  # [B, T_in, D]
        gx = self.decoder.project_inputs(jnp.zeros((1,), inputs.dtype))  # [4D], the same every step

        def step(state, _):
            state, d = self.decoder.step_projected(state, gx)
            return state, self.pointer(d, keys, mask)

        _, pointer = scan(step, state, None, length=num_outputs)  # [T_out, B, T_in]
        pointer = jnp.swapaxes(pointer, 0, 1)  # [B, T_out, T_in]
        offset = self.config.token_offset
        tokens = jnp.where(mask[..., None], inputs[..., offset : offset + self.output_size], 0.0)  # [B, T_in, K]
        probabilities = jnp.einsum("bot,btk->bok", pointer, tokens)  # [B, T_out, K]
        # One-hot tokens give p >= 0; inputs with negative token channels are clipped to 0 (no NaN).
        logits = jnp.log(jnp.maximum(probabilities, 0.0) + POINTER_EPS)
        if return_traces:
            return logits, PointerNetworkTraces(pointer=pointer, probabilities=probabilities)
        return logits


def _build_pointer_network(config, input_size: int, output_size: int, rngs: nnx.Rngs) -> PointerNetwork:
    return PointerNetwork(config, input_size, output_size, rngs=rngs)


# ---------------------------------------------------------------------------------------------
# transformer, transformer_rpe


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """Encoder-decoder Transformer; ``transformer`` and ``transformer_rpe`` share it.

    At the defaults, with 12-wide inputs and 10 classes: 4.22M parameters
    (``transformer``), 4.75M (``transformer_rpe``: ``W_R`` in each self-attention
    and the start vector).
    """

    d_model: int = option(512, checks.positive_int, doc="D (Le et al. 2024, App. D.1: hidden 512 for the baselines)")
    num_heads: int = option(8, checks.positive_int, doc="H (Vaswani et al. 2017's base model; App. D.1 does not say)")
    num_layers: int = option(
        1, checks.positive_int, doc="N_l encoder layers and N_l decoder layers (App. D.1: 1 layer was best)"
    )
    ffn_hidden: int = option(
        512, checks.positive_int, doc="FFN width; D rather than Vaswani's 4D keeps the size near App. D.1's 1-3M"
    )
    teacher_forcing: bool = option(
        False, checks.boolean, doc="decoder reads y_{t-1} (models.teacher_forcing); False: z_t = 0 (App. D.1)"
    )

    def __post_init__(self):
        check_options(self)
        if self.d_model % self.num_heads:
            raise ValueError(f"num_heads: expected a divisor of d_model = {self.d_model}, got {self.num_heads}")


class TransformerTraces(NamedTuple):
    """What ``TransformerSeq2Seq`` and ``UniversalTransformerSeq2Seq`` return beside their logits with
    ``return_traces=True``: the attention weights of every layer (``N_l``; for the Universal Transformer, every
    step of its shared layer) and head (``H``), for plots of what each step looked at."""

    cross_attention: jax.Array  # [B, T_out, N_l, H, T_in] decoder -> encoder weights
    decoder_self_attention: jax.Array  # [B, T_out, N_l, H, T_out] causal
    encoder_self_attention: jax.Array  # [B, T_in, N_l, H, T_in] rows of padding queries are 0


def _stack_layers(weights: list[jax.Array]) -> jax.Array:
    """Per-layer ``[B, H, T_q, T_k]`` -> ``[B, T_q, N_l, H, T_k]``."""
    return jnp.moveaxis(jnp.stack(weights, axis=1), 3, 1)


class _EncoderDecoderBody(nnx.Module):
    """The forward pass that ``TransformerSeq2Seq`` and ``UniversalTransformerSeq2Seq`` share; they differ in
    which layer runs at each step (``encoder_steps``, ``decoder_steps``: ``N_l`` layers of their own, or one
    layer ``steps`` times) and in the coordinate embedding the universal one may add before every step
    (``step_coordinates``; ``per_step``). The equations are in each model's docstring."""

    model_name = ""  # as the registry names it, for refuse_aligned
    per_step = False  # P^t added before every step (the universal model's coordinate_embedding)

    def encoder_steps(self) -> list[EncoderLayer]:
        raise NotImplementedError

    def decoder_steps(self) -> list[DecoderLayer]:
        raise NotImplementedError

    def step_coordinates(self, num_positions: int, step: int, dtype) -> jax.Array:
        raise NotImplementedError  # only with per_step

    def __call__(
        self,
        inputs,
        input_mask,
        num_outputs: int,
        *,
        aligned=False,
        targets=None,
        train=False,
        key=None,
        return_traces=False,
    ):
        """``targets`` ``[B, T_out]`` (class ids): the teacher-forced decoder's inputs; ignored without
        ``teacher_forcing``."""
        refuse_aligned(self.model_name, aligned)
        inputs, input_mask = prepare_inputs(inputs, input_mask, num_outputs, self.input_size)
        batch, t_in, _ = inputs.shape
        d, per_step = self.config.d_model, self.per_step
        mask = jnp.asarray(input_mask, bool)
        key_mask = mask[:, None, None, :]  # [B, 1(H), 1(T_q), T_in]

        x = self.embed(inputs)  # [B, T_in, D]
        if not self.relative and not per_step:
            x = x + sinusoidal_encoding(jnp.arange(t_in), d).astype(x.dtype)
        encoder_weights = []
        for t, layer in enumerate(self.encoder_steps(), 1):
            if per_step:
                x = x + self.step_coordinates(t_in, t, x.dtype)
            x, w = layer(x, key_mask)
            encoder_weights.append(w)
        memory = self.encoder_norm(x)  # [B, T_in, D]

        if self.relative and not self.config.teacher_forcing:
            first = (jnp.arange(num_outputs) == 0)[:, None]  # [T_out, 1]
            y = jnp.where(first, self.start[...].astype(x.dtype), 0.0)  # [T_out, D]: s, 0, 0, ...
        elif per_step or self.relative:
            y = jnp.zeros((num_outputs, d), x.dtype)  # z_t = 0; positions come with P^t (or RPE)
        else:
            y = sinusoidal_encoding(jnp.arange(num_outputs), d).astype(x.dtype)  # [T_out, D]: PE(t)
        y = jnp.broadcast_to(y, (batch, num_outputs, d))
        causal = causal_mask(num_outputs)  # [T_out, T_out]

        def decode(tokens):  # tokens [B, T_out] or None -> (logits [B, T_out, K], self weights, cross weights)
            h = y if tokens is None else y + self.tokens(tokens).astype(y.dtype)
            self_weights, cross_weights = [], []
            for t, layer in enumerate(self.decoder_steps(), 1):
                if per_step:
                    h = h + self.step_coordinates(num_outputs, t, h.dtype)
                h, ws, wc = layer(h, memory, causal, key_mask)
                self_weights.append(ws)
                cross_weights.append(wc)
            return self.output(self.decoder_norm(h)), self_weights, cross_weights

        tokens = decoder_tokens(self.config, self.output_size, targets, batch, num_outputs, lambda t: decode(t)[0])
        logits, self_weights, cross_weights = decode(tokens)  # [B, T_out, K]
        if return_traces:
            encoder = _stack_layers(encoder_weights) * mask[:, :, None, None, None]
            return logits, TransformerTraces(
                cross_attention=_stack_layers(cross_weights),
                decoder_self_attention=_stack_layers(self_weights),
                encoder_self_attention=encoder,
            )
        return logits


class TransformerSeq2Seq(_EncoderDecoderBody):
    """Pre-LN encoder-decoder Transformer (Vaswani et al. 2017; Xiong et al. 2020 layer order).

    Encoder: ``x_j = W_e inputs_j`` (+ ``PE(j)`` with absolute positions), ``N_l``
    self-attention layers over the real input steps, final LN -> ``memory``.

    Decoder inputs, with no teacher forcing (``z_t = 0``, docs/tasks.md):

    * ``relative=False`` (``transformer``): ``y_t = z_t + PE(t) = PE(t)``, so the
      decoder's queries are position encodings only;
    * ``relative=True`` (``transformer_rpe``): ``y_0 = s`` (a learned start vector,
      the SOS embedding a teacher-forced decoder reads first) and ``y_t = 0``
      for ``t >= 1``. Without it every decoder row would be identical: RPE only
      moves attention weights, and weights over identical values give identical
      outputs, so all ``T_out`` logits would be equal. Distances to the start row
      tell each step where it is.

    ``N_l`` decoder layers (causal self-attention, RPE in it when ``relative``;
    cross-attention over ``memory`` by content, as in Csordás et al. 2021's
    relative Transformer), final LN, ``logits = W_o y``. All output steps are
    computed at once (no time loop); the causal mask makes step ``t``'s logits
    independent of ``num_outputs``.

    With ``teacher_forcing=True`` (Le et al. 2024 App. D.3, as Csordás et al.
    2021 train these models) the decoder reads the previous token instead:
    ``y_t = E[tok_{t-1}] (+ PE(t))``, ``E`` a ``[K + 1, D]`` table (row ``K`` the
    start token, which replaces ``s``), ``tok`` the targets shifted right when
    ``targets`` are given (training), else the model's own greedy choices
    (``models.teacher_forcing``).
    """

    def __init__(self, config: TransformerConfig, input_size: int, output_size: int, *, relative: bool, rngs: nnx.Rngs):
        d, h, f = config.d_model, config.num_heads, config.ffn_hidden
        self.config = config
        self.input_size = input_size
        self.relative = relative
        self.embed = nnx.Linear(input_size, d, rngs=rngs)  # W_e [D_in, D]
        self.encoder_layers = nnx.List(
            [EncoderLayer(d, h, f, relative=relative, rngs=rngs) for _ in range(config.num_layers)]
        )
        self.encoder_norm = LayerNorm(d, rngs=rngs)
        self.decoder_layers = nnx.List(
            [DecoderLayer(d, h, f, relative=relative, rngs=rngs) for _ in range(config.num_layers)]
        )
        self.decoder_norm = LayerNorm(d, rngs=rngs)
        self.output = nnx.Linear(d, output_size, rngs=rngs)  # W_o [D, K]
        self.output_size = output_size
        if relative and not config.teacher_forcing:
            self.start = nnx.Param(jax.random.normal(rngs.params(), (d,)))  # s [D]
        if config.teacher_forcing:
            self.tokens = nnx.Embed(output_size + 1, d, rngs=rngs)  # E [K + 1, D], row K: BOS

    model_name = "transformer"

    def encoder_steps(self) -> list[EncoderLayer]:
        return list(self.encoder_layers)  # N_l layers of their own

    def decoder_steps(self) -> list[DecoderLayer]:
        return list(self.decoder_layers)


def _build_transformer(config, input_size: int, output_size: int, rngs: nnx.Rngs) -> TransformerSeq2Seq:
    return TransformerSeq2Seq(config, input_size, output_size, relative=False, rngs=rngs)


def _build_transformer_rpe(config, input_size: int, output_size: int, rngs: nnx.Rngs) -> TransformerSeq2Seq:
    return TransformerSeq2Seq(config, input_size, output_size, relative=True, rngs=rngs)


# ---------------------------------------------------------------------------------------------
# universal_transformer, universal_transformer_rpe


@dataclasses.dataclass(frozen=True)
class UniversalTransformerConfig:
    """Universal Transformer; ``universal_transformer`` and ``universal_transformer_rpe`` share it.

    Defaults are the SCAN profile of Csordás et al. 2021 ("The Devil is in the
    Detail: Simple Tricks Improve Systematic Generalization of Transformers",
    their public code), whose Universal Transformers are the U. TRM and
    U. TRM + RPE baselines of Le et al. 2024 (§3.3, Table 4): width 128, 8 heads,
    FFN ``2 D``, the shared layer applied 3 times in the encoder and 3 times in
    the decoder. Their Mathematics profile (Table 4 right, Table 19) is width
    512, 8 heads, FFN ``4 D = 2048``, 6 steps.
    """

    d_model: int = option(128, checks.positive_int, doc="D (Csordás et al. 2021, SCAN: 128)")
    num_heads: int = option(8, checks.positive_int, doc="H (Csordás et al. 2021: 8)")
    steps: int = option(
        3, checks.positive_int, doc="recurrent applications of the one shared layer, encoder and decoder (SCAN: 3)"
    )
    ffn_hidden: int = option(256, checks.positive_int, doc="FFN width (Csordás et al. 2021: 2 D)")
    coordinate_embedding: bool = option(
        True, checks.boolean, doc="add PE(position) + TE(step) before every step (Dehghani et al. 2019)"
    )
    teacher_forcing: bool = option(
        False, checks.boolean, doc="decoder reads y_{t-1} (models.teacher_forcing); False: z_t = 0 (App. D.1)"
    )

    def __post_init__(self):
        check_options(self)
        if self.d_model % self.num_heads:
            raise ValueError(f"num_heads: expected a divisor of d_model = {self.d_model}, got {self.num_heads}")


class UniversalTransformerSeq2Seq(_EncoderDecoderBody):
    """Encoder-decoder Universal Transformer (Dehghani et al. 2019, "Universal Transformers", ICLR).

    ``TransformerSeq2Seq`` with one encoder layer and one decoder layer, each
    applied ``steps`` times with the same weights (Dehghani et al. §2.1: the
    recurrent block is shared across depth), so the parameter count does not
    depend on ``steps``. With ``T = steps`` and ``t = 1..T``:

    Encoder: ``x^0_j = W_e inputs_j``; for ``t = 1..T``:
    ``x^t = EncoderLayer(x^{t-1} + P^t)`` over the real input steps; ``memory =
    LN(x^T)``.

    Decoder (no teacher forcing, ``z_t = 0``, as ``TransformerSeq2Seq``):
    ``y^0 = 0`` (``transformer``-like, absolute positions) or ``y^0 = (s, 0, 0,
    ...)`` with the learned start vector ``s`` (relative positions: the
    ``transformer_rpe`` start row, without which every decoder row would be
    equal); for ``t = 1..T``: ``y^t = DecoderLayer(y^{t-1} + P^t, memory)``
    (causal self-attention, content cross-attention); ``logits = W_o LN(y^T)``.

    The coordinate embedding ``P^t`` (Dehghani et al. §2.1) is added before every
    step: ``P^t_i = PE(i) + TE(t)``, both the sinusoid of Vaswani et al. 2017
    (``sinusoidal_encoding``: ``TE(t)`` is it at the step index ``t``), with
    ``PE(i)`` dropped under relative positions (RPE carries the positions, in
    every self-attention, as in ``transformer_rpe``). With
    ``coordinate_embedding=False`` there is no ``TE`` and ``PE`` is added once, to
    the encoder's embedding and as the decoder's input, which is the Universal
    Transformer of Csordás et al. 2021's code (the U. TRM baselines of Le et al.
    2024, Table 4); then ``steps = 1`` is exactly ``TransformerSeq2Seq`` with
    ``num_layers = 1`` and the same weights.

    Adaptive computation time (ACT, Dehghani et al. §2.2) is omitted: the number
    of steps is fixed, as in Csordás et al. 2021's Universal Transformers whose
    numbers Le et al. 2024 report. Traces are ``TransformerTraces`` with one
    entry per step on the ``N_l`` axis.

    ``teacher_forcing=True``: ``y^0_t = E[tok_{t-1}]`` (+ ``PE(t)`` without per-step
    coordinates and without RPE), as ``TransformerSeq2Seq``'s.
    """

    def __init__(
        self,
        config: UniversalTransformerConfig,
        input_size: int,
        output_size: int,
        *,
        relative: bool,
        rngs: nnx.Rngs,
    ):
        d, h, f = config.d_model, config.num_heads, config.ffn_hidden
        self.config = config
        self.input_size = input_size
        self.relative = relative
        # Built in TransformerSeq2Seq's order, so one seed gives a 1-layer Transformer the same weights.
        self.embed = nnx.Linear(input_size, d, rngs=rngs)  # W_e [D_in, D]
        self.encoder_layer = EncoderLayer(d, h, f, relative=relative, rngs=rngs)  # shared over the steps
        self.encoder_norm = LayerNorm(d, rngs=rngs)
        self.decoder_layer = DecoderLayer(d, h, f, relative=relative, rngs=rngs)  # shared over the steps
        self.decoder_norm = LayerNorm(d, rngs=rngs)
        self.output = nnx.Linear(d, output_size, rngs=rngs)  # W_o [D, K]
        self.output_size = output_size
        if relative and not config.teacher_forcing:
            self.start = nnx.Param(jax.random.normal(rngs.params(), (d,)))  # s [D]
        if config.teacher_forcing:
            self.tokens = nnx.Embed(output_size + 1, d, rngs=rngs)  # E [K + 1, D], row K: BOS

    def coordinates(self, num_positions: int, step: int, dtype=jnp.float32) -> jax.Array:
        """``P^t [T, D]``: ``PE(i) + TE(t)`` (``TE(t)`` alone under relative positions), ``t >= 1``."""
        d = self.config.d_model
        timestep = sinusoidal_encoding(jnp.asarray(step), d)  # [D]
        if self.relative:
            return jnp.broadcast_to(timestep, (num_positions, d)).astype(dtype)
        return (sinusoidal_encoding(jnp.arange(num_positions), d) + timestep).astype(dtype)

    model_name = "universal_transformer"

    @property
    def per_step(self) -> bool:  # type: ignore[override]
        return self.config.coordinate_embedding

    def encoder_steps(self) -> list[EncoderLayer]:
        return [self.encoder_layer] * self.config.steps  # one layer, shared over the steps

    def decoder_steps(self) -> list[DecoderLayer]:
        return [self.decoder_layer] * self.config.steps

    def step_coordinates(self, num_positions: int, step: int, dtype=jnp.float32) -> jax.Array:
        return self.coordinates(num_positions, step, dtype)


def _build_universal_transformer(config, input_size: int, output_size: int, rngs: nnx.Rngs):
    return UniversalTransformerSeq2Seq(config, input_size, output_size, relative=False, rngs=rngs)


def _build_universal_transformer_rpe(config, input_size: int, output_size: int, rngs: nnx.Rngs):
    return UniversalTransformerSeq2Seq(config, input_size, output_size, relative=True, rngs=rngs)
