"""Continuous neural Stack (Grefenstette et al. 2015).

Implements the neural Stack of Grefenstette et al. 2015 (Learning to Transduce
with Unbounded Memory, NeurIPS), §3.1, Eq. 1-3. The same paper's neural Queue
(§3.2) and DeQue (§3.3) are ``panm_jax.kernels.queue`` and
``panm_jax.kernels.deque``; the three share one module contract.

The Stack is a value matrix ``V_t`` whose rows are the pushed vectors and a
strength vector ``s_t`` saying how much of each row is still "on" the stack. A
step pops (reduces ``s_{t-1}`` from the highest index down), pushes (appends
``v_t`` with strength ``d_t``), then reads ``s_t`` from the highest index down
(paper order). The paper traverses the strengths one slot at a time; here each
traversal is one reverse cumulative sum over slots: the quantity left when slot
``i`` is reached is ``u - sum_{j > i} s[j]`` (an exclusive suffix sum), ``O(C)``
work with no loop over slots and no ``[C, C]`` matrix.

Capacity contract (the paper's ``V_t`` grows by a row per step; here it is
preallocated): ``V`` has a static capacity of ``C`` rows and ``size`` counts the
rows written. Every step pushes a row, as in Eq. 1, whatever ``d_t``, so the
caller (the module) sets ``C`` to the number of steps. A step that arrives when
all rows are written still pops and reads, but its push is dropped (no row or
strength changes, the top is never overwritten) and the state's ``overflow``
flag is set and stays set.

Footnote 1 of the paper: at ``x = y``, the derivative of ``max(x, y)`` and
``min(x, y)`` is taken with respect to the LEFT argument. ``jnp.maximum`` and
``jnp.minimum`` split it 0.5 / 0.5 between the arguments at ties, so the
equations use ``left_max`` and ``left_min`` (``jnp.where(x >= y, x, y)``), whose
derivative at a tie is 1 for ``x`` and 0 for ``y``.

API (the contract of ``queue`` and ``deque`` too):

* ``State`` (``StackState``), ``Controls`` (``StackControls``);
* ``init_state(capacity, width, dtype=float32, *, batch_shape=())``;
* ``step(state, controls, mask=None) -> (state, read)``;
* ``interface_size(width)``, ``controls_from_interface(raw, width)``;
* ``ENDS``: the ends pushed, popped and read per step (1; the DeQue's 2);
* the equations: ``push`` (Eq. 1, Eq. 2 second case), ``pop_strengths``
  (Eq. 2), ``read_weights`` / ``read`` (Eq. 3); ``left_max``, ``left_min``.

Leading axes: every function takes states, controls and raw interfaces with any
leading (batch) axes, the same ones on every argument (``init_state(...,
batch_shape)`` puts them in front of every field).

Dtypes: states keep the dtype ``init_state`` gave them. float16 and bfloat16
states are stepped in float32 (their cumulative sums over up to ``C`` strengths
need more than 8 or 11 bits) and the new state is rounded back.

Notation: ``C`` capacity (steps), ``W`` word size (the paper's ``m``), ``...``
leading axes. The paper's indices start at 1 and ``V_t[i] = v_i``; here row
``i`` (from 0) holds the vector pushed at step ``i + 1``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from panm_jax.kernels import _neural_stack as common
from panm_jax.kernels._neural_stack import left_max, left_min, push

__all__ = [
    "ENDS",
    "Controls",
    "State",
    "StackControls",
    "StackState",
    "controls_from_interface",
    "init_state",
    "interface_size",
    "left_max",
    "left_min",
    "pop_strengths",
    "push",
    "read",
    "read_weights",
    "step",
]

ENDS = 1  # one end: the top is pushed, popped and read


class StackState(NamedTuple):
    """State of a neural Stack or Queue (arrays only); ``queue.QueueState`` is this type."""

    values: jax.Array  # [..., C, W] V_t: row i holds v_{i+1}, the vector pushed at step i + 1; zero beyond `size`
    strengths: jax.Array  # [..., C]    s_t in [0, 1], zero beyond `size`
    size: jax.Array  # [...]       int32, rows written so far (t, at most C)
    overflow: jax.Array  # [...]       bool, True once a push arrived with all C rows written (it was dropped)


class StackControls(NamedTuple):
    """Activated controls of a Stack or Queue step; ``queue.QueueControls`` is this type."""

    push: jax.Array  # [...]    d_t in (0, 1), push strength (sigmoid)
    pop: jax.Array  # [...]    u_t in (0, 1), pop strength (sigmoid)
    value: jax.Array  # [..., W] v_t in (-1, 1), the pushed vector (tanh)


State = StackState
Controls = StackControls


def init_state(capacity: int, width: int, dtype=jnp.float32, *, batch_shape: tuple[int, ...] = ()) -> StackState:
    """An empty Stack of ``capacity`` rows (``C``) of ``width`` (``W``).

    Args:
      capacity: ``C`` >= 1, the number of steps the Stack will see (each pushes a row).
      width: ``W`` >= 1, the paper's embedding size ``m``.
      dtype: a floating dtype for values and strengths.
      batch_shape: leading (batch) axes in front of every field (``()``: one structure).

    Returns:
      ``StackState`` with zero values ``[C, W]``, zero strengths ``[C]``, size 0,
      overflow False.

    Raises:
      ValueError: naming ``capacity``, ``width``, ``dtype`` or ``batch_shape`` when
        invalid, or sizes too large to index or allocate, before anything is allocated.
    """
    return StackState(*common.empty(capacity, width, dtype, rows_per_step=1, batch_shape=batch_shape))


def pop_strengths(strengths: jax.Array, pop: jax.Array) -> jax.Array:
    """Pop from the top of a Stack: strengths after removing ``u_t`` from the top.

    Implements Eq. (2), first case, of Grefenstette et al. 2015. ``strengths`` is
    ``s_{t-1}``, ``pop`` is ``u_t``:

        s_t[i] = max(0, s_{t-1}[i] - max(0, u_t - sum_{j=i+1}^{t-1} s_{t-1}[j]))

    i.e. the deletion quantity ``u_t`` traverses ``s_{t-1}`` from the highest
    index to the lowest, zeroing strengths smaller than what is left of it and
    reducing the first one that is larger. The inner sum is one reverse
    cumulative sum.

    Args:
      strengths: ``[..., C]`` ``s_{t-1}`` (zero in slots not yet written, which
        stay zero).
      pop: ``[...]`` ``u_t`` in ``[0, 1]``.

    Returns:
      ``[..., C]`` the popped strengths (``s_t`` before this step's push).

    Note: max follows footnote 1 (``left_max``): at a tie the derivative goes to
    the left argument, here the constant 0 of the outer max and inner max.
    """
    return common.pop_met(strengths, pop, common.sum_above(strengths))


def read_weights(strengths: jax.Array) -> jax.Array:
    """Read weights of a Stack: the top unit of strength, taken from the top down.

    Implements the weights of Eq. (3) of Grefenstette et al. 2015. ``strengths`` is ``s_t``:

        w_t[i] = min(s_t[i], max(0, 1 - sum_{j=i+1}^{t} s_t[j]))

    A read quantity of 1 traverses ``s_t`` from the highest index down; each slot
    keeps its strength while it fits, the slot where the quantity runs out keeps
    what is left, and lower slots get 0. One reverse cumulative sum.

    Args:
      strengths: ``[..., C]`` ``s_t``.

    Returns:
      ``[..., C]`` weights in ``[0, 1]`` summing to ``min(1, sum s_t)``.

    Note: min/max follow footnote 1 (``left_min`` / ``left_max``).
    """
    return common.read_weights_met(strengths, common.sum_above(strengths))


def read(values: jax.Array, strengths: jax.Array) -> jax.Array:
    """Read a Stack: the strength-weighted sum of the rows nearest the top.

    Implements Eq. (3) of Grefenstette et al. 2015. ``values`` is ``V_t``, ``strengths`` is ``s_t``:

        r_t = sum_{i=1}^{t} min(s_t[i], max(0, 1 - sum_{j=i+1}^{t} s_t[j])) V_t[i]

    Args:
      values: ``[..., C, W]`` ``V_t``.
      strengths: ``[..., C]`` ``s_t``.

    Returns:
      ``[..., W]`` ``r_t``: ``read_weights(s_t) @ V_t``.
    """
    return common.weighted_read(read_weights(strengths), values)


def step(state: StackState, controls: StackControls, mask: jax.Array | None = None) -> tuple[StackState, jax.Array]:
    """One neural Stack step: pop, push, read (Eq. 1-3 in the paper's order).

    ``s_{t-1}`` is popped by ``u_t`` (``pop_strengths``, Eq. 2), ``v_t`` is
    appended with strength ``d_t`` (``push``, Eq. 1 and 2), and ``r_t`` is read
    from ``(V_t, s_t)`` (``read``, Eq. 3).

    Shapes and dtypes (real floating) are checked at trace time; in an eager
    call, where values are concrete, also the ranges: strengths, pushes and pops
    in ``[0, 1]`` (``validation.check_in_range``).

    Args:
      state: ``StackState`` (``[..., C, W]`` values, ``[..., C]`` strengths,
        ``[...]`` size and overflow).
      controls: ``StackControls`` (``[...]`` push, ``[...]`` pop, ``[..., W]`` value).
      mask: optional ``[...]``; where 0 (padding) the state is returned
        unchanged and the read is zeros.

    Returns:
      ``(state, read [..., W])``.

    Raises:
      ValueError: naming the argument whose shape, dtype or value is wrong.

    A step taken with all ``C`` rows written pops and reads as usual, drops its
    push and sets ``state.overflow`` (see the module docstring).
    """
    return common.linear_step(pop_strengths, read, state, controls, mask)


def interface_size(width: int) -> int:
    """Length of a Stack's raw interface: ``2 + W`` (``[d, u, v]``)."""
    return common.end_interface_size(width)


def controls_from_interface(raw: jax.Array, width: int) -> StackControls:
    """Split and activate a Stack's raw interface vector.

    Grefenstette et al. 2015 (§3.4, the controller): ``d_t = sigmoid(W_d o'_t +
    b_d)``, ``u_t = sigmoid(W_u o'_t + b_u)``, ``v_t = tanh(W_v o'_t + b_v)``.

    Layout of ``raw`` (last axis, ``2 + W`` values): ``raw[..., 0]`` push logit,
    ``raw[..., 1]`` pop logit, ``raw[..., 2:2+W]`` value pre-activation.

    The paper initialises the pop bias to -1 (so early steps pop little); that is
    the module's projection initialiser, not the kernel's.

    Args:
      raw: ``[..., 2 + W]`` (leading axes, e.g. a batch, are kept).
      width: ``W``.

    Returns:
      ``StackControls`` (``[...]``, ``[...]``, ``[..., W]``).

    Raises:
      ValueError: naming ``width`` or ``raw`` when invalid.
    """
    common.check_raw(raw, interface_size(width), "2 + W")
    return StackControls(*common.activate_end(raw, width))
