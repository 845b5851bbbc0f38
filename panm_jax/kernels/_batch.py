"""Leading (batch) axes for every kernel: ``init_state(..., batch_shape)`` and a batched ``step``.

The rule (``panm_jax.kernels``' docstring): every kernel's ``init_state`` takes
``batch_shape`` and puts it in front of every field, and every kernel's ``step``
takes a state, controls and mask with the same leading axes in front of the
shapes it documents for one example. Kernels whose equations are written for
one example (NTM, DNC, Stack-RNN, Tape-RNN) get the leading axes from
``batched_step``, a ``jax.vmap`` per axis: a trace-time transformation, so a
batched call compiles to the same program as ``vmap`` applied by the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from panm_jax.checks import nonnegative_int
from panm_jax.errors import UserError
from panm_jax.kernels.validation import check_mask

__all__ = ["batch_shape_of", "batched_step", "broadcast_state", "check_batch_shape", "over_leading"]


def check_batch_shape(batch_shape) -> tuple[int, ...]:
    """``batch_shape`` as a tuple of non-negative ints, or ``UserError`` naming it."""
    if isinstance(batch_shape, (int, np.integer)) or not isinstance(batch_shape, (tuple, list)):
        raise UserError(f"batch_shape: expected a tuple of non-negative integers, got {batch_shape!r}")
    return tuple(nonnegative_int("batch_shape", size) for size in batch_shape)


def broadcast_state(state: Any, batch_shape: tuple[int, ...]) -> Any:
    """Every field of one example's ``state`` with ``batch_shape`` in front (unchanged for ``()``)."""
    if not batch_shape:
        return state
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (*batch_shape, *jnp.shape(x))), state)


def over_leading(fn: Callable, num_axes: int) -> Callable:
    """``fn`` of one example ``jax.vmap``-ped once per leading axis, every argument mapped."""
    for _ in range(num_axes):
        fn = jax.vmap(fn)
    return fn


def batch_shape_of(value, rank: int) -> tuple[int, ...]:
    """The leading axes of ``value`` in front of its ``rank`` example axes (``()`` when it has no more).

    An array with fewer than ``rank`` axes gives ``()``: the one-example step then
    names it with the shape it expects.
    """
    shape = tuple(np.shape(value))
    return shape[: max(len(shape) - rank, 0)]


def _key_name(key) -> str:
    # A NamedTuple field's name (GetAttrKey), else the index or dict key.
    for attr in ("name", "idx", "key"):
        if hasattr(key, attr):
            return str(getattr(key, attr))
    return str(key)


def _check_leading(prefix: str, tree: Any, lead: tuple[int, ...]) -> None:
    # Every array leaf of `tree` must start with `lead` (what vmap would otherwise report as a bare size clash).
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        shape = tuple(np.shape(leaf))
        if shape[: len(lead)] != lead:
            name = ".".join([prefix, *(_key_name(key) for key in path)])
            raise ValueError(f"{name}: expected the leading axes {lead} of the state in front, got shape {shape}")


def batched_step(one: Callable, lead: tuple[int, ...], state: Any, controls: Any, mask: Any) -> tuple[Any, Any]:
    """``one(state, controls, mask)`` for one example, applied over the leading axes ``lead``.

    ``lead`` comes from the state (``batch_shape_of``); every field of
    ``controls`` and ``mask`` (when given) must carry the same leading axes.
    Without leading axes ``one`` is called directly. A given ``mask`` must be 0 or 1 (``check_mask``).
    """
    if mask is not None:
        check_mask(mask)
    if not lead:
        return one(state, controls, mask)
    _check_leading("state", state, lead)
    _check_leading("controls", controls, lead)
    if mask is not None:
        _check_leading("mask", mask, lead)
    return over_leading(one, len(lead))(state, controls, mask)
