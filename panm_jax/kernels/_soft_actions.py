"""What the Stack-RNN's stack and the Tape-RNN's tape share.

Both memories (``panm_jax.kernels.stack_rnn``: Joulin & Mikolov 2015,
"Inferring Algorithmic Patterns with Stack-Augmented Recurrent Nets";
``panm_jax.kernels.tape_rnn``: Delétang et al. 2023, "Neural Networks and the
Chomsky Hierarchy") are ``S`` cells of width ``W`` that a step replaces by the
mixture, weighted by a distribution ``a_t`` over a few discrete actions, of
what each action would leave; a value ``v_t`` goes into the top cell or the
cell under the head. Their controls are ``(actions [A], value [W])`` from a raw
interface ``[..., A + W]`` whose action logits go through a softmax. This
module holds the checks of those controls, the split of the raw interface and
the result of a masked step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from panm_jax.kernels.scan import select
from panm_jax.kernels.validation import (
    RANGE_SLACK,
    bound_raw,
    check_floating,
    check_floating_fields,
    check_in_range,
    check_shape,
    is_concrete,
)


def check_controls(controls: Any, num_actions: int, width: int, mask: jax.Array | None) -> None:
    """Check ``controls`` (``actions [A]``, ``value [W]``) of one memory and the step's ``mask []``.

    Shapes and dtypes (real floating) at trace time; in an eager call, where
    values are concrete, also that the actions lie in ``[0, 1]`` and sum to 1
    (within ``validation.RANGE_SLACK``).

    Raises:
      ValueError: naming the argument whose shape, dtype or value is wrong.
    """
    check_shape("controls.actions", controls.actions, (num_actions,), str(num_actions))
    check_shape("controls.value", controls.value, (width,), "W")
    if mask is not None:
        check_shape("mask", mask, (), "")
    check_floating_fields("controls", controls)
    check_in_range("controls.actions", controls.actions, 0.0, 1.0)
    if is_concrete(controls.actions):
        total = float(np.sum(np.asarray(controls.actions, np.float64)))
        if not abs(total - 1.0) <= RANGE_SLACK:
            raise ValueError(f"controls.actions: expected probabilities summing to 1, got sum {total:g}")


def masked(mask: jax.Array | None, new: Any, old: Any, read: jax.Array) -> tuple[Any, jax.Array]:
    """A step's ``(state, read)``: ``(new, read)``, or where ``mask`` is 0 (padding) ``(old, zeros)``."""
    if mask is None:
        return new, read
    keep = jnp.asarray(mask).astype(bool)
    return select(keep, (new, read), (old, jnp.zeros_like(read)))


def split_interface(
    raw: jax.Array, size: int, num_actions: int, value_fn: Callable[[jax.Array], jax.Array]
) -> tuple[jax.Array, jax.Array]:
    """``raw [..., A + W] -> (softmax(raw[..., :A]) [..., A], value_fn(raw[..., A:]) [..., W])``.

    ``size`` is ``A + W`` (the kernel's ``interface_size``); leading axes are kept.
    ``raw`` is first bounded to ``+-validation.RAW_LIMIT`` (``validation.bound_raw``).

    Raises:
      ValueError: naming ``raw`` when it is not real floating or its last axis is not ``size``.
    """
    check_floating("raw", raw)
    if jnp.ndim(raw) < 1 or jnp.shape(raw)[-1] != size:
        raise ValueError(f"raw: expected shape [..., {num_actions} + W] = (..., {size}), got {tuple(jnp.shape(raw))}")
    raw = bound_raw(raw)
    return jax.nn.softmax(raw[..., :num_actions], axis=-1), value_fn(raw[..., num_actions:])
