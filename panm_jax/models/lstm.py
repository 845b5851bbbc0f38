"""The LSTM encoder-decoder baseline ("LSTM" of Le et al. 2024), behind the one interface.

The encoder LSTM reads the input (padding steps carry the state); the decoder
LSTM starts from the encoder's final state and runs ``num_outputs`` steps on a
zero input (no teacher forcing, docs/tasks.md), each hidden state projected to the
output classes. In the aligned mode (``aligned=True``: one output per input
step, as Dyck needs) the encoder's hidden state after each input step is
projected instead, and the decoder is not used.

Le et al. 2024: Plug, Play, and Generalize: Length Extrapolation with
Pointer-Augmented Neural Memory, TMLR.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
from flax import nnx

from panm_jax import checks
from panm_jax.kernels.scan import scan
from panm_jax.models.registry import prepare_inputs
from panm_jax.modules.controllers import LSTMCell
from panm_jax.modules.encoders import LSTMEncoder

__all__ = ["LSTMSeq2Seq", "LSTMSeq2SeqConfig"]


@dataclasses.dataclass(frozen=True)
class LSTMSeq2SeqConfig:
    """The LSTM baseline's one option: the width of its encoder and decoder (Le et al. 2024, App. D.1).

    Checked when built: ``hidden`` must be a positive int (``ValueError`` naming it).
    """

    hidden: int = 512  # Le et al. 2024, App. D.1: 512-dimensional baselines

    def __post_init__(self):
        checks.positive_int("hidden", self.hidden)


class LSTMSeq2Seq(nnx.Module):
    """The LSTM encoder-decoder baseline (``build_model("lstm", ...)``), behind the one model interface.

    The encoder LSTM reads ``inputs [B, T_in, D_in]`` (padding steps carry its
    state); the decoder LSTM starts from the encoder's final state and runs
    ``num_outputs`` steps on a zero input, each hidden state projected to
    ``logits [B, T_out, K]``. With ``aligned=True`` (Dyck) the encoder's state after
    each input step is projected instead, and the decoder is unused. It has no
    training-only behaviour, so ``train`` and ``key`` are accepted and ignored.
    ``return_traces=True`` adds a dict of hidden states: ``{"decoder_hidden":
    [B, T_out, D]}``, or aligned ``{"encoder_hidden": [B, T_in, D]}``.
    """

    def __init__(self, config: LSTMSeq2SeqConfig, input_size: int, output_size: int, *, rngs: nnx.Rngs):
        self.config = config
        self.input_size = input_size
        self.encoder = LSTMEncoder(input_size, config.hidden, rngs=rngs)
        self.decoder = LSTMCell(1, config.hidden, rngs=rngs)  # its input is always 0: only the bias acts
        self.output = nnx.Linear(config.hidden, output_size, rngs=rngs)

    def __call__(
        self, inputs, input_mask, num_outputs: int, *, aligned=False, train=False, key=None, return_traces=False
    ):
        inputs, input_mask = prepare_inputs(inputs, input_mask, num_outputs, self.input_size, aligned=aligned)
        if aligned:  # one output per input step: the encoder's state after step t, projected
            hs, _ = self.encoder(inputs, input_mask)  # [B, T_in, D], zeros at padded steps
            logits = self.output(hs)
            return (logits, {"encoder_hidden": hs}) if return_traces else logits
        _, state = self.encoder(inputs, input_mask)
        gx = self.decoder.project_inputs(jnp.zeros((1,), inputs.dtype))  # [4D], the same every step
        _, hs = scan(lambda c, _: self.decoder.step_projected(c, gx), state, None, length=num_outputs)
        logits = self.output(jnp.swapaxes(hs, 0, 1))  # [B, T_out, K]
        if return_traces:
            return logits, {"decoder_hidden": jnp.swapaxes(hs, 0, 1)}
        return logits


def _build(config: LSTMSeq2SeqConfig, input_size: int, output_size: int, rngs: nnx.Rngs) -> LSTMSeq2Seq:
    return LSTMSeq2Seq(config, input_size, output_size, rngs=rngs)
