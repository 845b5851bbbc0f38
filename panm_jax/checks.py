"""Checks of scalar arguments and options, shared by every layer.

One place for "is this a positive integer", "a number in [0, 1]", "one of these
names": kernels, modules, models, tasks and the trainer all call these, so a
mistake reads the same wherever it is made. Each check returns the value in its
canonical Python type (``int``, ``float``, ``str``) or raises ``UserError`` (a
``ValueError``) whose message names the argument, what was expected and what
was given: ``"width: expected a positive integer, got 2.5"``.

``bool`` is refused where a number is expected (``True`` is an ``int`` to
Python, never a width to a user); NumPy integers and floats are accepted.
``INT32_MIN`` and ``INT32_MAX`` bound the integers JAX computes with (its
default integer is int32): a size, count or length beyond them cannot be used.
Array checks (shapes, dtypes, value ranges of a state) live beside the kernels
in ``panm_jax.kernels.validation``.
"""

from __future__ import annotations

import collections.abc
import difflib
import math
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from panm_jax.errors import ConfigError, UnknownNameError, UserError

__all__ = [
    "INT32_MAX",
    "INT32_MIN",
    "boolean",
    "did_you_mean",
    "expects",
    "finite_number",
    "integer",
    "nonnegative_int",
    "number",
    "odd_int",
    "one_of",
    "optional_integer",
    "optional_positive_int",
    "optional_positive_number",
    "positive_int",
    "positive_number",
    "probability",
    "unknown_name",
]


# The range of JAX's default integer (int32 unless 64-bit mode is on): an array axis, a step counter, a
# slot index. A size, count or length beyond it cannot be used by a run, and a Python int beyond it
# raises ``OverflowError`` where JAX converts it.
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def integer(name: str, value, lo: int | None = None, hi: int | None = None, *, why: str = "") -> int:
    """Return ``value`` as an ``int``, or raise unless it is an integer in ``[lo, hi]``.

    ``None`` leaves a side open. The message says ``a positive integer`` for
    ``lo = 1``, ``a non-negative integer`` for ``lo = 0``, ``an integer >= lo``,
    ``an integer <= hi`` or ``an integer in [lo, hi]`` otherwise; ``why``, where
    given, follows in parentheses (``an integer in [1, 2147483647] (the step
    counter is int32)``).
    """
    if not _is_int(value) or (lo is not None and value < lo) or (hi is not None and value > hi):
        raise UserError(f"{name}: expected {_integer_wants(lo, hi, why=why)}, got {value!r}")
    return int(value)


def _integer_wants(lo: int | None = None, hi: int | None = None, *, why: str = "") -> str:
    if hi is None and lo == 1:
        want = "a positive integer"
    elif hi is None and lo == 0:
        want = "a non-negative integer"
    elif hi is None and lo is not None:
        want = f"an integer >= {lo}"
    elif lo is None and hi is not None:
        want = f"an integer <= {hi}"
    elif lo is not None:
        want = f"an integer in [{lo}, {hi}]"
    else:
        want = "an integer"
    return f"{want} ({why})" if why else want


def positive_int(name: str, value) -> int:
    """``integer(name, value, lo=1)``: a count, a width, a number of steps."""
    return integer(name, value, 1)


def nonnegative_int(name: str, value) -> int:
    """``integer(name, value, lo=0)``: a count that may be zero."""
    return integer(name, value, 0)


def optional_positive_int(name: str, value) -> int | None:
    """``None`` (a size left to its default rule), or a positive integer."""
    return optional_integer(name, value, 1)


def optional_integer(name: str, value, lo: int | None = None, hi: int | None = None) -> int | None:
    """``None`` (a value left to its default rule), or ``integer(name, value, lo, hi)``."""
    if value is None:
        return None
    if not _is_int(value) or (lo is not None and value < lo) or (hi is not None and value > hi):
        raise UserError(f"{name}: expected {_integer_wants(lo, hi)} or None, got {value!r}")
    return int(value)


def odd_int(name: str, value) -> int:
    """A positive odd integer (a shift window ``-s..s`` has ``2 s + 1`` entries)."""
    value = positive_int(name, value)
    if value % 2 != 1:
        raise UserError(f"{name}: expected an odd positive integer, got {value}")
    return value


def number(
    name: str,
    value,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
) -> float:
    """Return ``value`` as a ``float``, or raise unless it is a finite real number in the interval.

    ``lo``/``hi`` bound it (``None``: open on that side); ``lo_open``/``hi_open``
    exclude the bound itself. NaN and infinities are always refused.
    """
    ok = _is_real(value) and math.isfinite(float(value))
    if ok and lo is not None:
        ok = value > lo if lo_open else value >= lo
    if ok and hi is not None:
        ok = value < hi if hi_open else value <= hi
    if not ok:
        raise UserError(f"{name}: expected {_number_wants(lo, hi, lo_open=lo_open, hi_open=hi_open)}, got {value!r}")
    return float(value)


def _number_wants(
    lo: float | None = None, hi: float | None = None, *, lo_open: bool = False, hi_open: bool = False
) -> str:
    if lo is None and hi is None:
        return "a finite number"
    if lo == 0 and lo_open and hi is None:
        return "a finite positive number"
    if lo == 0 and not lo_open and hi is None:
        return "a finite non-negative number"
    if hi is None:
        return f"a finite number {'>' if lo_open else '>='} {lo:g}"
    if lo is None:
        return f"a finite number {'<' if hi_open else '<='} {hi:g}"
    return f"a number in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"


def finite_number(name: str, value) -> float:
    """Any finite real number."""
    return number(name, value)


def positive_number(name: str, value) -> float:
    """A finite number > 0 (a learning rate, a time limit)."""
    return number(name, value, 0.0, lo_open=True)


def optional_positive_number(name: str, value) -> float | None:
    """``None`` (off, or no limit), or a finite number > 0."""
    if value is None:
        return None
    if not (_is_real(value) and math.isfinite(float(value)) and value > 0):
        raise UserError(f"{name}: expected a finite positive number or None, got {value!r}")
    return float(value)


def probability(name: str, value) -> float:
    """A number in [0, 1]."""
    return number(name, value, 0.0, 1.0)


def boolean(name: str, value) -> bool:
    """Return ``value`` if it is ``True`` or ``False`` (not 0, 1 or a string), else raise naming it."""
    if not isinstance(value, bool):
        raise UserError(f"{name}: expected true or false, got {value!r}")
    return value


def one_of(name: str, value, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices`` (strings), else raise naming them all (and the nearest)."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise UserError(f"{name}: expected one of {list(choices)}, got {value!r}{did_you_mean(value, choices)}")
    return value


# What each check accepts, in the words of its message (``expects``).
_EXPECTS: dict[Any, Any] = {
    integer: _integer_wants,
    positive_int: lambda: "a positive integer",
    nonnegative_int: lambda: "a non-negative integer",
    optional_positive_int: lambda: "a positive integer or None",
    optional_integer: lambda lo=None, hi=None: f"{_integer_wants(lo, hi)} or None",
    optional_positive_number: lambda: "a finite positive number or None",
    odd_int: lambda: "an odd positive integer",
    number: _number_wants,
    finite_number: lambda: "a finite number",
    positive_number: lambda: "a finite positive number",
    probability: lambda: "a number in [0, 1]",
    boolean: lambda: "true or false",
    one_of: lambda choices: f"one of {list(choices)}",
}


def expects(check, *args, **kwargs) -> str:
    """What ``check(name, value, *args, **kwargs)`` accepts, in the words its message uses after "expected"
    (``expects(integer, 1, 30)``: ``"an integer in [1, 30]"``); ``""`` for a function that is not one of
    these checks."""
    describe = _EXPECTS.get(check)
    return describe(*args, **kwargs) if describe is not None else ""


def did_you_mean(given, known: Iterable) -> str:
    """``"; did you mean 'copy'?"``: the known name nearest a misspelled one, for the end of an error message.

    ``given`` is one name or a list of them (each unknown name of a message);
    the nearest known name is ``difflib``'s closest match (case aside) with a
    similarity of at least 0.6. Returns "" where no known name is that close
    (or ``given`` holds no string), so the message is then unchanged. Several
    given names read ``"; did you mean 'hidden' for 'hiden', 'score' for
    'scor'?"``.
    """
    if isinstance(given, str):
        names = [given]
    elif isinstance(given, (list, tuple)):
        names = [g for g in given if isinstance(g, str)]
    else:
        names = []
    lowered = {k.lower(): k for k in known if isinstance(k, str)}
    pairs = []
    for name in names:
        match = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
        if match and lowered[match[0]] != name:
            pairs.append((name, lowered[match[0]]))
    if not pairs:
        return ""
    if len(names) == 1:
        return f"; did you mean {pairs[0][1]!r}?"
    return "; did you mean " + ", ".join(f"{m!r} for {n!r}" for n, m in pairs) + "?"


def unknown_name(argument: str, name, known: Iterable[str]) -> UnknownNameError:
    """The error for a name that no registry holds: ``model: expected one of ['dnc', ...], got 'x'``, and
    the nearest known name where one is close (``did_you_mean``).

    Returned, not raised, so the caller writes ``raise unknown_name(...)`` and
    the traceback (under ``--debug``) points at the lookup. Models, tasks and
    every other registry lookup raise this one type. ``known`` is listed in the
    caller's order (a registry's own order, or sorted by the caller).
    """
    known = list(known)
    return UnknownNameError(f"{argument}: expected one of {known}, got {name!r}{did_you_mean(name, known)}")


# ---- type hints (a config's fields, a model's options) ----


def _describe(hint) -> str:
    """``hint`` in words, for messages: ``an integer``, ``a finite number or null``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    origin = origin if isinstance(origin, type) or origin is typing.Union else None
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    if hint is type(None):
        return "null"
    if isinstance(origin, type) and issubclass(origin, collections.abc.Mapping):
        return "a table"
    if isinstance(origin, type) and issubclass(origin, collections.abc.Sequence):
        return f"a list of {_describe(args[0]).removeprefix('a ').removeprefix('an ')}s" if args else "a list"
    words = {bool: "true or false", int: "an integer", float: "a finite number", str: "a string"}
    return words.get(hint, f"a {getattr(hint, '__name__', hint)}")


def _fits(value, hint) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    origin = origin if isinstance(origin, type) or origin is typing.Union else None  # Literal etc.: not checked
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:  # bools are ints in Python, not here
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if isinstance(origin, type) and issubclass(origin, collections.abc.Mapping):
        return isinstance(value, Mapping)
    if isinstance(origin, type) and issubclass(origin, collections.abc.Sequence):
        return (
            isinstance(value, (list, tuple)) and not isinstance(value, str) and all(_fits(v, args[0]) for v in value)
            if args
            else True
        )
    return isinstance(value, hint) if isinstance(hint, type) else True


def check_type(name: str, value, hint) -> None:
    """Raise ``ConfigError`` unless ``value`` fits the type hint ``hint`` (``int``, ``float | None``,
    ``Sequence[int]``, ``Mapping[str, Any]``, a class...): a bool is not an integer, a float must be finite."""
    if not _fits(value, hint):
        raise ConfigError(name, f"expected {_describe(hint)}, got {value!r}")
