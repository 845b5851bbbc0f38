"""What ``panm-jax models show`` and ``panm-jax tasks show`` say about each option, read from the code.

For every option: its type and default (``model_options``/``task_options``: the
config dataclass's fields, the task class's signature), its meaning and the
values it accepts. Nothing here is a second list of options to keep in step:

* the meaning of a model option is the comment on its field in the config
  dataclass (``hidden: int = 256  # D: ...``, or the comment lines just above
  the field), read from the source; a task option's is its entry in the
  ``Options:`` section of the task class's docstring (or of a base class's);
* the values an option accepts are what the option's own check says it
  expects. Each option is given, alone, a value that no check accepts (an
  object of no type the checks know, which raises on any use; for a string
  option, then a string that no list of choices holds); the check's
  ``UserError`` reads ``NAME: expected an integer in [1, 4], got <probe>``
  (or ``NAME: unknown ...; known controllers: [...]``), and the words after
  ``expected`` are the allowed values. An option that no check looks at shows
  its type only; one whose bound depends on another option shows the bound at
  the other options' defaults.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import io
import re
import textwrap
import tokenize
import typing
from collections.abc import Callable
from typing import Any, NamedTuple

from panm_jax.options import Declared, declared

__all__ = [
    "OptionDoc",
    "docstring_options",
    "field_comments",
    "model_option_docs",
    "task_option_docs",
    "variant_option_docs",
]


class OptionDoc(NamedTuple):
    """One option as ``show`` prints it."""

    name: str
    type: str  # ``int``, ``float``, ``int | None``
    default: str  # the default's ``repr``, or ``required``
    allowed: str  # what its check expects (``an integer in [1, 4]``), or "" where nothing checks it
    meaning: str  # its comment or docstring entry, or "" where it has none


# ------------------------------------------------------------------ meanings


def field_comments(cls: type) -> dict[str, str]:
    """``{field: comment}`` for a dataclass's fields, its base classes' included, read from their source.

    A field's comment is the ``#`` comment on its line(s) (a field that a
    formatter split over several lines has it on any of them), else the run of
    comment lines just above it. A field with neither is left out; so is every
    field of a class whose source cannot be read.
    """
    comments: dict[str, str] = {}
    for klass in reversed(cls.__mro__):  # a subclass's comment on a field it redefines wins
        if klass is object or not dataclasses.is_dataclass(klass):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        line_comments = {
            tok.start[0]: tok.string.lstrip("#").strip()
            for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.COMMENT
        }
        lines = source.splitlines()
        body = ast.parse(source).body[0]
        assert isinstance(body, ast.ClassDef)
        for node in body.body:
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            end = node.end_lineno or node.lineno
            trailing = [line_comments[n] for n in range(node.lineno, end + 1) if n in line_comments]
            above: list[str] = []
            n = node.lineno - 1
            while n in line_comments and lines[n - 1].lstrip().startswith("#"):
                above.insert(0, line_comments[n])
                n -= 1
            text = " ".join(trailing or above)
            if text:
                comments[node.target.id] = text
    return comments


_SECTION = re.compile(r"^(?P<indent>\s*)Options:\s*$")
_ENTRY = re.compile(r"^(?P<names>\w+(?:\s*,\s*\w+)*):\s*(?P<text>.*)$")


def docstring_options(cls: type) -> dict[str, str]:
    """``{option: text}`` from the ``Options:`` sections of the docstrings of ``cls`` and its base classes.

    Google style: ``name: text`` under ``Options:``, continuation lines indented
    further; ``min_train_length, max_train_length: text`` documents both. The
    nearest class's entry wins.
    """
    found: dict[str, str] = {}
    for klass in cls.__mro__:
        doc = inspect.cleandoc(klass.__dict__.get("__doc__") or "")
        lines = doc.splitlines()
        for i, line in enumerate(lines):
            m = _SECTION.match(line)
            if m is None:
                continue
            entry_indent = None
            current: list[str] = []
            names: list[str] = []
            for raw in [*lines[i + 1 :], ""]:
                indent = len(raw) - len(raw.lstrip())
                if not raw.strip() or indent <= len(m["indent"]):
                    break
                if entry_indent is None:
                    entry_indent = indent
                entry = _ENTRY.match(raw.strip()) if indent == entry_indent else None
                if entry is not None:
                    for name in names:
                        found.setdefault(name, " ".join(current))
                    names = [n.strip() for n in entry["names"].split(",")]
                    current = [entry["text"]]
                else:
                    current.append(raw.strip())
            for name in names:
                found.setdefault(name, " ".join(current))
    return {name: _plain(text) for name, text in found.items()}


def _plain(text: str) -> str:
    """reStructuredText's inline literals (````x````) as plain text, for a terminal."""
    return text.replace("``", "")


# ------------------------------------------------------------ allowed values


class _ProbeUsed(Exception):
    """The probe value was used as a value (not refused by a check)."""


class _Probe:
    """A value of no type any check accepts; any use other than ``repr`` and identity raises ``_ProbeUsed``."""

    def __repr__(self) -> str:
        return "<probe>"

    def __getattr__(self, name):
        raise _ProbeUsed(name)

    def _used(self, *args, **kwargs):
        raise _ProbeUsed()

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = __bool__ = _used
    __index__ = __int__ = __float__ = __len__ = __iter__ = __str__ = __format__ = __fspath__ = _used
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __mod__ = __neg__ = _used


# A string no choice list holds and no file has as its path: where a check compares strings (``x not in
# CHOICES``) before it looks at the type, the object probe is used, not refused, and this one is refused.
_STRING_PROBE = "\x00probe"


def _allowed(build: Callable[[Any], object], name: str, *, string: bool) -> str:
    """What the check of option ``name`` expects: ``build(value)`` gives the option alone ``value``, a probe
    (and, for a string option, the string probe too)."""
    for probe in (_Probe(), _STRING_PROBE) if string else (_Probe(),):
        try:
            build(probe)
        except Exception as err:  # the check's UserError, or anything the probe's use raised
            message, got = str(err), re.escape(repr(probe))
            m = re.search(rf"(?:^|\s){re.escape(name)}: expected (?P<want>.+), got {got}", message)
            if m is not None:
                return m["want"]
            # "NAME: unknown controller '...'; known controllers: [...]"
            m = re.search(rf"^{re.escape(name)}: unknown .*{got}; known(?: \w+)?: (?P<known>\[[^\]]*\])", message)
            if m is not None:
                return f"one of {m['known']}"
    return ""


# -------------------------------------------------------------- the options


def _type_name(hint) -> str:
    """A type hint as ``show`` prints it: ``int``, ``float``, ``int | None``, ``tuple[int, ...]``, ``any``."""
    if hint is Any or hint is inspect.Parameter.empty:
        return "any"
    if isinstance(hint, type) and not getattr(hint, "__args__", None):
        return hint.__name__
    return str(hint).replace("typing.", "").replace("NoneType", "None")


def _docs(
    options: dict[str, inspect.Parameter],
    meanings: dict[str, str],
    build: Callable[[str, Any], object],
    declared: dict[str, Declared] | None = None,
) -> list[OptionDoc]:
    """``build(name, value)`` builds the model's config or the task with option ``name`` alone set to ``value``;
    an option declared with ``panm_jax.options.option`` (in ``declared``) shows what it declares instead."""
    declared = declared or {}
    docs = []
    for name, param in options.items():
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            docs.append(OptionDoc(f"**{name}", "any", "", "options the task checks itself", ""))
            continue
        default = "required" if param.default is inspect.Parameter.empty else repr(param.default)
        mine = declared.get(name)
        if mine is not None and mine.doc:
            docs.append(OptionDoc(name, _type_name(param.annotation), default, mine.allowed, mine.doc))
            continue
        string = param.annotation is str or isinstance(param.default, str)
        allowed = _allowed(functools.partial(build, name), name, string=string)
        docs.append(OptionDoc(name, _type_name(param.annotation), default, allowed, meanings.get(name, "")))
    return docs


def model_option_docs(model: str) -> list[OptionDoc]:
    """Each option of model ``model`` (a field of its config dataclass), in field order; a variant's options
    (``variant_option_docs``) apart."""
    from panm_jax.models.registry import get_config, model_options

    config_cls = type(get_config(model))
    apart = getattr(config_cls, "variant_options", dict)()
    options = {name: param for name, param in model_options(model).items() if name not in apart}
    meanings = field_comments(config_cls)
    build = lambda name, value: get_config(model, **{name: value})  # noqa: E731
    return _docs(options, meanings, build, declared(config_cls))


def _build_variant(variant: type, name: str, value: Any) -> object:
    return variant(**{name: value})


def variant_option_docs(model: str) -> list[tuple[type, list[OptionDoc]]]:
    """Each decoder variant of model ``model``'s config (``variant_options``, as ``PANMConfig`` has) with
    its options, each checked by the variant's config alone; none for a config without variants."""
    from panm_jax.models.registry import get_config

    apart = getattr(type(get_config(model)), "variant_options", dict)()
    found = []
    for variant in dict.fromkeys(c for owners in apart.values() for c in owners):
        hints = typing.get_type_hints(variant)
        options = {
            f.name: inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=hints[f.name]
            )
            for f in dataclasses.fields(variant)
        }
        build = functools.partial(_build_variant, variant)
        found.append((variant, _docs(options, field_comments(variant), build, declared(variant))))
    return found


def task_option_docs(task: str) -> list[OptionDoc]:
    """Each option of task ``task`` (a keyword of its class), in signature order."""
    from panm_jax.tasks.registry import TASKS, get_task, task_options

    options = task_options(task)
    factory = TASKS[task]
    meanings = docstring_options(factory) if isinstance(factory, type) else {}
    return _docs(options, meanings, lambda name, value: get_task(task, **{name: value}))
