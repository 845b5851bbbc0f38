"""Controller + external memory models: NTM, DNC, Stack-, Queue- and DeQue-LSTM, Stack-RNN, Tape-RNN.

One architecture, seven memories, behind the one model interface
(``models.registry``). Per step ``t`` of ONE ``scan`` over the whole sequence of
``T = T_in + T_out`` steps (docs/tasks.md: read the input, then emit the outputs on
blank steps whose input is zero, no teacher forcing):

    x_t     = inputs[t] for t < T_in, 0 on the T_out blank steps
    c_t, h_t = Controller(c_{t-1}, [x_t; r_{t-1}])   the input joined with the previous reads
    xi_t    = W_xi h_t + b                             memory module: the raw interface
    S_t, r_t = kernel.step(S_{t-1}, controls(xi_t))    NTM / DNC / Stack / Queue / DeQue / Stack-RNN / Tape
    y_t     = W_y h_t + W_r r_t                        Reina Campo 2022 "Output Vector" (Stack/Tape-RNN: W_y relu(h_t))
    logits  = y_t at the T_out blank steps             [B, T_out, K]

Sources: Reina Campo 2022 (MPSoC-NTM documentation, "Turing Machine" chapter,
restating Graves et al. 2014 and 2016: NTM and DNC with feed-forward, LSTM
and Transformer controllers; the interface ``xi_t = W_xi h_t``; the output
``y_t = W_y h_t + sum_i W_r^i r_t^i``, written here as one ``W_r`` over the
concatenated reads, the same thing); Graves, Wayne & Danihelka 2014 (Neural
Turing Machines, §3: the NTM's reads, writes and addressing, and the ranges of
its addressing controls); Back et al. 2018 (MemoReader: Large-Scale
Reading Comprehension through Neural Memory Controller, EMNLP), supplementary §1
(the DNC interface vector); Grefenstette et al. 2015 (Learning to Transduce with
Unbounded Memory, NeurIPS; the Stack/Queue/DeQue-LSTM: "the controller's input is the input concatenated with the
previous read; its
output is projected to push, pop, value and output"; the pop bias starts at -1).
For the Stack/Queue/DeQue models the output therefore defaults to ``y_t = W_y h_t``
(the read reaches the output through the next step's controller input);
``read_to_output=True`` adds Reina Campo 2022's ``W_r r_t`` term.

Aligned mode (``aligned=True``, a task with ``output_mode = "aligned"`` such as
Dyck): the scan runs over the ``T_in`` input steps alone and ``y_t`` of every
input step is the output, so output ``t`` depends on inputs ``0..t`` only.

Masks: on an input padding step (``input_mask == 0``) the controller carry, the
memory state and the previous read are carried unchanged (the memory kernel's own
``step(state, controls, mask)`` keeps its state; the body keeps the rest). The
``T_out`` output steps are always real. Appending padding to an example's input
therefore changes none of its logits (and neither does garbage in its padding
rows).

Batch: the one-example recurrence (controller, memory module with an empty batch
shape, kernel) runs under ``jax.vmap`` over the batch, each example with its own
``[T]`` mask, as ``LSTMEncoder`` does; controllers and memory modules accept any
leading axes, so nothing in them knows about the batch.

Stack capacity ``C = T_in + T_out``: every step pushes a row (the kernel's
contract), so one row per step of the whole sequence.

Traces (``return_traces=True``): the memory module's per-step trace stacked over
ALL ``T = T_in + T_out`` steps, shapes ``[B, T, ...]`` (the input steps first, the
output steps last; a masked step's trace is zeros):

* ``ntm``: ``NTMTrace(read_weights [B, T, R, N], write_weights [B, T, H, N])``;
* ``dnc``: ``DNCTrace(read_weights [B, T, R, N], write_weights [B, T, H, N],
  usage [B, T, N], read_modes [B, T, R, 2H + 1])``;
* ``stack_lstm`` / ``queue_lstm``: ``StackTrace(strengths [B, T, C], push [B, T, 1],
  pop [B, T, 1])``; ``deque_lstm``: ``strengths [B, T, 2C]``, ``push``/``pop``
  ``[B, T, 2]`` (top, bottom).
* ``stack_rnn``: ``StackRNNTrace(stack [B, T, S, W], actions [B, T, 3])`` (push, pop, no-op);
* ``tape_rnn``: ``TapeRNNTrace(tape [B, T, S, W], actions [B, T, 5])`` (write-stay,
  write-left, write-right, jump-left, jump-right).

Defaults and their sources (our choices are marked as such):

* controller ``"lstm"``, ``hidden = D = 256``: Le et al. 2024 (Plug, Play, and Generalize: Length Extrapolation with
  Pointer-Augmented Neural Memory, TMLR),
  App. D.1 ran NTM and DNC from public code "with default controller's hidden state
  of 256 dimensions and 128-slot external memory"; the same width for the stack
  models (our choice: Grefenstette et al. 2015's sizes were not available to us).
* NTM: ``N = 128`` (Le et al. 2024), ``W = 20``, one read and one write head, shift
  width ``S = 3`` (shifts -1, 0, +1): Graves et al. 2014's copy configuration
  (128 x 20 memory, one head each, ±1 shifts).
* DNC: ``N = 128`` (Le et al. 2024), ``W = 20`` (as the NTM, so the two compare at one
  memory size; our choice), ``R = 4`` read heads (DeepMind ``dnc``'s default
  ``num_read_heads``), ``H = 1`` write head (``num_writes``; Graves et al. 2016's
  DNC has one, DeepMind's ``dnc`` allows several); content reads over ``M_t``
  (``read_previous_memory=False``, Graves et al. 2016); the usage differentiable in
  the previous write weights (``stop_usage_write_gradient=False``; DeepMind's
  ``dnc`` stops that gradient, the papers are silent).
* Stack/Queue/DeQue: value width ``W = 64`` (our choice), pop bias -1 (Grefenstette et al. 2015).
* Stack-RNN and Tape-RNN (Delétang et al. 2023, "Neural Networks and the Chomsky
  Hierarchy", ICLR 2023, the baselines of its benchmark; the sizes are those of the
  authors' released code): controller ``"rnn"``, an Elman cell
  (``VanillaRNNCell``, their inner core, Haiku's ``VanillaRNN``: ``relu``, or Elman's ``tanh``
  with ``activation="tanh"``; every other kind is accepted too),
  ``hidden = 256``, cell width ``W = 8``. The output layer reads ``relu(h_t)``
  (``relu_output=True``: their readout is a linear layer on the rectified core
  output; the read reaches it through the next step's controller input,
  ``read_to_output=False``). Output steps get zero inputs, as every model here
  (their benchmark appends an "empty" token instead; the interface of this
  package has no such token).

  - Stack-RNN (Joulin & Mikolov 2015, "Inferring Algorithmic Patterns with
    Stack-Augmented Recurrent Nets"): ``S = 30`` cells, ``k = 1`` top cell
    fed back (``read_cells``; Joulin & Mikolov's ``s^k``); actions and pushed
    value one linear layer of ``h_t`` (softmax, sigmoid: the kernel's, Joulin &
    Mikolov's; Delétang et al.'s released code pushes the linear map itself,
    unsquashed: ``push="linear"``).
    The stack is fixed-size (not ``T_in + T_out`` as the Stack-LSTM's): a
    push past the bottom drops the bottom cell, so it keeps the last ``S``
    pushed values only, and a task whose test inputs are longer (the Chomsky range
    evaluation's lengths up to 500) needs ``stack_size`` raised to their length.
  - Tape-RNN: ``S = 40`` circular cells (the tape size of their released
    example), five actions from one linear layer, the written value from an
    MLP with hidden layers ``value_layers = (64, 64)`` (ReLU; the kernel's
    tanh on its output, where Delétang et al.'s code writes the MLP's linear
    output: ``write="linear"``), and the jump length ``L`` of each example its
    number of real input steps (the sum of its ``input_mask``; padding does
    not count), as Delétang et al. jump by the input length
    (``jump_to_input_length=False``: ``L = 1``).
* Transformer controller: ``controller_layers = 1``, ``controller_heads = 4``,
  ``max_steps = 256`` cache steps (enough for the algorithmic tasks' longest test,
  ``T = 83 + 81 = 164``; raise it for longer sequences; our choices).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax import checks
from panm_jax.checks import did_you_mean, one_of, positive_int
from panm_jax.errors import UserError
from panm_jax.kernels.scan import scan, select
from panm_jax.kernels.stack_rnn import PUSH_ACTIVATIONS
from panm_jax.kernels.tape_rnn import WRITE_ACTIVATIONS
from panm_jax.models.registry import prepare_inputs
from panm_jax.modules.controllers import CONTROLLER_KINDS, make_controller
from panm_jax.modules.memory import DNCMemory, MemoryModule, NTMMemory, StackMemory, StackRNNMemory, TapeRNNMemory
from panm_jax.options import check_options, option

__all__ = [
    "ACTIVATIONS",
    "DNCConfig",
    "MemoryModel",
    "NTMConfig",
    "RNN_CONTROLLER_KINDS",
    "StackLSTMConfig",
    "StackRNNConfig",
    "TapeRNNConfig",
    "VanillaRNNCell",
    "build_memory_model",
]


@dataclasses.dataclass(frozen=True)
class _ControllerConfig:
    """The controller fields every memory model shares."""

    controller: str = option(
        "lstm",
        allowed=f"one of {list(CONTROLLER_KINDS)}",
        doc="the controller (Reina Campo 2022: feed-forward, LSTM, Transformer; + GRU)",
    )
    hidden: int = option(256, checks.positive_int, doc="D, the controller width (Le et al. 2024, App. D.1: 256)")
    controller_layers: int = option(1, checks.positive_int, doc="feed-forward / Transformer layers (LSTM and GRU: 1)")
    controller_heads: int = option(4, checks.positive_int, doc="Transformer attention heads")
    max_steps: int = option(
        256, checks.positive_int, doc="Transformer cache: the most steps T_in + T_out of one sequence"
    )
    remat: bool = option(
        False, checks.boolean, doc="recompute each step in the backward pass (jax.checkpoint): less memory"
    )
    remat_chunk: int = option(
        0,
        checks.nonnegative_int,
        doc="keep the backward pass's state every k steps and recompute each chunk (kernels/scan.py); 0: every step's",
    )

    # The controller kinds a model of this config accepts (the CLI lists them).
    CONTROLLERS: ClassVar[tuple[str, ...]] = CONTROLLER_KINDS

    def __post_init__(self):
        check_options(self)
        if self.controller not in self.CONTROLLERS:
            raise ValueError(
                f"controller: unknown controller {self.controller!r}; known controllers: {list(self.CONTROLLERS)}"
                + did_you_mean(self.controller, self.CONTROLLERS)
            )
        if self.controller in ("lstm", "gru") and self.controller_layers != 1:
            raise ValueError(
                f"controller_layers: the {self.controller!r} controller has one layer, got {self.controller_layers}"
            )

    def controller_options(self) -> dict[str, Any]:
        """The ``make_controller`` options of this config's controller kind."""
        if self.controller == "feedforward":
            return {"num_layers": self.controller_layers}
        if self.controller == "transformer":
            return {"num_layers": self.controller_layers, "num_heads": self.controller_heads}
        return {}


@dataclasses.dataclass(frozen=True)
class NTMConfig(_ControllerConfig):
    """NTM hyperparameters (module docstring: sources)."""

    num_slots: int = option(128, checks.positive_int, doc="N (Le et al. 2024, App. D.1)")
    word_size: int = option(20, checks.positive_int, doc="W (Graves et al. 2014, copy)")
    num_reads: int = option(1, checks.positive_int, doc="R read heads")
    num_writes: int = option(1, checks.positive_int, doc="H write heads")
    shift_width: int = option(3, checks.odd_int, doc="S, odd: shifts -(S-1)/2 .. (S-1)/2")


@dataclasses.dataclass(frozen=True)
class DNCConfig(_ControllerConfig):
    """DNC hyperparameters (module docstring: sources)."""

    num_slots: int = option(128, checks.positive_int, doc="N (Le et al. 2024, App. D.1)")
    word_size: int = option(20, checks.positive_int, doc="W (our choice, as the NTM)")
    num_reads: int = option(4, checks.positive_int, doc="R read heads (DeepMind dnc default)")
    num_writes: int = option(1, checks.positive_int, doc="H write heads (Graves et al. 2016: one)")
    read_previous_memory: bool = option(
        False, checks.boolean, doc="content reads over M_{t-1} (Reina Campo 2022 as printed) instead of M_t"
    )
    stop_usage_write_gradient: bool = option(
        False, checks.boolean, doc="DeepMind dnc's stop_gradient on w^w_{t-1} in the usage"
    )


@dataclasses.dataclass(frozen=True)
class StackLSTMConfig(_ControllerConfig):
    """Stack/Queue/DeQue-LSTM hyperparameters (module docstring: sources)."""

    width: int = option(64, checks.positive_int, doc="W, the width of the pushed values (the paper's m; our choice)")
    read_to_output: bool = option(
        False,
        checks.boolean,
        doc="add W_r r_t to the output (Reina Campo 2022's form); Grefenstette et al. 2015: output from h_t only",
    )


ACTIVATIONS = {"relu": jax.nn.relu, "tanh": jnp.tanh}  # the Elman cell's nonlinearity, by name


class VanillaRNNCell(nnx.Module):
    """An Elman RNN cell: ``h' = relu(W_x x + b_x + W_h h + b_h)`` (the carry is ``h``).

    The RNN baseline's core and the Stack-RNN and Tape-RNN controllers of Delétang et al. 2023,
    "Neural Networks and the Chomsky Hierarchy": Haiku's ``VanillaRNN`` as their released code uses it
    (``hk.VanillaRNN``, dm-haiku 0.0.12: two linear maps with biases, then ``jax.nn.relu``).
    ``activation="tanh"`` gives Elman's original cell, ``h' = tanh(...)``. Answers the controllers'
    interface: ``init_carry(batch_shape)``, ``__call__(h, x [..., I]) -> (h', h')``.
    """

    def __init__(self, in_features: int, hidden: int, *, activation: str = "relu", rngs: nnx.Rngs):
        one_of("activation", activation, ACTIVATIONS)
        self.in_features = in_features
        self.hidden = hidden
        self.activation = activation
        self.input_proj = nnx.Linear(in_features, hidden, rngs=rngs)  # W_x, b_x [I, D]
        self.hidden_proj = nnx.Linear(hidden, hidden, rngs=rngs)  # W_h, b_h [D, D]

    def init_carry(self, batch_shape: tuple[int, ...] = (), dtype=jnp.float32) -> jax.Array:
        return jnp.zeros((*batch_shape, self.hidden), dtype)

    def __call__(self, h: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        h = ACTIVATIONS[self.activation](self.input_proj(x) + self.hidden_proj(h))
        return h, h


# The controller kinds of the Stack-RNN and Tape-RNN: the Elman cell first (their default), then the rest.
RNN_CONTROLLER_KINDS = ("rnn", *CONTROLLER_KINDS)


@dataclasses.dataclass(frozen=True)
class _RNNMemoryConfig(_ControllerConfig):
    """The fields the Stack-RNN and the Tape-RNN share (module docstring: sources)."""

    controller: str = option(
        "rnn",
        allowed=f"one of {list(RNN_CONTROLLER_KINDS)}",
        doc='the controller: an Elman RNN ("rnn", Delétang et al. 2023) or another kind',
    )
    activation: str = option(
        "relu",
        checks.one_of,
        ACTIVATIONS,
        doc="the \"rnn\" controller's: relu (Haiku's VanillaRNN, Delétang et al. 2023) or tanh",
    )
    width: int = option(8, checks.positive_int, doc="W, the width of a cell (Delétang et al. 2023: 8)")
    relu_output: bool = option(
        True, checks.boolean, doc="y_t = W_y relu(h_t) + b (Delétang et al. 2023's readout); False: W_y h_t + b"
    )
    read_to_output: bool = option(
        False, checks.boolean, doc="add W_r r_t to the output (the read otherwise reaches it through h_{t+1})"
    )

    CONTROLLERS: ClassVar[tuple[str, ...]] = RNN_CONTROLLER_KINDS

    def __post_init__(self):
        super().__post_init__()
        if self.controller == "rnn" and self.controller_layers != 1:
            raise ValueError(f"controller_layers: the 'rnn' controller has one layer, got {self.controller_layers}")
        if self.controller != "rnn" and self.activation != "relu":
            raise UserError(f"activation: applies to the 'rnn' controller only, got controller {self.controller!r}")


@dataclasses.dataclass(frozen=True)
class StackRNNConfig(_RNNMemoryConfig):
    """Stack-RNN hyperparameters (module docstring: sources)."""

    stack_size: int = option(30, checks.positive_int, doc="S cells (Delétang et al. 2023: 30)")
    read_cells: int = option(
        1, checks.positive_int, doc="k, the top cells fed back (Delétang et al. 2023: 1; Joulin & Mikolov 2015's s^k)"
    )
    push: str = option(
        "sigmoid",
        checks.one_of,
        PUSH_ACTIVATIONS,
        doc="the pushed value: sigmoid (Joulin & Mikolov 2015) or linear (Delétang et al.'s code)",
    )

    def __post_init__(self):
        super().__post_init__()
        if self.read_cells > self.stack_size:
            raise ValueError(
                f"read_cells: expected at most stack_size = {self.stack_size} cells, got {self.read_cells}"
            )


@dataclasses.dataclass(frozen=True)
class TapeRNNConfig(_RNNMemoryConfig):
    """Tape-RNN hyperparameters (module docstring: sources)."""

    tape_size: int = option(
        40, checks.positive_int, doc="S cells, circular (Delétang et al. 2023's released example: 40)"
    )
    value_layers: tuple[int, ...] = option(
        (64, 64),
        allowed="a sequence of positive integers",
        doc="hidden widths of the write-value MLP (Delétang et al. 2023)",
    )
    jump_to_input_length: bool = option(
        True, checks.boolean, doc="L = the example's input length (Delétang et al. 2023); False: L = 1"
    )
    write: str = option(
        "tanh",
        checks.one_of,
        WRITE_ACTIVATIONS,
        doc="the written value: tanh of the MLP's output (ours) or linear (Delétang et al.'s code)",
    )

    def __post_init__(self):
        super().__post_init__()
        layers = self.value_layers
        wrong = UserError(f"value_layers: expected a sequence of positive integers, got {layers!r}")
        if not isinstance(layers, (list, tuple)):
            raise wrong
        try:
            layers = tuple(positive_int("value_layers", n) for n in layers)  # a list (JSON, TOML) becomes a tuple
        except UserError:
            raise wrong from None
        object.__setattr__(self, "value_layers", layers)


def _make_controller(config: _ControllerConfig, in_features: int, rngs: nnx.Rngs) -> nnx.Module:
    """``make_controller`` for the shared kinds, ``VanillaRNNCell`` for ``"rnn"``."""
    if config.controller == "rnn":
        return VanillaRNNCell(in_features, config.hidden, activation=config.activation, rngs=rngs)
    return make_controller(
        config.controller,
        in_features,
        config.hidden,
        rngs=rngs,
        max_steps=config.max_steps,
        **config.controller_options(),
    )


class MemoryModel(nnx.Module):
    """A controller driving one external memory, behind the one model interface.

    See the module docstring for the per-step equations, masks and traces.

    Args:
      config: the model's config (its ``controller*`` fields choose the controller).
      input_size: ``D_in``, the width of an input row.
      output_size: ``K``, the number of output classes.
      memory: a memory module (a ``MemoryModule``: ``NTMMemory``, ``DNCMemory``,
        ``StackMemory``, ``StackRNNMemory`` or ``TapeRNNMemory``) whose ``hidden``
        equals ``config.hidden``; its ``init_sequence_state`` gives each
        example's initial memory state.
      read_to_output: include ``W_r r_t`` in the output.
      relu_output: the output layer reads ``relu(h_t)`` instead of ``h_t``.
      rngs: parameter initialisation.
    """

    def __init__(
        self,
        config: _ControllerConfig,
        input_size: int,
        output_size: int,
        memory: MemoryModule,
        *,
        read_to_output: bool = True,
        relu_output: bool = False,
        rngs: nnx.Rngs,
    ):
        self.config = config
        self.input_size = input_size
        self.output_size = output_size
        self.memory = memory
        self.relu_output = bool(relu_output)
        self.controller = _make_controller(config, input_size + memory.read_size, rngs)  # on [x_t; r_{t-1}]
        self.output_hidden = nnx.Linear(config.hidden, output_size, rngs=rngs)  # W_y (and the output bias)
        self.output_reads = (
            nnx.Linear(memory.read_size, output_size, use_bias=False, rngs=rngs) if read_to_output else None
        )  # W_r

    def _prepare(self, inputs, input_mask, num_outputs, aligned):
        inputs, input_mask = prepare_inputs(inputs, input_mask, num_outputs, self.input_size, aligned=aligned)
        total = inputs.shape[1] + (0 if aligned else num_outputs)
        if self.config.controller == "transformer" and total > self.config.max_steps:
            steps = f"T_in = {total}" if aligned else f"T_in + T_out = {inputs.shape[1]} + {num_outputs} = {total}"
            raise ValueError(
                f"num_outputs: {steps} steps exceed the Transformer controller's max_steps = "
                f"{self.config.max_steps}; build the model with a larger max_steps"
            )
        return inputs, input_mask

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

        ``aligned=True``: one output per input step (``T_out == T_in``), ``y_t`` of
        input step ``t``, with no blank steps; padded steps output zeros. ``train``
        and ``key`` are accepted for the common interface; these models have no
        training-only randomness. With ``return_traces`` also returns the memory
        trace (module docstring), ``[B, T_in + T_out, ...]`` (``[B, T_in, ...]``
        when aligned).
        """
        del train, key
        inputs, input_mask = self._prepare(inputs, input_mask, num_outputs, aligned)
        batch, t_in, _ = inputs.shape
        dtype = inputs.dtype
        if aligned:  # the output steps are the input steps
            xs, steps, num_steps, first_output = inputs, input_mask, t_in, 0
        else:
            xs = jnp.concatenate([inputs, jnp.zeros((batch, num_outputs, self.input_size), dtype)], 1)
            steps = jnp.concatenate(
                [input_mask, jnp.ones((batch, num_outputs), bool)], axis=1
            )  # [B, T]: padding masked, the T_out output steps always real
            num_steps, first_output = t_in + num_outputs, t_in

        def body(carry, inputs):  # one example, one step: x_t [D_in], keep [] (False on padding)
            x_t, keep = inputs
            ctrl, mem, prev_read = carry
            new_ctrl, h = self.controller(ctrl, jnp.concatenate([x_t, prev_read], axis=-1))
            controls = self.memory.controls(h)
            # The kernel applies the mask to its own state (it knows which fields a
            # masked step can leave alone without a select, e.g. the DNC's [N, N] link).
            mem, read = self.memory.step(mem, controls, keep)
            y = self.output_hidden(jax.nn.relu(h) if self.relu_output else h)  # W_y h_t + b
            if self.output_reads is not None:
                y = y + self.output_reads(read)  # + W_r r_t
            out = (y, self.memory.trace(mem, controls)) if return_traces else y
            (new_ctrl, read), out = select(
                keep, ((new_ctrl, read), out), ((ctrl, prev_read), jax.tree_util.tree_map(jnp.zeros_like, out))
            )
            return (new_ctrl, mem, read), out

        def run(x, mask, length):  # one example: x [T, D_in], mask [T], length [] real input steps
            carry = (
                self.controller.init_carry((), dtype),
                self.memory.init_sequence_state(num_steps, length, dtype),  # a Stack's C = T_in + T_out
                jnp.zeros((self.memory.read_size,), dtype),
            )
            _, outs = scan(body, carry, (x, mask), remat=self.config.remat, remat_chunk=self.config.remat_chunk or None)
            return outs

        lengths = jnp.sum(input_mask, axis=1, dtype=jnp.int32)  # [B] real input steps
        outs = jax.vmap(run)(xs, steps, lengths)
        if return_traces:
            ys, traces = outs
            return ys[:, first_output:], traces
        return outs[:, first_output:]


def build_memory_model(name: str, config, input_size: int, output_size: int, rngs: nnx.Rngs) -> MemoryModel:
    """Build ``ntm``, ``dnc``, ``stack_lstm``, ``queue_lstm``, ``deque_lstm``, ``stack_rnn`` or
    ``tape_rnn`` from its config."""
    if name == "ntm":
        memory = NTMMemory(
            config.hidden,
            config.num_slots,
            config.word_size,
            config.num_reads,
            config.num_writes,
            config.shift_width,
            rngs=rngs,
        )
        return MemoryModel(config, input_size, output_size, memory, rngs=rngs)
    if name == "dnc":
        memory = DNCMemory(
            config.hidden,
            config.num_slots,
            config.word_size,
            config.num_reads,
            config.num_writes,
            read_previous_memory=config.read_previous_memory,
            stop_usage_write_gradient=config.stop_usage_write_gradient,
            rngs=rngs,
        )
        return MemoryModel(config, input_size, output_size, memory, rngs=rngs)
    if name in ("stack_rnn", "tape_rnn"):
        if name == "stack_rnn":
            memory = StackRNNMemory(
                config.hidden, config.stack_size, config.width, config.read_cells, config.push, rngs=rngs
            )
        else:
            memory = TapeRNNMemory(
                config.hidden,
                config.tape_size,
                config.width,
                config.value_layers,
                jump_to_input_length=config.jump_to_input_length,
                write=config.write,
                rngs=rngs,
            )
        return MemoryModel(
            config,
            input_size,
            output_size,
            memory,
            read_to_output=config.read_to_output,
            relu_output=config.relu_output,
            rngs=rngs,
        )
    kind = {"stack_lstm": "stack", "queue_lstm": "queue", "deque_lstm": "deque"}.get(name)
    if kind is None:
        raise ValueError(
            f"name: expected one of ['ntm', 'dnc', 'stack_lstm', 'queue_lstm', 'deque_lstm', 'stack_rnn', "
            f"'tape_rnn'], got {name!r}"
        )
    memory = StackMemory(kind, config.hidden, config.width, rngs=rngs)
    return MemoryModel(config, input_size, output_size, memory, read_to_output=config.read_to_output, rngs=rngs)
