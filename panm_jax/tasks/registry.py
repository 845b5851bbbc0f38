"""The name -> task registry: ``get_task(name, **options)``, ``list_tasks()`` and ``task_options(name)``.

    task = get_task("dyck", n=3)
    batch = task.sample(np.random.default_rng(0), 128, 20)

An unknown name raises ``UnknownNameError`` (``panm_jax.errors``; a
``ValueError``) listing the known names; an unknown or invalid option raises
``TaskOptionError`` (a ``ValueError``) naming it. ``task_options(name)`` gives
each option's type and default, read from the factory's signature, so a
training config's ``task_options`` are checked before a task is built.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

from panm_jax.checks import unknown_name
from panm_jax.tasks import algorithmic, automata, chomsky, dyck, m10ae, mathematics, scan, transduction
from panm_jax.tasks.base import Task

__all__ = ["TASKS", "get_task", "list_tasks", "register_task", "task_options"]

# name -> factory(**options) -> Task, in the order tables list them.
TASKS: dict[str, Callable[..., Task]] = {
    "copy": algorithmic.CopyTask,
    "reverse": algorithmic.ReverseTask,
    "mix": algorithmic.MixTask,
    "dynamic_recall": algorithmic.DynamicRecallTask,
    "priority_sort": algorithmic.PrioritySortTask,
    "id_sort": algorithmic.IDSortTask,
    "dyck": dyck.DyckTask,
    "m10ae": m10ae.M10AETask,
    "transduction_copy": transduction.TransductionCopyTask,
    "transduction_reversal": transduction.TransductionReversalTask,
    "bigram_flip": transduction.BigramFlipTask,
    "svo_sov": transduction.SVOToSOVTask,
    "gender_conjugation": transduction.GenderConjugationTask,
    # Delétang et al. 2023: regular, deterministic context-free, context-sensitive
    **chomsky.CHOMSKY_TASKS,
    "scan": scan.SCANTask,
    "mathematics": mathematics.MathematicsTask,  # needs the optional extra panm_jax[math]
    # machines written as data (panm_jax/tasks/machines/*.toml)
    "automaton_acceptance": automata.AcceptanceTask,
    "automaton_transduction": automata.TransductionTask,
}


def list_tasks() -> list[str]:
    """Every registered task name, in registration order."""
    return list(TASKS)


def _factory(name: str) -> Callable[..., Task]:
    try:
        return TASKS[name]
    except (KeyError, TypeError):
        # The names in registration order (the algorithmic tasks first), as ``panm-jax tasks`` lists them.
        raise unknown_name("name", name, list_tasks()) from None


def get_task(name: str, **options: Any) -> Task:
    """Build the task ``name`` with ``options`` (each task's docstring lists its options).

    Raises:
      UnknownNameError: ``name`` is not registered (the message lists the known names).
      TaskOptionError: an option is unknown or its value invalid.
    """
    return _factory(name)(**options)


def task_options(name: str) -> dict[str, inspect.Parameter]:
    """The options of task ``name``: ``{option: inspect.Parameter}``, in signature order.

    Read from the factory's signature: each parameter's ``annotation`` is its
    resolved type hint (``int``, ``float``, ``int | None``; ``typing.Any`` where
    the signature gives none) and its ``default`` the factory's default
    (``None`` where the task derives the value from other options,
    ``inspect.Parameter.empty`` where there is none). A task class whose
    ``__init__`` takes ``**options`` has the options of the ``__init__`` of its
    base classes too, read along its MRO (the transduction tasks pass theirs
    on). A factory that is not a class and takes ``**options`` keeps that
    parameter (kind ``VAR_KEYWORD``): its other option names cannot be read.

    Raises:
      UnknownNameError: ``name`` is not registered.
    """
    factory = _factory(name)
    if isinstance(factory, type):
        signatures = [(vars(c)["__init__"], True) for c in factory.__mro__ if c is not object and "__init__" in vars(c)]
    else:
        signatures = [(factory, False)]
    options: dict[str, inspect.Parameter] = {}
    for fn, is_method in signatures:
        hints = typing.get_type_hints(fn)
        params = list(inspect.signature(fn).parameters.values())[1 if is_method else 0 :]
        for param in params:
            if param.kind is inspect.Parameter.VAR_POSITIONAL or param.name in options:
                continue
            if param.kind is inspect.Parameter.VAR_KEYWORD and is_method:
                continue  # checked by the class, or passed on to the next __init__ of the MRO
            kind = param.kind if param.kind is inspect.Parameter.VAR_KEYWORD else inspect.Parameter.KEYWORD_ONLY
            options[param.name] = param.replace(kind=kind, annotation=hints.get(param.name, Any))
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            break
    return options


def register_task(name: str, factory: Callable[..., Task]) -> None:
    """Add a task under a new ``name`` (an existing name raises ``ValueError``)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name: expected a non-empty string, got {name!r}")
    if name in TASKS:
        raise ValueError(f"name: expected a name not yet registered, got {name!r}")
    TASKS[name] = factory
