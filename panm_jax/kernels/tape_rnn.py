"""The Tape-RNN's continuous tape (Delétang et al. 2023).

Implements the memory tape of the Tape-RNN baseline of Delétang et al. 2023,
"Neural Networks and the Chomsky Hierarchy" (ICLR 2023), described in the
paper's appendix (architecture details) as a Stack-RNN-like network (Joulin &
Mikolov 2015) whose memory is a tape instead of a stack: a tape of ``S`` cells
of width ``W``, a head fixed at cell 0, and the *tape* moved under the head.

A step takes a distribution ``a_t`` over five actions and a value ``w_t``. Every
action first writes ``w_t`` into the cell under the head, then moves the tape::

    T'[0] = w_t,   T'[i] = T_{t-1}[i]  (1 <= i < S)                     (write)

    write-stay   T^stay[i]  = T'[i]
    write-left   T^left[i]  = T'[(i + 1) mod S]     the tape moves one cell left
    write-right  T^right[i] = T'[(i - 1) mod S]     the tape moves one cell right
    jump-left    T^jl[i]    = T'[(i + L) mod S]     the tape moves L cells left
    jump-right   T^jr[i]    = T'[(i - L) mod S]     the tape moves L cells right

    T_t = a_stay T^stay + a_left T^left + a_right T^right + a_jl T^jl + a_jr T^jr

``L`` is the jump length, the length of the input sequence in Delétang et al.
(a jump takes the head from one end of the input to the other, e.g. back to the
start of a string to duplicate). Each move is a permutation of the cells, so a
step is five permuted views of ``[S, W]`` (rolls, and one gather per jump) and
four adds: no loop over cells.

Conventions and choices (the paper describes the actions in words):

* "Left" and "right" name the direction the *tape* moves, the head staying at
  cell 0: after write-left the head reads ``T'[1]``, the cell that was to its
  right, i.e. relative to the contents the head has moved one cell right.
  Index ``i`` counts cells to the right of the head.
* The tape is circular (indices mod ``S``): the tape is rolled, so a cell
  moved past one end reappears at the other, and the cells it passes are
  neither lost nor zero-filled.
* All five actions write (write-and-move); the written cell is replaced, not
  blended: ``T'[0] = w_t`` whatever ``a_t``. A module that wants to keep the
  head's cell writes back the value it read.
* ``L`` lives in the state (``State.jump``, int32), set by ``init_state``; it
  may be a traced scalar, so ``vmap`` over a batch of different input lengths
  works. ``L`` is taken mod ``S``.
* The read, what the controller sees at the next step, is the cell under the
  head of the new tape, ``T_t[0]``.
* The written value goes through a tanh in ``controls_from_interface`` (the
  library's choice: zero-centred, like the all-zero empty tape; ``write="linear"``
  leaves it as it is, as Delétang et al.'s released code does); the step
  accepts any real ``w_t``.

API: ``State``, ``Controls``, ``init_state``, ``step``, ``update``,
``interface_size``, ``controls_from_interface``. Leading axes (the rule of
``panm_jax.kernels``): ``init_state(..., batch_shape)`` and ``step`` take any
leading (batch) axes; ``update`` is written for one example (``jax.vmap`` it).

Dtypes: the tape keeps the dtype ``init_state`` gave it; float16 and bfloat16
tapes are stepped in float32 and rounded back.

Notation: ``S`` tape length (cells), ``W`` cell width, ``L`` jump length.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from panm_jax.checks import nonnegative_int, positive_int
from panm_jax.errors import UserError
from panm_jax.kernels import _batch, _soft_actions
from panm_jax.kernels.validation import (
    check_float_dtype,
    check_floating_fields,
    check_in_range,
    check_shape,
    check_state_sizes,
)

__all__ = [
    "ACTIONS",
    "Controls",
    "State",
    "controls_from_interface",
    "init_state",
    "interface_size",
    "step",
    "update",
]

# The order of the action axis of Controls.actions and of the raw interface.
ACTIONS = ("write_stay", "write_left", "write_right", "jump_left", "jump_right")


class State(NamedTuple):
    """State of one Tape-RNN tape (arrays only)."""

    tape: jax.Array  # [S, W] T_t: row 0 is the cell under the head, row i the i-th cell to its right (mod S)
    jump: jax.Array  # []     int32, L, the jump length (the input length in Delétang et al.)


class Controls(NamedTuple):
    """Activated controls of one Tape-RNN step."""

    actions: jax.Array  # [5] a_t over ACTIONS (stay, left, right, jump-left, jump-right), summing to 1 (softmax)
    value: jax.Array  # [W] w_t, written under the head, in (-1, 1) (tanh)


def _check_jump(name: str, jump) -> jax.Array:
    # A non-negative integer scalar: a Python int, or an integer array of shape [] (traced is fine).
    if isinstance(jump, (int, np.integer)):  # bool included: refused by nonnegative_int
        return jnp.asarray(nonnegative_int(name, jump), jnp.int32)
    if not hasattr(jump, "shape") or not jnp.issubdtype(jnp.result_type(jump), jnp.integer):
        raise ValueError(f"{name}: expected a non-negative integer or an integer array of shape [], got {jump!r}")
    check_shape(name, jump, (), "")
    check_in_range(name, jump, 0.0, None)
    return jnp.asarray(jump).astype(jnp.int32)


def init_state(size: int, width: int, dtype=jnp.float32, jump_length=1, *, batch_shape: tuple[int, ...] = ()) -> State:
    """An empty tape: ``S = size`` zero cells of width ``W = width``, jump length ``L``.

    Args:
      size: ``S`` >= 1, the number of cells (fixed for the episode).
      width: ``W`` >= 1, the width of a cell.
      dtype: a real floating dtype for the tape.
      jump_length: ``L`` >= 0, how many cells a jump moves the tape: set it to
        the input length, as Delétang et al. do. A Python int or an integer
        scalar array (may be traced, e.g. one length per example under
        ``vmap``). The default 1 makes the jumps equal to the single moves.
      batch_shape: leading (batch) axes in front of every field (``()``: one
        example); every example gets the jump length ``L``.

    Returns:
      ``State`` with a zero ``[..., S, W]`` tape and ``jump = L`` (int32, ``[...]``).

    Raises:
      ValueError: naming ``size``, ``width``, ``dtype``, ``jump_length`` or
        ``batch_shape`` when invalid, or sizes too large to index or allocate,
        before anything is allocated.
    """
    size = positive_int("size", size)
    width = positive_int("width", width)
    dt = check_float_dtype("dtype", dtype)
    jump = _check_jump("jump_length", jump_length)
    lead = _batch.check_batch_shape(batch_shape)
    check_state_sizes({"state.tape": ((size, width), ("size", "width"))}, lead, dt)
    return _batch.broadcast_state(State(tape=jnp.zeros((size, width), dt), jump=jump), lead)


def _shift(tape: jax.Array, offset: jax.Array) -> jax.Array:
    # out[i] = tape[(i + offset) mod S], for a (possibly traced) integer offset: one gather.
    size = tape.shape[0]
    index = jnp.mod(jnp.arange(size, dtype=jnp.int32) + offset, size)
    return jnp.take(tape, index, axis=0)


def update(tape: jax.Array, actions: jax.Array, value: jax.Array, jump: jax.Array) -> jax.Array:
    """The tape after one soft write-and-move.

    Implements the Tape-RNN tape update of Delétang et al. 2023, "Neural
    Networks and the Chomsky Hierarchy" (ICLR 2023, appendix: the Tape-RNN's
    write-stay, write-left, write-right, jump-left and jump-right actions)::

        T'[0] = w_t,  T'[i] = T_{t-1}[i]  (i >= 1)
        T_t[i] = a_stay T'[i] + a_left T'[i+1] + a_right T'[i-1] + a_jl T'[i+L] + a_jr T'[i-L]   (indices mod S)

    Args:
      tape: ``[S, W]`` ``T_{t-1}``, row 0 under the head.
      actions: ``[5]`` ``a_t`` in the order of ``ACTIONS``.
      value: ``[W]`` ``w_t``.
      jump: ``[]`` integer ``L``.

    Returns:
      ``[S, W]`` ``T_t``.
    """
    written = jnp.concatenate([value[None, :].astype(tape.dtype), tape[1:]], axis=0)
    jump = jnp.asarray(jump).astype(jnp.int32)
    a = actions.astype(tape.dtype)
    return (
        a[0] * written
        + a[1] * jnp.roll(written, -1, axis=0)  # T'[i + 1]
        + a[2] * jnp.roll(written, 1, axis=0)  # T'[i - 1]
        + a[3] * _shift(written, jump)  # T'[i + L]
        + a[4] * _shift(written, -jump)  # T'[i - L]
    )


def step(state: State, controls: Controls, mask: jax.Array | None = None) -> tuple[State, jax.Array]:
    """One Tape-RNN tape step: write under the head and move the tape (``update``), then read.

    Shapes and dtypes are checked at trace time (the tape and controls real
    floating, ``state.jump`` an integer scalar); in an eager call, where values
    are concrete, also that ``controls.actions`` lie in ``[0, 1]`` and sum to 1
    and that ``state.jump >= 0``.

    Args:
      state: ``State`` (``[S, W]`` tape, ``[]`` jump length).
      controls: ``Controls`` (``[5]`` actions, ``[W]`` value).
      mask: optional ``[]``; where 0 (a padding step) the state is returned
        unchanged and the read is zeros.

    Leading axes: the state, controls and mask may carry the same leading (batch)
    axes ``[...]`` in front of these shapes; the step is then mapped over them
    (``jax.vmap``, at trace time).

    Returns:
      ``(new_state, read [W])`` with ``read = T_t[0]``, the cell under the head.

    Raises:
      ValueError: naming the argument whose shape, dtype or value is wrong.
    """
    lead = _batch.batch_shape_of(state.tape, 2)
    return _batch.batched_step(_step_one, lead, state, controls, mask)


def _step_one(state: State, controls: Controls, mask: jax.Array | None) -> tuple[State, jax.Array]:
    # step for one example.
    check_shape("state.tape", state.tape, (None, None), "S, W")
    _, width = jnp.shape(state.tape)
    check_shape("state.jump", state.jump, (), "")
    if not jnp.issubdtype(jnp.result_type(state.jump), jnp.integer):
        raise ValueError(f"state.jump: expected an integer array, got dtype {jnp.result_type(state.jump)}")
    check_floating_fields("state", state, skip=("jump",))
    check_in_range("state.jump", state.jump, 0.0, None)
    _soft_actions.check_controls(controls, len(ACTIONS), width, mask)

    dtype = state.tape.dtype
    work = jnp.promote_types(dtype, jnp.float32)
    tape = update(state.tape.astype(work), controls.actions.astype(work), controls.value.astype(work), state.jump)
    new = State(tape=tape.astype(dtype), jump=state.jump)
    return _soft_actions.masked(mask, new, state, new.tape[0])


def interface_size(width: int) -> int:
    """Length of the raw interface: ``5 + W`` (action logits, then the value)."""
    return len(ACTIONS) + positive_int("width", width)


WRITE_ACTIVATIONS = ("tanh", "linear")  # the written value: tanh (the library's) or as it is (Delétang et al.'s code)


def controls_from_interface(raw: jax.Array, width: int, write: str = "tanh") -> Controls:
    """Split and activate a raw controller output into ``Controls``.

    The actions are a softmax over the five action logits (as the Stack-RNN's,
    Joulin & Mikolov 2015 Eq. 3, which Delétang et al.'s Tape-RNN follows); the
    written value is a tanh (the library's choice, see the module docstring);
    ``write="linear"`` writes the pre-activation itself (Delétang et al. 2023's
    released Tape-RNN, which writes its value MLP's linear output).

    Layout of ``raw`` (last axis, ``5 + W`` values): ``raw[..., 0:5]`` the
    logits of (write-stay, write-left, write-right, jump-left, jump-right),
    ``raw[..., 5:5+W]`` the value's pre-activation.

    Args:
      raw: ``[..., 5 + W]`` (leading axes, e.g. a batch, are kept).
      width: ``W``.
      write: ``"tanh"`` (default) or ``"linear"``: the written value's activation.

    Returns:
      ``Controls`` whose fields carry the leading axes of ``raw``:
      ``actions [..., 5]``, ``value [..., W]``.

    Raises:
      ValueError: naming ``width``, ``raw`` or ``write`` when invalid.
    """
    if write not in WRITE_ACTIVATIONS:
        raise UserError(f"write: expected one of {list(WRITE_ACTIVATIONS)}, got {write!r}")
    value_fn = jnp.tanh if write == "tanh" else (lambda v: v)
    actions, value = _soft_actions.split_interface(raw, interface_size(width), len(ACTIONS), value_fn)
    return Controls(actions=actions, value=value)
