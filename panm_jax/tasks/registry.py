"""The name -> task registry: ``get_task(name, **options)``, ``list_tasks()`` and ``task_options(name)``.

    task = get_task("dyck", n=3)
    batch = task.sample(np.random.default_rng(0), 128, 20)

An unknown name raises ``UnknownNameError`` (``panm_jax.errors``; a
``ValueError``) listing the known names; an unknown or invalid option raises
``TaskOptionError`` (a ``ValueError``) naming it. ``task_options(name)`` gives
each option's type and default, read from the factory's signature, so a
training config's ``task_options`` are checked before a task is built.

**One table.** ``TASKS`` is written out below: every built-in name, in the
order tables list them, with where its class is defined
(``"module:attribute"``). It is the one place a name is added, and reading it
imports nothing: a task's module is imported the first time the task is looked
up (``panm_jax._lazy.LazyTable``), so listing the names, or building one task,
imports no other task's module. The model registry (``panm_jax.models.registry``)
is written the same way; a decorator run by importing each module would hide
the names in the modules and need every module imported to list them.
``register_task`` adds an entry at run time.

**A task of one's own** is named ``"package.module:NAME"`` wherever a task name
goes (``get_task``, a config's ``task``, ``panm-jax train --task``): ``NAME`` is
a ``Task`` class (or a function returning a ``Task``) defined in that module, or
a name the module registers with ``register_task`` when imported. The module is
imported at the first look-up and the task registered under the whole name, so
a run's ``config.json`` names it the same way when the run resumes or is
evaluated.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Any

from panm_jax._lazy import LazyTable, import_named
from panm_jax.checks import unknown_name
from panm_jax.options import parameters
from panm_jax.tasks.base import Task

__all__ = ["TASKS", "get_task", "list_tasks", "register_task", "task_options"]

# name -> factory(**options) -> Task, in the order tables list them.
TASKS: LazyTable[Callable[..., Task]] = LazyTable(
    {
        # Le et al. 2024, "Plug, Play, and Generalize"
        "copy": "panm_jax.tasks.algorithmic:CopyTask",
        "reverse": "panm_jax.tasks.algorithmic:ReverseTask",
        "mix": "panm_jax.tasks.algorithmic:MixTask",
        "dynamic_recall": "panm_jax.tasks.algorithmic:DynamicRecallTask",
        "priority_sort": "panm_jax.tasks.algorithmic:PrioritySortTask",
        "id_sort": "panm_jax.tasks.algorithmic:IDSortTask",
        "dyck": "panm_jax.tasks.dyck:DyckTask",
        "m10ae": "panm_jax.tasks.m10ae:M10AETask",
        # Grefenstette et al. 2015
        "transduction_copy": "panm_jax.tasks.transduction:TransductionCopyTask",
        "transduction_reversal": "panm_jax.tasks.transduction:TransductionReversalTask",
        "bigram_flip": "panm_jax.tasks.transduction:BigramFlipTask",
        "svo_sov": "panm_jax.tasks.transduction:SVOToSOVTask",
        "gender_conjugation": "panm_jax.tasks.transduction:GenderConjugationTask",
        # Delétang et al. 2023 (panm_jax.tasks.chomsky.CHOMSKY_TASKS): regular,
        "even_pairs": "panm_jax.tasks.chomsky.regular:EvenPairsTask",
        "modular_arithmetic": "panm_jax.tasks.chomsky.regular:ModularArithmeticTask",
        "parity_check": "panm_jax.tasks.chomsky.regular:ParityCheckTask",
        "cycle_navigation": "panm_jax.tasks.chomsky.regular:CycleNavigationTask",
        # deterministic context-free,
        "modular_arithmetic_brackets": "panm_jax.tasks.chomsky.context_free:ModularArithmeticBracketsTask",
        "reverse_string": "panm_jax.tasks.chomsky.context_free:ReverseStringTask",
        "solve_equation": "panm_jax.tasks.chomsky.context_free:SolveEquationTask",
        "stack_manipulation": "panm_jax.tasks.chomsky.context_free:StackManipulationTask",
        # context-sensitive
        "duplicate_string": "panm_jax.tasks.chomsky.context_sensitive:DuplicateStringTask",
        "missing_duplicate": "panm_jax.tasks.chomsky.context_sensitive:MissingDuplicateTask",
        "odds_first": "panm_jax.tasks.chomsky.context_sensitive:OddsFirstTask",
        "binary_addition": "panm_jax.tasks.chomsky.context_sensitive:BinaryAdditionTask",
        "binary_multiplication": "panm_jax.tasks.chomsky.context_sensitive:BinaryMultiplicationTask",
        "compute_sqrt": "panm_jax.tasks.chomsky.context_sensitive:ComputeSqrtTask",
        "bucket_sort": "panm_jax.tasks.chomsky.context_sensitive:BucketSortTask",
        "scan": "panm_jax.tasks.scan:SCANTask",  # Lake & Baroni 2018
        "mathematics": "panm_jax.tasks.mathematics:MathematicsTask",  # Saxton et al. 2019; needs panm_jax[math]
        # machines written as data (panm_jax/tasks/machines/*.toml)
        "automaton_acceptance": "panm_jax.tasks.automata.tasks:AcceptanceTask",
        "automaton_transduction": "panm_jax.tasks.automata.tasks:TransductionTask",
    }
)


def list_tasks() -> list[str]:
    """Every registered task name, in registration order."""
    return list(TASKS)


def _factory(name: str) -> Callable[..., Task]:
    if isinstance(name, str) and ":" in name and name not in TASKS:
        _register_own(name)
    try:
        return TASKS[name]
    except (KeyError, TypeError):
        # The names in registration order (the algorithmic tasks first), as ``panm-jax tasks`` lists them.
        raise unknown_name("name", name, list_tasks()) from None


def get_task(name: str, **options: Any) -> Task:
    """Build the task ``name`` with ``options`` (its ``Options``: ``panm-jax tasks show NAME`` lists them).

    Raises:
      UnknownNameError: ``name`` is not registered (the message lists the known names).
      TaskOptionError: an option is unknown or its value invalid.
    """
    return _factory(name)(**options)


def task_options(name: str) -> dict[str, inspect.Parameter]:
    """The options of task ``name``: ``{option: inspect.Parameter}``, in declaration order.

    A task class's options are the fields of its ``Options`` dataclass (``TaskOptions``, declared with
    ``panm_jax.options.option``): each parameter's ``annotation`` is the field's resolved type hint and its
    ``default`` the field's default (``None`` where the task derives the value from other options). A
    factory that is not such a class (a function, or a class whose ``__init__`` takes keywords of its own)
    has the options of its signature (``inspect.Parameter.empty`` where one has no default); where it takes
    ``**options`` it keeps that parameter (kind ``VAR_KEYWORD``): its other option names cannot be read.

    Raises:
      UnknownNameError: ``name`` is not registered.
    """
    factory = _factory(name)
    declared = getattr(factory, "Options", None) if isinstance(factory, type) else None
    if declared is not None and dataclasses.fields(declared):
        return parameters(declared)
    fn: Callable[..., Any] = factory
    if isinstance(factory, type):
        fn = getattr(factory, "__init__")  # noqa: B009 (mypy refuses factory.__init__ on a class)
        if fn is object.__init__:
            return {}
    hints = typing.get_type_hints(fn)
    params = list(inspect.signature(fn).parameters.values())[1 if isinstance(factory, type) else 0 :]
    options: dict[str, inspect.Parameter] = {}
    for param in params:
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        kind = param.kind if param.kind is inspect.Parameter.VAR_KEYWORD else inspect.Parameter.KEYWORD_ONLY
        options[param.name] = param.replace(kind=kind, annotation=hints.get(param.name, Any))
    return options


def _register_own(path: str) -> None:
    """Register ``"package.module:NAME"`` under that very name: ``NAME`` is a ``Task`` class (or a function
    that returns a ``Task``) of that module, or a task name the module registers when imported."""
    from panm_jax.errors import UserError

    module, attribute = import_named(path, "task")
    factory = getattr(module, attribute, None)
    if factory is None and attribute in TASKS:  # registered by the module's import
        factory = TASKS[attribute]
    if not callable(factory):
        raise UserError(
            f"task: module {module.__name__!r} has no task class or factory {attribute!r} "
            f"(got {type(factory).__name__})"
        )
    register_task(path, factory)


def register_task(name: str, factory: Callable[..., Task]) -> None:
    """Add a task under a new ``name`` (an existing name raises ``ValueError``)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name: expected a non-empty string, got {name!r}")
    if name in TASKS:
        raise ValueError(f"name: expected a name not yet registered, got {name!r}")
    TASKS[name] = factory
