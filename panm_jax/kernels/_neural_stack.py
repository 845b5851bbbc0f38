"""What the neural Stack, Queue and DeQue (Grefenstette et al. 2015) share.

Grefenstette et al. 2015 (Learning to Transduce with Unbounded Memory, NeurIPS)
keep a value matrix ``V_t`` whose rows are the pushed vectors and a strength
vector ``s_t`` saying how much of each row is still "on" the structure. The
Stack (``panm_jax.kernels.stack``), the Queue (``queue``) and the DeQue
(``deque``) differ only in the end from which they pop and read; this module
holds what the three share: the footnote-1 ``left_max`` / ``left_min``, the
traversals of ``s`` as cumulative sums, the pop and the read weight at a slot
given what the traversal has met there, the push of a row under the capacity
contract, the entry checks, and the frame of a step (compute dtype, mask). The
stack module's docstring states the conventions (capacity contract, footnote 1,
dtypes).

Traversals: the paper traverses the strengths one slot at a time; here every
traversal is one (reverse) cumulative sum over slots, ``O(C)`` work with no loop
over slots and no ``[C, C]`` matrix. From the highest index down, the quantity
left when slot ``i`` is reached is ``u - sum_{j > i} s[j]`` (``sum_above``, an
exclusive suffix sum); from the lowest index up it is ``u - sum_{j < i} s[j]``
(``sum_below``, an exclusive prefix sum).

Leading axes: every function takes arrays with any leading (batch) axes in
front of the shapes written in its docstring, the same ones on every argument,
except ``write_row`` (one structure).

Notation: ``C`` capacity (steps), ``W`` word size (the paper's ``m``), ``...``
leading axes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from panm_jax.checks import positive_int
from panm_jax.kernels._batch import check_batch_shape, over_leading
from panm_jax.kernels.scan import select
from panm_jax.kernels.validation import (
    bound_raw,
    check_float_dtype,
    check_floating,
    check_floating_fields,
    check_in_range,
    check_mask,
    check_shape,
    check_state_sizes,
)

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


def sum_above(strengths: jax.Array) -> jax.Array:
    """``[..., C] -> [..., C]``: ``out[i] = sum_{j > i} s[j]``, what a traversal from the top has met at slot ``i``.

    The inclusive reverse cumsum shifted by one slot (not "inclusive - s", which
    leaves round-off where the sum should be exact).
    """
    inclusive = jax.lax.cumsum(strengths, axis=strengths.ndim - 1, reverse=True)
    zero = jnp.zeros_like(strengths[..., :1])
    return jnp.concatenate([inclusive[..., 1:], zero], axis=-1)


def sum_below(strengths: jax.Array) -> jax.Array:
    """``[..., C] -> [..., C]``: ``out[i] = sum_{j < i} s[j]``, what a traversal from the bottom has met at ``i``."""
    inclusive = jnp.cumsum(strengths, axis=-1)
    zero = jnp.zeros_like(strengths[..., :1])
    return jnp.concatenate([zero, inclusive[..., :-1]], axis=-1)


def pop_met(strengths: jax.Array, pop: jax.Array, met: jax.Array) -> jax.Array:
    """``max(0, s[i] - max(0, u - met[i]))``: a pop of ``u`` whose traversal has met ``met[i]`` at slot ``i``.

    The deletion quantity left at slot ``i`` is ``u`` minus the strength already
    met; it removes up to ``s[i]`` there. ``strengths``, ``met``: ``[..., C]``;
    ``pop``: ``[...]``.
    """
    return left_max(0.0, strengths - left_max(0.0, pop[..., None] - met))


def read_weights_met(strengths: jax.Array, met: jax.Array) -> jax.Array:
    """``min(s[i], max(0, 1 - met[i]))``: the read quantity 1 left at slot ``i``, ``[..., C]``."""
    return left_min(strengths, left_max(0.0, 1.0 - met))


def weighted_read(weights: jax.Array, values: jax.Array) -> jax.Array:
    """``r = sum_i w[i] V[i]``: ``weights [..., C]``, ``values [..., C, W]`` -> ``[..., W]``."""
    return jnp.einsum("...c,...cw->...w", weights, values)


# ---- push ----------------------------------------------------------------------


def write_row(
    values: jax.Array,
    strengths: jax.Array,
    row: jax.Array,
    value: jax.Array,
    strength: jax.Array,
    drop: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """Write ``(value, strength)`` into ``row`` of ONE structure (no leading axes) unless ``drop``.

    When ``drop`` the row is written back unchanged: ``row`` is always in range,
    so nothing is clipped onto (and overwrites) another row. ``O(W)`` per step:
    one dynamic update.
    """
    old_value = jax.lax.dynamic_index_in_dim(values, row, axis=0, keepdims=False)
    old_strength = jax.lax.dynamic_index_in_dim(strengths, row, axis=0, keepdims=False)
    new_value = jnp.where(drop, old_value, value.astype(values.dtype))
    new_strength = jnp.where(drop, old_strength, jnp.asarray(strength, strengths.dtype))
    values = jax.lax.dynamic_update_index_in_dim(values, new_value, row, axis=0)
    strengths = jax.lax.dynamic_update_index_in_dim(strengths, new_strength, row, axis=0)
    return values, strengths


def _push_one(values, strengths, size, value, strength):
    capacity = values.shape[0]
    dropped = size >= capacity
    row = jnp.minimum(size, capacity - 1)
    values, strengths = write_row(values, strengths, row, value, strength, dropped)
    size = jnp.where(dropped, size, size + 1).astype(jnp.int32)
    return values, strengths, size, dropped


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
      values: ``[..., C, W]`` ``V_{t-1}``, rows ``>= size`` zero.
      strengths: ``[..., C]`` popped strengths, zero from ``size`` on.
      size: ``[...]`` int32, rows written so far (``t - 1``).
      value: ``[..., W]`` ``v_t``.
      strength: ``[...]`` ``d_t``.

    Returns:
      ``(values [..., C, W], strengths [..., C], size [...], dropped [...])``:
      ``V_t``, ``s_t``, ``t`` and a bool that is True when the push was dropped.

    Deviation: ``V`` is preallocated to ``C`` rows. When ``size == C`` (full) the
    push is dropped: values, strengths and size are returned unchanged and
    ``dropped`` is True (the step kernels record it in ``overflow``).
    """
    return over_leading(_push_one, jnp.ndim(values) - 2)(values, strengths, size, value, strength)


# ---- init, checks, step ----------------------------------------------------------


def empty(capacity: int, width: int, dtype, rows_per_step: int, batch_shape=()) -> tuple[jax.Array, ...]:
    """``(values, strengths, size, overflow)`` of an empty structure of ``rows_per_step * capacity`` rows.

    ``batch_shape`` goes in front of every field.

    Raises:
      ValueError: naming ``capacity``, ``width``, ``dtype`` or ``batch_shape`` when
        invalid, or sizes too large to index or allocate (``check_state_sizes``),
        before anything is allocated.
    """
    rows = rows_per_step * positive_int("capacity", capacity)
    width = positive_int("width", width)
    dt = check_float_dtype("dtype", dtype)
    lead = check_batch_shape(batch_shape)
    row_name = "capacity" if rows_per_step == 1 else f"capacity ({rows_per_step} rows per step)"
    check_state_sizes(
        {"state.values": ((rows, width), (row_name, "width")), "state.strengths": ((rows,), (row_name,))}, lead, dt
    )
    return (
        jnp.zeros((*lead, rows, width), dt),
        jnp.zeros((*lead, rows), dt),
        jnp.zeros(lead, jnp.int32),
        jnp.zeros(lead, bool),
    )


def _dims(lead: tuple[int, ...], dims: str) -> str:
    # "C" without leading axes, "..., C" with them (the shape notation of the messages).
    if not lead:
        return dims
    return f"..., {dims}" if dims else "..."


def _check_state(state, rows_per_step: int) -> tuple[tuple[int, ...], int]:
    # rows_per_step: 1 for the Stack and Queue ([C] rows), 2 for the DeQue ([2C]).
    row_dim = "C" if rows_per_step == 1 else "2C"
    shape = tuple(jnp.shape(state.values))
    if len(shape) < 2:
        raise ValueError(f"state.values: expected shape [..., {row_dim}, W], got {shape}")
    lead, (rows, width) = shape[:-2], shape[-2:]
    if rows % rows_per_step:
        raise ValueError(f"state.values: expected an even number of rows [..., 2C, W], got {shape}")
    check_shape("state.strengths", state.strengths, (*lead, rows), _dims(lead, row_dim))
    check_shape("state.size", state.size, lead, _dims(lead, ""))
    check_shape("state.overflow", state.overflow, lead, _dims(lead, ""))
    check_floating_fields("state", state, skip=("size", "overflow"))
    check_in_range("state.strengths", state.strengths, 0.0, 1.0)
    return lead, width


def _check_controls(controls, lead: tuple[int, ...], width: int) -> None:
    # push*/pop* fields are [...], value* fields [..., W]; dtypes at trace time; push and
    # pop strengths in [0, 1] where concrete (eager calls).
    for field in controls._fields:
        if field.startswith(("push", "pop")):
            check_shape(f"controls.{field}", getattr(controls, field), lead, _dims(lead, ""))
        else:
            check_shape(f"controls.{field}", getattr(controls, field), (*lead, width), _dims(lead, "W"))
    check_floating_fields("controls", controls)
    for field in controls._fields:
        if field.startswith(("push", "pop")):
            check_in_range(f"controls.{field}", getattr(controls, field), 0.0, 1.0)


def _to_dtype(tree, dtype):
    # Every floating leaf of `tree` cast to `dtype` (sizes and flags are left alone).
    return jax.tree.map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, tree)


def _to_compute_dtype(tree, dtype):
    # 16-bit states step in float32: a bfloat16 sum of up to C strengths keeps 8 bits, and
    # XLA on the CPU can crash differentiating bfloat16 cumulative sums of a few hundred slots.
    work = jnp.promote_types(dtype, jnp.float32)
    return jax.tree.map(
        lambda x: jnp.asarray(x).astype(work) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating) else x, tree
    )


def step(
    core: Callable[[Any, Any], tuple[jax.Array, jax.Array, jax.Array, jax.Array, Any]],
    state: Any,
    controls: Any,
    mask: jax.Array | None,
    rows_per_step: int,
) -> tuple[Any, Any]:
    """Check, step in the compute dtype, round back, apply the mask: the frame of every ``step``.

    ``core(state, controls) -> (values, strengths, size, dropped, read)`` is the
    structure's pop, push and read on the state and controls in the compute
    dtype. The new state is ``state`` with those fields and
    ``overflow | dropped``. Where ``mask`` (``[...]``) is 0 (padding) the state
    is returned unchanged and every read is zeros.
    """
    lead, width = _check_state(state, rows_per_step)
    _check_controls(controls, lead, width)
    if mask is not None:
        check_shape("mask", mask, lead, _dims(lead, ""))
        check_mask(mask)
    dtype = state.values.dtype
    values, strengths, size, dropped, read = core(*_to_compute_dtype((state, controls), dtype))
    new = state._replace(values=values, strengths=strengths, size=size, overflow=state.overflow | dropped)
    new, read = _to_dtype((new, read), dtype)
    if mask is None:
        return new, read
    keep = jnp.asarray(mask).astype(bool)
    read = jax.tree.map(lambda r: jnp.where(keep[..., None], r, jnp.zeros_like(r)), read)
    return select(keep, new, state), read


def linear_step(
    pop_fn: Callable[[jax.Array, jax.Array], jax.Array],
    read_fn: Callable[[jax.Array, jax.Array], jax.Array],
    state: Any,
    controls: Any,
    mask: jax.Array | None,
) -> tuple[Any, jax.Array]:
    """The Stack's or the Queue's step: ``pop_fn``, ``push``, ``read_fn`` inside ``step``'s frame."""

    def core(state, controls):
        strengths = pop_fn(state.strengths, controls.pop)
        values, strengths, size, dropped = push(state.values, strengths, state.size, controls.value, controls.push)
        return values, strengths, size, dropped, read_fn(values, strengths)

    return step(core, state, controls, mask, rows_per_step=1)


# ---- interface --------------------------------------------------------------


def end_interface_size(width: int) -> int:
    """Length of one end's raw interface block ``[d, u, v (W)]``: ``2 + W``."""
    return 2 + positive_int("width", width)


def check_raw(raw: jax.Array, size: int, dims: str) -> None:
    """Raise unless ``raw`` is real floating of shape ``[..., size]`` (``dims`` names ``size``)."""
    shape = tuple(jnp.shape(raw))
    if not shape or shape[-1] != size:
        raise ValueError(f"raw: expected shape [..., {dims}] = (..., {size}), got {shape}")
    check_floating("raw", raw)


def activate_end(raw: jax.Array, width: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``[..., 2 + W] -> (d [...], u [...], v [..., W])``: sigmoid, sigmoid, tanh.

    The paper's controller outputs (Grefenstette et al. 2015, §3.4):
    ``d_t = sigmoid(.)``, ``u_t = sigmoid(.)``, ``v_t = tanh(.)``, of ``raw`` bounded
    to ``+-validation.RAW_LIMIT`` (``validation.bound_raw``).
    """
    raw = bound_raw(raw)
    return jax.nn.sigmoid(raw[..., 0]), jax.nn.sigmoid(raw[..., 1]), jnp.tanh(raw[..., 2 : 2 + width])
