"""Importing on first use: a package's public names (PEP 562) and a registry's entries.

``panm_jax``, ``panm_jax.kernels``, ``panm_jax.modules`` and ``panm_jax.train``
import nothing heavy when imported; each public name loads its defining module
the first time it is read and is then cached in the package's namespace
(``lazy_exports``). The task and model registries name each entry by where it is
defined, ``"module:attribute"``, and import it when it is first looked up
(``load``, ``LazyTable``): listing the names imports nothing. A name of the
form ``"module:attribute"`` that is not registered names a task or model of the
user's own (``import_named``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import Any, Generic, TypeVar

V = TypeVar("V")


def lazy_exports(
    package: str, exports: Mapping[str, str], names: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``.

    Args:
      package: the package's ``__name__``.
      exports: public name -> the module that defines it; a name whose module
        is ``f"{package}.{name}"`` is that module itself (a sub-module or
        sub-package).
      names: the package's ``__all__``, for ``dir()``.
    """
    listed = list(names)

    def __getattr__(name: str) -> Any:
        try:
            where = exports[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        module = importlib.import_module(where)
        value = module if where == f"{package}.{name}" else getattr(module, name)
        vars(sys.modules[package])[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(listed))

    return __getattr__, __dir__


def load(path: str) -> Any:
    """The object ``path`` names, ``"package.module:attribute"``, importing its module."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def import_named(path: str, what: str) -> tuple[Any, str]:
    """``(module, attribute)`` for ``path`` = ``"package.module:attribute"``, a task or model of one's own:
    the module imported, and the attribute's name (the module may define it, or register it on import).

    Raises ``UserError`` naming ``what`` (``"task"``, ``"model"``) when the module cannot be imported.
    """
    from panm_jax.errors import UserError

    module, _, attribute = path.partition(":")
    if not module or not attribute:
        raise UserError(f"{what}: expected a registered name or 'package.module:NAME', got {path!r}")
    try:
        return importlib.import_module(module), attribute
    except ImportError as err:
        raise UserError(
            f"{what}: cannot import {module!r} (of {path!r}): {err}; a module of your own must be importable "
            "(installed, or its folder on PYTHONPATH)"
        ) from None


class _Path(str):
    """An entry of a ``LazyTable`` not imported yet: its ``"module:attribute"``."""


class LazyTable(MutableMapping[str, V], Generic[V]):
    """A name -> object table whose entries are written as ``"module:attribute"`` and imported when first read.

    The names, their order, ``len`` and ``in`` need no import; ``table[name]``
    imports the entry's module once and keeps the object. An entry set with
    ``table[name] = obj`` (a registration at run time, or a test's
    ``monkeypatch.setitem``) is the object itself.
    """

    def __init__(self, paths: Mapping[str, str]):
        self._entries: dict[str, V | _Path] = {name: _Path(path) for name, path in paths.items()}

    def __getitem__(self, name: str) -> V:
        entry = self._entries[name]
        if isinstance(entry, _Path):
            entry = self._entries[name] = load(entry)
        return entry

    def __setitem__(self, name: str, value: V) -> None:
        self._entries[name] = value

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self._entries)})"
