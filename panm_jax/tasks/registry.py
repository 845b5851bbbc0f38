"""The name -> task registry: ``get_task(name, **options)`` and ``list_tasks()``.

    task = get_task("dyck", n=3)
    batch = task.sample(np.random.default_rng(0), 128, 20)

An unknown name raises ``UnknownTaskError`` (a ``ValueError``) listing the known
names; an unknown or invalid option raises ``TaskOptionError`` (a
``ValueError``) naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from panm_jax.tasks import algorithmic, automata, chomsky, dyck, m10ae, mathematics, scan, transduction
from panm_jax.tasks.base import Task, UnknownTaskError

__all__ = ["TASKS", "get_task", "list_tasks", "register_task"]

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


def get_task(name: str, **options: Any) -> Task:
    """Build the task ``name`` with ``options`` (each task's docstring lists its options).

    Raises:
      UnknownTaskError: ``name`` is not registered (the message lists the known names).
      TaskOptionError: an option is unknown or its value invalid.
    """
    try:
        factory = TASKS[name]
    except (KeyError, TypeError):
        raise UnknownTaskError(f"name: expected one of {list_tasks()}, got {name!r}") from None
    return factory(**options)


def register_task(name: str, factory: Callable[..., Task]) -> None:
    """Add a task under a new ``name`` (an existing name raises ``ValueError``)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name: expected a non-empty string, got {name!r}")
    if name in TASKS:
        raise ValueError(f"name: expected a name not yet registered, got {name!r}")
    TASKS[name] = factory
