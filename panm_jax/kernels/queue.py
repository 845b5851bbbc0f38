"""Continuous neural Queue (Grefenstette et al. 2015).

Implements the neural Queue of Grefenstette et al. 2015 (Learning to Transduce
with Unbounded Memory, NeurIPS), §3.2, Eq. 4-5: the neural Stack
(``panm_jax.kernels.stack``, §3.1) whose pop and read start at the lowest index
(the oldest row, the front) instead of the highest. The Queue "operates the same
way ... with the exception that the pop operation reads the lowest index of the
strength vector" (§3.2); its push appends at the back as the Stack's does.

Each traversal from the front is one exclusive prefix sum: the quantity left
when slot ``i`` is reached is ``u - sum_{j < i} s[j]``.

State, controls, capacity contract, footnote-1 max/min, leading axes and dtypes
are the Stack's (see ``panm_jax.kernels.stack``): ``QueueState`` is
``StackState`` and ``QueueControls`` is ``StackControls``.

API: ``State`` (``QueueState``), ``Controls`` (``QueueControls``),
``init_state``, ``step``, ``interface_size``, ``controls_from_interface``,
``ENDS``; the equations ``push`` (Eq. 1, Eq. 4 second case, the Stack's),
``pop_strengths`` (Eq. 4), ``read_weights`` / ``read`` (Eq. 5).

Notation: ``C`` capacity (steps), ``W`` word size, ``...`` leading axes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from panm_jax.kernels import _neural_stack as common
from panm_jax.kernels import stack
from panm_jax.kernels._neural_stack import push
from panm_jax.kernels.stack import ENDS
from panm_jax.kernels.stack import StackControls as QueueControls
from panm_jax.kernels.stack import StackState as QueueState

__all__ = [
    "ENDS",
    "Controls",
    "QueueControls",
    "QueueState",
    "State",
    "controls_from_interface",
    "init_state",
    "interface_size",
    "pop_strengths",
    "push",
    "read",
    "read_weights",
    "step",
]

State = QueueState
Controls = QueueControls


def init_state(capacity: int, width: int, dtype=jnp.float32, *, batch_shape: tuple[int, ...] = ()) -> QueueState:
    """An empty Queue of ``capacity`` rows of ``width``: ``stack.init_state`` (the same type and arguments)."""
    return stack.init_state(capacity, width, dtype, batch_shape=batch_shape)


def pop_strengths(strengths: jax.Array, pop: jax.Array) -> jax.Array:
    """Pop from the front of a Queue: strengths after removing ``u_t`` from the front.

    Implements Eq. (4), first case, of Grefenstette et al. 2015. ``strengths`` is
    ``s_{t-1}``, ``pop`` is ``u_t``:

        s_t[i] = max(0, s_{t-1}[i] - max(0, u_t - sum_{j=1}^{i-1} s_{t-1}[j]))

    the Stack's pop traversed from the lowest index (the oldest row, the front)
    up. The inner sum is one cumulative sum.

    Args:
      strengths: ``[..., C]`` ``s_{t-1}`` (zero in slots not yet written).
      pop: ``[...]`` ``u_t`` in ``[0, 1]``.

    Returns:
      ``[..., C]`` the popped strengths (``s_t`` before this step's push).

    Note: max follows footnote 1 (``left_max``).
    """
    return common.pop_met(strengths, pop, common.sum_below(strengths))


def read_weights(strengths: jax.Array) -> jax.Array:
    """Read weights of a Queue: the front unit of strength, taken from the front up.

    Implements the weights of Eq. (5) of Grefenstette et al. 2015 (the Queue read,
    announced in §3.2 as "Equations 4-5").
    ``strengths`` is ``s_t``:

        w_t[i] = min(s_t[i], max(0, 1 - sum_{j=1}^{i-1} s_t[j]))

    the Stack's read (Eq. 3) traversed from the lowest index up.

    Args:
      strengths: ``[..., C]`` ``s_t``.

    Returns:
      ``[..., C]`` weights in ``[0, 1]`` summing to ``min(1, sum s_t)``.

    Note: min/max follow footnote 1 (``left_min`` / ``left_max``).
    """
    return common.read_weights_met(strengths, common.sum_below(strengths))


def read(values: jax.Array, strengths: jax.Array) -> jax.Array:
    """Read a Queue: the strength-weighted sum of the rows nearest the front.

    Implements Eq. (5) of Grefenstette et al. 2015 (announced in §3.2,
    "Equations 4-5"). ``values`` is ``V_t``, ``strengths`` is ``s_t``:

        r_t = sum_{i=1}^{t} min(s_t[i], max(0, 1 - sum_{j=1}^{i-1} s_t[j])) V_t[i]

    Args:
      values: ``[..., C, W]`` ``V_t``.
      strengths: ``[..., C]`` ``s_t``.

    Returns:
      ``[..., W]`` ``r_t``: ``read_weights(s_t) @ V_t``.
    """
    return common.weighted_read(read_weights(strengths), values)


def step(state: QueueState, controls: QueueControls, mask: jax.Array | None = None) -> tuple[QueueState, jax.Array]:
    """One neural Queue step: pop the front, push the back, read the front (Eq. 1, 4, 5).

    As ``stack.step`` with ``pop_strengths`` (Eq. 4) and ``read`` (Eq. 5): the
    pop and the read traverse the strengths from the lowest index (the oldest
    row) up.

    Args:
      state: ``QueueState`` (``[..., C, W]`` values, ``[..., C]`` strengths).
      controls: ``QueueControls`` (``[...]`` push, ``[...]`` pop, ``[..., W]`` value).
      mask: optional ``[...]``; where 0 the state is unchanged and the read zero.

    Returns:
      ``(state, read [..., W])``.

    Raises:
      ValueError: naming the argument whose shape, dtype or value is wrong.
    """
    return common.linear_step(pop_strengths, read, state, controls, mask)


def interface_size(width: int) -> int:
    """Length of a Queue's raw interface: ``2 + W`` (``[d, u, v]``, as the Stack's)."""
    return stack.interface_size(width)


def controls_from_interface(raw: jax.Array, width: int) -> QueueControls:
    """Split and activate a Queue's raw interface ``[..., 2 + W]``: ``stack.controls_from_interface``."""
    return stack.controls_from_interface(raw, width)
