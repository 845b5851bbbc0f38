"""Array checks shared by the kernels: shapes, dtypes and value ranges.

Shapes and dtypes are static under ``jit``, so those checks run once per trace,
in Python, and cost nothing at run time. Value ranges (a usage in [0, 1], a push
strength in [0, 1]) are checked only where the values are concrete, i.e. in
eager calls (``check_in_range``). Every error names the argument, what was
expected and what was given.

Scalar arguments (a width, an odd shift window, a finite initial value) are
checked by ``panm_jax.checks`` (``positive_int``, ``odd_int``, ``finite_number``,
...), the one checks module of the library.

Two bounds every kernel shares live here too: ``check_state_sizes``, which every
``init_state`` calls before allocating (an axis beyond int32 indexing, or an
array XLA cannot describe, raises ``UserError`` instead of aborting the
process), and ``raw_limit`` / ``bound_raw``, the bound on raw interface values
that every ``controls_from_interface`` applies so that gradients stay finite.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from panm_jax.errors import UserError


def check_shape(name: str, value, expected: Sequence[int | None], dims: str) -> None:
    """Raise ``ValueError`` unless ``value.shape`` matches ``expected``.

    Args:
      name: the argument's name as the caller knows it (``"state.memory"``).
      value: an array (anything with ``.shape``).
      expected: the expected shape; ``None`` accepts any size on that axis.
      dims: the axes in the shared notation, e.g. ``"N, W"``.
    """
    shape = tuple(np.shape(value))
    expected = tuple(expected)
    ok = len(shape) == len(expected) and all(e is None or e == s for e, s in zip(expected, shape, strict=True))
    if not ok:
        want = ", ".join("?" if e is None else str(e) for e in expected)
        raise ValueError(f"{name}: expected shape [{dims}] = ({want}), got {shape}")


def check_float_dtype(name: str, dtype) -> np.dtype:
    """Return ``dtype`` as a NumPy dtype, or raise ``ValueError`` unless it is a real floating one.

    The kernels' states and controls live in float16, bfloat16, float32 or
    float64; an integer or complex dtype would fail deep inside a step (e.g.
    ``logistic does not accept dtype int32``) or silently round every weight.
    """
    try:
        dt = jnp.dtype(dtype)
    except TypeError:
        raise ValueError(f"{name}: expected a real floating dtype (float32, bfloat16, ...), got {dtype!r}") from None
    if not jnp.issubdtype(dt, jnp.floating):
        raise ValueError(f"{name}: expected a real floating dtype (float32, bfloat16, ...), got {dt}")
    return dt


def check_floating(name: str, value) -> None:
    """Raise ``ValueError`` unless the array ``value`` has a real floating dtype (trace time)."""
    dt = jnp.result_type(value)
    if not jnp.issubdtype(dt, jnp.floating):
        raise ValueError(f"{name}: expected a real floating array (float32, bfloat16, ...), got dtype {dt}")


def check_floating_fields(prefix: str, tree, skip: Sequence[str] = ()) -> None:
    """``check_floating`` on every field of a ``NamedTuple`` of arrays (nested ones too).

    Args:
      prefix: the argument's name (``"state"``, ``"controls"``).
      tree: a ``NamedTuple`` whose fields are arrays or ``NamedTuple``s.
      skip: field names that are not floating by design (a Stack's ``size``).
    """
    for field, value in zip(tree._fields, tree, strict=True):
        if field in skip:
            continue
        if hasattr(value, "_fields"):
            check_floating_fields(f"{prefix}.{field}", value, skip)
        else:
            check_floating(f"{prefix}.{field}", value)


def is_concrete(value) -> bool:
    """Whether ``value`` holds numbers now: NumPy, a Python scalar, or a JAX array outside a trace.

    Under ``jit``, ``grad`` or ``vmap`` the kernels see tracers, whose values are
    not known until the compiled step runs; value checks then cost nothing and
    check nothing (shapes and dtypes are still checked).
    """
    return not isinstance(value, jax.core.Tracer)


def check_mask(mask) -> None:
    """Raise ``UserError`` unless a step's ``mask`` is a bool, integer or real floating array (trace time) whose
    entries, where concrete (``is_concrete``), are 0 or 1: a complex mask would lose its imaginary part, a NaN
    or a 2 would count as a real step in some kernels and blend states in others."""
    dt = jnp.result_type(mask)
    if not (dt == jnp.bool_ or jnp.issubdtype(dt, jnp.integer) or jnp.issubdtype(dt, jnp.floating)):
        raise UserError(f"mask: expected a bool, integer or real floating array, got dtype {dt}")
    if is_concrete(mask) and dt != jnp.bool_:
        values = np.ravel(np.asarray(mask, np.float64))
        wrong = values[(values != 0) & (values != 1)]
        if wrong.size:
            raise UserError(f"mask: expected 0 (a padding step) or 1 (a real step), got {float(wrong[0])}")


# Slack of the range checks: values computed in float arithmetic (a usage
# u + (1 - u) w, a sigmoid) may leave their range by a rounding; a user's
# mistake (a push of 5, a usage of 2) is far outside.
RANGE_SLACK = 1e-3


def check_in_range(name: str, value, lo: float | None, hi: float | None) -> None:
    """Raise ``ValueError`` if a concrete ``value`` has an entry outside ``[lo, hi]`` (or NaN).

    Checked only when ``value`` is concrete (``is_concrete``): eager calls, where
    a mistake is cheapest to name; under a trace it does nothing. Bounds are
    widened by ``RANGE_SLACK``; ``None`` leaves that side open.
    """
    if not is_concrete(value):
        return
    array = np.asarray(value, dtype=np.float64)
    bad = np.isnan(array)
    if lo is not None:
        bad |= array < lo - RANGE_SLACK
    if hi is not None:
        bad |= array > hi + RANGE_SLACK
    if bad.any():
        interval = f"[{-np.inf if lo is None else lo:g}, {np.inf if hi is None else hi:g}]"
        raise ValueError(f"{name}: expected values in {interval}, got {array[bad].flat[0]:g}")


# The largest axis of one example's state: the kernels index slots, rows and cells with
# int32 (a Stack's size and row, a tape's jump and cell indices, the DNC's sort order).
MAX_AXIS = 2**31 - 1
# The largest array XLA can describe: its size in bytes is an int64. Beyond it XLA does
# not raise but aborts the process ("overflow in static extent product").
MAX_BYTES = 2**63 - 1


def check_state_sizes(
    fields: dict[str, tuple[tuple[int, ...], tuple[str, ...]]], batch_shape: tuple[int, ...], dtype
) -> None:
    """Raise ``UserError`` unless every state field can be indexed and allocated; call it before allocating.

    Args:
      fields: for each field's name (``"state.values"``), its shape for one example
        and the argument that sets each axis (``("capacity", "width")``).
      batch_shape: the leading axes in front of every field.
      dtype: the fields' dtype (its item size).

    Every axis of one example must be at most ``MAX_AXIS`` (``2^31 - 1``: int32
    indices), and every field, batch included, must take at most ``MAX_BYTES``
    (``2^63 - 1``) bytes, beyond which XLA aborts the process instead of raising
    (within it, an allocation too large for the device raises XLA's
    ``RESOURCE_EXHAUSTED``). Python integers: nothing is allocated to check.
    """
    itemsize = jnp.dtype(dtype).itemsize
    for field, (shape, names) in fields.items():
        for name, size in zip(names, shape, strict=True):
            if size > MAX_AXIS:
                raise UserError(
                    f"{name}: expected at most {MAX_AXIS} (the kernels index {field} with int32), got {size}"
                )
        nbytes = math.prod(batch_shape) * math.prod(shape) * itemsize
        if nbytes > MAX_BYTES:
            args = ", ".join(dict.fromkeys(("batch_shape",) * bool(batch_shape) + names))
            raise UserError(
                f"{args}: expected {field} to take at most {MAX_BYTES} bytes (2^63 - 1, the largest array XLA "
                f"can allocate), got shape {(*batch_shape, *shape)} of {jnp.dtype(dtype).name}: {nbytes} bytes"
            )


# The bound on raw interface values: every kernel's controls_from_interface maps raw
# values beyond +-raw_limit(dtype) to that limit before its activations (bound_raw).
# Within it, nothing changes; beyond it, the controls (and the step) are those at the
# bound, and the gradient with respect to that raw value is 0. Why: the forward pass is
# finite for any finite raw value, but the backward pass of the NTM and the DNC
# multiplies activations that grow with the raw values (a strength beta = softplus(x)
# ~ x, a sharpening exponent gamma = 1 + softplus(x), written vectors) by cotangents of
# their own size, which overflowed float32 for |x| ~ 1e18 (NTM) and 1e30 (DNC).
# RAW_LIMIT = 1e4 is far beyond any useful pre-activation (a sigmoid is 1 to float32
# precision from about 17; a strength of 1e4 already makes a content softmax one-hot).
RAW_LIMIT = 1e4


def raw_limit(dtype) -> float:
    """The bound on raw interface values of ``dtype``: ``RAW_LIMIT``, or less where the dtype is narrow.

    ``min(RAW_LIMIT, 2^floor(log2(sqrt(f_max))))`` with ``f_max`` the dtype's largest
    finite value: ``1e4`` for float32, bfloat16 and float64; ``128`` for float16
    (``f_max = 65504``), so that a product of two bounded values, and a sum of a few
    hundred of them, stays finite in float16 too.
    """
    root = float(np.sqrt(float(jnp.finfo(dtype).max)))
    return min(RAW_LIMIT, float(2.0 ** np.floor(np.log2(root))))


def bound_raw(raw: jax.Array) -> jax.Array:
    """``raw`` with every value beyond ``+-raw_limit(dtype)`` replaced by that limit (NaN stays NaN).

    The derivative is 1 within ``[-limit, limit]`` (its edges included) and 0
    beyond: the backward pass saturates where the forward pass does.
    """
    dtype = jnp.result_type(raw)
    limit = jnp.asarray(raw_limit(dtype), dtype)
    return jnp.where(raw > limit, limit, jnp.where(raw < -limit, -limit, raw))
