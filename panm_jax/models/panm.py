"""PANM: Pointer-Augmented Neural Memory as a whole sequence model.

Le et al. 2024 (Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural Memory, TMLR):
an encoder writes the input into the memory
``M`` (one slot per input step, ``l(M) = l(X)``), then ``PANMDecoder`` decodes
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

``distractors`` (ours, off by default): in training, that many addresses from
outside each example's bank join the address attention, so the Pointer Units
must get every address bit right, not only the low bits that tell a short bank
apart (``modules/panm.py`` explains why and what was measured).
``snap_pointers`` (ours, "never" by default): feed the nearest binary address
back to the Pointer Units instead of the soft pointer of Eq. 3, at evaluation
only ("eval") or also in training with a straight-through gradient ("always").

Choices of the authors' public code, as options for measuring (off by default, not
in the paper): ``eq3_addresses``, ``controller_attention``, ``mode2_dropout`` and
``attention_projections`` (``modules/panm.py``), and ``init="pytorch"``, torch.nn's
default initialisation of every layer (``modules/pytorch_init.py``).
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
from panm_jax.modules.panm import PANMDecoder, check_decoder_options
from panm_jax.modules.pytorch_init import pytorch_init

__all__ = ["ENCODER_NAMES", "PANM", "PANMConfig", "build_decoder", "build_encoder", "decoding_options"]

SNAP_POINTERS = ("never", "eval", "always")
# How the parameters start: nnx's defaults (this library's), or torch.nn's (modules.pytorch_init).
INITS = ("flax", "pytorch")


@dataclasses.dataclass(frozen=True)
class PANMConfig:
    """PANM hyperparameters; defaults from Le et al. 2024, §3 and App. C.

    Checked when made (``UserError`` naming the field): the decoder's options by
    ``modules.panm.check_decoder_options`` (the check ``PANMDecoder`` runs), the
    encoder's and ``snap_pointers`` here.
    """

    hidden: int = 256  # D: encoder, Pointer Unit and Controller GRU width (App. C: 256)
    address_bits: int = 10  # b: 2^b addresses (§3: 10 bits)
    pointer_heads: int = 2  # H^a Mode-1 pointers, started at a_B and a_E (App. C)
    mode2_heads: int = 1  # H^c Mode-2 pointers (App. C: 1)
    mlp_hidden: int = 128  # hidden width of g^a, g^c, g^o
    encoder: str = "lstm"  # the backbone writing M (§3.1: LSTM; "bigru": the authors' code; "transformer(_rpe)")
    score: str = "cosine"  # Eq. 2/5 "cosine", or "scaled_dot" (authors' code)
    inverse_temperature: float = 5.0  # initial tau of the pointer attentions (learned)
    learn_temperature: bool = True  # False: tau held at inverse_temperature (1: Eq. 2/5 as printed)
    random_base_at_eval: bool = False  # draw a_B at evaluation too (authors' code)
    distractors: int = 0  # off-bank addresses added to Eq. 2 in training (ours; modules/panm.py)
    distractor_sampling: str = "uniform"  # "uniform" off the bank, or "neighbours": one bit away from it
    snap_pointers: str = "never"  # feed back the nearest address: "never", "eval" (only) or "always" (ours)
    remat: bool = False  # recompute each step in the backward pass (jax.checkpoint): less memory
    controller_start: str = "sum"  # h^c_0: "sum" of the slots (Eq. 7), their "mean" (ours), "encoder_final"
    eq3_addresses: str = "own"  # Eq. 3 averages the example's own bank, or "authors_view" (modules/panm.py)
    controller_attention: bool = False  # the authors' code: an additive attention over M feeds the Controller
    mode2_dropout: float = 0.0  # dropout on the Mode-2 weights in training (the authors' code: 0.5)
    attention_projections: bool = False  # the authors' code: W_q, W_k, W_v, W_o around Modes 1 and 2
    controller_reads_mode2: bool = True  # Eq. 7 feeds *p^c_t to the Controller; the authors' code: g^o only
    init: str = "flax"  # "flax" (LeCun normal, zero biases) or "pytorch": torch.nn's defaults (the authors' code)
    encoder_layers: int = 3  # Transformer encoders only: N_l layers (Csordás et al. 2021, SCAN: 3)
    encoder_heads: int = 8  # Transformer encoders only: heads, a divisor of hidden (Csordás et al. 2021: 8)
    encoder_ffn_hidden: int | None = None  # Transformer encoders only: FFN width; None: 2 hidden (Csordás: 2 D)

    def __post_init__(self):
        check_decoder_options(
            hidden=self.hidden,
            address_bits=self.address_bits,
            pointer_heads=self.pointer_heads,
            mode2_heads=self.mode2_heads,
            mlp_hidden=self.mlp_hidden,
            score=self.score,
            inverse_temperature=self.inverse_temperature,
            learn_temperature=self.learn_temperature,
            distractors=self.distractors,
            distractor_sampling=self.distractor_sampling,
            controller_start=self.controller_start,
            eq3_addresses=self.eq3_addresses,
            controller_attention=self.controller_attention,
            mode2_dropout=self.mode2_dropout,
            attention_projections=self.attention_projections,
            controller_reads_mode2=self.controller_reads_mode2,
        )
        checks.one_of("snap_pointers", self.snap_pointers, SNAP_POINTERS)
        checks.one_of("encoder", self.encoder, sorted(ENCODER_NAMES))
        checks.positive_int("encoder_layers", self.encoder_layers)
        checks.positive_int("encoder_heads", self.encoder_heads)
        if self.encoder_ffn_hidden is not None:
            checks.positive_int("encoder_ffn_hidden", self.encoder_ffn_hidden)
        checks.one_of("init", self.init, INITS)
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


def build_decoder(config: PANMConfig, output_size: int, rngs: nnx.Rngs, input_features: int = 0) -> PANMDecoder:
    """The PANM decoder (address bank, Pointer Units, controller, output) of ``config``, ``hidden`` wide;
    ``input_features``: the width of its decoding input ``z_t`` (0: none)."""
    return PANMDecoder(
        config.hidden,
        output_size,
        address_bits=config.address_bits,
        pointer_heads=config.pointer_heads,
        mode2_heads=config.mode2_heads,
        mlp_hidden=config.mlp_hidden,
        score=config.score,
        inverse_temperature=config.inverse_temperature,
        learn_temperature=config.learn_temperature,
        distractors=config.distractors,
        distractor_sampling=config.distractor_sampling,
        remat=config.remat,
        controller_start=config.controller_start,
        eq3_addresses=config.eq3_addresses,
        controller_attention=config.controller_attention,
        mode2_dropout=config.mode2_dropout,
        attention_projections=config.attention_projections,
        controller_reads_mode2=config.controller_reads_mode2,
        input_features=input_features,
        rngs=rngs,
    )


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
        start = encoder_final_state(final) if self.config.controller_start == "encoder_final" else None
        return self.decoder(
            memory, input_mask, base, num_outputs, return_traces=return_traces, encoder_final=start, **options
        )


def encoder_final_state(final) -> jax.Array:
    """The last hidden state ``[B, D]`` in a recurrent encoder's final state: the LSTM's ``h`` of its
    ``(h, c)``, the bidirectional GRU's forward direction of its ``(h_fwd, h_bwd)`` (what the authors'
    code hands its decoder: ``hidden[:1]`` of a one-layer bidirectional ``torch.nn.GRU``). Both put it
    first."""
    return final[0]


def decoding_options(config: PANMConfig, batch: int, train: bool, key) -> tuple[jax.Array, dict]:
    """The base addresses ``a_B [B]`` and the decoder's per-call options (distractors, dropout, snapping).

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
    # Distractors (training only) draw from their own stream, so the bases stay those of `key`.
    distractor_key = jax.random.fold_in(key, 1) if train and config.distractors else None
    dropout_key = jax.random.fold_in(key, 2) if train and config.mode2_dropout else None  # Mode-2 dropout's
    snap = config.snap_pointers == "always" or (config.snap_pointers == "eval" and not train)
    return base, dict(distractor_key=distractor_key, dropout_key=dropout_key, snap_pointers=snap)


def _build(config: PANMConfig, input_size: int, output_size: int, rngs: nnx.Rngs) -> PANM:
    return PANM(config, input_size, output_size, rngs=rngs)
