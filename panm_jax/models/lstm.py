"""The LSTM encoder-decoder baseline ("LSTM" of Le et al. 2024), behind the one interface.

The encoder LSTM reads the input (padding steps carry the state); the decoder
LSTM starts from the encoder's final state and runs ``num_outputs`` steps on a
zero input (no teacher forcing, docs/tasks.md), each hidden state projected to the
output classes. In the aligned mode (``aligned=True``: one output per input
step, as Dyck needs) the encoder's hidden state after each input step is
projected instead, and the decoder is not used.

Depth (option ``layers``, default 1): ``L`` stacked LSTMs in the encoder and in
the decoder, layer ``l + 1`` reading layer ``l``'s hidden state at the same
step, decoder layer ``l`` starting from encoder layer ``l``'s final state (the
stacking of Sutskever et al. 2014), the top layer projected to the classes.
These are the deep LSTM baselines of Grefenstette et al. 2015 (1, 2, 4 and 8
layers in their transduction experiments).

Le et al. 2024: Plug, Play, and Generalize: Length Extrapolation with
Pointer-Augmented Neural Memory, TMLR. Grefenstette, Hermann, Suleyman &
Blunsom 2015: Learning to Transduce with Unbounded Memory, NeurIPS.
Sutskever, Vinyals & Le 2014: Sequence to Sequence Learning with Neural
Networks, NeurIPS.
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
from panm_jax.options import check_options, option

__all__ = ["LSTMSeq2Seq", "LSTMSeq2SeqConfig"]


@dataclasses.dataclass(frozen=True)
class LSTMSeq2SeqConfig:
    """The LSTM baseline's options: the width of its encoder and decoder (Le et al. 2024, App. D.1) and
    their depth (Grefenstette et al. 2015's deep LSTMs; module docstring).

    Checked when built: ``hidden`` and ``layers`` must be positive ints (``ValueError`` naming the option).
    """

    hidden: int = option(512, checks.positive_int, doc="Le et al. 2024, App. D.1: 512-dimensional baselines")
    layers: int = option(1, checks.positive_int, doc="stacked LSTMs in the encoder and in the decoder")

    def __post_init__(self):
        check_options(self)


class LSTMSeq2Seq(nnx.Module):
    """The LSTM encoder-decoder baseline (``build_model("lstm", ...)``), behind the one model interface.

    The encoder LSTM reads ``inputs [B, T_in, D_in]`` (padding steps carry its
    state); the decoder LSTM starts from the encoder's final state and runs
    ``num_outputs`` steps on a zero input, each hidden state projected to
    ``logits [B, T_out, K]``. With ``aligned=True`` (Dyck) the encoder's state after
    each input step is projected instead, and the decoder is unused. It has no
    training-only behaviour, so ``train`` and ``key`` are accepted and ignored.
    ``return_traces=True`` adds a dict of the top layer's hidden states: ``{"decoder_hidden":
    [B, T_out, D]}``, or aligned ``{"encoder_hidden": [B, T_in, D]}``.

    With ``layers = L > 1`` the first layers are ``encoder`` and ``decoder`` as with one layer, and
    layers ``2..L`` are ``upper_encoders`` and ``upper_decoders`` (empty with one layer, so a one-layer
    model has the same parameters, drawn in the same order, as before the option existed).
    """

    def __init__(self, config: LSTMSeq2SeqConfig, input_size: int, output_size: int, *, rngs: nnx.Rngs):
        self.config = config
        self.input_size = input_size
        D, upper = config.hidden, range(config.layers - 1)
        self.encoder = LSTMEncoder(input_size, D, rngs=rngs)
        self.upper_encoders = nnx.List([LSTMEncoder(D, D, rngs=rngs) for _ in upper])  # layers 2..L
        self.decoder = LSTMCell(1, D, rngs=rngs)  # its input is always 0: only the bias acts
        self.upper_decoders = nnx.List([LSTMCell(D, D, rngs=rngs) for _ in upper])  # layers 2..L
        self.output = nnx.Linear(D, output_size, rngs=rngs)

    def encode(self, inputs, input_mask):
        """``(hs [B, T_in, D], finals)``: the top layer's state after each input step (zeros at padded
        steps) and every layer's final state, bottom first."""
        hs, state = self.encoder(inputs, input_mask)
        finals = [state]
        for encoder in self.upper_encoders:
            hs, state = encoder(hs, input_mask)
            finals.append(state)
        return hs, tuple(finals)

    def __call__(
        self, inputs, input_mask, num_outputs: int, *, aligned=False, train=False, key=None, return_traces=False
    ):
        inputs, input_mask = prepare_inputs(inputs, input_mask, num_outputs, self.input_size, aligned=aligned)
        if aligned:  # one output per input step: the encoder's state after step t, projected
            hs, _ = self.encode(inputs, input_mask)  # [B, T_in, D], zeros at padded steps
            logits = self.output(hs)
            return (logits, {"encoder_hidden": hs}) if return_traces else logits
        _, states = self.encode(inputs, input_mask)
        gx = self.decoder.project_inputs(jnp.zeros((1,), inputs.dtype))  # [4D], the same every step

        def step(states, _):  # one decoder step through the layers, bottom first
            state, h = self.decoder.step_projected(states[0], gx)
            new = [state]
            for cell, state in zip(self.upper_decoders, states[1:], strict=True):
                state, h = cell(state, h)
                new.append(state)
            return tuple(new), h

        _, hs = scan(step, states, None, length=num_outputs)
        logits = self.output(jnp.swapaxes(hs, 0, 1))  # [B, T_out, K]
        if return_traces:
            return logits, {"decoder_hidden": jnp.swapaxes(hs, 0, 1)}
        return logits


def _build(config: LSTMSeq2SeqConfig, input_size: int, output_size: int, rngs: nnx.Rngs) -> LSTMSeq2Seq:
    return LSTMSeq2Seq(config, input_size, output_size, rngs=rngs)
