"""PANM on a Transformer backbone: Transformer encoder, Controller stacked on a Transformer decoder.

Le et al. 2024 ("Plug, Play, and Generalize: Length Extrapolation with
Pointer-Augmented Neural Memory", TMLR) §3.3 and App. D.3 evaluate PANM on SCAN
and Mathematics with the Transformer of Csordás et al. 2021 ("The Devil is in the
Detail: Simple Tricks Improve Systematic Generalization of Transformers") as the
backbone: "we use Transformer as the Encoder, which is the same as the TRM, and
stack the Controller to another Transformer Decoder"; App. D.3: of the 3-layer
Transformer decoder, the last layer is replaced by the Controller, so that ``z_t``
in Eq. 7 becomes ``Decoder(y_{t-})`` with a 2-layer Transformer decoder
(Mathematics: the same with the TRM + RPE encoder). Registered as
``panm_transformer``:

    M          = TransformerEncoder(X)                    §2: "M = Encoder(X)", [B, L, D]
    z          = LN(DecoderLayer_{N_d}(... DecoderLayer_1(y^0, M)))   [B, T_out, D_z]
    logits     = PANMDecoder(M, z)                        Eq. 1-7 with z_t in Eq. 7

``DecoderLayer``: causal self-attention over the decoder steps (Transformer-XL RPE
in it with ``encoder="transformer_rpe"``), cross-attention to ``M`` by content,
FFN (pre-LN). The Controller reads ``z_t`` beside the pointer values
(``h^c_t = GRU([*p^a_t, *p^c_t, z_t], h^c_{t-1})``); pointers, address bank and
base address are PANM's (``models.panm``).

Teacher forcing. The paper trains these models with teacher forcing
(App. D.3: "All models are trained with teacher forcing as in Csordás et al.
(2021)"): the decoder reads the previous target tokens ``y_{t-}``. With
``teacher_forcing=True`` it does: ``y^0_t = E[tok_{t-1}] (+ PE(t))``, the
targets shifted behind a start token in training and the model's own greedy
choices in evaluation (``models.teacher_forcing``; greedy decoding reruns the
decoder, PANM's included, once per output step). By default
(``teacher_forcing=False``) the decoder's inputs are blank, as for every other
model of this library (``z_t = 0``, App. D.1): ``y^0_t = PE(t)`` (sinusoidal
positions) or, with relative positions, a learned start vector at ``t = 0`` and
zeros after it (``TransformerSeq2Seq``'s decoder inputs, and for the same
reason: under RPE alone every blank row would be equal); results in that mode
are not directly comparable with Table 4 / Table 19 of Le et al. 2024.

Widths: the encoder, the memory, the Pointer Units and the Controller share
``hidden`` (``h^c_0 = sum_i M[i]``); the default 128 is the width of Csordás et
al. 2021's SCAN Transformer, so the encoder is that model's (App. C's 256-wide
GRUs would need a projection of ``M`` that the paper does not describe). The
decoder's width ``decoder_width`` defaults to ``hidden``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax import checks
from panm_jax.errors import UserError
from panm_jax.models.panm import (
    TRANSFORMER_ENCODERS,
    PANMConfig,
    build_decoder,
    build_encoder,
    decoding_options,
)
from panm_jax.models.registry import prepare_inputs, refuse_aligned
from panm_jax.models.teacher_forcing import decoder_tokens
from panm_jax.modules.transformer import DecoderLayer, LayerNorm, causal_mask, sinusoidal_encoding
from panm_jax.options import option

__all__ = ["PANMTransformer", "PANMTransformerConfig"]


@dataclasses.dataclass(frozen=True)
class PANMTransformerConfig(PANMConfig):
    """PANM's options (``PANMConfig``) with a Transformer encoder, plus the decoder it is stacked on.

    Defaults: Csordás et al. 2021's SCAN Transformer for the encoder (width 128,
    3 layers, 8 heads, FFN ``2 D``) and a 2-layer decoder of the same shape (Le et
    al. 2024, App. D.3: the 3-layer decoder with its last layer replaced by the
    Controller). ``encoder="transformer_rpe"`` is the Mathematics setting (TRM +
    RPE encoder; the decoder's self-attention then uses RPE too).
    """

    hidden: int = option(
        128, checks.positive_int, doc="D: encoder, memory, Pointer Units, Controller (Csordás et al. 2021, SCAN: 128)"
    )
    encoder: str = option(
        "transformer",
        checks.one_of,
        sorted(TRANSFORMER_ENCODERS),
        doc='the encoder writing M: "transformer" (SCAN) or "transformer_rpe" (Mathematics)',
    )
    decoder_layers: int = option(
        2, checks.positive_int, doc="N_d Transformer decoder layers under the Controller (App. D.3: 2)"
    )
    decoder_heads: int = option(
        8, checks.positive_int, doc="decoder heads, a divisor of the decoder width (Csordás et al. 2021: 8)"
    )
    decoder_width: int | None = option(
        None,
        checks.optional_positive_int,
        doc="D_z, the decoder's width and z_t's; None: hidden",
    )
    decoder_ffn_hidden: int | None = option(
        None,
        checks.optional_positive_int,
        doc="decoder FFN width; None: 2 D_z (Csordás et al. 2021)",
    )
    teacher_forcing: bool = option(
        False, checks.boolean, doc="the decoder reads y_{t-1} (models.teacher_forcing; App. D.3); False: z_t = 0"
    )

    def __post_init__(self):
        super().__post_init__()
        width = self.hidden if self.decoder_width is None else self.decoder_width
        if width % self.decoder_heads:
            raise UserError(
                f"decoder_heads: expected a divisor of the decoder width = {width}, got {self.decoder_heads}"
            )


class PANMTransformer(nnx.Module):
    """Transformer encoder -> memory; Transformer decoder -> ``z_t``; PANM decoder -> logits.

    Submodules: ``encoder`` (``TransformerEncoder``), ``backbone_layers`` /
    ``backbone_norm`` (and ``start`` with relative positions): the Transformer
    decoder, ``decoder``: the ``PANMDecoder`` whose Controller reads ``z_t``.
    Traces: ``PANMTraces``.
    """

    def __init__(self, config: PANMTransformerConfig, input_size: int, output_size: int, *, rngs: nnx.Rngs):
        d = config.hidden
        dz = d if config.decoder_width is None else config.decoder_width
        ffn = 2 * dz if config.decoder_ffn_hidden is None else config.decoder_ffn_hidden
        self.config = config
        self.input_size = input_size
        self.decoder_width = dz
        self.relative = TRANSFORMER_ENCODERS[config.encoder]
        self.encoder = build_encoder(config, input_size, rngs)
        self.backbone_layers = nnx.List(
            [
                DecoderLayer(dz, config.decoder_heads, ffn, relative=self.relative, memory_features=d, rngs=rngs)
                for _ in range(config.decoder_layers)
            ]
        )
        self.backbone_norm = LayerNorm(dz, rngs=rngs)
        if self.relative and not config.teacher_forcing:
            self.start = nnx.Param(jax.random.normal(rngs.params(), (dz,)))  # s [D_z]
        self.decoder = build_decoder(config, output_size, rngs, input_features=dz)  # D = config.hidden = d
        self.output_size = output_size
        if config.teacher_forcing:
            self.tokens = nnx.Embed(output_size + 1, dz, rngs=rngs)  # E [K + 1, D_z], row K: BOS

    def blank_inputs(self, batch: int, num_outputs: int, dtype=jnp.float32) -> jax.Array:
        """The decoder's inputs without teacher forcing, ``[B, T_out, D_z]``.

        ``PE(t)`` (absolute positions), or ``(s, 0, 0, ...)`` (relative positions;
        zeros with teacher forcing, whose BOS token takes the start row's place).
        """
        if self.relative and self.config.teacher_forcing:
            y = jnp.zeros((num_outputs, self.decoder_width))
        elif self.relative:
            first = (jnp.arange(num_outputs) == 0)[:, None]  # [T_out, 1]
            y = jnp.where(first, self.start[...].astype(dtype), 0.0)
        else:
            y = sinusoidal_encoding(jnp.arange(num_outputs), self.decoder_width)
        return jnp.broadcast_to(y.astype(dtype), (batch, num_outputs, self.decoder_width))

    def decoder_states(self, y: jax.Array, memory: jax.Array, mask: jax.Array) -> jax.Array:
        """``z [B, T_out, D_z]`` from decoder inputs ``y [B, T_out, D_z]`` and ``memory [B, L, D]``.

        Causal: ``z_t`` depends on ``y_0..y_t`` (and the memory's real slots) only.
        """
        key_mask = jnp.asarray(mask, bool)[:, None, None, :]  # [B, 1(H), 1(T_q), L]
        causal = causal_mask(y.shape[-2])
        for layer in self.backbone_layers:
            y, _, _ = layer(y, memory, causal, key_mask)
        return self.backbone_norm(y)

    def __call__(
        self,
        inputs: jax.Array,
        input_mask: jax.Array,
        num_outputs: int,
        *,
        aligned: bool = False,
        targets: jax.Array | None = None,
        train: bool = False,
        key: jax.Array | None = None,
        return_traces: bool = False,
    ):
        """``targets`` ``[B, T_out]`` (class ids): the teacher-forced decoder's inputs; ignored without
        ``teacher_forcing``. Greedy decoding (teacher forcing, no ``targets``) reruns the decoder once per
        output step."""
        refuse_aligned("panm_transformer", aligned)
        inputs, input_mask = prepare_inputs(inputs, input_mask, num_outputs, self.input_size)
        batch = inputs.shape[0]
        base, options = decoding_options(self.config, batch, train, key)
        memory, _ = self.encoder(inputs, input_mask)  # [B, L, D]
        blank = self.blank_inputs(batch, num_outputs, memory.dtype)

        def decode(tokens, return_traces=False):
            y = blank if tokens is None else blank + self.tokens(tokens).astype(blank.dtype)
            z = self.decoder_states(y, memory, input_mask)
            return self.decoder(
                memory, input_mask, base, num_outputs, decoder_inputs=z, return_traces=return_traces, **options
            )

        tokens = decoder_tokens(self.config, self.output_size, targets, batch, num_outputs, decode)
        return decode(tokens, return_traces)


def _build(config: PANMTransformerConfig, input_size: int, output_size: int, rngs: nnx.Rngs) -> PANMTransformer:
    return PANMTransformer(config, input_size, output_size, rngs=rngs)
