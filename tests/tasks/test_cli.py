"""``panm-jax tasks`` and ``panm-jax tasks show``."""

from __future__ import annotations

from panm_jax.cli import main
from panm_jax.tasks import list_tasks


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
