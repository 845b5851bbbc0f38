"""Continuous neural Stack, Queue and DeQue (Grefenstette et al. 2015).

Implements Grefenstette et al. 2015 (Learning to Transduce with Unbounded Memory, NeurIPS):
the neural Stack (§3.1, Eq. 1-3) and the neural Queue (§3.2, Eq. 4-5), and the
neural DeQue of the same paper (§3.3, Eq. 6-11; transcribed from the paper's
prose: push, pop and read at both ends).

Each structure is a value matrix ``V_t`` whose rows are the pushed vectors and a
strength vector ``s_t`` saying how much of each row is still "on" the structure.
A step pops (reduces ``s_{t-1}``), pushes (appends ``v_t`` with strength
``d_t``), then reads ``s_t`` (paper order). The paper traverses the strengths
one slot at a time; here every traversal is one (reverse) cumulative sum over
slots, ``O(C)`` work with no loop over slots and no ``[C, C]`` matrix:

* the Stack pops and reads from the highest index down: the quantity left when
  slot ``i`` is reached is ``u - sum_{j > i} s[j]`` (an exclusive suffix sum);
* the Queue pops and reads from the lowest index up: ``u - sum_{j < i} s[j]``
  (an exclusive prefix sum);
* the DeQue pops at the top (suffix sums), then at the bottom (prefix sums of the
  top-popped strengths), pushes a row at each end, and reads each end.

Capacity contract (the paper's ``V_t`` grows by a row per step; here it is
preallocated): ``V`` has a static capacity of ``C`` rows (``2C`` for the DeQue,
``C`` per end) and ``size`` counts the rows written. Every step pushes a row, as
in Eq. 1, whatever ``d_t``, so the caller (the module) sets ``C`` to the number
of steps. A step that arrives when all rows are written still pops and reads,
but its push is dropped (no row or strength changes, the top is never
overwritten) and the state's ``overflow`` flag is set and stays set.

Footnote 1 of the paper: at ``x = y``, the derivative of ``max(x, y)`` and
``min(x, y)`` is taken with respect to the LEFT argument. ``jnp.maximum`` and
``jnp.minimum`` split it 0.5 / 0.5 between the arguments at ties, so the
equations use ``left_max`` and ``left_min`` (``jnp.where(x >= y, x, y)``), whose
derivative at a tie is 1 for ``x`` and 0 for ``y``.

API (one example at a time; modules add the batch axis with ``jax.vmap``):

* states and controls: ``StackState`` (``QueueState`` is the same type),
  ``StackControls`` (``QueueControls``), ``DequeState``, ``DequeControls``,
  ``DequeRead``;
* ``stack_init_state``, ``queue_init_state``, ``deque_init_state``;
* ``stack_step``, ``queue_step``, ``deque_step``:
  ``(state, controls, mask=None) -> (state, read)``;
* ``stack_controls_from_interface``, ``queue_controls_from_interface``,
  ``deque_controls_from_interface`` and ``stack_interface_size``,
  ``deque_interface_size``;
* the equations: ``push`` (Eq. 1, 2/4 second case), ``stack_pop_strengths``
  (Eq. 2), ``stack_read_weights`` / ``stack_read`` (Eq. 3),
  ``queue_pop_strengths`` (Eq. 4), ``queue_read_weights`` / ``queue_read``
  (Eq. 5), ``deque_push`` (Eq. 6, 9), ``deque_pop_strengths`` (Eq. 7-8),
  ``deque_read`` (Eq. 10-11).

Dtypes: states keep the dtype ``*_init_state`` gave them. float16 and bfloat16
states are stepped in float32 (their cumulative sums over up to ``C`` strengths
need more than 8 or 11 bits) and the new state is rounded back.

Notation: ``C`` capacity (steps), ``W`` word size (the paper's ``m``). The
paper's indices start at 1 and ``V_t[i] = v_i``; here row ``i`` (from 0) holds
the vector pushed at step ``i + 1``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from panm_jax.kernels.scan import select
from panm_jax.kernels.validation import (
    check_float_dtype,
    check_floating,
    check_floating_fields,
    check_in_range,
    check_positive_int,
    check_shape,
)

__all__ = [
    "DequeControls",
    "DequeRead",
    "DequeState",
    "QueueControls",
    "QueueState",
    "StackControls",
    "StackState",
    "deque_controls_from_interface",
    "deque_init_state",
    "deque_interface_size",
    "deque_pop_strengths",
    "deque_push",
    "deque_read",
    "deque_step",
    "left_max",
    "left_min",
    "push",
    "queue_controls_from_interface",
    "queue_init_state",
    "queue_pop_strengths",
    "queue_read",
    "queue_read_weights",
    "queue_step",
    "stack_controls_from_interface",
    "stack_init_state",
    "stack_interface_size",
    "stack_pop_strengths",
    "stack_read",
    "stack_read_weights",
    "stack_step",
]


# ---- states, controls, reads -------------------------------------------------


class StackState(NamedTuple):
    """State of one neural Stack or Queue (arrays only); ``QueueState`` is this type."""

    values: jax.Array  # [C, W] V_t: row i holds v_{i+1}, the vector pushed at step i + 1; zero beyond `size`
    strengths: jax.Array  # [C]    s_t in [0, 1], zero beyond `size`
    size: jax.Array  # []     int32, rows written so far (t, at most C)
    overflow: jax.Array  # []     bool, True once a push arrived with all C rows written (it was dropped)


QueueState = StackState


class StackControls(NamedTuple):
    """Activated controls of one Stack or Queue step; ``QueueControls`` is this type."""

    push: jax.Array  # []  d_t in (0, 1), push strength (sigmoid)
    pop: jax.Array  # []  u_t in (0, 1), pop strength (sigmoid)
    value: jax.Array  # [W] v_t in (-1, 1), the pushed vector (tanh)


QueueControls = StackControls


class DequeState(NamedTuple):
    """State of one neural DeQue (arrays only).

    Layout: ``2C`` rows with the centre between rows ``C - 1`` and ``C``. Step
    ``t`` (from 1) writes its bottom vector at row ``C - t`` and its top vector at
    row ``C + t - 1``, so after ``size`` steps rows ``[C - size, C + size)`` are
    written (lowest index = bottom, highest = top, as the paper's ``V_t``) and
    every other row and strength is zero.
    """

    values: jax.Array  # [2C, W] V_t; rows [C - size, C + size) written, zero elsewhere
    strengths: jax.Array  # [2C]    s_t in [0, 1], zero outside the written rows
    size: jax.Array  # []      int32, steps taken (rows written per end, at most C)
    overflow: jax.Array  # []      bool, True once a step arrived with both ends full (its pushes dropped)


class DequeControls(NamedTuple):
    """Activated controls of one DeQue step: a push, pop and value per end."""

    push_top: jax.Array  # []  d_t^top in (0, 1) (sigmoid)
    pop_top: jax.Array  # []  u_t^top in (0, 1) (sigmoid)
    value_top: jax.Array  # [W] v_t^top in (-1, 1) (tanh)
    push_bottom: jax.Array  # []  d_t^bot in (0, 1) (sigmoid)
    pop_bottom: jax.Array  # []  u_t^bot in (0, 1) (sigmoid)
    value_bottom: jax.Array  # [W] v_t^bot in (-1, 1) (tanh)


class DequeRead(NamedTuple):
    """The two reads of a DeQue step."""

    top: jax.Array  # [W] r_t^top, read from the highest index down
    bottom: jax.Array  # [W] r_t^bot, read from the lowest index up


# ---- footnote 1: max/min with the derivative on the left argument at ties ----


def left_max(x: jax.Array | float, y: jax.Array | float) -> jax.Array:
    """``max(x, y)`` whose derivative at ``x == y`` goes to the left argument ``x``.

    Implements footnote 1 of Grefenstette et al. 2015: "we arbitrarily take the
    partial differentiation of the left argument in these cases". Written as
    ``where(x >= y, x, y)``: at a tie the ``x`` branch is selected, so
    ``d/dx = 1`` and ``d/dy = 0``. (``jnp.maximum`` gives ``0.5`` to each argument at a tie.) Broadcasts like
    ``jnp.where``.
    """
    return jnp.where(x >= y, x, y)


def left_min(x: jax.Array | float, y: jax.Array | float) -> jax.Array:
    """``min(x, y)`` whose derivative at ``x == y`` goes to the left argument ``x``.

    Footnote 1 of Grefenstette et al. 2015, as ``left_max``:
    ``where(x <= y, x, y)`` (``jnp.minimum`` splits the derivative 0.5 / 0.5).
    """
    return jnp.where(x <= y, x, y)


# ---- traversals as cumulative sums -------------------------------------------


def _sum_above(strengths: jax.Array) -> jax.Array:
    # out[i] = sum_{j > i} s[j]: what a traversal from the highest index down has
    # met before reaching slot i. The inclusive reverse cumsum shifted by one slot
    # (not "inclusive - s", which leaves round-off where the sum should be exact).
    inclusive = jax.lax.cumsum(strengths, axis=strengths.ndim - 1, reverse=True)
    zero = jnp.zeros_like(strengths[..., :1])
    return jnp.concatenate([inclusive[..., 1:], zero], axis=-1)


def _sum_below(strengths: jax.Array) -> jax.Array:
    # out[i] = sum_{j < i} s[j]: what a traversal from the lowest index up has met
    # before reaching slot i (exclusive prefix sum).
    inclusive = jnp.cumsum(strengths, axis=-1)
    zero = jnp.zeros_like(strengths[..., :1])
    return jnp.concatenate([zero, inclusive[..., :-1]], axis=-1)


def _pop(strengths: jax.Array, pop: jax.Array, met: jax.Array) -> jax.Array:
    # max(0, s[i] - max(0, u - met[i])): the deletion quantity left at slot i is
    # u minus the strength already met; it removes up to s[i] there.
    return left_max(0.0, strengths - left_max(0.0, pop - met))


def _read_weights(strengths: jax.Array, met: jax.Array) -> jax.Array:
    # min(s[i], max(0, 1 - met[i])): the read quantity 1 left at slot i.
    return left_min(strengths, left_max(0.0, 1.0 - met))


# ---- the Stack (Eq. 1-3) and the Queue (Eq. 4-5) -----------------------------


def stack_pop_strengths(strengths: jax.Array, pop: jax.Array) -> jax.Array:
    """Pop from the top of a Stack: strengths after removing ``u_t`` from the top.

    Implements Eq. (2), first case, of Grefenstette et al. 2015. ``strengths`` is
    ``s_{t-1}``, ``pop`` is ``u_t``:

        s_t[i] = max(0, s_{t-1}[i] - max(0, u_t - sum_{j=i+1}^{t-1} s_{t-1}[j]))

    i.e. the deletion quantity ``u_t`` traverses ``s_{t-1}`` from the highest
    index to the lowest, zeroing strengths smaller than what is left of it and
    reducing the first one that is larger. The inner sum is one reverse
    cumulative sum.

    Args:
      strengths: ``[C]`` ``s_{t-1}`` (zero in slots not yet written, which stay
        zero).
      pop: ``[]`` ``u_t`` in ``[0, 1]``.

    Returns:
      ``[C]`` the popped strengths (``s_t`` before this step's push).

    Note: max follows footnote 1 (``left_max``): at a tie the derivative goes to
    the left argument, here the constant 0 of the outer max and inner max.
    """
    return _pop(strengths, pop, _sum_above(strengths))


def queue_pop_strengths(strengths: jax.Array, pop: jax.Array) -> jax.Array:
    """Pop from the front of a Queue: strengths after removing ``u_t`` from the front.

    Implements Eq. (4), first case, of Grefenstette et al. 2015. ``strengths`` is
    ``s_{t-1}``, ``pop`` is ``u_t``:

        s_t[i] = max(0, s_{t-1}[i] - max(0, u_t - sum_{j=1}^{i-1} s_{t-1}[j]))

    the Stack's pop traversed from the lowest index (the oldest row, the front)
    up. The inner sum is one cumulative sum.

    Args:
      strengths: ``[C]`` ``s_{t-1}`` (zero in slots not yet written).
      pop: ``[]`` ``u_t`` in ``[0, 1]``.

    Returns:
      ``[C]`` the popped strengths (``s_t`` before this step's push).

    Note: max follows footnote 1 (``left_max``).
    """
    return _pop(strengths, pop, _sum_below(strengths))


def _write_row(
    values: jax.Array,
    strengths: jax.Array,
    row: jax.Array,
    value: jax.Array,
    strength: jax.Array,
    drop: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    # Write (value, strength) into `row` unless `drop`, in which case the row is
    # written back unchanged: `row` is always in range, so nothing is clipped
    # onto (and overwrites) another row. O(W) per step: one dynamic update.
    old_value = jax.lax.dynamic_index_in_dim(values, row, axis=0, keepdims=False)
    old_strength = jax.lax.dynamic_index_in_dim(strengths, row, axis=0, keepdims=False)
    new_value = jnp.where(drop, old_value, value.astype(values.dtype))
    new_strength = jnp.where(drop, old_strength, jnp.asarray(strength, strengths.dtype))
    values = jax.lax.dynamic_update_index_in_dim(values, new_value, row, axis=0)
    strengths = jax.lax.dynamic_update_index_in_dim(strengths, new_strength, row, axis=0)
    return values, strengths


def push(
    values: jax.Array,
    strengths: jax.Array,
    size: jax.Array,
    value: jax.Array,
    strength: jax.Array,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Push ``v_t`` with strength ``d_t`` onto a Stack or the back of a Queue.

    Implements Eq. (1) and the second case of Eq. (2) (and of Eq. (4)) of
    Grefenstette et al. 2015. ``values`` is
    ``V_{t-1}``, ``strengths`` the popped ``s_t[1..t-1]``, ``size`` is ``t - 1``,
    ``value`` is ``v_t``, ``strength`` is ``d_t``:

        V_t[i] = V_{t-1}[i] if 1 <= i < t,  v_t if i = t        (Eq. 1)
        s_t[t] = d_t                                            (Eq. 2, 4)

    Rows are appended at index ``size`` and never changed afterwards.

    Args:
      values: ``[C, W]`` ``V_{t-1}``, rows ``>= size`` zero.
      strengths: ``[C]`` popped strengths, zero from ``size`` on.
      size: ``[]`` int32, rows written so far (``t - 1``).
      value: ``[W]`` ``v_t``.
      strength: ``[]`` ``d_t``.

    Returns:
      ``(values [C, W], strengths [C], size [], dropped [])``: ``V_t``, ``s_t``,
      ``t`` and a bool that is True when the push was dropped.

    Deviation: ``V`` is preallocated to ``C`` rows. When ``size == C`` (full) the
    push is dropped: values, strengths and size are returned unchanged and
    ``dropped`` is True (the step kernels record it in ``overflow``).
    """
    capacity = values.shape[0]
    dropped = size >= capacity
    row = jnp.minimum(size, capacity - 1)
    values, strengths = _write_row(values, strengths, row, value, strength, dropped)
    size = jnp.where(dropped, size, size + 1).astype(jnp.int32)
    return values, strengths, size, dropped


def stack_read_weights(strengths: jax.Array) -> jax.Array:
    """Read weights of a Stack: the top unit of strength, taken from the top down.

    Implements the weights of Eq. (3) of Grefenstette et al. 2015. ``strengths`` is ``s_t``:

        w_t[i] = min(s_t[i], max(0, 1 - sum_{j=i+1}^{t} s_t[j]))

    A read quantity of 1 traverses ``s_t`` from the highest index down; each slot
    keeps its strength while it fits, the slot where the quantity runs out keeps
    what is left, and lower slots get 0. One reverse cumulative sum.

    Args:
      strengths: ``[C]`` ``s_t``.

    Returns:
      ``[C]`` weights in ``[0, 1]`` summing to ``min(1, sum s_t)``.

    Note: min/max follow footnote 1 (``left_min`` / ``left_max``).
    """
    return _read_weights(strengths, _sum_above(strengths))


def stack_read(values: jax.Array, strengths: jax.Array) -> jax.Array:
    """Read a Stack: the strength-weighted sum of the rows nearest the top.

    Implements Eq. (3) of Grefenstette et al. 2015. ``values`` is ``V_t``, ``strengths`` is ``s_t``:

        r_t = sum_{i=1}^{t} min(s_t[i], max(0, 1 - sum_{j=i+1}^{t} s_t[j])) V_t[i]

    Args:
      values: ``[C, W]`` ``V_t``.
      strengths: ``[C]`` ``s_t``.

    Returns:
      ``[W]`` ``r_t``: ``stack_read_weights(s_t) @ V_t``.
    """
    return stack_read_weights(strengths) @ values


def queue_read_weights(strengths: jax.Array) -> jax.Array:
    """Read weights of a Queue: the front unit of strength, taken from the front up.

    Implements the weights of Eq. (5) of Grefenstette et al. 2015 (the Queue read,
    announced in §3.2 as "Equations 4-5").
    ``strengths`` is ``s_t``:

        w_t[i] = min(s_t[i], max(0, 1 - sum_{j=1}^{i-1} s_t[j]))

    the Stack's read (Eq. 3) traversed from the lowest index up.

    Args:
      strengths: ``[C]`` ``s_t``.

    Returns:
      ``[C]`` weights in ``[0, 1]`` summing to ``min(1, sum s_t)``.

    Note: min/max follow footnote 1 (``left_min`` / ``left_max``).
    """
    return _read_weights(strengths, _sum_below(strengths))


def queue_read(values: jax.Array, strengths: jax.Array) -> jax.Array:
    """Read a Queue: the strength-weighted sum of the rows nearest the front.

    Implements Eq. (5) of Grefenstette et al. 2015 (announced in §3.2,
    "Equations 4-5"). ``values`` is ``V_t``, ``strengths`` is ``s_t``:

        r_t = sum_{i=1}^{t} min(s_t[i], max(0, 1 - sum_{j=1}^{i-1} s_t[j])) V_t[i]

    Args:
      values: ``[C, W]`` ``V_t``.
      strengths: ``[C]`` ``s_t``.

    Returns:
      ``[W]`` ``r_t``: ``queue_read_weights(s_t) @ V_t``.
    """
    return queue_read_weights(strengths) @ values


# ---- the DeQue (§3.3, Eq. 6-11 of the paper) ---------------------------------


def deque_pop_strengths(strengths: jax.Array, pop_top: jax.Array, pop_bottom: jax.Array) -> jax.Array:
    """Pop both ends of a DeQue: first ``u_t^top`` from the top, then ``u_t^bot`` from the bottom.

    Implements Eq. (7)-(8) of Grefenstette et al. 2015 (§3.3, the DeQue;
    transcribed from the paper's prose). ``strengths`` is ``s_{t-1}``,
    ``pop_top`` is ``u_t^top``, ``pop_bottom`` is ``u_t^bot``:

        s^top_t[i]  = max(0, s_{t-1}[i] - max(0, u^top_t - sum_{j > i} s_{t-1}[j]))   (Eq. 7)
        s^both_t[i] = max(0, s^top_t[i] - max(0, u^bot_t - sum_{j < i} s^top_t[j]))   (Eq. 8)

    the Stack's pop (highest index down), then the Queue's pop (lowest index up)
    applied to its result.

    Args:
      strengths: ``[2C]`` ``s_{t-1}`` (zero outside the written rows).
      pop_top: ``[]`` ``u_t^top``.
      pop_bottom: ``[]`` ``u_t^bot``.

    Returns:
      ``[2C]`` ``s^both_t``, the strengths before this step's pushes.

    Note: max follows footnote 1 (``left_max``).
    """
    return queue_pop_strengths(stack_pop_strengths(strengths, pop_top), pop_bottom)


def deque_push(
    values: jax.Array,
    strengths: jax.Array,
    size: jax.Array,
    value_top: jax.Array,
    strength_top: jax.Array,
    value_bottom: jax.Array,
    strength_bottom: jax.Array,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Push ``v_t^top`` above the top and ``v_t^bot`` below the bottom of a DeQue.

    Implements Eq. (6) and (9) of Grefenstette et al. 2015 (§3.3, the DeQue;
    transcribed from the paper's prose). ``values`` is
    ``V_{t-1}``, ``strengths`` is ``s^both_t``, ``size`` is ``t - 1``:

        V_t = [v_t^bot; V_{t-1}; v_t^top]                      (Eq. 6)
        s_t = [d_t^bot; s^both_t; d_t^top]                     (Eq. 9)

    Args:
      values: ``[2C, W]`` ``V_{t-1}`` in the ``DequeState`` layout.
      strengths: ``[2C]`` popped strengths.
      size: ``[]`` int32, steps taken so far (``t - 1``).
      value_top, value_bottom: ``[W]`` ``v_t^top``, ``v_t^bot``.
      strength_top, strength_bottom: ``[]`` ``d_t^top``, ``d_t^bot``.

    Returns:
      ``(values [2C, W], strengths [2C], size [], dropped [])``.

    Deviation: the paper prepends a row, shifting every index by one; here the
    bottom row is written at index ``C - 1 - size`` and the top row at
    ``C + size`` of a preallocated ``2C`` array, so no row moves. When
    ``size == C`` both pushes are dropped (nothing changes) and ``dropped`` is
    True.
    """
    capacity = values.shape[0] // 2
    dropped = size >= capacity
    top_row = jnp.minimum(capacity + size, 2 * capacity - 1)
    bottom_row = jnp.maximum(capacity - 1 - size, 0)
    values, strengths = _write_row(values, strengths, bottom_row, value_bottom, strength_bottom, dropped)
    values, strengths = _write_row(values, strengths, top_row, value_top, strength_top, dropped)
    size = jnp.where(dropped, size, size + 1).astype(jnp.int32)
    return values, strengths, size, dropped


def deque_read(values: jax.Array, strengths: jax.Array) -> DequeRead:
    """Read both ends of a DeQue.

    Implements Eq. (10)-(11) of Grefenstette et al. 2015 (§3.3; transcribed
    from the paper's prose): ``values`` is ``V_t``, ``strengths``
    is ``s_t``:

        r^top_t = sum_i min(s_t[i], max(0, 1 - sum_{j > i} s_t[j])) V_t[i]   (Eq. 10, the Stack read)
        r^bot_t = sum_i min(s_t[i], max(0, 1 - sum_{j < i} s_t[j])) V_t[i]   (Eq. 11, the Queue read)

    Args:
      values: ``[2C, W]`` ``V_t``.
      strengths: ``[2C]`` ``s_t``.

    Returns:
      ``DequeRead(top [W], bottom [W])``.
    """
    return DequeRead(top=stack_read(values, strengths), bottom=queue_read(values, strengths))


# ---- init, validation, step --------------------------------------------------


def _empty(rows: int, width: int, dtype) -> tuple[jax.Array, ...]:
    dt = check_float_dtype("dtype", dtype)
    return (
        jnp.zeros((rows, width), dt),
        jnp.zeros((rows,), dt),
        jnp.zeros((), jnp.int32),
        jnp.zeros((), bool),
    )


def stack_init_state(capacity: int, width: int, dtype=jnp.float32) -> StackState:
    """An empty Stack of ``capacity`` rows (``C``) of ``width`` (``W``).

    Args:
      capacity: ``C`` >= 1, the number of steps the Stack will see (each pushes a row).
      width: ``W`` >= 1, the paper's embedding size ``m``.
      dtype: a floating dtype for values and strengths.

    Returns:
      ``StackState`` with zero values ``[C, W]``, zero strengths ``[C]``, size 0,
      overflow False.

    Raises:
      ValueError: naming ``capacity``, ``width`` or ``dtype`` when invalid.
    """
    capacity = check_positive_int("capacity", capacity)
    width = check_positive_int("width", width)
    return StackState(*_empty(capacity, width, dtype))


def queue_init_state(capacity: int, width: int, dtype=jnp.float32) -> QueueState:
    """An empty Queue of ``capacity`` rows of ``width``: see ``stack_init_state``."""
    return stack_init_state(capacity, width, dtype)


def deque_init_state(capacity: int, width: int, dtype=jnp.float32) -> DequeState:
    """An empty DeQue with room for ``capacity`` steps (``2C`` rows, ``C`` per end).

    Args:
      capacity: ``C`` >= 1, the number of steps (each pushes one row at each end).
      width: ``W`` >= 1.
      dtype: a floating dtype for values and strengths.

    Returns:
      ``DequeState`` with zero values ``[2C, W]``, zero strengths ``[2C]``, size 0,
      overflow False.

    Raises:
      ValueError: naming ``capacity``, ``width`` or ``dtype`` when invalid.
    """
    capacity = check_positive_int("capacity", capacity)
    width = check_positive_int("width", width)
    return DequeState(*_empty(2 * capacity, width, dtype))


def _check_state(state: StackState | DequeState, rows_per_step: int) -> tuple[int, int]:
    # rows_per_step: 1 for the Stack and Queue ([C] rows), 2 for the DeQue ([2C]).
    row_dim = "C" if rows_per_step == 1 else "2C"
    check_shape("state.values", state.values, (None, None), f"{row_dim}, W")
    rows, width = state.values.shape
    if rows % rows_per_step:
        raise ValueError(f"state.values: expected an even number of rows [2C, W], got {state.values.shape}")
    check_shape("state.strengths", state.strengths, (rows,), row_dim)
    check_shape("state.size", state.size, (), "")
    check_shape("state.overflow", state.overflow, (), "")
    check_floating_fields("state", state, skip=("size", "overflow"))
    check_in_range("state.strengths", state.strengths, 0.0, 1.0)
    return rows, width


def _check_control_values(controls: StackControls | DequeControls) -> None:
    # dtypes at trace time; push and pop strengths in [0, 1] where concrete (eager calls)
    check_floating_fields("controls", controls)
    for field in controls._fields:
        if field.startswith(("push", "pop")):
            check_in_range(f"controls.{field}", getattr(controls, field), 0.0, 1.0)


def _to_dtype(tree, dtype):
    # Every floating leaf of `tree` cast to `dtype` (sizes and flags are left alone).
    return jax.tree.map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, tree)


def _to_compute_dtype(tree, dtype):
    # 16-bit states step in float32: a bfloat16 sum of up to C strengths keeps 8 bits, and
    # XLA on the CPU crashed differentiating bfloat16 cumulative sums of a few hundred slots.
    work = jnp.promote_types(dtype, jnp.float32)
    return jax.tree.map(
        lambda x: jnp.asarray(x).astype(work) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating) else x, tree
    )


def _finish(mask: jax.Array | None, new, old, read):
    # A masked (padding) step returns the state unchanged and a zero read.
    if mask is None:
        return new, read
    check_shape("mask", mask, (), "")
    keep = jnp.asarray(mask).astype(bool)
    read = jax.tree_util.tree_map(lambda r: jnp.where(keep, r, jnp.zeros_like(r)), read)
    return select(keep, new, old), read


def _linear_step(
    pop_fn: Callable[[jax.Array, jax.Array], jax.Array],
    read_fn: Callable[[jax.Array, jax.Array], jax.Array],
    state: StackState,
    controls: StackControls,
    mask: jax.Array | None,
) -> tuple[StackState, jax.Array]:
    _, width = _check_state(state, 1)
    check_shape("controls.push", controls.push, (), "")
    check_shape("controls.pop", controls.pop, (), "")
    check_shape("controls.value", controls.value, (width,), "W")
    _check_control_values(controls)
    dtype = state.values.dtype
    up_state, up_controls = _to_compute_dtype((state, controls), dtype)
    strengths = pop_fn(up_state.strengths, up_controls.pop)
    values, strengths, size, dropped = push(up_state.values, strengths, state.size, up_controls.value, up_controls.push)
    new, read = _to_dtype(
        (StackState(values, strengths, size, state.overflow | dropped), read_fn(values, strengths)), dtype
    )
    return _finish(mask, new, state, read)


def stack_step(
    state: StackState, controls: StackControls, mask: jax.Array | None = None
) -> tuple[StackState, jax.Array]:
    """One neural Stack step: pop, push, read (Eq. 1-3 in the paper's order).

    ``s_{t-1}`` is popped by ``u_t`` (``stack_pop_strengths``, Eq. 2), ``v_t`` is
    appended with strength ``d_t`` (``push``, Eq. 1 and 2), and ``r_t`` is read
    from ``(V_t, s_t)`` (``stack_read``, Eq. 3).

    Args:
      state: ``StackState`` (``[C, W]`` values, ``[C]`` strengths).
      controls: ``StackControls`` (``[]`` push, ``[]`` pop, ``[W]`` value).
      mask: optional ``[]``; where 0 (padding) the state is returned unchanged
        and the read is zeros.

    Returns:
      ``(state, read [W])``.

    Raises:
      ValueError: at trace time, naming the argument whose shape is wrong.

    A step taken with all ``C`` rows written pops and reads as usual, drops its
    push and sets ``state.overflow`` (see the module docstring).
    """
    return _linear_step(stack_pop_strengths, stack_read, state, controls, mask)


def queue_step(
    state: QueueState, controls: QueueControls, mask: jax.Array | None = None
) -> tuple[QueueState, jax.Array]:
    """One neural Queue step: pop the front, push the back, read the front (Eq. 1, 4, 5).

    As ``stack_step`` with ``queue_pop_strengths`` (Eq. 4) and ``queue_read``
    (Eq. 5): the pop and the read traverse the strengths from the lowest index
    (the oldest row) up.

    Args:
      state: ``QueueState`` (``[C, W]`` values, ``[C]`` strengths).
      controls: ``QueueControls`` (``[]`` push, ``[]`` pop, ``[W]`` value).
      mask: optional ``[]``; where 0 the state is unchanged and the read zero.

    Returns:
      ``(state, read [W])``.
    """
    return _linear_step(queue_pop_strengths, queue_read, state, controls, mask)


def deque_step(
    state: DequeState, controls: DequeControls, mask: jax.Array | None = None
) -> tuple[DequeState, DequeRead]:
    """One neural DeQue step: pop both ends, push both ends, read both ends.

    Order (Grefenstette et al. 2015 §3.3, Eq. 6-11): pop the top by ``u_t^top``
    then the bottom by ``u_t^bot`` (``deque_pop_strengths``), write ``v_t^bot``
    below the bottom and ``v_t^top`` above the top with strengths ``d_t^bot`` and
    ``d_t^top`` (``deque_push``), read the top and the bottom of ``(V_t, s_t)``
    (``deque_read``).

    Args:
      state: ``DequeState`` (``[2C, W]`` values, ``[2C]`` strengths).
      controls: ``DequeControls`` (``[]`` pushes and pops, ``[W]`` values).
      mask: optional ``[]``; where 0 the state is unchanged and both reads zero.

    Returns:
      ``(state, DequeRead(top [W], bottom [W]))``.

    Raises:
      ValueError: at trace time, naming the argument whose shape is wrong.
    """
    _, width = _check_state(state, 2)
    for end in ("top", "bottom"):
        check_shape(f"controls.push_{end}", getattr(controls, f"push_{end}"), (), "")
        check_shape(f"controls.pop_{end}", getattr(controls, f"pop_{end}"), (), "")
        check_shape(f"controls.value_{end}", getattr(controls, f"value_{end}"), (width,), "W")
    _check_control_values(controls)
    dtype = state.values.dtype
    up, c = _to_compute_dtype((state, controls), dtype)
    strengths = deque_pop_strengths(up.strengths, c.pop_top, c.pop_bottom)
    values, strengths, size, dropped = deque_push(
        up.values, strengths, state.size, c.value_top, c.push_top, c.value_bottom, c.push_bottom
    )
    new, read = _to_dtype(
        (DequeState(values, strengths, size, state.overflow | dropped), deque_read(values, strengths)), dtype
    )
    return _finish(mask, new, state, read)


# ---- interface --------------------------------------------------------------


def stack_interface_size(width: int) -> int:
    """Length of a Stack or Queue's raw interface: ``2 + W`` (``[d, u, v]``)."""
    return 2 + check_positive_int("width", width)


def deque_interface_size(width: int) -> int:
    """Length of a DeQue's raw interface: ``2 (2 + W)`` (top block, bottom block)."""
    return 2 * stack_interface_size(width)


def _activate(raw: jax.Array, width: int) -> StackControls:
    # [d^, u^, v^(W)] -> (sigmoid, sigmoid, tanh): the paper's controller outputs
    # d_t = sigmoid(.), u_t = sigmoid(.), v_t = tanh(.).
    return StackControls(push=jax.nn.sigmoid(raw[0]), pop=jax.nn.sigmoid(raw[1]), value=jnp.tanh(raw[2 : 2 + width]))


def stack_controls_from_interface(raw: jax.Array, width: int) -> StackControls:
    """Split and activate a Stack's raw interface vector.

    Grefenstette et al. 2015 (§3.4, the controller): ``d_t = sigmoid(W_d o'_t +
    b_d)``, ``u_t = sigmoid(W_u o'_t + b_u)``, ``v_t = tanh(W_v o'_t + b_v)``.

    Layout of ``raw`` (``[2 + W]``): ``raw[0]`` push logit, ``raw[1]`` pop logit,
    ``raw[2:2+W]`` value pre-activation.

    The paper initialises the pop bias to -1 (so early steps pop little); that is
    the module's projection initialiser, not the kernel's.

    Args:
      raw: ``[2 + W]``.
      width: ``W``.

    Returns:
      ``StackControls`` (``[]``, ``[]``, ``[W]``).

    Raises:
      ValueError: naming ``width`` or ``raw`` when invalid.
    """
    size = stack_interface_size(width)
    check_shape("raw", raw, (size,), "2 + W")
    check_floating("raw", raw)
    return _activate(raw, width)


def queue_controls_from_interface(raw: jax.Array, width: int) -> QueueControls:
    """Split and activate a Queue's raw interface vector (layout as the Stack's)."""
    return stack_controls_from_interface(raw, width)


def deque_controls_from_interface(raw: jax.Array, width: int) -> DequeControls:
    """Split and activate a DeQue's raw interface vector.

    The paper's activations per end (sigmoid push and pop, tanh value). Layout of
    ``raw`` (``[2 (2 + W)]``): the top block ``[d^top, u^top, v^top (W)]`` then the
    bottom block ``[d^bot, u^bot, v^bot (W)]``. The pop biases' -1 initialisation
    is left to the module.

    Args:
      raw: ``[2 (2 + W)]``.
      width: ``W``.

    Returns:
      ``DequeControls``.

    Raises:
      ValueError: naming ``width`` or ``raw`` when invalid.
    """
    block = stack_interface_size(width)
    check_shape("raw", raw, (2 * block,), "2 (2 + W)")
    check_floating("raw", raw)
    top = _activate(raw[:block], width)
    bottom = _activate(raw[block:], width)
    return DequeControls(
        push_top=top.push,
        pop_top=top.pop,
        value_top=top.value,
        push_bottom=bottom.push,
        pop_bottom=bottom.pop,
        value_bottom=bottom.value,
    )
