"""The one recurrence wrapper that every time loop in panm_jax goes through.

Every recurrence in the library (a memory kernel's ``step``, a controller, PANM's
decoder) runs as ``scan(step, state, xs, mask)``: one ``lax.scan`` over time, so a
sequence compiles once per shape and runs without a Python loop or a host sync.
The wrapper adds what ``lax.scan`` lacks:

* ``mask``: where ``mask[t] == 0`` (padding) the state is carried unchanged and the
  step's outputs are zeros, so one compiled program serves a padded batch of mixed
  lengths (``vmap`` it over the batch with per-example masks);
* ``remat``: wrap the step in ``jax.checkpoint`` to trade recomputation for memory
  on long sequences (gradients unchanged);
* ``remat_chunk``: checkpoint the carry only every ``k`` steps and recompute
  each chunk of ``k`` steps in the backward pass (gradients unchanged). A plain
  scan keeps the carry of every step for the backward pass (``T`` copies of a
  DNC's ``[N, N]`` link); this keeps ``T / k`` of them plus one chunk's ``k``, at
  the price of running the forward twice;
* ``trace_fn``: also stack ``trace_fn(state_t)`` over time, for plots of memory
  weights or pointer positions, without changing the step.

Shapes: ``xs`` is a pytree whose leaves share a leading time axis ``[T, ...]``;
``mask`` is ``[T]`` (bool or {0, 1}); outputs are ``[T, ...]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from panm_jax.checks import nonnegative_int, positive_int

State = TypeVar("State")

__all__ = ["scan", "select"]


def select(keep_new: jax.Array, new: State, old: State) -> State:
    """Choose ``new`` where ``keep_new`` is true and ``old`` elsewhere, leaf by leaf.

    ``keep_new`` is a scalar (one example's step mask) or broadcasts against every
    leaf from the left. This is how a masked (padding) step leaves a state
    unchanged: ``select(mask, new_state, state)``.
    """
    keep = jnp.asarray(keep_new).astype(bool)
    blends: dict = {}  # one float mask per (rank, dtype), shared by the leaves' derivatives

    def pick(n, o):
        k = jnp.reshape(keep, keep.shape + (1,) * (jnp.ndim(n) - keep.ndim))
        if not jnp.issubdtype(jnp.result_type(n), jnp.inexact):
            return jnp.where(k, n, o)
        dtype = jnp.result_type(n)
        if (k.ndim, dtype) not in blends:
            blends[k.ndim, dtype] = k.astype(dtype)
        return _pick(k, blends[k.ndim, dtype], n, o)

    return jax.tree_util.tree_map(pick, new, old)


@jax.custom_jvp
def _pick(keep: jax.Array, blend: jax.Array, new: jax.Array, old: jax.Array) -> jax.Array:
    """``where(keep, new, old)`` for a ``keep`` that broadcasts from the left (size-1 trailing axes).

    ``blend`` is ``keep`` in the leaves' floating dtype. The value is the exact
    ``where``. The derivative is written as a blend with the small mask,
    ``dnew * blend + (dold - dold * blend)``: for a ``blend`` of 0 or 1 exactly
    ``dnew`` or ``dold``, and its transpose exactly ``(g, 0)`` or ``(0, g)``. It
    leaves only ``blend`` itself (``[B, 1, 1]`` under ``vmap``) as the residual for
    the backward pass, one array for every leaf of a rank and dtype that ``select``
    chooses. The plain ``where``'s transpose needs its predicate at the leaf's full
    shape: with it, a scan over a masked ``[B, N, W]`` memory would store a
    ``[T, B, N, W]`` boolean residual and write it every step.
    """
    del blend
    return jnp.where(keep, new, old)


def _pick_jvp(primals, tangents):
    keep, blend, new, old = primals
    _, _, d_new, d_old = tangents
    # Symbolic zeros (e.g. the tangent of a constant zero ``old``) stay out of the
    # arithmetic: instantiated, they would make the blend a value to keep per step.
    new_zero, old_zero = (isinstance(d, jax.custom_derivatives.SymbolicZero) for d in (d_new, d_old))
    if new_zero and old_zero:
        tangent = jnp.zeros_like(new)
    elif old_zero:
        tangent = d_new * blend
    elif new_zero:
        tangent = d_old - d_old * blend
    else:
        tangent = d_new * blend + (d_old - d_old * blend)
    return jnp.where(keep, new, old), tangent


_pick.defjvp(_pick_jvp, symbolic_zeros=True)


def _leading_sizes(xs) -> set[int]:
    return {int(np.shape(leaf)[0]) for leaf in jax.tree_util.tree_leaves(xs) if np.ndim(leaf) > 0} | {
        -1 for leaf in jax.tree_util.tree_leaves(xs) if np.ndim(leaf) == 0
    }


def scan(
    step: Callable[[State, Any], tuple[State, Any]],
    state: State,
    xs: Any,
    mask: jax.Array | None = None,
    *,
    remat: bool = False,
    remat_chunk: int | None = None,
    unroll: int | bool = 1,
    length: int | None = None,
    trace_fn: Callable[[State], Any] | None = None,
) -> tuple[State, Any]:
    """Run ``step`` over the leading (time) axis of ``xs``.

    Args:
      step: ``step(state, x_t) -> (state, out_t)``, ``lax.scan`` carry order.
      state: the initial carry (any pytree of arrays).
      xs: a pytree of ``[T, ...]`` arrays, or ``None`` with ``length`` given.
      mask: optional ``[T]``; where ``mask[t] == 0`` the carry is passed through
        unchanged and ``out_t`` is zeros (as is the trace, if any).
      remat: wrap ``step`` in ``jax.checkpoint`` (recompute in the backward pass).
      remat_chunk: ``k``: scan over chunks of ``k`` steps, each chunk under
        ``jax.checkpoint``, so that the backward pass keeps the carry at every
        ``k``-th step (and one chunk's residuals at a time) instead of at every
        step. ``T`` need not be a multiple of ``k``: the last ``T mod k`` steps
        run as a plain scan. ``None`` (default) or ``k >= T``: a plain scan.
      unroll: passed to ``lax.scan``: steps unrolled per loop iteration, a
        non-negative integer or a bool.
      length: the number of steps when ``xs`` is ``None``, a non-negative integer.
      trace_fn: if given, outputs are ``(out, trace)`` with
        ``trace[t] = trace_fn(state after step t)``.

    Returns:
      ``(final_state, outputs)`` with outputs stacked over time, ``[T, ...]``.

    Raises:
      ValueError: when the leaves of ``xs`` disagree on ``T``, when ``mask`` is not
        ``[T]``, when neither ``xs`` nor ``length`` gives ``T``, when ``length``
        is not a non-negative integer (``-1``, ``2.5``), when ``unroll`` is
        neither a bool nor a non-negative integer, or when ``remat_chunk`` is
        neither ``None`` nor a positive integer.
    """
    if length is not None:
        length = nonnegative_int("length", length)
    if not isinstance(unroll, bool):
        unroll = nonnegative_int("unroll", unroll)
    sizes = _leading_sizes(xs)
    if -1 in sizes:
        raise ValueError("xs: expected every leaf to have a leading time axis [T, ...], got a scalar leaf")
    if len(sizes) > 1:
        raise ValueError(f"xs: expected every leaf to share the leading time axis T, got sizes {sorted(sizes)}")
    if sizes:
        num_steps = sizes.pop()
        if length is not None and length != num_steps:
            raise ValueError(f"length: expected T = {num_steps} (the leading axis of xs), got {length}")
    elif length is None:
        raise ValueError("length: expected the number of steps when xs is None, got None")
    else:
        num_steps = length

    if remat_chunk is not None:
        remat_chunk = positive_int("remat_chunk", remat_chunk)
    if mask is not None and np.shape(mask) != (num_steps,):
        raise ValueError(f"mask: expected shape [T] = ({num_steps},), got {tuple(np.shape(mask))}")

    body = jax.checkpoint(step) if remat else step

    if trace_fn is not None:
        inner = body

        def body(carry, x):
            carry, out = inner(carry, x)
            return carry, (out, trace_fn(carry))

    def masked_body(carry, inputs):
        x, keep = inputs
        new_carry, out = body(carry, x)
        new_carry = select(keep, new_carry, carry)
        out = select(keep, out, jax.tree_util.tree_map(jnp.zeros_like, out))
        return new_carry, out

    if mask is None:
        step_fn, inputs = body, xs
    else:
        step_fn, inputs = masked_body, (xs, jnp.asarray(mask).astype(bool))
    if remat_chunk is not None and remat_chunk < num_steps:
        return _chunked_scan(step_fn, state, inputs, num_steps, remat_chunk, unroll)
    return jax.lax.scan(step_fn, state, inputs, length=num_steps, unroll=unroll)


def _chunked_scan(step_fn, state, inputs, num_steps: int, every: int, unroll):
    """``lax.scan(step_fn, state, inputs)`` as ``T // every`` chunks of ``every`` steps, each under
    ``jax.checkpoint``, then the rest.

    The outer scan's residuals are the carry at each chunk's start; the backward
    pass reruns one chunk's forward at a time. The last ``T % every`` steps run
    as a plain scan after the chunks (no padding, so an unmasked scan needs no
    per-step select).
    """
    chunks, rest = divmod(num_steps, every)
    cut = chunks * every

    def part(lo, hi):  # the steps [lo, hi) of every input leaf
        return jax.tree_util.tree_map(lambda leaf: jnp.asarray(leaf)[lo:hi], inputs)

    def chunk(carry, x):
        return jax.lax.scan(step_fn, carry, x, length=every, unroll=unroll)

    head = jax.tree_util.tree_map(lambda leaf: leaf.reshape((chunks, every) + leaf.shape[1:]), part(0, cut))
    carry, outs = jax.lax.scan(jax.checkpoint(chunk), state, head, length=chunks)
    outs = jax.tree_util.tree_map(lambda o: o.reshape((cut,) + o.shape[2:]), outs)
    if not rest:
        return carry, outs
    carry, tail = jax.lax.scan(step_fn, carry, part(cut, num_steps), length=rest, unroll=unroll)
    return carry, jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), outs, tail)
