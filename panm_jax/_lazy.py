"""Lazy exports: a package's public names imported on first use (PEP 562).

``panm_jax``, ``panm_jax.kernels``, ``panm_jax.modules`` and ``panm_jax.train``
import nothing heavy when imported; each public name loads its defining module
the first time it is read and is then cached in the package's namespace.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


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
