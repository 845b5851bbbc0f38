"""Machines from TOML: ``load_machine`` (a file or a shipped name), ``machine_from_toml``, ``list_machines``.

The format is described in ``panm_jax.tasks.automata``; the shipped machines
are the files ``panm_jax/tasks/machines/*.toml``. The loader checks the keys of
the file and of each transition; the machine's own checks do the rest.
"""

from __future__ import annotations

import os
import tomllib
from importlib import resources
from pathlib import Path

from panm_jax.tasks.automata.base import MachineFormatError, UnknownMachineError
from panm_jax.tasks.automata.finite import FiniteAutomaton
from panm_jax.tasks.automata.pushdown import PushdownAutomaton
from panm_jax.tasks.automata.turing import TuringMachine

__all__ = ["list_machines", "load_machine", "machine_from_toml"]

Machine = FiniteAutomaton | PushdownAutomaton | TuringMachine
_KINDS = {"dfa": FiniteAutomaton, "pda": PushdownAutomaton, "tm": TuringMachine}
_TRANSITION_KEYS = {
    "dfa": ("from", "read", "to"),
    "pda": ("from", "read", "pop", "to", "push"),
    "tm": ("from", "read", "to", "write", "move"),
}
_COMMON = ("kind", "name", "description", "states", "input_alphabet", "transitions", "start", "accepting")
_KEYS = {
    "dfa": (_COMMON, ()),
    "pda": (_COMMON + ("stack_alphabet", "start_stack"), ("deterministic", "max_configurations")),
    "tm": (_COMMON + ("tape_alphabet", "blank"), ("output_left", "output_right", "max_steps")),
}
_OPTIONAL = ("name", "description")


def _machines_dir():
    return resources.files("panm_jax.tasks").joinpath("machines")


def list_machines() -> list[str]:
    """The names of the shipped machines (``load_machine(name)``), sorted."""
    return sorted(p.name[:-5] for p in _machines_dir().iterdir() if p.name.endswith(".toml"))


def load_machine(path_or_name) -> Machine:
    """A machine from a TOML file (a path) or a shipped one (a name without ``/`` or ``.toml``).

    Raises:
      UnknownMachineError: no such shipped name, or no such file.
      MachineFormatError: the file is not UTF-8, not TOML, or a field is wrong
        (the message starts with the file and the field).
    """
    if isinstance(path_or_name, os.PathLike):
        path_or_name = os.fspath(path_or_name)
    if not isinstance(path_or_name, str) or not path_or_name:
        raise UnknownMachineError(f"machine: expected a shipped name or a path to a TOML file, got {path_or_name!r}")
    is_path = path_or_name.endswith(".toml") or "/" in path_or_name or os.sep in path_or_name
    if is_path:
        path = Path(path_or_name)
        if not path.is_file():
            raise UnknownMachineError(f"machine: no such file {path_or_name!r}")
        raw, source, stem = path.read_bytes(), str(path), path.stem
    else:
        entry = _machines_dir().joinpath(f"{path_or_name}.toml")
        if not entry.is_file():
            raise UnknownMachineError(f"machine: expected one of {list_machines()} or a path, got {path_or_name!r}")
        raw, source, stem = entry.read_bytes(), f"{path_or_name}.toml", path_or_name
    return machine_from_toml(raw, source, default_name=stem)


def machine_from_toml(raw: bytes | str, source: str = "<string>", default_name: str = "machine") -> Machine:
    """A machine from TOML text (``bytes`` must be UTF-8); errors name ``source``."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise MachineFormatError(
                source, "<file>", f"not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset {err.start})"
            ) from None
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as err:
        raise MachineFormatError(source, "<file>", f"not valid TOML: {err}") from None
    kind = data.get("kind")
    if kind is None:
        raise MachineFormatError(source, "kind", f"missing; expected one of {list(_KINDS)}")
    if kind not in _KINDS:
        raise MachineFormatError(source, "kind", f"expected one of {list(_KINDS)}, got {kind!r}")
    required, optional = _KEYS[kind]
    known = set(required) | set(optional)
    for key in data:
        if key not in known:
            raise MachineFormatError(source, key, f"unknown field for kind {kind!r}; expected some of {sorted(known)}")
    for key in required:
        if key not in data and key not in _OPTIONAL:
            raise MachineFormatError(source, key, "missing")
    for key in ("name", "description"):
        if key in data and not isinstance(data[key], str):
            raise MachineFormatError(source, key, f"expected a string, got {data[key]!r}")
    tkeys = _TRANSITION_KEYS[kind]
    rows = data["transitions"]
    if not isinstance(rows, list):
        raise MachineFormatError(source, "transitions", f"expected an array of tables, got {rows!r}")
    transitions = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise MachineFormatError(
                source, f"transitions[{i}]", f"expected a table with keys {list(tkeys)}, got {row!r}"
            )
        for key in row:
            if key not in tkeys:
                raise MachineFormatError(source, f"transitions[{i}].{key}", f"unknown key; expected {list(tkeys)}")
        for key in tkeys:
            if key not in row:
                raise MachineFormatError(source, f"transitions[{i}].{key}", "missing")
        transitions.append(tuple(row[k] for k in tkeys))
    kwargs = {k: v for k, v in data.items() if k not in ("kind", "transitions")}
    kwargs.setdefault("name", default_name)
    return _KINDS[kind](transitions=transitions, source=source, **kwargs)
