"""PANM: Pointer-Augmented Neural Memory as a whole sequence model.

Le et al. 2024 (Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural Memory, TMLR):
an encoder writes the input into the memory
``M`` (one slot per input step, ``l(M) = l(X)``), then a PANM decoder decodes
with pointers (§2.3, Algorithm 1). The encoder is a constructor argument (PANM
as a plug-in, Fig. 4); the default is the LSTM encoder of §3.1.

``encoder="transformer"`` / ``"transformer_rpe"``: a pre-LN Transformer encoder
(``modules.encoders.TransformerEncoder``, sinusoidal or Transformer-XL relative
positions) writes ``M`` (Le et al. 2024, "Plug, Play, and Generalize: Length
Extrapolation with Pointer-Augmented Neural Memory", §3.3 and App. D.3: the
Transformer of Csordás et al. 2021 as the Encoder). Its width is ``hidden``
(``h^c_0 = sum_i M[i]`` ties the memory to the Controller's width);
``encoder_layers``, ``encoder_heads`` and ``encoder_ffn_hidden`` size it, with
defaults from Csordás et al. 2021's SCAN Transformer (3 layers, 8 heads, FFN
``2 D``). The LSTM and BiGRU encoders ignore these three.

Base address (Algorithm 1 l. 3, App. B): with ``train=True`` each example draws
``a_B ~ U{0, ..., 2^b - 1}`` from ``key``; at evaluation ``a_B = 0`` unless the
config sets ``random_base_at_eval`` (what the authors' code does).

The decoder (``decoder_class``): the paper's (``modules.panm.PANMDecoder``) while
every option of the variants is at its default, else the variant its options
need: this library's options (``modules.panm_extensions``) or the choices of the
authors' code (``modules.panm_authors``), which include the former.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax import checks
from panm_jax.errors import UserError
from panm_jax.models.registry import prepare_inputs, refuse_aligned
from panm_jax.modules.encoders import BiGRUEncoder, LSTMEncoder, TransformerEncoder
from panm_jax.modules.panm import PANMDecoder, option
from panm_jax.modules.panm_authors import AuthorsConfig, AuthorsDecoder
from panm_jax.modules.panm_extensions import ExtendedDecoder, ExtensionsConfig
from panm_jax.modules.pytorch_init import pytorch_init

__all__ = [
    "ENCODER_NAMES",
    "PANM",
    "PANMConfig",
    "build_decoder",
    "build_encoder",
    "decoder_class",
    "decoding_options",
]

# Backbones that can write PANM's memory: name -> (input_size, hidden, rngs) -> module
# whose call is (inputs [B, T, I], mask [B, T]) -> (memory [B, T, D], final state).
ENCODERS = {
    "lstm": lambda input_size, hidden, rngs, remat=False: LSTMEncoder(input_size, hidden, remat=remat, rngs=rngs),
    # The authors' public code: a bidirectional GRU, directions summed.
    "bigru": lambda input_size, hidden, rngs, remat=False: BiGRUEncoder(input_size, hidden, remat=remat, rngs=rngs),
}
# The Transformer encoders (§3.3, App. D.3; sized by the config's encoder_* fields, see
# build_encoder) and whether each uses relative positions.
TRANSFORMER_ENCODERS = {"transformer": False, "transformer_rpe": True}
ENCODER_NAMES = (*ENCODERS, *TRANSFORMER_ENCODERS)


def _optional_positive_int(name: str, value) -> None:
    if value is not None:
        checks.positive_int(name, value)


@dataclasses.dataclass(frozen=True)
class PANMConfig(AuthorsConfig):
    """PANM's hyperparameters: the decoder's (``modules.panm.DecoderConfig``, with the options of
    ``modules.panm_extensions`` and ``modules.panm_authors``) and the encoder's.

    Checked when made (``UserError`` naming the field): each field by its own check, then the encoder
    against the options that depend on it.
    """

    # the backbone writing M (§3.1: LSTM; "bigru": the authors' code; "transformer(_rpe)")
    encoder: str = option("lstm", checks.one_of, sorted(ENCODER_NAMES))
    random_base_at_eval: bool = False  # draw a_B at evaluation too (authors' code)
    # "flax" (LeCun normal, zero biases) or "pytorch": torch.nn's defaults (the authors' code)
    init: str = option("flax", checks.one_of, ("flax", "pytorch"))
    # Transformer encoders only: N_l layers (Csordás et al. 2021, SCAN: 3)
    encoder_layers: int = option(3, checks.positive_int)
    # Transformer encoders only: heads, a divisor of hidden (Csordás et al. 2021: 8)
    encoder_heads: int = option(8, checks.positive_int)
    # Transformer encoders only: FFN width; None: 2 hidden (Csordás: 2 D)
    encoder_ffn_hidden: int | None = option(None, _optional_positive_int)

    def __post_init__(self):
        super().__post_init__()
        if not self.pointer_heads:
            # Without Mode 1 there is no pointer to distract or snap, and the authors' code's decoder reads
            # the Mode-1 values: pointer_heads = 0 is the paper's decoder (and controller_start="mean").
            changed = [
                f"{f.name} = {getattr(self, f.name)!r}"
                for cls in (ExtensionsConfig, AuthorsConfig)
                for f in dataclasses.fields(cls)
                if f.name in cls.__annotations__ and f.name != "controller_start" and getattr(self, f.name) != f.default
            ]
            if self.controller_start == "encoder_final":
                changed.append("controller_start = 'encoder_final'")
            if changed:
                raise UserError(
                    "pointer_heads: 0 (no Mode 1) is defined for the paper's decoder, without the options that "
                    f"act on the pointers or the authors' code's decoder; got {', '.join(changed)}"
                )
        if self.init == "pytorch" and self.encoder in TRANSFORMER_ENCODERS:
            raise UserError(
                f"init: 'pytorch' is defined for the recurrent encoders {sorted(ENCODERS)}, "
                f"got encoder = {self.encoder!r}"
            )
        if self.controller_start == "encoder_final" and self.encoder in TRANSFORMER_ENCODERS:
            raise UserError(
                f"controller_start: 'encoder_final' takes the last hidden state of a recurrent encoder "
                f"{sorted(ENCODERS)}, got encoder = {self.encoder!r}"
            )
        if self.encoder in TRANSFORMER_ENCODERS and self.hidden % self.encoder_heads:
            raise UserError(
                f"encoder_heads: expected a divisor of hidden = {self.hidden} (the Transformer encoder's width), "
                f"got {self.encoder_heads}"
            )


def build_encoder(config: PANMConfig, input_size: int, rngs: nnx.Rngs) -> nnx.Module:
    """The encoder ``config.encoder`` of width ``config.hidden`` (Transformer ones sized by ``encoder_*``)."""
    if config.encoder in TRANSFORMER_ENCODERS:
        ffn = 2 * config.hidden if config.encoder_ffn_hidden is None else config.encoder_ffn_hidden
        return TransformerEncoder(
            input_size,
            config.hidden,
            num_layers=config.encoder_layers,
            num_heads=config.encoder_heads,
            ffn_hidden=ffn,
            relative=TRANSFORMER_ENCODERS[config.encoder],
            rngs=rngs,
        )
    return ENCODERS[config.encoder](input_size, config.hidden, rngs, config.remat)


def _changed(config: PANMConfig, cls: type) -> bool:
    # Whether any option that cls declares itself (not its bases) differs from its default.
    return any(getattr(config, f.name) != f.default for f in dataclasses.fields(cls) if f.name in cls.__annotations__)


def decoder_class(config: PANMConfig) -> type[PANMDecoder]:
    """The paper's decoder, or the variant ``config``'s options need (the module docstring)."""
    if config.controller_start == "encoder_final" or _changed(config, AuthorsConfig):
        return AuthorsDecoder
    if _changed(config, ExtensionsConfig):
        return ExtendedDecoder
    return PANMDecoder


def build_decoder(config: PANMConfig, output_size: int, rngs: nnx.Rngs, input_features: int = 0) -> PANMDecoder:
    """The PANM decoder (address bank, Pointer Units, controller, output) of ``config``, ``hidden`` wide;
    ``input_features``: the width of its decoding input ``z_t`` (0: none)."""
    return decoder_class(config)(config, output_size, input_features=input_features, rngs=rngs)


class PANM(nnx.Module):
    """Encoder + PANM decoder, behind the one model interface (``models.registry``)."""

    def __init__(self, config: PANMConfig, input_size: int, output_size: int, *, rngs: nnx.Rngs, encoder=None):
        self.config = config
        self.input_size = input_size
        self.encoder = encoder if encoder is not None else build_encoder(config, input_size, rngs)
        self.decoder = build_decoder(config, output_size, rngs)
        if config.init == "pytorch":  # torch.nn's default initialisation of every layer (the authors' code)
            pytorch_init(self, rngs.params())

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
        refuse_aligned("panm", aligned)
        inputs, input_mask = prepare_inputs(inputs, input_mask, num_outputs, self.input_size)
        base, options = decoding_options(self.config, inputs.shape[0], train, key)
        memory, final = self.encoder(inputs, input_mask)
        if self.config.controller_start == "encoder_final":
            options["encoder_final"] = encoder_final_state(final)
        return self.decoder(memory, input_mask, base, num_outputs, return_traces=return_traces, **options)


def encoder_final_state(final) -> jax.Array:
    """The last hidden state ``[B, D]`` in a recurrent encoder's final state: the LSTM's ``h`` of its
    ``(h, c)``, the bidirectional GRU's forward direction of its ``(h_fwd, h_bwd)`` (what the authors'
    code hands its decoder: ``hidden[:1]`` of a one-layer bidirectional ``torch.nn.GRU``). Both put it
    first."""
    return final[0]


def decoding_options(config: PANMConfig, batch: int, train: bool, key) -> tuple[jax.Array, dict]:
    """The base addresses ``a_B [B]`` and the decoder's per-call options (``call_options`` of
    ``decoder_class(config)``: distractors, dropout, snapping).

    ``a_B ~ U{0, ..., 2^b - 1}`` from ``key`` in training (or with
    ``random_base_at_eval``), else 0 (Algorithm 1 l. 3).
    """
    random_base = train or config.random_base_at_eval
    if random_base and key is None:
        raise UserError(
            "key: expected a PRNG key to draw the base addresses (train=True or random_base_at_eval), got None"
        )
    if random_base:
        base = jax.random.randint(key, (batch,), 0, 2**config.address_bits, dtype=jnp.int32)
    else:
        base = jnp.zeros((batch,), jnp.int32)
    return base, decoder_class(config).call_options(config, train, key)


def _build(config: PANMConfig, input_size: int, output_size: int, rngs: nnx.Rngs) -> PANM:
    return PANM(config, input_size, output_size, rngs=rngs)
