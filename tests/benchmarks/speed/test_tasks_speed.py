"""benchmarks/speed/tasks_speed.py records the full measurement only; a trial run overwrites nothing."""

from __future__ import annotations

import pytest

from benchmarks.speed import tasks_speed


@pytest.fixture
def recorded(monkeypatch):
    """The names ``write_results`` was called with (it writes nothing here); no batch is timed."""
    names = []
    monkeypatch.setattr(tasks_speed, "run", lambda batches, batch_size, names_: [])
    monkeypatch.setattr(tasks_speed, "write_results", lambda name, **kw: names.append(name) or "a.json")
    return names


@pytest.mark.parametrize(
    "argv, names",
    [
        ([], ["tasks_speed"]),
        (["--quick"], []),
        (["--tasks", "copy"], []),
        (["--batches", "10"], []),
        (["--tasks", "copy", "--name", "trial"], ["trial"]),
    ],
)
def test_only_the_full_run_or_a_named_one_is_recorded(recorded, argv, names, capsys):
    assert tasks_speed.main(argv) == 0
    assert recorded == names
    if not names:
        assert "recorded nothing" in capsys.readouterr().out


def test_a_quick_run_times_a_few_real_batches(capsys):
    assert tasks_speed.main(["--quick", "--tasks", "copy"]) == 0
    assert "copy" in capsys.readouterr().out


def test_each_task_is_timed_at_its_longest_test_length():
    # The Chomsky-hierarchy tasks list their long test mode (41-500) before 1-40: the longest,
    # not the last, is timed.
    (parity,) = tasks_speed.run(1, 2, ["parity_check"])
    assert (parity["mode"], parity["length"]) == ("41-500", 500)
    (copy,) = tasks_speed.run(1, 2, ["copy"])
    assert (copy["mode"], copy["length"]) == ("8L+1", 81)
