"""The task registry: the one table ``TASKS``, each entry where its class is defined, read without importing a task;
and the generator argument every task's sampling methods check."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from panm_jax.errors import UserError
from panm_jax.tasks import TASKS, Task, get_task, list_tasks
from panm_jax.tasks.chomsky import CHOMSKY_TASKS

TASK_MODULES = (
    "panm_jax.tasks.algorithmic",
    "panm_jax.tasks.dyck",
    "panm_jax.tasks.m10ae",
    "panm_jax.tasks.transduction",
    "panm_jax.tasks.chomsky",
    "panm_jax.tasks.scan",
    "panm_jax.tasks.mathematics",
    "panm_jax.tasks.automata",
)


def test_every_entry_is_a_task_class_of_that_name():
    for name in list_tasks():
        factory = TASKS[name]
        assert isinstance(factory, type) and issubclass(factory, Task), name
        assert factory.name == name


def test_the_chomsky_entries_are_the_suites_own_table():
    names = list_tasks()
    first = names.index("even_pairs")
    assert names[first : first + len(CHOMSKY_TASKS)] == list(CHOMSKY_TASKS)
    assert all(TASKS[name] is cls for name, cls in CHOMSKY_TASKS.items())


def test_listing_the_tasks_imports_none_and_building_one_imports_its_module_only():
    code = (
        "import sys; from panm_jax.tasks import TASKS, list_tasks, get_task; "
        "assert len(list_tasks()) == 32 and 'scan' in TASKS; "
        f"modules = {TASK_MODULES!r}; loaded = [m for m in modules if m in sys.modules]; assert not loaded, loaded; "
        "get_task('copy'); loaded = [m for m in modules if m in sys.modules]; "
        "assert loaded == ['panm_jax.tasks.algorithmic'], loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("rng", [0, None, np.random.RandomState(0)])
@pytest.mark.parametrize("name", ["copy", "dyck", "even_pairs", "scan", "automaton_acceptance"])
def test_a_seed_or_another_generator_in_place_of_rng_is_named(name, rng):
    """``train_batch(0, 4)``: the generator, not a seed (a seed per call would repeat one batch)."""
    task = get_task(name)
    mode = next(iter(task.test_modes))
    got = repr(rng) if rng is None or isinstance(rng, int) else "a RandomState"
    message = rf"^rng: expected a numpy.random.Generator \(np.random.default_rng\(seed\)\), got {got}$"
    for call in (
        lambda: task.train_batch(rng, 4),
        lambda: task.test_batch(rng, 4, mode),
        lambda: task.sample(rng, 4, task.train_lengths.hi),
        lambda: task.sample_lengths(rng, 4),
    ):
        with pytest.raises(UserError, match=message):
            call()
