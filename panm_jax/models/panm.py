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

The decoder (``decoder_class``) follows the config's ``variant``: none is the paper's
(``modules.panm.PANMDecoder``); ``Ours(...)`` this library's options
(``modules.panm_extensions``); ``AuthorsCode(...)`` the choices of the authors'
code (``modules.panm_authors``). ``VARIANTS`` names them. Flat options
(``PANMConfig.from_options``, what ``model_options`` and ``panm-jax train --set``
give) name a variant's options directly: ``distractors=16`` is
``variant=Ours(distractors=16)``. ``AUTHORS_CODE`` is the authors' code as a named
preset of those options.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax import checks
from panm_jax.errors import UserError
from panm_jax.models.registry import prepare_inputs, refuse_aligned
from panm_jax.modules.encoders import BiGRUEncoder, LSTMEncoder, TransformerEncoder
from panm_jax.modules.panm import DecoderConfig, PANMDecoder
from panm_jax.modules.panm_authors import AuthorsCode, AuthorsDecoder
from panm_jax.modules.panm_extensions import ExtendedDecoder, Ours
from panm_jax.modules.pytorch_init import pytorch_init
from panm_jax.options import declared, option

__all__ = [
    "AUTHORS_CODE",
    "ENCODER_NAMES",
    "PANM",
    "VARIANTS",
    "AuthorsCode",
    "Ours",
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


# The decoder variants by name: name -> (its options' config, its decoder). No variant: the paper's decoder.
VARIANTS: dict[str, tuple[type, type[PANMDecoder]]] = {
    Ours.name: (Ours, ExtendedDecoder),
    AuthorsCode.name: (AuthorsCode, AuthorsDecoder),
}
Variant = Ours | AuthorsCode

# The authors' public code (thaihungle/PANM) as far as its choices are options here: the flat options of
# ``PANMConfig.from_options`` (modules/panm_authors.py lists what each one is).
AUTHORS_CODE: Mapping[str, Any] = {
    "encoder": "bigru",
    "hidden": 128,
    "score": "scaled_dot",
    "address_bits": 8,
    "random_base_at_eval": True,
    "init": "pytorch",
    "eq3_addresses": "authors_view",
    "controller_attention": True,
    "mode2_dropout": 0.5,
    "attention_projections": True,
    "controller_start": "encoder_final",
    "controller_reads_mode2": False,
}


@dataclasses.dataclass(frozen=True)
class PANMConfig(DecoderConfig):
    """PANM's hyperparameters: the paper's decoder's (``modules.panm.DecoderConfig``), the encoder's, and
    a decoder ``variant`` (``None``: the paper's; ``Ours(...)`` or ``AuthorsCode(...)``, ``VARIANTS``).

    Checked when made (``UserError`` naming the field): each field by its own check, then the encoder and
    the variant against the options that depend on them.
    """

    encoder: str = option(
        "lstm",
        checks.one_of,
        sorted(ENCODER_NAMES),
        doc='the backbone writing M (§3.1: LSTM; "bigru": the authors\' code; "transformer(_rpe)")',
    )
    random_base_at_eval: bool = option(False, checks.boolean, doc="draw a_B at evaluation too (authors' code)")
    init: str = option(
        "flax",
        checks.one_of,
        ("flax", "pytorch"),
        doc='"flax" (LeCun normal, zero biases) or "pytorch": torch.nn\'s defaults (the authors\' code)',
    )
    encoder_layers: int = option(
        3, checks.positive_int, doc="Transformer encoders only: N_l layers (Csordás et al. 2021, SCAN: 3)"
    )
    encoder_heads: int = option(
        8, checks.positive_int, doc="Transformer encoders only: heads, a divisor of hidden (Csordás et al. 2021: 8)"
    )
    encoder_ffn_hidden: int | None = option(
        None,
        checks.optional_positive_int,
        doc="Transformer encoders only: FFN width; None: 2 hidden (Csordás: 2 D)",
    )
    # the decoder's variant: None (the paper's), Ours(...) or AuthorsCode(...) (models.panm.VARIANTS)
    variant: Variant | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.variant is not None and not isinstance(self.variant, tuple(c for c, _ in VARIANTS.values())):
            raise UserError(
                f"variant: expected None or one of {[c.__name__ for c, _ in VARIANTS.values()]}, got {self.variant!r}"
            )
        if not self.pointer_heads and self.variant is not None:
            # Without Mode 1 there is no pointer to distract or snap, and the authors' code's decoder reads
            # the Mode-1 values: pointer_heads = 0 is the paper's decoder (and Ours' controller_start="mean").
            changed = self.variant.pointer_options()
            if changed or isinstance(self.variant, AuthorsCode):
                raise UserError(
                    "pointer_heads: 0 (no Mode 1) is defined for the paper's decoder, without the options that "
                    f"act on the pointers or the authors' code's decoder; got variant {self.variant.name!r}"
                    + (f" with {', '.join(changed)}" if changed else "")
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

    @property
    def controller_start(self) -> str:
        """``h^c_0``: ``"sum"`` (Eq. 7), or the variant's (``"mean"``: ours; ``"encoder_final"``: the authors'
        code)."""
        return "sum" if self.variant is None else self.variant.controller_start

    @classmethod
    def variant_options(cls) -> dict[str, tuple[type, ...]]:
        """The flat options that belong to a variant: ``{name: the variant configs that have it}``."""
        found: dict[str, tuple[type, ...]] = {}
        for variant, _ in VARIANTS.values():
            for name in declared(variant):
                found[name] = (*found.get(name, ()), variant)
        return found

    @classmethod
    def from_options(cls, **options: Any) -> PANMConfig:
        """The config of flat ``options``: this config's fields, and any variant's options by name
        (``distractors=16``: ``variant=Ours(distractors=16)``), which select that variant. The value tells
        apart the variants that share an option's name (``controller_start="mean"``: ours,
        ``"encoder_final"``: the authors' code's); a variant's option at its default selects nothing, and
        the options of two variants are refused (they do not combine).

        The form of ``model_options`` in training configs and stored runs (``to_options``: the inverse).
        """
        own = {f.name for f in dataclasses.fields(cls)}
        shared = cls.variant_options()
        given = {k: v for k, v in options.items() if k in shared and k not in own}
        rest = {k: v for k, v in options.items() if k not in given}
        choosing = {k: v for k, v in given.items() if not all(_is_default(c, k, v) for c in shared[k])}
        if not choosing:
            return cls(**rest)
        if "variant" in options:
            raise UserError(f"variant: given with the options of a variant {sorted(choosing)}; give one or the other")
        candidates = [c for c, _ in VARIANTS.values()]
        for name, value in choosing.items():
            kept = [c for c in candidates if c in shared[name]]
            if not kept:
                raise UserError(
                    f"{name}: an option of the variant {[c.name for c in shared[name]]}, which does not combine "
                    f"with {[c.name for c in candidates]} (given {sorted(choosing)})"
                )
            accepting = [c for c in kept if _accepts(c, name, value)]
            if not accepting and len(kept) > 1:  # what each variant expects
                wants = [f"{declared(c)[name].allowed} ({c.name})" for c in kept]
                raise UserError(f"{name}: expected {' or '.join(wants)}, got {value!r}")
            candidates = accepting or kept  # a bad value of one variant's option: its check says so below
        return cls(**rest, variant=candidates[0](**choosing))

    def to_options(self) -> dict[str, Any]:
        """The flat options of this config that differ from the defaults (``from_options``'s inverse)."""
        options = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "variant" and getattr(self, f.name) != f.default
        }
        if self.variant is not None:
            options.update(
                {
                    f.name: getattr(self.variant, f.name)
                    for f in dataclasses.fields(self.variant)
                    if getattr(self.variant, f.name) != f.default
                }
            )
        return options


def _is_default(cls: type, name: str, value: Any) -> bool:
    default = declared(cls)[name].default
    return type(value) is type(default) and value == default


def _accepts(cls: type, name: str, value: Any) -> bool:
    try:
        cls(**{name: value})
    except UserError:
        return False
    return True


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


def decoder_class(config: PANMConfig) -> type[PANMDecoder]:
    """The paper's decoder, or that of ``config.variant`` by its name (``VARIANTS``)."""
    return PANMDecoder if config.variant is None else VARIANTS[config.variant.name][1]


def build_decoder(config: PANMConfig, output_size: int, rngs: nnx.Rngs, input_features: int = 0) -> PANMDecoder:
    """The PANM decoder (address bank, Pointer Units, controller, output) of ``config``, ``hidden`` wide;
    ``input_features``: the width of its decoding input ``z_t`` (0: none)."""
    return decoder_class(config)(config, output_size, variant=config.variant, input_features=input_features, rngs=rngs)


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
    return base, decoder_class(config).call_options(config.variant, train, key)


def _build(config: PANMConfig, input_size: int, output_size: int, rngs: nnx.Rngs) -> PANM:
    return PANM(config, input_size, output_size, rngs=rngs)
