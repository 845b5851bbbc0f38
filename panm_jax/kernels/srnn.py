"""The stack of the SRNN of Suzgun et al. 2019: a soft push / pop of vector cells.

Implements the stack of the Stack-RNN in Suzgun, Gehrmann, Belinkov & Shieber
2019, "Memory-Augmented Recurrent Neural Networks Can Learn Generalized Dyck
Languages" (arXiv:1911.03329): the Stack-RNN with a softmax decision gate,
the model Le et al. 2024 (PANM, §3.2) call SRNN and use as their Dyck baseline.
A stack of ``S`` cells (the depth) of width ``W`` (the cell's dimension); a
step takes a distribution ``a_t = (a_push, a_pop)`` over the two actions (a
softmax of the controller's output, ``a_t = softmax(W_a h_t)``) and the element
to push, ``n_t = sigmoid(W_n h_t)``, and replaces every cell by the mixture of
what the two discrete actions would leave. With ``s[0]`` the top::

    s_t[0] = a_push n_t           + a_pop s_{t-1}[1]
    s_t[i] = a_push s_{t-1}[i-1]  + a_pop s_{t-1}[i+1],      1 <= i < S
    s_{t-1}[S] = 0                                             (below the bottom reads as zero)

The controller (``models.srnn``) reads the top cell of the previous stack,
``h~_{t-1} = h_{t-1} + W_sh s_{t-1}[0]``, so the step's read is the new top
``s_t[0]``, which the controller reads at step ``t + 1``.

Two actions, not three: Suzgun et al.'s softmax gate chooses between push and
pop only (their public code, ``SRNN_Softmax``, has the same two); there is no
no-op. The update is ``stack_rnn.update`` (Joulin & Mikolov 2015, Eq. 4-5, the
no-op variant) with ``a_noop = 0``, which is exactly the two-action update above.
The depth is fixed (Suzgun et al.'s code: 104 cells of width 5), a push moves
the bottom cell off the stack, and an empty stack is all zeros.

API (the kernel contract of ``panm_jax.kernels``): ``State``, ``Controls``,
``init_state``, ``step(state, controls, mask)``, ``read_top``,
``interface_size``, ``controls_from_interface``. Leading axes:
``init_state(..., batch_shape)`` puts them in front of the stack; ``step`` takes
a state, controls and mask with the same leading axes and maps the
one-example step over them (``jax.vmap``, at trace time).

Dtypes: the state keeps the dtype ``init_state`` gave it; float16 and bfloat16
states are stepped in float32 and the new state is rounded back.

Notation: ``S`` stack depth (cells), ``W`` cell width.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from panm_jax.checks import positive_int
from panm_jax.kernels import _batch, _soft_actions, stack_rnn
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
]

# The order of the action axis of Controls.actions and of the raw interface.
ACTIONS = ("push", "pop")


class State(NamedTuple):
    """State of one SRNN stack (arrays only)."""

    stack: jax.Array  # [S, W] s_t: row 0 is the top, row S-1 the bottom; zeros when empty


class Controls(NamedTuple):
    """Activated controls of one SRNN step."""

    actions: jax.Array  # [2] a_t = (a_push, a_pop), probabilities summing to 1 (softmax)
    value: jax.Array  # [W] n_t, the element to push, in (0, 1) (sigmoid)


def init_state(depth: int, width: int, dtype=jnp.float32, *, batch_shape: tuple[int, ...] = ()) -> State:
    """An empty stack: ``S = depth`` cells of width ``W = width``, all zero.

    Raises:
      ValueError: naming ``depth``, ``width``, ``dtype`` or ``batch_shape`` when invalid, or sizes too
        large to index or allocate, before anything is allocated.
    """
    depth = positive_int("depth", depth)
    width = positive_int("width", width)
    dt = check_float_dtype("dtype", dtype)
    lead = check_batch_shape(batch_shape)
    check_state_sizes({"state.stack": ((depth, width), ("depth", "width"))}, lead, dt)
    return State(stack=jnp.zeros((*lead, depth, width), dt))


def read_top(state: State) -> jax.Array:
    """The top cell ``s_t[0]`` ``[..., W]``: what the controller reads at the next step (``W_sh s_t[0]``)."""
    check_shape("state.stack", state.stack, (*jnp.shape(state.stack)[:-2], None, None), "..., S, W")
    return state.stack[..., 0, :]


def step(state: State, controls: Controls, mask: jax.Array | None = None) -> tuple[State, jax.Array]:
    """One SRNN stack step: the soft push / pop (module docstring), then the read ``s_t[0]``.

    Shapes and dtypes (real floating) are checked at trace time; in an eager
    call, where values are concrete, also that ``controls.actions`` lie in
    ``[0, 1]`` and sum to 1 (``validation.RANGE_SLACK``).

    Args:
      state: ``State`` (``[S, W]`` stack).
      controls: ``Controls`` (``[2]`` actions, ``[W]`` value).
      mask: optional ``[]``; where 0 (a padding step) the state is returned
        unchanged and the read is zeros.

    Leading axes: the state, controls and mask may carry the same leading (batch)
    axes ``[...]`` in front of these shapes; the step is then mapped over them.

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
    actions = controls.actions.astype(work)
    no_op = jnp.zeros((1,), work)  # Suzgun et al.'s gate has no no-op: Joulin & Mikolov's update with a_noop = 0
    stack = stack_rnn.update(state.stack.astype(work), jnp.concatenate([actions, no_op]), controls.value.astype(work))
    new = State(stack=stack.astype(dtype))
    return _soft_actions.masked(mask, new, state, new.stack[0])


def interface_size(width: int) -> int:
    """Length of the raw interface: ``2 + W`` (the push and pop logits, then the element's pre-activation)."""
    return len(ACTIONS) + positive_int("width", width)


def controls_from_interface(raw: jax.Array, width: int) -> Controls:
    """Split and activate a raw controller output into ``Controls``.

    Suzgun et al. 2019 (Stack-RNN): ``a_t = softmax(W_a h_t)`` over (push, pop)
    and ``n_t = sigmoid(W_n h_t)``. Layout of ``raw`` (last axis, ``2 + W`` values):
    ``raw[..., 0:2]`` the logits of (push, pop), ``raw[..., 2:2+W]`` the element's
    pre-activation; leading axes are kept. ``raw`` is first bounded to
    ``+-validation.RAW_LIMIT``.

    Raises:
      ValueError: naming ``width`` or ``raw`` when invalid.
    """
    actions, value = _soft_actions.split_interface(raw, interface_size(width), len(ACTIONS), jax.nn.sigmoid)
    return Controls(actions=actions, value=value)
