"""benchmarks.accuracy.chomsky: the run it configures selects on the training lengths and evaluates the test range."""

from __future__ import annotations

import pytest

from benchmarks.accuracy import chomsky
from panm_jax.tasks import get_task


@pytest.mark.parametrize("task", chomsky.TASKS)
def test_runs_select_on_the_training_lengths_never_on_the_test_range(task):
    config = chomsky.make_config(task, "lstm", 0, 1.0, 40, 500)
    t = get_task(task, **config.task_options)
    selected = t.test_modes[config.select_mode]
    assert selected.hi == 40 and selected.lo == t.train_lengths.lo  # fresh examples at the training lengths
    assert list(config.eval_modes) == [config.select_mode]  # the test range is left to the range evaluation
    assert config.max_minutes == 1.0 and config.optimizer.name == "adam"


def test_every_published_cell_names_a_task_and_model_of_the_runner():
    assert set(chomsky.PUBLISHED) <= set(chomsky.TASKS)
    assert {m for cells in chomsky.PUBLISHED.values() for m in cells} <= set(chomsky.MODELS)


def test_bad_budgets_are_refused():
    with pytest.raises(SystemExit, match="expected positive numbers"):
        chomsky.main(["--minutes", "0"])


def test_a_step_budget_sets_the_steps_and_no_time_limit():
    config = chomsky.make_config("parity_check", "stack_rnn", 1, None, 40, 500, steps=2000)
    assert config.num_steps == 2000 and config.max_minutes is None and config.seed == 1
    with pytest.raises(SystemExit, match="expected positive numbers"):
        chomsky.main(["--steps", "0"])


def test_per_level_means_average_each_models_scores_within_a_level():
    rows = [
        {"level": "regular", "model": "lstm", "score": 100.0},
        {"level": "regular", "model": "lstm", "score": 50.0},
        {"level": "regular", "model": "stack_rnn", "score": 60.0},
        {"level": "context_free", "model": "lstm", "score": 55.0},
    ]
    assert chomsky.per_level(rows) == [
        {"level": "regular", "lstm": 75.0, "stack_rnn": 60.0},
        {"level": "context_free", "lstm": 55.0},
    ]


def test_a_set_option_must_name_a_model_of_the_run():
    with pytest.raises(SystemExit, match="neither 'task' nor one of --models"):
        chomsky.main(["--models", "lstm", "--set", "stack_rnn.stack_size=512"])
