"""The Stack-RNN's continuous stack (Joulin & Mikolov 2015).

Implements the stack of Joulin & Mikolov 2015, "Inferring Algorithmic Patterns
with Stack-Augmented Recurrent Nets" (NeurIPS 2015), §3 (the pushdown
network) with the no-op action the paper offers as a variant, in the form
Delétang et al. 2023, "Neural Networks and the Chomsky Hierarchy" (ICLR 2023),
use as their Stack-RNN baseline: a stack of ``S`` cells whose elements are vectors of width
``W`` (Joulin & Mikolov's elements are scalars, ``W = 1``).

A step takes a distribution ``a_t = (a_push, a_pop, a_noop)`` over the three
actions (a softmax of the controller's output, Eq. 3) and a value ``v_t`` to
push, and replaces every cell by the ``a_t``-weighted mixture of what the cell
would hold after each discrete action. With ``s[0]`` the top::

    s_t[0] = a_push v_t         + a_pop s_{t-1}[1]   + a_noop s_{t-1}[0]      (Eq. 4 + no-op)
    s_t[i] = a_push s_{t-1}[i-1] + a_pop s_{t-1}[i+1] + a_noop s_{t-1}[i]     (Eq. 5 + no-op), i >= 1

A push shifts every cell one place down, a pop one place up, a no-op keeps
them; the new stack is the mixture of the three shifted copies, so a step is
three shifted views of ``[S, W]`` and two adds (no loop over cells).

Choices where the papers leave the details open:

* Fixed size ``S`` (Joulin & Mikolov's stack is unbounded; Delétang et al. fix
  ``S``). Boundaries: a cell below the bottom reads as zero (a pop moves a zero
  into ``s[S-1]``), and a push moves ``s_{t-1}[S-1]`` off the bottom, where it
  is lost. An empty stack is all zeros.
* The read, what the controller sees, is the top cell ``s_t[0]`` of the new
  stack (Delétang et al. read the top cell; Joulin & Mikolov feed the top ``k``
  cells ``s^k_{t-1}`` into the next hidden state, Eq. 6: use ``read_top`` for
  ``k > 1``). The controller at step ``t + 1`` reads it, as Eq. 6 reads
  ``s_{t-1}`` at step ``t``.
* The pushed value goes through a sigmoid, ``v_t = sigmoid(D h_t)`` (Eq. 4), in
  ``controls_from_interface``; a module that wants another activation builds
  ``Controls`` itself (the step accepts any real ``v_t``).
* The no-op is always present (three actions); Joulin & Mikolov add it as an
  option. Drive ``a_noop = 0`` for their two-action stack.

API: ``State``, ``Controls``, ``init_state``, ``step``, ``update`` (Eq. 4-5),
``read_top``, ``interface_size``, ``controls_from_interface``. Leading axes (the
rule of ``panm_jax.kernels``): ``init_state(..., batch_shape)``, ``step`` and
``read_top`` take any leading (batch) axes; ``update`` is written for one
example (``jax.vmap`` it).

Dtypes: the state keeps the dtype ``init_state`` gave it; float16 and bfloat16
states are stepped in float32 and the new state is rounded back.

Notation: ``S`` stack size (cells), ``W`` cell width.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from panm_jax.checks import positive_int
from panm_jax.errors import UserError
from panm_jax.kernels import _batch, _soft_actions
from panm_jax.kernels._batch import check_batch_shape
from panm_jax.kernels.validation import check_float_dtype, check_floating_fields, check_shape, check_state_sizes

__all__ = [
    "ACTIONS",
    "Controls",
    "State",
    "controls_from_interface",
    "init_state",
    "interface_size",
    "read_top",
    "step",
    "update",
]

# The order of the action axis of Controls.actions and of the raw interface.
ACTIONS = ("push", "pop", "noop")


class State(NamedTuple):
    """State of one Stack-RNN stack (arrays only)."""

    stack: jax.Array  # [S, W] s_t: row 0 is the top, row S-1 the bottom; zeros when empty


class Controls(NamedTuple):
    """Activated controls of one Stack-RNN step."""

    actions: jax.Array  # [3] a_t = (a_push, a_pop, a_noop), probabilities summing to 1 (softmax)
    value: jax.Array  # [W] v_t, the value to push, in (0, 1) (sigmoid)


def init_state(size: int, width: int, dtype=jnp.float32, *, batch_shape: tuple[int, ...] = ()) -> State:
    """An empty stack: ``S = size`` cells of width ``W = width``, all zero.

    Args:
      size: ``S`` >= 1, the number of cells (fixed for the episode).
      width: ``W`` >= 1, the width of a cell.
      dtype: a real floating dtype.
      batch_shape: leading (batch) axes in front of the stack (``()``: one example).

    Returns:
      ``State`` with a zero ``[..., S, W]`` stack (``...`` = ``batch_shape``).

    Raises:
      ValueError: naming ``size``, ``width``, ``dtype`` or ``batch_shape`` when
        invalid, or sizes too large to index or allocate, before anything is allocated.
    """
    size = positive_int("size", size)
    width = positive_int("width", width)
    dt = check_float_dtype("dtype", dtype)
    lead = check_batch_shape(batch_shape)
    check_state_sizes({"state.stack": ((size, width), ("size", "width"))}, lead, dt)
    return State(stack=jnp.zeros((*lead, size, width), dt))


def update(stack: jax.Array, actions: jax.Array, value: jax.Array) -> jax.Array:
    """The stack after one soft push / pop / no-op.

    Implements Joulin & Mikolov 2015, "Inferring Algorithmic Patterns with
    Stack-Augmented Recurrent Nets", §3, Eq. (4)-(5), with the no-op action the
    paper offers as a variant (a third term keeping each cell), for vector cells::

        s_t[0] = a_push v_t          + a_pop s_{t-1}[1]   + a_noop s_{t-1}[0]
        s_t[i] = a_push s_{t-1}[i-1] + a_pop s_{t-1}[i+1] + a_noop s_{t-1}[i],  1 <= i < S
        s_{t-1}[S] = 0  (below the bottom reads as zero)

    Vectorised: ``down = [v_t; s_{t-1}[:-1]]`` (every cell moved one place
    down, ``v_t`` on top), ``up = [s_{t-1}[1:]; 0]`` (one place up, a zero at
    the bottom), ``s_t = a_push down + a_pop up + a_noop s_{t-1}``.

    Args:
      stack: ``[S, W]`` ``s_{t-1}``, row 0 the top.
      actions: ``[3]`` ``(a_push, a_pop, a_noop)``.
      value: ``[W]`` ``v_t``.

    Returns:
      ``[S, W]`` ``s_t``.
    """
    down = jnp.concatenate([value[None, :].astype(stack.dtype), stack[:-1]], axis=0)
    up = jnp.concatenate([stack[1:], jnp.zeros_like(stack[:1])], axis=0)
    a = actions.astype(stack.dtype)
    return a[0] * down + a[1] * up + a[2] * stack


def read_top(state: State, k: int = 1) -> jax.Array:
    """The top ``k`` cells ``s_t^k = s_t[0:k]``, what Joulin & Mikolov's Eq. (6) feeds the controller.

    Args:
      state: a ``State`` (``[..., S, W]``).
      k: ``1 <= k <= S`` (static).

    Returns:
      ``[..., k, W]``, the top first.

    Raises:
      ValueError: naming ``k`` when it is not a positive int or exceeds ``S``.
    """
    k = positive_int("k", k)
    check_shape("state.stack", state.stack, (*jnp.shape(state.stack)[:-2], None, None), "..., S, W")
    size = jnp.shape(state.stack)[-2]
    if k > size:
        raise ValueError(f"k: expected at most S = {size} cells, got {k}")
    return state.stack[..., :k, :]


def step(state: State, controls: Controls, mask: jax.Array | None = None) -> tuple[State, jax.Array]:
    """One Stack-RNN stack step: the soft push / pop / no-op (``update``), then the read.

    Shapes and dtypes (real floating) are checked at trace time; in an eager
    call, where values are concrete, also that ``controls.actions`` lie in
    ``[0, 1]`` and sum to 1 (``validation.RANGE_SLACK``).

    Args:
      state: ``State`` (``[S, W]`` stack).
      controls: ``Controls`` (``[3]`` actions, ``[W]`` value).
      mask: optional ``[]``; where 0 (a padding step) the state is returned
        unchanged and the read is zeros.

    Leading axes: the state, controls and mask may carry the same leading (batch)
    axes ``[...]`` in front of these shapes; the step is then mapped over them
    (``jax.vmap``, at trace time).

    Returns:
      ``(new_state, read [W])`` with ``read = s_t[0]``, the new top.

    Raises:
      ValueError: naming the argument whose shape, dtype or value is wrong.
    """
    lead = _batch.batch_shape_of(state.stack, 2)
    return _batch.batched_step(_step_one, lead, state, controls, mask)


def _step_one(state: State, controls: Controls, mask: jax.Array | None) -> tuple[State, jax.Array]:
    # step for one example.
    check_shape("state.stack", state.stack, (None, None), "S, W")
    _, width = jnp.shape(state.stack)
    check_floating_fields("state", state)
    _soft_actions.check_controls(controls, len(ACTIONS), width, mask)

    dtype = state.stack.dtype
    work = jnp.promote_types(dtype, jnp.float32)
    stack = update(state.stack.astype(work), controls.actions.astype(work), controls.value.astype(work))
    new = State(stack=stack.astype(dtype))
    return _soft_actions.masked(mask, new, state, new.stack[0])


def interface_size(width: int) -> int:
    """Length of the raw interface: ``3 + W`` (action logits, then the value)."""
    return len(ACTIONS) + positive_int("width", width)


PUSH_ACTIVATIONS = ("sigmoid", "linear")  # the pushed value: Joulin & Mikolov's sigmoid, or D h_t as it is


def controls_from_interface(raw: jax.Array, width: int, push: str = "sigmoid") -> Controls:
    """Split and activate a raw controller output into ``Controls``.

    Joulin & Mikolov 2015, §3: ``a_t = softmax(A h_t)`` (Eq. 3) and the pushed
    value ``sigmoid(D h_t)`` (Eq. 4); ``push="linear"`` pushes ``D h_t`` itself
    (Delétang et al. 2023's released Stack-RNN, whose pushed value is a linear layer's output).

    Layout of ``raw`` (last axis, ``3 + W`` values): ``raw[..., 0:3]`` the
    logits of (push, pop, no-op), ``raw[..., 3:3+W]`` the value's
    pre-activation.

    Args:
      raw: ``[..., 3 + W]`` (leading axes, e.g. a batch, are kept).
      width: ``W``.
      push: ``"sigmoid"`` (default) or ``"linear"``: the pushed value's activation.

    Returns:
      ``Controls`` whose fields carry the leading axes of ``raw``:
      ``actions [..., 3]``, ``value [..., W]``.

    Raises:
      ValueError: naming ``width`` or ``raw`` when invalid.
    """
    if push not in PUSH_ACTIVATIONS:
        raise UserError(f"push: expected one of {list(PUSH_ACTIVATIONS)}, got {push!r}")
    value_fn = jax.nn.sigmoid if push == "sigmoid" else (lambda v: v)
    actions, value = _soft_actions.split_interface(raw, interface_size(width), len(ACTIONS), value_fn)
    return Controls(actions=actions, value=value)
