"""Memory modules: a controller's output projected into a kernel's controls, and one step.

Each module holds one parameter, the ``Linear`` ``W_xi`` that turns the controller
output ``h_t [..., D]`` into the kernel's raw interface vector
``xi_t = W_xi h_t + b [..., P]`` (Reina Campo 2022, MPSoC-NTM documentation,
"Turing Machine" chapter, "Interfaces": ``xi_t = W_xi [h_t^1; ...; h_t^L]``), then
calls the kernel's ``controls_from_interface`` (the sources' activations live
there) and ``step``. No memory mathematics lives here (docs/design.md): this is the thin layer between a
controller and ``panm_jax.kernels``.

Leading axes are free: ``h [..., D]`` with a state whose fields carry the same
leading axes (``init_state(batch_shape)``); the Stack, Queue and DeQue kernels
take them natively, the other one-example kernels are ``jax.vmap``-ped once per
leading axis. ``batch_shape = ()`` runs the kernel directly (a model that vmaps
its whole scan over the batch).

Every module is a ``MemoryModule`` and answers::

    init_state(batch_shape=(), ...)           -> state
    init_sequence_state(num_steps, input_length, dtype)
                                              -> one example's state before a sequence
    controls(h [..., D])                      -> XxxControls, activated
    step(state, controls, mask=None)          -> (state, read [..., read_size])
    __call__(state, h, mask=None)             -> step(state, controls(h), mask)
    trace(state, controls)                    -> a NamedTuple of per-step plot data

and has the attributes ``hidden`` (``D``), ``interface_size`` (``P``) and
``read_size``. ``init_sequence_state`` is what a sequence model asks for: it
sizes what depends on the sequence (a Stack's capacity, a Tape-RNN's jump
length) so that the model need not know which memory it holds.

``read`` is flattened to ``read_size`` numbers (all read heads, or both DeQue ends,
concatenated), ready to be fed back to the controller and to the output layer.
A masked step (``mask == 0``, padding) leaves the state unchanged and reads zeros
(the kernels' contract).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax.checks import positive_int
from panm_jax.kernels import deque as deque_kernel
from panm_jax.kernels import dnc as dnc_kernel
from panm_jax.kernels import ntm as ntm_kernel
from panm_jax.kernels import queue as queue_kernel
from panm_jax.kernels import stack as stack_kernel
from panm_jax.kernels import stack_rnn as stack_rnn_kernel
from panm_jax.kernels import tape_rnn as tape_rnn_kernel

__all__ = [
    "DNCMemory",
    "DNCTrace",
    "MemoryModule",
    "NTMMemory",
    "NTMTrace",
    "POP_BIAS_INIT",
    "STACK_KINDS",
    "StackMemory",
    "StackRNNMemory",
    "StackRNNTrace",
    "StackTrace",
    "TapeRNNMemory",
    "TapeRNNTrace",
]

# Grefenstette et al. 2015 (Learning to Transduce with Unbounded Memory; docs/tasks.md,
# transduction tasks): "pop bias initialised to -1",
# so u_t = sigmoid(-1) ~ 0.27 at the start: early steps pop little.
POP_BIAS_INIT = -1.0

# The kernel module of each kind of StackMemory: the three share one contract (init_state,
# step, interface_size, controls_from_interface, ENDS).
_STACK_KERNELS: dict[str, ModuleType] = {"stack": stack_kernel, "queue": queue_kernel, "deque": deque_kernel}
STACK_KINDS = tuple(_STACK_KERNELS)


def _over_leading(fn: Callable, num_axes: int) -> Callable:
    # vmap a one-example function once per leading (batch) axis, all arguments mapped.
    for _ in range(num_axes):
        fn = jax.vmap(fn)
    return fn


def _check_hidden(h: jax.Array, hidden: int) -> None:
    if jnp.ndim(h) < 1 or jnp.shape(h)[-1] != hidden:
        raise ValueError(f"h: expected shape [..., D] with D = {hidden}, got {tuple(jnp.shape(h))}")


def _init_batched(state, batch_shape: tuple[int, ...]):
    return jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (*batch_shape, *jnp.shape(x))), state)


class NTMTrace(NamedTuple):
    """One NTM step for plots (leading axes as the state's)."""

    read_weights: jax.Array  # [..., R, N] w_t of each read head
    write_weights: jax.Array  # [..., H, N] w_t of each write head


class DNCTrace(NamedTuple):
    """One DNC step for plots (leading axes as the state's)."""

    read_weights: jax.Array  # [..., R, N] w^{r,i}_t
    write_weights: jax.Array  # [..., H, N] w^w_t of each write head
    usage: jax.Array  # [..., N]   u_t
    read_modes: jax.Array  # [..., R, 2H + 1] pi^i_t (backward_1..H, content, forward_1..H)


class StackTrace(NamedTuple):
    """One Stack / Queue / DeQue step for plots (leading axes as the state's).

    ``E`` is the number of ends acted on: 1 for the Stack and the Queue, 2 for the
    DeQue (index 0 the top, 1 the bottom).
    """

    strengths: jax.Array  # [..., C] s_t ([..., 2C] for the DeQue)
    push: jax.Array  # [..., E] d_t
    pop: jax.Array  # [..., E] u_t


class StackRNNTrace(NamedTuple):
    """One Stack-RNN step for plots (leading axes as the state's)."""

    stack: jax.Array  # [..., S, W] s_t after the step, row 0 the top
    actions: jax.Array  # [..., 3]    a_t = (push, pop, no-op)


class TapeRNNTrace(NamedTuple):
    """One Tape-RNN step for plots (leading axes as the state's)."""

    tape: jax.Array  # [..., S, W] T_t after the step, row 0 under the head
    actions: jax.Array  # [..., 5]    a_t = (write-stay, write-left, write-right, jump-left, jump-right)


class MemoryModule(nnx.Module):
    """The interface every memory module answers (module docstring); subclasses set
    ``hidden``, ``interface_size`` and ``read_size`` and define ``init_state``,
    ``controls``, ``step`` and ``trace``."""

    hidden: int  # D, the controller output width
    interface_size: int  # P, the raw interface's length
    read_size: int  # the width of the flattened read

    def init_state(self, batch_shape: tuple[int, ...] = (), *args, **kwargs) -> Any:
        raise NotImplementedError

    def init_sequence_state(self, num_steps: int, input_length: jax.Array, dtype=jnp.float32) -> Any:
        """One example's state (no batch axes) before a sequence of ``num_steps`` steps.

        ``input_length``: ``[]`` int32, the example's number of real input steps.
        By default neither matters: ``init_state((), dtype=dtype)``.
        """
        del num_steps, input_length
        return self.init_state((), dtype=dtype)

    def controls(self, h: jax.Array) -> Any:
        raise NotImplementedError

    def step(self, state: Any, controls: Any, mask: jax.Array | None = None) -> tuple[Any, jax.Array]:
        raise NotImplementedError

    def trace(self, state: Any, controls: Any) -> NamedTuple:
        raise NotImplementedError

    def __call__(self, state: Any, h: jax.Array, mask: jax.Array | None = None) -> tuple[Any, jax.Array]:
        """``step(state, controls(h), mask)``."""
        return self.step(state, self.controls(h), mask)


class NTMMemory(MemoryModule):
    """NTM memory (Graves, Wayne & Danihelka 2014, "Neural Turing Machines", §3, Eq. 2-9) behind a projection.

    ``xi_t = W_xi h_t + b`` has ``ntm.interface_size(W, R, H, S)`` numbers; the
    kernel's ``controls_from_interface`` activates them into the ranges §3.3
    requires (keys and add vectors as they are, ``beta = softplus >= 0``,
    ``g = sigmoid`` in (0, 1), shifts ``softmax`` (a distribution),
    ``gamma = 1 + softplus >= 1``, erase ``sigmoid`` in (0, 1)) and
    ``ntm.step`` writes, then reads.

    Args:
      hidden: ``D``, the controller output width.
      num_slots: ``N``. word_size: ``W``. num_reads: ``R``. num_writes: ``H``.
      shift_width: ``S`` (odd; 3 = shifts -1, 0, +1).
    """

    def __init__(
        self,
        hidden: int,
        num_slots: int,
        word_size: int,
        num_reads: int = 1,
        num_writes: int = 1,
        shift_width: int = 3,
        *,
        rngs: nnx.Rngs,
    ):
        self.hidden = positive_int("hidden", hidden)
        self.num_slots = positive_int("num_slots", num_slots)
        self.word_size = word_size
        self.num_reads = num_reads
        self.num_writes = num_writes
        self.shift_width = shift_width
        self.interface_size = ntm_kernel.interface_size(word_size, num_reads, num_writes, shift_width)
        self.read_size = num_reads * word_size  # R W
        self.projection = nnx.Linear(hidden, self.interface_size, rngs=rngs)  # W_xi [D, P]

    def init_state(self, batch_shape: tuple[int, ...] = (), dtype=jnp.float32) -> ntm_kernel.NTMState:
        """``ntm.init_state`` with ``batch_shape`` in front of every field."""
        state = ntm_kernel.init_state(self.num_slots, self.word_size, self.num_reads, self.num_writes, dtype=dtype)
        return _init_batched(state, tuple(batch_shape))

    def controls(self, h: jax.Array) -> ntm_kernel.NTMControls:
        """``h [..., D] -> NTMControls`` with the leading axes of ``h``."""
        _check_hidden(h, self.hidden)
        return ntm_kernel.controls_from_interface(
            self.projection(h), self.word_size, self.num_reads, self.num_writes, self.shift_width
        )

    def step(
        self, state: ntm_kernel.NTMState, controls: ntm_kernel.NTMControls, mask: jax.Array | None = None
    ) -> tuple[ntm_kernel.NTMState, jax.Array]:
        """``ntm.step`` over the leading axes; returns ``(state, reads [..., R W])``."""
        lead = jnp.ndim(state.memory) - 2
        new_state, reads = _over_leading(ntm_kernel.step, lead)(state, controls, mask)
        return new_state, reads.reshape(*reads.shape[:-2], self.read_size)

    @staticmethod
    def trace(state: ntm_kernel.NTMState, controls: ntm_kernel.NTMControls) -> NTMTrace:
        del controls
        return NTMTrace(read_weights=state.read_weights, write_weights=state.write_weights)


class DNCMemory(MemoryModule):
    """DNC memory (Graves et al. 2016, "Hybrid computing using a neural network with
    dynamic external memory", Nature 538) behind a projection.

    ``xi_t = W_xi h_t + b`` is the interface vector (``dnc.interface_size(W, R, H)``
    numbers: ``R W + 5 R + 3 W + 3`` for one write head, Graves et al. 2016's
    length); ``dnc.controls_from_interface`` activates it (strengths
    ``oneplus >= 1``, gates ``sigmoid``, modes ``softmax``; Graves et al. 2016's
    field order) and ``dnc.step`` frees, allocates, writes, links and reads.

    Args:
      hidden: ``D``. num_slots: ``N``. word_size: ``W``. num_reads: ``R``.
      num_writes: ``H`` write heads (1 in Graves et al. 2016; DeepMind's ``dnc``
        ``num_writes``).
      read_previous_memory: the read content weights use ``M_{t-1}`` (Reina Campo 2022 as
        printed) instead of ``M_t`` (default; Graves et al. 2016), see ``dnc.step``.
      stop_usage_write_gradient: no gradient from the usage to the previous write
        weights, as DeepMind's ``dnc`` (default False: the full gradient), see
        ``dnc.step``.
    """

    def __init__(
        self,
        hidden: int,
        num_slots: int,
        word_size: int,
        num_reads: int = 4,
        num_writes: int = 1,
        *,
        read_previous_memory: bool = False,
        stop_usage_write_gradient: bool = False,
        rngs: nnx.Rngs,
    ):
        self.hidden = positive_int("hidden", hidden)
        self.num_slots = positive_int("num_slots", num_slots)
        self.word_size = word_size
        self.num_reads = num_reads
        self.num_writes = num_writes
        self.read_previous_memory = bool(read_previous_memory)
        self.stop_usage_write_gradient = bool(stop_usage_write_gradient)
        self.interface_size = dnc_kernel.interface_size(num_reads=num_reads, word_size=word_size, num_writes=num_writes)
        self.read_size = num_reads * word_size  # R W
        self.projection = nnx.Linear(hidden, self.interface_size, rngs=rngs)  # W_i [D, P]

    def init_state(self, batch_shape: tuple[int, ...] = (), dtype=jnp.float32) -> dnc_kernel.DNCState:
        """``dnc.init_state`` with ``batch_shape`` in front of every field."""
        state = dnc_kernel.init_state(
            self.num_slots, word_size=self.word_size, num_reads=self.num_reads, num_writes=self.num_writes, dtype=dtype
        )
        return _init_batched(state, tuple(batch_shape))

    def controls(self, h: jax.Array) -> dnc_kernel.DNCControls:
        """``h [..., D] -> DNCControls`` with the leading axes of ``h``."""
        _check_hidden(h, self.hidden)
        return dnc_kernel.controls_from_interface(
            self.projection(h), num_reads=self.num_reads, word_size=self.word_size, num_writes=self.num_writes
        )

    def step(
        self, state: dnc_kernel.DNCState, controls: dnc_kernel.DNCControls, mask: jax.Array | None = None
    ) -> tuple[dnc_kernel.DNCState, jax.Array]:
        """``dnc.step`` over the leading axes; returns ``(state, reads [..., R W])``."""
        lead = jnp.ndim(state.memory) - 2

        def one(s, c, m):
            return dnc_kernel.step(
                s,
                c,
                m,
                read_previous_memory=self.read_previous_memory,
                stop_usage_write_gradient=self.stop_usage_write_gradient,
            )

        new_state, reads = _over_leading(one, lead)(state, controls, mask)
        return new_state, reads.reshape(*reads.shape[:-2], self.read_size)

    @staticmethod
    def trace(state: dnc_kernel.DNCState, controls: dnc_kernel.DNCControls) -> DNCTrace:
        return DNCTrace(
            read_weights=state.read_weights,
            write_weights=state.write_weights,
            usage=state.usage,
            read_modes=controls.read_modes,
        )


class StackMemory(MemoryModule):
    """A neural Stack, Queue or DeQue (Grefenstette et al. 2015) behind a projection.

    The controller output ``o'_t`` (``h``) is projected to the push, pop and value
    pre-activations, ``[d^, u^, v^ (W)]`` per end (the top end, then the bottom end
    for the DeQue); the kernel's ``controls_from_interface`` applies the paper's
    ``d_t = sigmoid``, ``u_t = sigmoid``, ``v_t = tanh``. The pop logits' biases
    start at ``POP_BIAS_INIT = -1`` (docs/tasks.md, transduction tasks; the paper's initialisation); the
    other biases at 0, the kernel as ``nnx.Linear``'s default (LeCun normal).

    ``kernel`` is the kind's kernel module (``panm_jax.kernels.stack``, ``queue``
    or ``deque``), which takes the leading axes itself. A kernel with several
    ends (the DeQue) returns one read per end; ``step`` concatenates them in
    the order of its read's fields (top, then bottom).

    Capacity: ``init_state(batch_shape, capacity)`` with ``capacity = C`` the
    number of steps the sequence takes (every step pushes a row, the kernel's
    contract); the DeQue holds ``2C`` rows. ``init_sequence_state`` sets ``C`` to
    the sequence's number of steps.

    Args:
      kind: ``"stack"``, ``"queue"`` or ``"deque"``.
      hidden: ``D``. width: ``W``, the width of the pushed values.
    """

    def __init__(self, kind: str, hidden: int, width: int, *, rngs: nnx.Rngs):
        if kind not in _STACK_KERNELS:
            raise ValueError(f"kind: unknown structure {kind!r}; known: {list(STACK_KINDS)}")
        self.kind = kind
        self.kernel = _STACK_KERNELS[kind]
        self.hidden = positive_int("hidden", hidden)
        self.width = positive_int("width", width)
        self.ends = self.kernel.ENDS
        self.interface_size = self.kernel.interface_size(width)
        self.read_size = self.ends * width  # W, or 2W for the DeQue's top and bottom reads
        self.projection = nnx.Linear(hidden, self.interface_size, rngs=rngs)  # [D, P]
        block = self.interface_size // self.ends  # [d^, u^, v^ (W)] per end
        pop_index = jnp.arange(self.ends) * block + 1
        self.projection.bias[...] = self.projection.bias[...].at[pop_index].set(POP_BIAS_INIT)

    def init_state(self, batch_shape: tuple[int, ...] = (), capacity: int = 1, dtype=jnp.float32):
        """An empty structure of ``capacity`` steps with ``batch_shape`` in front."""
        return _init_batched(self.kernel.init_state(capacity, self.width, dtype), tuple(batch_shape))

    def init_sequence_state(self, num_steps: int, input_length: jax.Array, dtype=jnp.float32):
        """An empty structure of ``C = num_steps`` rows per end: one per step of the sequence."""
        del input_length
        return self.init_state((), capacity=num_steps, dtype=dtype)

    def controls(self, h: jax.Array):
        """``h [..., D] -> StackControls`` (``DequeControls``) with the leading axes of ``h``."""
        _check_hidden(h, self.hidden)
        return self.kernel.controls_from_interface(self.projection(h), self.width)

    def step(self, state, controls, mask: jax.Array | None = None):
        """The kernel's step; returns ``(state, read [..., read_size])``, the ends' reads concatenated."""
        new_state, read = self.kernel.step(state, controls, mask)
        reads = jax.tree_util.tree_leaves(read)  # [read], or a DeQue's [top, bottom]
        return new_state, reads[0] if len(reads) == 1 else jnp.concatenate(reads, axis=-1)

    def trace(self, state, controls) -> StackTrace:
        def per_end(prefix: str) -> jax.Array:  # [..., E]: push or pop of each end, in field order
            return jnp.stack([getattr(controls, f) for f in controls._fields if f.startswith(prefix)], axis=-1)

        return StackTrace(strengths=state.strengths, push=per_end("push"), pop=per_end("pop"))


def _read_cells(cells: jax.Array, k: int, mask) -> jax.Array:
    # The top k cells [..., S, W] -> [..., k W]; zeros where mask is 0 (a padding step).
    read = cells[..., :k, :].reshape(*cells.shape[:-2], k * cells.shape[-1])
    if mask is None:
        return read
    keep = jnp.asarray(mask).astype(bool)
    return jnp.where(keep[..., None], read, jnp.zeros_like(read))


class StackRNNMemory(MemoryModule):
    """The Stack-RNN's stack (Joulin & Mikolov 2015, "Inferring Algorithmic Patterns with
    Stack-Augmented Recurrent Nets") behind a projection.

    ``xi_t = W_xi h_t + b`` has ``3 + W`` numbers: the logits of (push, pop, no-op)
    and the pushed value's pre-activation; ``stack_rnn.controls_from_interface``
    applies ``a_t = softmax`` (Eq. 3) and ``v_t = sigmoid`` (Eq. 4), and
    ``stack_rnn.step`` mixes the three shifted stacks (Eq. 4-5 with the no-op).
    One linear layer for the actions and the value, as Joulin & Mikolov's ``A``
    and ``D`` (and Delétang et al. 2023, "Neural Networks and the Chomsky
    Hierarchy", whose Stack-RNN baseline this is); weights as ``nnx.Linear``'s
    default (LeCun normal), biases 0.

    The read is the top ``k = read_cells`` cells of the new stack, flattened to
    ``read_size = k W`` (Joulin & Mikolov's Eq. 6 feeds ``s^k_{t-1}``, the top
    ``k``, to the next step; Delétang et al. read the top cell, ``k = 1``).

    Args:
      hidden: ``D``. stack_size: ``S`` cells (fixed). width: ``W``, a cell's width.
      read_cells: ``k``, ``1 <= k <= S``.
      push: the pushed value, ``"sigmoid"`` (Joulin & Mikolov's Eq. 4) or ``"linear"`` (Delétang et al.'s code).
    """

    def __init__(
        self, hidden: int, stack_size: int, width: int, read_cells: int = 1, push: str = "sigmoid", *, rngs: nnx.Rngs
    ):
        self.hidden = positive_int("hidden", hidden)
        self.push = push  # the pushed value's activation (stack_rnn.controls_from_interface)
        self.stack_size = positive_int("stack_size", stack_size)
        self.width = positive_int("width", width)
        self.read_cells = positive_int("read_cells", read_cells)
        if read_cells > stack_size:
            raise ValueError(f"read_cells: expected at most stack_size = {stack_size} cells, got {read_cells}")
        self.interface_size = stack_rnn_kernel.interface_size(width)  # 3 + W
        self.read_size = read_cells * width  # k W
        self.projection = nnx.Linear(hidden, self.interface_size, rngs=rngs)  # [D, 3 + W]

    def init_state(self, batch_shape: tuple[int, ...] = (), dtype=jnp.float32) -> stack_rnn_kernel.State:
        """An empty (all-zero) ``[S, W]`` stack with ``batch_shape`` in front."""
        state = stack_rnn_kernel.init_state(self.stack_size, self.width, dtype=dtype)
        return _init_batched(state, tuple(batch_shape))

    def controls(self, h: jax.Array) -> stack_rnn_kernel.Controls:
        """``h [..., D] -> Controls`` (``actions [..., 3]``, ``value [..., W]``)."""
        _check_hidden(h, self.hidden)
        return stack_rnn_kernel.controls_from_interface(self.projection(h), self.width, self.push)

    def step(self, state: stack_rnn_kernel.State, controls: stack_rnn_kernel.Controls, mask: jax.Array | None = None):
        """``stack_rnn.step`` over the leading axes; returns ``(state, read [..., k W])``."""
        lead = jnp.ndim(state.stack) - 2
        new_state, read = _over_leading(stack_rnn_kernel.step, lead)(state, controls, mask)
        if self.read_cells > 1:  # the kernel reads the top cell; the top k of the new stack
            read = _read_cells(new_state.stack, self.read_cells, mask)
        return new_state, read

    @staticmethod
    def trace(state: stack_rnn_kernel.State, controls: stack_rnn_kernel.Controls) -> StackRNNTrace:
        return StackRNNTrace(stack=state.stack, actions=controls.actions)


class TapeRNNMemory(MemoryModule):
    """The Tape-RNN's tape (Delétang et al. 2023, "Neural Networks and the Chomsky
    Hierarchy") behind an action projection and a value network.

    The five action logits (write-stay, write-left, write-right, jump-left,
    jump-right) are one linear layer of ``h_t``; the written value's
    pre-activation is a small MLP of ``h_t`` (hidden layers ``value_layers``, ReLU
    between them, a linear last layer to ``W``), as the Tape-RNN of Delétang et
    al. 2023 computes its write values with an MLP readout (hidden sizes 64, 64 in
    the authors' released code) and its actions with one linear layer. The two
    are joined into the raw interface ``[5 + W]`` and
    ``tape_rnn.controls_from_interface`` applies the softmax (actions) and the
    tanh (value). ``value_layers = ()`` makes the value one linear layer.

    The jump length ``L`` is per example, in the state:
    ``init_state(batch_shape, jump_length=...)``; Delétang et al. set it to the
    input length, which ``init_sequence_state`` does (each example's count of
    real input steps) unless ``jump_to_input_length`` is False (``L = 1``).

    The read is the cell under the head of the new tape, ``T_t[0]``
    (``read_size = W``), as Delétang et al.'s Tape-RNN reads the current cell.

    Args:
      hidden: ``D``. tape_size: ``S`` cells (circular, fixed). width: ``W``.
      value_layers: widths of the value MLP's hidden layers (each positive).
      jump_to_input_length: ``init_sequence_state``'s ``L``: the example's input
        length (True, Delétang et al. 2023) or 1 (False).
      write: the written value, ``"tanh"`` of the MLP's output (ours) or ``"linear"`` (Delétang et al.'s code).
    """

    def __init__(
        self,
        hidden: int,
        tape_size: int,
        width: int,
        value_layers: tuple[int, ...] = (64, 64),
        *,
        jump_to_input_length: bool = True,
        write: str = "tanh",
        rngs: nnx.Rngs,
    ):
        self.hidden = positive_int("hidden", hidden)
        self.write = write  # the written value's activation (tape_rnn.controls_from_interface)
        self.tape_size = positive_int("tape_size", tape_size)
        self.width = positive_int("width", width)
        if isinstance(value_layers, (str, bytes)) or not hasattr(value_layers, "__iter__"):
            raise ValueError(f"value_layers: expected a sequence of positive integers, got {value_layers!r}")
        self.value_layers = tuple(positive_int("value_layers", n) for n in value_layers)
        self.jump_to_input_length = bool(jump_to_input_length)
        self.interface_size = tape_rnn_kernel.interface_size(width)  # 5 + W
        self.read_size = width
        self.projection = nnx.Linear(hidden, len(tape_rnn_kernel.ACTIONS), rngs=rngs)  # [D, 5]: the action logits
        widths = [hidden, *self.value_layers, width]
        self.value_mlp = nnx.List(
            [nnx.Linear(a, b, rngs=rngs) for a, b in itertools.pairwise(widths)]
        )  # [D, 64], [64, 64], [64, W]

    def init_state(self, batch_shape: tuple[int, ...] = (), dtype=jnp.float32, jump_length=1) -> tape_rnn_kernel.State:
        """An empty (all-zero) ``[S, W]`` tape with ``batch_shape`` in front.

        ``jump_length``: a non-negative int, or an integer array of shape
        ``batch_shape`` (one ``L`` per example).
        """
        batch_shape = tuple(batch_shape)
        if hasattr(jump_length, "shape") and jnp.ndim(jump_length) > 0:
            if tuple(jnp.shape(jump_length)) != batch_shape:
                raise ValueError(
                    f"jump_length: expected an integer or an integer array of shape {batch_shape}, "
                    f"got shape {tuple(jnp.shape(jump_length))}"
                )
            if not jnp.issubdtype(jnp.result_type(jump_length), jnp.integer):
                raise ValueError(f"jump_length: expected an integer array, got dtype {jnp.result_type(jump_length)}")
            state = tape_rnn_kernel.init_state(self.tape_size, self.width, dtype=dtype, jump_length=0)
            state = _init_batched(state, batch_shape)
            return state._replace(jump=jnp.asarray(jump_length).astype(jnp.int32))
        state = tape_rnn_kernel.init_state(self.tape_size, self.width, dtype=dtype, jump_length=jump_length)
        return _init_batched(state, batch_shape)

    def init_sequence_state(self, num_steps: int, input_length: jax.Array, dtype=jnp.float32) -> tape_rnn_kernel.State:
        """An empty tape whose jump length is ``input_length`` (``jump_to_input_length``) or 1."""
        del num_steps
        jump = input_length if self.jump_to_input_length else 1  # L (Delétang et al. 2023: the input length)
        return self.init_state((), dtype=dtype, jump_length=jump)

    def raw_interface(self, h: jax.Array) -> jax.Array:
        """``h [..., D] -> [..., 5 + W]``: the action logits, then the value's pre-activation."""
        _check_hidden(h, self.hidden)
        value = h
        for i, layer in enumerate(self.value_mlp):
            value = layer(value)
            if i < len(self.value_mlp) - 1:
                value = jax.nn.relu(value)
        return jnp.concatenate([self.projection(h), value], axis=-1)

    def controls(self, h: jax.Array) -> tape_rnn_kernel.Controls:
        """``h [..., D] -> Controls`` (``actions [..., 5]``, ``value [..., W]``)."""
        return tape_rnn_kernel.controls_from_interface(self.raw_interface(h), self.width, self.write)

    def step(self, state: tape_rnn_kernel.State, controls: tape_rnn_kernel.Controls, mask: jax.Array | None = None):
        """``tape_rnn.step`` over the leading axes; returns ``(state, read [..., W])``."""
        lead = jnp.ndim(state.tape) - 2
        return _over_leading(tape_rnn_kernel.step, lead)(state, controls, mask)

    @staticmethod
    def trace(state: tape_rnn_kernel.State, controls: tape_rnn_kernel.Controls) -> TapeRNNTrace:
        return TapeRNNTrace(tape=state.tape, actions=controls.actions)
