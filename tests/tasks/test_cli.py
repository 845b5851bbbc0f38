"""``panm-jax tasks``, ``panm-jax tasks show``, ``panm-jax models show`` and the options they list."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re

import pytest

from panm_jax.cli import main
from panm_jax.tasks import TaskOptionError, get_task, list_tasks, task_options


def test_tasks_lists_every_task(capsys):
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    for name in list_tasks():
        assert name in out
    assert "dyck (n=3)" in out and "8L+1: 81" in out and "token_accuracy" in out


def test_show_copy(capsys):
    assert main(["tasks", "show", "copy", "--length", "5", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    lines = [l for l in out.splitlines() if l.startswith(("input", "target"))]
    inputs, targets = lines[0].split(":", 1)[1].split(), lines[1].split(":", 1)[1].split()
    assert inputs[0] == "<s>" and inputs[-1] == "</s>" and len(inputs) == 7
    assert targets == inputs[1:-1]  # copy


def test_show_with_option_and_mode(capsys):
    assert main(["tasks", "show", "dyck", "--option", "n=3", "--mode", "L+2"]) == 0
    assert "dyck (n=3)" in capsys.readouterr().out


def test_show_reports_bad_input(capsys):
    assert main(["tasks", "show", "copy", "--length", "0"]) == 2
    assert "length: expected an integer in [1, 1022], got 0" in capsys.readouterr().err
    assert main(["tasks", "show", "nope"]) == 2
    assert "name: expected one of" in capsys.readouterr().err


def test_show_lists_the_task_options_with_types_and_defaults(capsys):
    assert main(["tasks", "show", "bigram_flip", "--length", "4"]) == 0
    out = capsys.readouterr().out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") == 4}
    assert set(rows) == {"vocab_size", "min_train_length", "max_train_length", "max_test_length", "max_length"}
    assert "int" in rows["vocab_size"] and "128" in rows["vocab_size"]  # its own option
    assert "int" in rows["max_train_length"] and "64" in rows["max_train_length"]  # its base class's
    assert main(["tasks", "show", "dyck", "--length", "4"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"│ p +│ float +│ 0\.5 +│", out) and re.search(
        r"│ max_train_length +│ int \| None +│ None +│", out
    )


@pytest.mark.parametrize("name", list_tasks())
def test_task_options_are_every_option_the_task_accepts(name):
    # The options read from the factory's signature are exactly the names the task itself accepts
    # (the list its unknown-option error gives), each with the factory's default.
    options = task_options(name)
    assert options and all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in options.values())
    with pytest.raises(TaskOptionError, match="unknown option") as err:
        get_task(name, not_an_option=1)
    accepted = ast.literal_eval(re.search(r"expected some of (\[.*\])", str(err.value)).group(1))
    assert sorted(options) == sorted(accepted)
    for option in options.values():
        assert option.default is not inspect.Parameter.empty, f"{name}: option {option.name} has no default"


def test_models_show_lists_the_model_options(capsys):
    from panm_jax.models import get_config, model_options

    assert main(["models", "show", "panm"]) == 0
    out = capsys.readouterr().out
    options = model_options("panm")
    assert list(options) == [f.name for f in dataclasses.fields(get_config("panm"))]
    for name, option in options.items():
        assert re.search(rf"│ {name} +│ \S", out), name
        assert option.default == getattr(get_config("panm"), name)
    assert re.search(r"│ hidden +│ int +│ 256 +│", out) and "PANMConfig" in out
    assert main(["models", "show", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: name: expected one of [")


def test_train_help_points_at_the_options_tables(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "panm-jax models show MODEL" in out and "panm-jax tasks show TASK" in out
