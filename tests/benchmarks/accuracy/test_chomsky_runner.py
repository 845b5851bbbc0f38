"""benchmarks.accuracy.chomsky: the run it configures selects on the training lengths and evaluates the test range."""

from __future__ import annotations

import json

import pytest

from benchmarks.accuracy import chomsky, published
from benchmarks.accuracy.chomsky import per_level
from panm_jax.tasks import get_task


@pytest.mark.parametrize("task", chomsky.TASKS)
def test_runs_select_on_the_training_lengths_never_on_the_test_range(task):
    config = chomsky.make_config(task, "lstm", 0, 1.0, 40, 500)
    t = get_task(task, **config.task_options)
    selected = t.test_modes[config.select_mode]
    assert selected.hi == 40 and selected.lo == t.train_lengths.lo  # fresh examples at the training lengths
    assert list(config.eval_modes) == [config.select_mode]  # the test range is left to the range evaluation
    assert config.max_minutes == 1.0 and config.optimizer.name == "adam"


def test_every_published_cell_names_a_task_and_model_of_the_runner_and_is_a_percentage():
    cells = {task: published.chomsky(task) for task in published.chomsky_tasks()}
    assert set(cells) <= set(chomsky.TASKS)
    assert {m for row in cells.values() for m in row} <= {m for _, m in chomsky.PAPER_MODELS}
    assert all(0.0 <= score <= 100.0 for row in cells.values() for score in row.values())


@pytest.mark.parametrize(
    "task,model,score",
    [  # Delétang et al. 2023, Table 2: cells that tell the columns apart
        ("reverse_string", "stack_rnn", 100.0),
        ("reverse_string", "single_lstm", 60.9),  # the stack solves it, the LSTM does not
        ("duplicate_string", "tape_rnn", 100.0),
        ("duplicate_string", "stack_rnn", 52.8),  # the tape solves it, the stack does not
        ("modular_arithmetic", "rnn", 100.0),
        ("modular_arithmetic", "transformer_encoder", 24.2),  # a regular task the Transformer fails
        ("odds_first", "rnn", 51.0),
        ("cycle_navigation", "transformer_encoder", 61.9),
    ],
)
def test_published_cells_are_the_papers(task, model, score):
    assert published.chomsky(task)[model] == score


def test_a_run_label_with_options_reads_its_models_published_cell():
    cell = published.chomsky_cell
    assert cell("reverse_string", "stack_rnn-stack_size=512") == cell("reverse_string", "stack_rnn") == 100.0
    assert cell("reverse_string", "panm") is None  # not one of the paper's columns
    assert cell("reverse_string", "lstm") is None  # the encoder-decoder, not the paper's LSTM


def test_the_runner_covers_table_2_and_builds_each_column_by_name():
    from panm_jax.models import list_models

    assert len(chomsky.TASKS) == 15 and set(chomsky.TASKS) == set(chomsky.CHOMSKY_TASKS)
    assert [h for h, _ in chomsky.PAPER_MODELS] == ["RNN", "Stack-RNN", "Tape-RNN", "Transformer", "LSTM"]
    assert set(chomsky.MODELS) <= set(list_models()) and chomsky.MODELS[-1] == "panm"


@pytest.mark.parametrize(
    "task,model,option,cells",
    [
        ("reverse_string", "stack_rnn", "stack_size", 500 + 500),
        ("duplicate_string", "tape_rnn", "tape_size", 500 + 1000),
        ("parity_check", "stack_rnn", "stack_size", 500 + 1),
        ("modular_arithmetic", "tape_rnn", "tape_size", 499 + 1),  # an even N drops a token
    ],
)
def test_stack_and_tape_hold_the_longest_test_sequence(task, model, option, cells):
    config = chomsky.make_config(task, model, 0, None, 40, 500, steps=10)
    assert config.model_options == {option: cells}
    assert chomsky.make_config(task, "rnn", 0, None, 40, 500, steps=10).model_options == {}


def test_the_encoder_sees_exact_shapes_where_the_answer_length_varies():
    assert chomsky.exact_shapes("reverse_string", "transformer_encoder")
    assert not chomsky.exact_shapes("parity_check", "transformer_encoder")  # one answer step at every length
    assert not chomsky.exact_shapes("reverse_string", "rnn")
    assert chomsky.make_config("reverse_string", "transformer_encoder", 0, None, 40, 500, 10).buckets == tuple(
        range(1, 41)
    )
    assert chomsky.make_config("parity_check", "transformer_encoder", 0, None, 40, 500, 10).buckets == ()


def test_fit_reads_the_best_accuracy_and_the_first_step_at_99_percent(tmp_path):
    lines = [
        {"step": 50, "loss": 0.5},
        {"step": 250, "validation": {"1-40": {"token_accuracy": 0.8}}},
        {"step": 500, "validation": {"1-40": {"token_accuracy": 0.995}}},
        {"step": 750, "validation": {"1-40": {"token_accuracy": 0.99}}},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert chomsky.fit(tmp_path, "1-40") == (99.5, 500)
    (tmp_path / "metrics.jsonl").write_text(json.dumps(lines[1]) + "\n")
    assert chomsky.fit(tmp_path, "1-40") == (80.0, "")


def test_table_two_puts_ours_beside_the_published_cell():
    rows = [
        {"task": "reverse_string", "model": "stack_rnn", "score": 61.0},
        {"task": "reverse_string", "model": "stack_rnn", "score": 70.0},  # a second seed: the best is shown
        {"task": "reverse_string", "model": "panm", "score": 55.0},
    ]
    row, unknown = published.chomsky_table_two(
        rows, {"reverse_string": "context_free", "solve_equation": "context_free"}
    )
    assert row["level"] == "DCF" and row["Stack-RNN"] == "70.0 / 100.0" and row["LSTM"] == "- / 60.9"
    assert row["RNN"] == "- / 62.0" and row["PANM"] == 55.0
    assert unknown["RNN"] == "- / -"  # not run here, and a published cell not known here


def test_published_level_means_need_every_cell_of_the_level():
    levels = {"modular_arithmetic": "regular", "parity_check": "regular"}
    (regular,) = published.chomsky_per_level(levels)
    assert regular["stack_rnn"] == 100.0 and regular["transformer_encoder"] == 38.1  # (24.2 + 52.0) / 2
    (regular,) = published.chomsky_per_level({**levels, "cycle_navigation": "regular"})
    assert regular["transformer_encoder"] == 46.0  # (24.2 + 52.0 + 61.9) / 3
    assert regular["rnn"] == ""  # cycle navigation's RNN cell: not known here


def test_unknown_tasks_are_refused_by_name():
    with pytest.raises(SystemExit, match="--tasks: expected names among"):
        chomsky.main(["--tasks", "parity"])


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
    assert per_level(rows) == [
        {"level": "regular", "lstm": 75.0, "stack_rnn": 60.0},
        {"level": "context_free", "lstm": 55.0},
    ]


def test_a_set_option_must_name_a_model_of_the_run():
    with pytest.raises(SystemExit, match="neither 'task' nor one of --models"):
        chomsky.main(["--models", "lstm", "--set", "stack_rnn.stack_size=512"])


def test_a_task_option_is_refused_by_a_task_without_it():
    with pytest.raises(SystemExit, match=r"--set task.OPTION: reverse_string: unknown option\(s\) \['padding'\]"):
        chomsky.main(["--tasks", "reverse_string", "--models", "rnn", "--set", "task.padding=zero"])
    with pytest.raises(SystemExit, match=r"--set task.OPTION: stack_manipulation: option padding: expected one of"):
        chomsky.main(["--tasks", "stack_manipulation", "--models", "rnn", "--set", "task.padding=0"])


def test_a_task_option_reaches_the_runs_config_and_names_its_folder(tmp_path, monkeypatch):
    import panm_jax.train.loop as loop

    seen = []

    class Stop(Exception):
        pass

    def fake_train(config, workdir, progress=True):
        seen.append((config, workdir))
        raise Stop

    monkeypatch.setattr(loop, "train_and_evaluate", fake_train)
    argv = ["--tasks", "binary_addition", "--models", "tape_rnn", "--steps", "10", "--max-test-length", "60"]
    with pytest.raises(Stop):
        chomsky.main([*argv, "--set", "task.padding=zero", "--workdir", str(tmp_path)])
    config, workdir = seen[0]
    assert config.task_options == {"max_train_length": 40, "max_test_length": 60, "padding": "zero"}
    assert workdir == tmp_path / "binary_addition" / "tape_rnn-task.padding=zero-s0-10steps"
    assert config.build_task().options()["padding"] == "zero"
