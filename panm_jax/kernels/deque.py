"""Continuous neural DeQue (Grefenstette et al. 2015).

Implements the neural DeQue of Grefenstette et al. 2015 (Learning to Transduce
with Unbounded Memory, NeurIPS), §3.3, Eq. 6-11 (transcribed from the paper's
prose): push, pop and read at both ends. A step pops the top (the Stack's pop,
``panm_jax.kernels.stack``: suffix sums), then the bottom (the Queue's pop,
``panm_jax.kernels.queue``: prefix sums of the top-popped strengths), pushes a
row at each end, and reads each end (the Stack's read at the top, the Queue's at
the bottom).

Capacity contract as the Stack's (see ``panm_jax.kernels.stack``), with ``2C``
rows, ``C`` per end: every step pushes one row at each end, so the caller sets
``C`` to the number of steps; a step that arrives with both ends full pops and
reads, drops both pushes and sets ``overflow``. Footnote-1 max/min, leading axes
and dtypes are the Stack's too.

API: ``State`` (``DequeState``), ``Controls`` (``DequeControls``), ``DequeRead``,
``init_state``, ``step``, ``interface_size``, ``controls_from_interface``,
``ENDS``; the equations ``push`` (Eq. 6, 9), ``pop_strengths`` (Eq. 7-8) and
``read`` (Eq. 10-11).

Notation: ``C`` capacity (steps), ``W`` word size, ``...`` leading axes.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from panm_jax.kernels import _neural_stack as common
from panm_jax.kernels import queue, stack
from panm_jax.kernels._batch import over_leading

__all__ = [
    "ENDS",
    "Controls",
    "DequeControls",
    "DequeRead",
    "DequeState",
    "State",
    "controls_from_interface",
    "init_state",
    "interface_size",
    "pop_strengths",
    "push",
    "read",
    "step",
]

ENDS = 2  # two ends, each pushed, popped and read: the top, then the bottom


class DequeState(NamedTuple):
    """State of a neural DeQue (arrays only).

    Layout: ``2C`` rows with the centre between rows ``C - 1`` and ``C``. Step
    ``t`` (from 1) writes its bottom vector at row ``C - t`` and its top vector at
    row ``C + t - 1``, so after ``size`` steps rows ``[C - size, C + size)`` are
    written (lowest index = bottom, highest = top, as the paper's ``V_t``) and
    every other row and strength is zero.
    """

    values: jax.Array  # [..., 2C, W] V_t; rows [C - size, C + size) written, zero elsewhere
    strengths: jax.Array  # [..., 2C]    s_t in [0, 1], zero outside the written rows
    size: jax.Array  # [...]        int32, steps taken (rows written per end, at most C)
    overflow: jax.Array  # [...]        bool, True once a step arrived with both ends full (its pushes dropped)


class DequeControls(NamedTuple):
    """Activated controls of a DeQue step: a push, pop and value per end."""

    push_top: jax.Array  # [...]    d_t^top in (0, 1) (sigmoid)
    pop_top: jax.Array  # [...]    u_t^top in (0, 1) (sigmoid)
    value_top: jax.Array  # [..., W] v_t^top in (-1, 1) (tanh)
    push_bottom: jax.Array  # [...]    d_t^bot in (0, 1) (sigmoid)
    pop_bottom: jax.Array  # [...]    u_t^bot in (0, 1) (sigmoid)
    value_bottom: jax.Array  # [..., W] v_t^bot in (-1, 1) (tanh)


class DequeRead(NamedTuple):
    """The two reads of a DeQue step."""

    top: jax.Array  # [..., W] r_t^top, read from the highest index down
    bottom: jax.Array  # [..., W] r_t^bot, read from the lowest index up


State = DequeState
Controls = DequeControls


def init_state(capacity: int, width: int, dtype=jnp.float32, *, batch_shape: tuple[int, ...] = ()) -> DequeState:
    """An empty DeQue with room for ``capacity`` steps (``2C`` rows, ``C`` per end).

    Args:
      capacity: ``C`` >= 1, the number of steps (each pushes one row at each end).
      width: ``W`` >= 1.
      dtype: a floating dtype for values and strengths.
      batch_shape: leading (batch) axes in front of every field (``()``: one structure).

    Returns:
      ``DequeState`` with zero values ``[2C, W]``, zero strengths ``[2C]``, size 0,
      overflow False.

    Raises:
      ValueError: naming ``capacity``, ``width``, ``dtype`` or ``batch_shape`` when
        invalid, or sizes too large to index or allocate, before anything is allocated.
    """
    return DequeState(*common.empty(capacity, width, dtype, rows_per_step=2, batch_shape=batch_shape))


def pop_strengths(strengths: jax.Array, pop_top: jax.Array, pop_bottom: jax.Array) -> jax.Array:
    """Pop both ends of a DeQue: first ``u_t^top`` from the top, then ``u_t^bot`` from the bottom.

    Implements Eq. (7)-(8) of Grefenstette et al. 2015 (§3.3, the DeQue;
    transcribed from the paper's prose). ``strengths`` is ``s_{t-1}``,
    ``pop_top`` is ``u_t^top``, ``pop_bottom`` is ``u_t^bot``:

        s^top_t[i]  = max(0, s_{t-1}[i] - max(0, u^top_t - sum_{j > i} s_{t-1}[j]))   (Eq. 7)
        s^both_t[i] = max(0, s^top_t[i] - max(0, u^bot_t - sum_{j < i} s^top_t[j]))   (Eq. 8)

    the Stack's pop (highest index down), then the Queue's pop (lowest index up)
    applied to its result.

    Args:
      strengths: ``[..., 2C]`` ``s_{t-1}`` (zero outside the written rows).
      pop_top: ``[...]`` ``u_t^top``.
      pop_bottom: ``[...]`` ``u_t^bot``.

    Returns:
      ``[..., 2C]`` ``s^both_t``, the strengths before this step's pushes.

    Note: max follows footnote 1 (``left_max``).
    """
    return queue.pop_strengths(stack.pop_strengths(strengths, pop_top), pop_bottom)


def _push_one(values, strengths, size, value_top, strength_top, value_bottom, strength_bottom):
    capacity = values.shape[0] // 2
    dropped = size >= capacity
    top_row = jnp.minimum(capacity + size, 2 * capacity - 1)
    bottom_row = jnp.maximum(capacity - 1 - size, 0)
    values, strengths = common.write_row(values, strengths, bottom_row, value_bottom, strength_bottom, dropped)
    values, strengths = common.write_row(values, strengths, top_row, value_top, strength_top, dropped)
    size = jnp.where(dropped, size, size + 1).astype(jnp.int32)
    return values, strengths, size, dropped


def push(
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
      values: ``[..., 2C, W]`` ``V_{t-1}`` in the ``DequeState`` layout.
      strengths: ``[..., 2C]`` popped strengths.
      size: ``[...]`` int32, steps taken so far (``t - 1``).
      value_top, value_bottom: ``[..., W]`` ``v_t^top``, ``v_t^bot``.
      strength_top, strength_bottom: ``[...]`` ``d_t^top``, ``d_t^bot``.

    Returns:
      ``(values [..., 2C, W], strengths [..., 2C], size [...], dropped [...])``.

    Deviation: the paper prepends a row, shifting every index by one; here the
    bottom row is written at index ``C - 1 - size`` and the top row at
    ``C + size`` of a preallocated ``2C`` array, so no row moves. When
    ``size == C`` both pushes are dropped (nothing changes) and ``dropped`` is
    True.
    """
    return over_leading(_push_one, jnp.ndim(values) - 2)(
        values, strengths, size, value_top, strength_top, value_bottom, strength_bottom
    )


def read(values: jax.Array, strengths: jax.Array) -> DequeRead:
    """Read both ends of a DeQue.

    Implements Eq. (10)-(11) of Grefenstette et al. 2015 (§3.3; transcribed
    from the paper's prose): ``values`` is ``V_t``, ``strengths``
    is ``s_t``:

        r^top_t = sum_i min(s_t[i], max(0, 1 - sum_{j > i} s_t[j])) V_t[i]   (Eq. 10, the Stack read)
        r^bot_t = sum_i min(s_t[i], max(0, 1 - sum_{j < i} s_t[j])) V_t[i]   (Eq. 11, the Queue read)

    Args:
      values: ``[..., 2C, W]`` ``V_t``.
      strengths: ``[..., 2C]`` ``s_t``.

    Returns:
      ``DequeRead(top [..., W], bottom [..., W])``.
    """
    return DequeRead(top=stack.read(values, strengths), bottom=queue.read(values, strengths))


def _core(state: DequeState, c: DequeControls):
    strengths = pop_strengths(state.strengths, c.pop_top, c.pop_bottom)
    values, strengths, size, dropped = push(
        state.values, strengths, state.size, c.value_top, c.push_top, c.value_bottom, c.push_bottom
    )
    return values, strengths, size, dropped, read(values, strengths)


def step(state: DequeState, controls: DequeControls, mask: jax.Array | None = None) -> tuple[DequeState, DequeRead]:
    """One neural DeQue step: pop both ends, push both ends, read both ends.

    Order (Grefenstette et al. 2015 §3.3, Eq. 6-11): pop the top by ``u_t^top``
    then the bottom by ``u_t^bot`` (``pop_strengths``), write ``v_t^bot`` below
    the bottom and ``v_t^top`` above the top with strengths ``d_t^bot`` and
    ``d_t^top`` (``push``), read the top and the bottom of ``(V_t, s_t)``
    (``read``).

    Args:
      state: ``DequeState`` (``[..., 2C, W]`` values, ``[..., 2C]`` strengths).
      controls: ``DequeControls`` (``[...]`` pushes and pops, ``[..., W]`` values).
      mask: optional ``[...]``; where 0 the state is unchanged and both reads zero.

    Returns:
      ``(state, DequeRead(top [..., W], bottom [..., W]))``.

    Raises:
      ValueError: naming the argument whose shape, dtype or value is wrong.
    """
    return common.step(_core, state, controls, mask, rows_per_step=2)


def interface_size(width: int) -> int:
    """Length of a DeQue's raw interface: ``2 (2 + W)`` (top block, bottom block)."""
    return ENDS * common.end_interface_size(width)


def controls_from_interface(raw: jax.Array, width: int) -> DequeControls:
    """Split and activate a DeQue's raw interface vector.

    The paper's activations per end (sigmoid push and pop, tanh value). Layout of
    ``raw`` (last axis, ``2 (2 + W)`` values): the top block ``[d^top, u^top,
    v^top (W)]`` then the bottom block ``[d^bot, u^bot, v^bot (W)]``. The pop
    biases' -1 initialisation is left to the module.

    Args:
      raw: ``[..., 2 (2 + W)]`` (leading axes, e.g. a batch, are kept).
      width: ``W``.

    Returns:
      ``DequeControls`` whose fields carry the leading axes of ``raw``.

    Raises:
      ValueError: naming ``width`` or ``raw`` when invalid.
    """
    size = interface_size(width)
    common.check_raw(raw, size, "2 (2 + W)")
    block = size // ENDS
    return DequeControls(*common.activate_end(raw[..., :block], width), *common.activate_end(raw[..., block:], width))
