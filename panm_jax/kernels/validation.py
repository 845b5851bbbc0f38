"""Trace-time argument checks shared by the kernels.

Shapes are static under ``jit``, so these checks run once per trace, in Python,
and cost nothing at run time. Every error names the argument, what was expected
and what was given.
"""

from __future__ import annotations

from collections.abc import Sequence

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
    ok = len(shape) == len(expected) and all(
        e is None or e == s for e, s in zip(expected, shape)
    )
    if not ok:
        want = ", ".join("?" if e is None else str(e) for e in expected)
        raise ValueError(
            f"{name}: expected shape [{dims}] = ({want}), got {shape}"
        )


def check_positive_int(name: str, value) -> int:
    """Return ``value`` as an ``int`` or raise ``ValueError`` if it is not >= 1."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    return int(value)


def check_odd_int(name: str, value) -> int:
    """Return ``value`` as an ``int`` or raise ``ValueError`` unless it is odd and >= 1."""
    value = check_positive_int(name, value)
    if value % 2 != 1:
        raise ValueError(f"{name}: expected an odd positive integer, got {value}")
    return value
