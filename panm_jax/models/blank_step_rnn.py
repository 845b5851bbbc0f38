"""One recurrent network that reads the input, then answers on blank steps: ``rnn`` and ``single_lstm``.

The RNN and LSTM baselines of Delétang et al. 2023, *Neural Networks and the
Chomsky Hierarchy* (ICLR 2023), §4 and their released models: ONE recurrent core
runs over ``T = T_in + T_out`` steps, the input tokens first and then ``T_out``
blank steps, and each output is a linear layer on the rectified core output at
its blank step. There is no encoder and no decoder (``lstm`` in this package is
an encoder-decoder, Le et al. 2024's baseline). Per step ``t``::

    x~_t   = [x_t; 0] for t < T_in,  [0; 1] on the T_out blank steps    the blank token
    s_t, h_t = Core(s_{t-1}, x~_t)                                     Elman (rnn) or LSTM (single_lstm)
    logits_t = W_y relu(h_t) + b                                        at the blank steps: [B, T_out, K]

The blank steps read a token of their own, one extra input feature set to 1
(their benchmark appends an "empty" token of the input vocabulary plus one), so
the blank input is learned rather than zero.

Cores: ``rnn`` is Elman's, ``h' = relu(W_x x + b_x + W_h h + b_h)``
(``VanillaRNNCell``, Haiku's ``VanillaRNN`` as the authors use it: ReLU; the option
``activation="tanh"`` gives Elman's original tanh); ``single_lstm``
is an LSTM (``LSTMCell``) whose forget-gate bias starts at 1 (Haiku's ``LSTM``
adds a constant 1 to that gate; a learned bias starting at 1 trains the same
way). Width ``hidden = 256`` (Delétang et al. 2023's cores). Initialisation is
Flax's default (our choice); ``init="haiku"`` draws every layer as dm-haiku's defaults do, as
their released code builds these models (``modules.haiku_init``: for the LSTM one fan-in over
``[x; h]``, so its input weights start about ``sqrt((D_in + 1 + D) / (D_in + 1))`` times smaller
than Flax's).

Masks: an input padding step (``input_mask`` false) carries the state unchanged
and its output is zero, so padding appended to an input, or garbage in it,
changes no logit; the blank steps are always real. Appended output steps change
no earlier output either (the core is causal). The model reads the whole input
before its first output and has no aligned mode (``AlignedModeError``).
``return_traces=True`` adds ``{"hidden": [B, T_in + T_out, D]}``, the core output
of every step (zeros at padding).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax import checks
from panm_jax.kernels.scan import scan, select
from panm_jax.models.memory_models import ACTIVATIONS, VanillaRNNCell
from panm_jax.models.registry import prepare_inputs, refuse_aligned
from panm_jax.modules.controllers import LSTMCell
from panm_jax.modules.haiku_init import haiku_init
from panm_jax.options import check_options, option

__all__ = ["BlankStepRNN", "RNNConfig", "SingleLSTMConfig"]

INITS = ("flax", "haiku")  # the initialisations: this library's, or dm-haiku's (modules.haiku_init)
FORGET_BIAS = 1.0  # the LSTM's initial forget-gate bias (Haiku's LSTM adds 1 to that gate)


@dataclasses.dataclass(frozen=True)
class SingleLSTMConfig:
    """The single LSTM's one option (Delétang et al. 2023: an LSTM core of 256 units)."""

    hidden: int = option(256, checks.positive_int, doc="D, the core's width (Delétang et al. 2023: 256)")
    init: str = option(
        "flax",
        checks.one_of,
        INITS,
        doc='"flax" (LeCun normal, zero biases) or "haiku": dm-haiku\'s defaults (Delétang et al.\'s code)',
    )

    def __post_init__(self):
        check_options(self)


@dataclasses.dataclass(frozen=True)
class RNNConfig(SingleLSTMConfig):
    """The plain RNN's options (Delétang et al. 2023: an Elman core of 256 units, Haiku's ReLU)."""

    activation: str = option(
        "relu", checks.one_of, ACTIVATIONS, doc="relu (Haiku's VanillaRNN, Delétang et al. 2023) or tanh (Elman's)"
    )

    def __post_init__(self):
        super().__post_init__()


class BlankStepRNN(nnx.Module):
    """One recurrent core over the input and then ``T_out`` blank steps (the module docstring).

    Args:
      cell: ``"rnn"`` (Elman) or ``"lstm"``.
      activation: the Elman core's, ``"relu"`` (Haiku's) or ``"tanh"`` (``cell="rnn"`` only).
      hidden: ``D``, the core's width.
      input_size: ``D_in``; the core reads ``D_in + 1`` features (the blank token's).
      output_size: ``K`` classes.
      init: ``"flax"`` (the layers' own initialisers) or ``"haiku"`` (``modules.haiku_init``).
      rngs: parameter initialisation.
    """

    def __init__(
        self,
        cell: str,
        hidden: int,
        input_size: int,
        output_size: int,
        *,
        activation: str = "relu",
        init: str = "flax",
        rngs: nnx.Rngs,
    ):
        if cell not in ("rnn", "lstm"):
            raise ValueError(f"cell: expected 'rnn' or 'lstm', got {cell!r}")
        self.name = "rnn" if cell == "rnn" else "single_lstm"
        self.input_size = input_size
        self.hidden = hidden
        checks.one_of("init", init, INITS)
        if cell == "rnn":
            self.core = VanillaRNNCell(input_size + 1, hidden, activation=activation, rngs=rngs)
        else:
            self.core = LSTMCell(input_size + 1, hidden, rngs=rngs)
        self.readout = nnx.Linear(hidden, output_size, rngs=rngs)  # W_y, b
        if init == "haiku":
            haiku_init(self, rngs.params())
        if cell == "lstm":
            bias = self.core.hidden_proj.bias  # gates laid out i, f, g, o
            bias[...] = bias[...].at[hidden : 2 * hidden].set(FORGET_BIAS)

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
        """``(inputs [B, T_in, D_in], input_mask [B, T_in], T_out) -> logits [B, T_out, K]``.

        ``train`` and ``key`` are accepted for the common interface (nothing here is random).
        """
        del train, key
        refuse_aligned(self.name, aligned)
        inputs, input_mask = prepare_inputs(inputs, input_mask, num_outputs, self.input_size)
        batch, t_in, _ = inputs.shape
        dtype = inputs.dtype
        read = jnp.concatenate([inputs, jnp.zeros((batch, t_in, 1), dtype)], axis=-1)  # [x_t; 0]
        blank = jnp.zeros((batch, num_outputs, self.input_size + 1), dtype).at[..., -1].set(1)  # [0; 1]
        xs = jnp.concatenate([read, blank], axis=1)  # [B, T, D_in + 1]
        steps = jnp.concatenate([input_mask, jnp.ones((batch, num_outputs), bool)], axis=1)  # [B, T]

        def body(state, step):  # one example, one step
            x_t, keep = step
            new_state, h = self.core(state, x_t)
            return select(keep, (new_state, h), (state, jnp.zeros_like(h)))

        def run(x, mask):  # one example: x [T, D_in + 1], mask [T] -> h [T, D]
            _, hs = scan(body, self.core.init_carry((), dtype), (x, mask))
            return hs

        hs = jax.vmap(run)(xs, steps)  # [B, T, D]
        logits = self.readout(jax.nn.relu(hs[:, t_in:]))
        return (logits, {"hidden": hs}) if return_traces else logits


def _build_rnn(config: RNNConfig, input_size: int, output_size: int, rngs: nnx.Rngs) -> BlankStepRNN:
    return BlankStepRNN(
        "rnn", config.hidden, input_size, output_size, activation=config.activation, init=config.init, rngs=rngs
    )


def _build_single_lstm(config: SingleLSTMConfig, input_size: int, output_size: int, rngs: nnx.Rngs) -> BlankStepRNN:
    return BlankStepRNN("lstm", config.hidden, input_size, output_size, init=config.init, rngs=rngs)
