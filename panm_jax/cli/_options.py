"""What ``panm-jax models show``, ``panm-jax tasks show`` and ``panm-jax train --settings`` say about each
option, read from its declaration.

Every option of the library is declared once, with ``panm_jax.options.option`` (its default, its check,
the values the check allows and its meaning): the fields of a model's config dataclass, of a task's
``Options`` dataclass, of ``TrainConfig`` and ``OptimizerConfig``. These functions read those declarations
(``panm_jax.options.declared``) and the fields' type hints; nothing is read from a source comment, a
docstring or an error message. An option of a user's own config or task declared otherwise (a plain
dataclass field, a keyword of a task function) shows its type and default only.
"""

from __future__ import annotations

import inspect
from typing import Any, NamedTuple

from panm_jax.options import Declared, declared, parameters

__all__ = ["OptionDoc", "model_option_docs", "settings_docs", "task_option_docs", "variant_option_docs"]


class OptionDoc(NamedTuple):
    """One option as ``show`` prints it."""

    name: str
    type: str  # ``int``, ``float``, ``int | None``
    default: str  # the default's ``repr``, or ``required``
    allowed: str  # what its check expects (``an integer in [1, 4]``), or "" where nothing checks it
    meaning: str  # its declared meaning, or "" where it has none


def _type_name(hint) -> str:
    """A type hint as ``show`` prints it: ``int``, ``float``, ``int | None``, ``tuple[int, ...]``, ``any``."""
    if hint is Any or hint is inspect.Parameter.empty:
        return "any"
    if isinstance(hint, type) and not getattr(hint, "__args__", None):
        return hint.__name__
    return str(hint).replace("typing.", "").replace("collections.abc.", "").replace("NoneType", "None")


def _docs(options: dict[str, inspect.Parameter], found: dict[str, Declared]) -> list[OptionDoc]:
    """``options`` (name -> parameter: type hint and default) with what ``found`` declares of each."""
    docs = []
    for name, param in options.items():
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            docs.append(OptionDoc(f"**{name}", "any", "", "options the task checks itself", ""))
            continue
        default = "required" if param.default is inspect.Parameter.empty else repr(param.default)
        mine = found.get(name)
        allowed, meaning = (mine.allowed, mine.doc) if mine is not None else ("", "")
        docs.append(OptionDoc(name, _type_name(param.annotation), default, allowed, meaning))
    return docs


def model_option_docs(model: str) -> list[OptionDoc]:
    """Each option of model ``model`` (a field of its config dataclass), in field order; a variant's options
    (``variant_option_docs``) apart."""
    from panm_jax.models.registry import get_config, model_options

    config_cls = type(get_config(model))
    apart = getattr(config_cls, "variant_options", dict)()
    options = {name: param for name, param in model_options(model).items() if name not in apart}
    return _docs(options, declared(config_cls))


def variant_option_docs(model: str) -> list[tuple[type, list[OptionDoc]]]:
    """Each decoder variant of model ``model``'s config (``variant_options``, as ``PANMConfig`` has) with
    its options; none for a config without variants."""
    from panm_jax.models.registry import get_config

    apart = getattr(type(get_config(model)), "variant_options", dict)()
    return [
        (variant, _docs(parameters(variant), declared(variant)))
        for variant in dict.fromkeys(c for owners in apart.values() for c in owners)
    ]


def task_option_docs(task: str) -> list[OptionDoc]:
    """Each option of task ``task`` (a field of its ``Options``, or a keyword of its factory), in order."""
    from panm_jax.tasks.registry import TASKS, task_options

    options = task_options(task)  # registers a "package.module:NAME" task; an unknown name raises
    factory = TASKS[task]
    found = declared(factory.Options) if isinstance(factory, type) and hasattr(factory, "Options") else {}
    return _docs(options, found)


def settings_docs() -> list[OptionDoc]:
    """Each field of ``TrainConfig`` then of ``OptimizerConfig`` (as ``optimizer.NAME``, in place of the
    ``optimizer`` table), in field order."""
    from panm_jax.train.config import OptimizerConfig, TrainConfig

    train = [doc for doc in _docs(parameters(TrainConfig), declared(TrainConfig)) if doc.name != "optimizer"]
    optimizer = _docs(parameters(OptimizerConfig), declared(OptimizerConfig))
    return train + [doc._replace(name=f"optimizer.{doc.name}") for doc in optimizer]
