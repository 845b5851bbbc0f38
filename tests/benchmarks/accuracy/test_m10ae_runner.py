"""benchmarks.accuracy.m10ae: the recorded JSON, resuming, the by-depth pooling, and bad options."""

from __future__ import annotations

import json

import pytest

from benchmarks import common
from benchmarks.accuracy import m10ae
from benchmarks.pages.m10ae import m10ae_page
from benchmarks.pages.records import Findings, Record


def test_pooling_by_depth_weighs_each_group_by_its_size():
    by_length = {"19": {"0": [1.0, 10]}, "39": {"0": [0.5, 10], "2": [0.25, 4]}, "77": {"2": [0.75, 4]}}
    assert m10ae.pooled_by_depth(by_length, ["39", "77"]) == {"0": [0.5, 10], "2": [0.5, 8]}
    assert m10ae.pooled_by_depth(by_length, ["19"]) == {"0": [1.0, 10]}


def test_the_command_records_its_json_and_a_rerun_reads_the_runs_back(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path / "results")
    argv = ["--models", "lstm", "--steps", "1", "--max-train-length", "1", "--test-examples", "4"]
    argv += ["--workdir", str(tmp_path / "runs"), "--name", "t"]
    assert m10ae.main(argv) == 0
    (path,) = (tmp_path / "results").glob("*/m10ae_t.json")
    data = json.loads(path.read_text())
    assert data["environment"]["device"] and data["environment"]["commit"]
    assert data["command"].endswith("benchmarks.accuracy.m10ae " + " ".join(argv).replace(argv[-3], "runs/runs"))
    assert data["settings"]["steps"] == 1 and data["settings"]["max_train_length"] == 1
    (row,) = data["rows"]
    assert row["model"] == "lstm" and row["steps"] == 1
    assert [c for c in row if c.startswith(("L", "2L", "4L", "8L"))] == [
        "L (1)",
        "L+2 (3)",
        "2L+1 (3)",
        "4L+1 (5)",
        "8L+1 (9)",
    ]
    assert set(row["by_depth"]) == {"1", "3", "5", "9"}  # the test lengths
    assert sum(n for cells in row["by_depth"].values() for _, n in cells.values()) == 4 * 4
    record = Record("cpu-2cores", "m10ae_t", data)
    assert "| lstm | 0 | 1 |" in m10ae_page({record.key: record}, Findings(tmp_path / "none.md"))

    def refuse(*args, **kwargs):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr("panm_jax.train.loop.train_and_evaluate", refuse)
    monkeypatch.setattr("panm_jax.train.loop.Run", refuse)  # nor evaluated by depth again
    assert m10ae.main(argv) == 0
    assert json.loads(path.read_text())["rows"] == data["rows"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--steps", "0"], "--steps: expected a positive integer, got 0"),
        (["--models", "panm"], "--models: expected names from lstm,stack_lstm,queue_lstm,deque_lstm,ntm,dnc, got"),
        (["--max-train-length", "4"], "--max-train-length: expected an odd positive integer, got 4"),
        (["--seeds", "-1"], "--seeds: expected comma-separated non-negative integers, got '-1'"),
        (["--test-examples", "0"], "--test-examples: expected a positive integer, got 0"),
    ],
)
def test_bad_options_give_one_line(argv, message):
    with pytest.raises(SystemExit) as err:
        m10ae.main(argv)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
