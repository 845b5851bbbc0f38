"""Array checks shared by the kernels: shapes, dtypes and value ranges.

Shapes and dtypes are static under ``jit``, so those checks run once per trace,
in Python, and cost nothing at run time. Value ranges (a usage in [0, 1], a push
strength in [0, 1]) are checked only where the values are concrete, i.e. in
eager calls (``check_in_range``). Every error names the argument, what was
expected and what was given.

Scalar arguments (a width, an odd shift window, a finite initial value) are
checked by ``panm_jax.checks`` (``positive_int``, ``odd_int``, ``finite_number``,
...), the one checks module of the library.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


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
