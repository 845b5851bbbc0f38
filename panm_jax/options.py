"""One way to declare an option of a config: ``option(default, check, *args, doc=...)``.

A config is a frozen dataclass; each of its options is a field made by ``option``, which carries

* the default;
* the check, ``check(name, value, *args, **kwargs)`` (a ``panm_jax.checks`` function, or any function that
  raises ``UserError`` naming the option), run on every value when a config is made (``check_options``);
* the values it allows, in the words of the check's own message (``checks.expects``: ``"an integer in
  [1, 30]"``; ``allowed=`` for a check that is not one of ``panm_jax.checks``'s);
* its meaning, one line (``doc``).

``declared(cls)`` reads them back, for the command line (``panm-jax models show``) and the docs; nothing
reads an option's meaning from a source comment or its allowed values from an error's text. Checks that
relate several options (``encoder_heads`` divides ``hidden``) stay in the config's ``__post_init__``.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Any, NamedTuple

from panm_jax.checks import expects

__all__ = ["Declared", "check_options", "declared", "option", "parameters"]


def option(
    default: Any = dataclasses.MISSING,
    check=None,
    *args,
    doc: str,
    allowed: str | None = None,
    default_factory: Any = dataclasses.MISSING,
    **kwargs,
) -> Any:
    """A config field with ``default`` (or ``default_factory``, for a mutable default), checked by
    ``check(name, value, *args, **kwargs)`` whenever a config is made (``check_options``); ``doc``: its
    meaning in one line; ``allowed``: what it accepts, where the check is not one of ``panm_jax.checks``'s
    (whose words ``checks.expects`` gives)."""
    if not doc or "\n" in doc:
        raise ValueError(f"doc: expected one line saying what the option means, got {doc!r}")
    metadata: dict[str, Any] = {"doc": doc}
    if check is not None:
        metadata["check"] = lambda name, value: check(name, value, *args, **kwargs)
        metadata["allowed"] = allowed if allowed is not None else expects(check, *args, **kwargs)
    elif allowed is not None:
        metadata["allowed"] = allowed
    return dataclasses.field(default=default, default_factory=default_factory, metadata=metadata)


def check_options(config: Any, prefix: str = "") -> None:
    """Run the check of every field of the dataclass ``config`` declared with one, from the field's nearest
    declaration with one (a subclass may change a default only), and keep the value in the type the check
    returns (``panm_jax.checks``: a NumPy integer becomes an ``int``); ``config`` may be frozen. A message
    names the field as ``prefix + name`` (``optimizer.learning_rate``)."""
    for name, check in _nearest(type(config), "check").items():
        value = check(prefix + name, getattr(config, name))
        if value is not None:
            object.__setattr__(config, name, value)


class Declared(NamedTuple):
    """An option as ``option`` declared it."""

    name: str
    default: Any  # dataclasses.MISSING where the field has none
    allowed: str  # what its check accepts (``"a positive integer"``), or "" where nothing checks it
    doc: str  # its meaning, or "" for a field not declared with ``option``


def declared(cls: type) -> dict[str, Declared]:
    """Every field of the dataclass ``cls``, in field order, with its declaration (a subclass that changes a
    default keeps its base's check, allowed values and meaning)."""
    allowed, docs = _nearest(cls, "allowed"), _nearest(cls, "doc")
    return {
        f.name: Declared(f.name, _default(f), allowed.get(f.name, ""), docs.get(f.name, ""))
        for f in dataclasses.fields(cls)
    }


def parameters(cls: type) -> dict[str, inspect.Parameter]:
    """The fields of the dataclass ``cls`` as keyword-only parameters, in field order: each one's resolved
    type hint and default (``inspect.Parameter.empty`` for a field without one), as a signature gives them."""
    hints = typing.get_type_hints(cls)
    return {
        f.name: inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if (d := _default(f)) is dataclasses.MISSING else d,
            annotation=hints.get(f.name, Any),
        )
        for f in dataclasses.fields(cls)
    }


def _default(f: dataclasses.Field) -> Any:
    # A field's default: its value, a fresh one from its factory, or dataclasses.MISSING where it has none.
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _nearest(cls: type, key: str) -> dict[str, Any]:
    # {field: its metadata[key]} from the nearest class in cls's MRO that declares it with the key.
    found: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            found.update({f.name: f.metadata[key] for f in dataclasses.fields(klass) if key in f.metadata})
    return {f.name: found[f.name] for f in dataclasses.fields(cls) if f.name in found}
