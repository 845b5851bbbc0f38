"""What the three machines share: the errors, the checks of their fields, and the word check.

Every machine (``finite``, ``pushdown``, ``turing``) runs the same checks on its
fields whether it was read from TOML (``loader``) or built in Python, so a
malformed machine raises ``MachineFormatError`` naming the source and the field
either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from panm_jax import checks
from panm_jax.errors import UnknownNameError, UserError

__all__ = ["MachineError", "MachineFormatError", "MachineLimitError", "UnknownMachineError"]

_PYTHON = "<python>"  # the ``source`` of a machine built in Python


# ---------------------------------------------------------------------- errors


class MachineError(UserError):
    """A machine that cannot be used as given (a ``ValueError``; the message names it)."""


class MachineFormatError(MachineError):
    """A malformed machine: ``source`` (the file, or ``"<python>"``) and ``field`` are named."""

    def __init__(self, source: str, field: str, message: str):
        self.source, self.field = source, field
        super().__init__(f"{source}: {field}: {message}")


class MachineLimitError(MachineError):
    """A run or search went past its bound (steps, configurations) or its output window."""


class UnknownMachineError(MachineError, UnknownNameError):
    """``load_machine`` was given a name that is not shipped, or a path that is not a file.

    Also an ``UnknownNameError``, the type of every unknown name in the library.
    """


# ----------------------------------------------------------------- validation


def _check_name_list(source: str, field: str, values, what: str) -> tuple[str, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise MachineFormatError(source, field, f"expected a list of {what} names (strings), got {values!r}")
    out = tuple(values)
    if not out:
        raise MachineFormatError(source, field, f"expected at least one {what}, got an empty list")
    seen: dict[str, int] = {}
    for i, v in enumerate(out):
        if not isinstance(v, str) or not v:
            raise MachineFormatError(source, f"{field}[{i}]", f"expected a non-empty string, got {v!r}")
        if v in seen:
            raise MachineFormatError(source, f"{field}[{i}]", f"{v!r} is listed twice (first at [{seen[v]}])")
        seen[v] = i
    return out


def _check_member(source: str, field: str, value, allowed: Sequence[str], what: str) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise MachineFormatError(source, field, f"expected a declared {what} (one of {list(allowed)}), got {value!r}")
    return value


def _check_accepting(source: str, accepting, states: Sequence[str]) -> tuple[str, ...]:
    if isinstance(accepting, (str, bytes)) or not isinstance(accepting, (Sequence, frozenset, set)):
        raise MachineFormatError(source, "accepting", f"expected a list of state names, got {accepting!r}")
    out = tuple(accepting)
    for i, q in enumerate(out):
        _check_member(source, f"accepting[{i}]", q, states, "state")
        if q in out[:i]:
            raise MachineFormatError(source, f"accepting[{i}]", f"{q!r} is listed twice")
    return out


def _check_count(source: str, field: str, value, lo: int = 1, allow_none: bool = False):
    """``checks.integer(field, value, lo)``, a failure raised as ``MachineFormatError`` naming ``source``."""
    if value is None and allow_none:
        return None
    try:
        return checks.integer(field, value, lo)
    except UserError as err:
        raise MachineFormatError(source, field, str(err).removeprefix(f"{field}: ")) from None


def _check_transitions(source: str, transitions, cls, to_symbols) -> tuple:
    if isinstance(transitions, (str, bytes)) or not isinstance(transitions, Sequence):
        raise MachineFormatError(source, "transitions", f"expected a list of transitions, got {transitions!r}")
    out = []
    for i, t in enumerate(transitions):
        if isinstance(t, cls):
            pass
        elif isinstance(t, Sequence) and not isinstance(t, (str, bytes)) and len(t) == len(cls._fields):
            t = cls(*t)
        else:
            raise MachineFormatError(source, f"transitions[{i}]", f"expected a {cls.__name__} {cls._fields}, got {t!r}")
        out.append(to_symbols(i, t))
    return tuple(out)


def _set(obj, **kw):
    for k, v in kw.items():
        object.__setattr__(obj, k, v)


class _Machine:
    """What the three machines share: the word check and a short description."""

    kind: ClassVar[str]
    source: str
    name: str
    input_alphabet: tuple[str, ...]
    # Set by each machine's ``__post_init__`` (with ``object.__setattr__``: the machines are frozen).
    _sigma_index: dict[str, int]
    _final: frozenset[str]

    def check_word(self, word) -> tuple[str, ...]:
        """``word`` as a tuple of input symbols; ``ValueError`` naming a symbol outside the alphabet."""
        if isinstance(word, (bytes, np.ndarray)) or not isinstance(word, (str, Sequence)):
            raise MachineError(f"word: expected a string or a sequence of symbols, got {type(word).__name__}")
        symbols = tuple(word)
        for i, s in enumerate(symbols):
            if s not in self._sigma_index:
                raise MachineError(
                    f"word: symbol {s!r} at position {i} is not in the input alphabet "
                    f"{list(self.input_alphabet)} of {self.name}"
                )
        return symbols

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}, {self.source})"
