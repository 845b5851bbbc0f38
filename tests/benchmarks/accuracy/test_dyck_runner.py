"""benchmarks.accuracy.dyck: the recorded JSON, resuming, the epochs budget, the rendered page, and bad options."""

from __future__ import annotations

import json

import pytest

from benchmarks import common
from benchmarks.accuracy import dyck
from benchmarks.pages.dyck import dyck_page
from benchmarks.pages.records import Findings, Record

ARGV = ["--languages", "D2", "--models", "srnn", "--seeds", "0", "--steps", "2", "--num-train", "8"]
ARGV += ["--num-test", "4"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """One tiny recording (one run of 2 steps), its JSON, and where it went."""
    tmp = tmp_path_factory.mktemp("dyck")
    argv = [*ARGV, "--workdir", str(tmp / "runs"), "--name", "t"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(common, "RESULTS_DIR", tmp / "results")
        assert dyck.main(argv) == 0
    (path,) = (tmp / "results").glob("*/dyck_t.json")
    return tmp, argv, path, json.loads(path.read_text())


def test_the_command_records_its_json_and_plot(recorded):
    _, argv, path, data = recorded
    assert data["environment"]["device"] and data["environment"]["commit"]
    assert data["command"].endswith("benchmarks.accuracy.dyck " + " ".join(argv).replace(argv[-3], "runs/runs"))
    settings = data["settings"]
    assert settings["steps"] == 2 and settings["batch_size"] == 1 and settings["train_strings"] == {"D2": 8}
    assert settings["planned_runs"] == settings["finished_runs"] == 1
    assert settings["published"]["mean_sequence_accuracy"] == {"srnn": 28.2, "panm_srnn": 70.0}
    (row,) = data["rows"]
    assert (row["language"], row["model"], row["seed"], row["steps"], row["selected_step"]) == ("D2", "srnn", 0, 2, 2)
    assert row["lengths"] == {
        m: f"{lo}..{hi} (even)" for m, lo, hi in zip(dyck.MODES, (12, 20, 40, 80), (14, 24, 48, 96))
    }
    assert row["test_strings"] == {m: 4 for m in dyck.MODES}
    for mode in dyck.MODES:
        assert 0.0 <= row[mode] <= 100.0 and 0.0 <= row["step_accuracy"][mode] <= 100.0
    assert path.with_suffix(".png").read_bytes().startswith(b"\x89PNG")


def test_a_rerun_reads_the_finished_run_back(recorded, monkeypatch):
    tmp, argv, path, data = recorded
    monkeypatch.setattr(common, "RESULTS_DIR", tmp / "results")

    def refuse(*args, **kwargs):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr("panm_jax.train.loop.train_and_evaluate", refuse)
    assert dyck.main(argv) == 0
    assert json.loads(path.read_text())["rows"] == data["rows"]


def test_the_page_shows_the_published_means_beside_ours(recorded, tmp_path):
    tmp, _, path, data = recorded
    data = {**data, "settings": {**data["settings"], "planned_runs": 20}}
    record = Record("cpu-2cores", "dyck_t", data)
    page = dyck_page({record.key: record}, tmp / "results", Findings(tmp_path / "none.md"), {})
    ours = data["rows"][0]["mean"]
    assert f"| SRNN | D2 | 1 | {ours:.1f} | 28.2 | {ours - 28.2:+.1f} |" in page
    assert "**Partial: 1 of the 20 runs of its command have finished.**" in page
    assert "| D2 | SRNN | 1 |" in page and "(12..14)" in page


def test_an_epoch_is_a_pass_over_the_fixed_training_set_and_selection_reads_all_of_it():
    config = dyck.make_config(
        "D2", "panm_srnn", 3, epochs=5, steps=None, batch=4, lr=0.01, num_train=5000, num_test=5000
    )
    per_epoch = -(-1618 // 4)  # D_2 has 1,618 strings of length 2..10: its training set is all of them
    assert (config.num_steps, config.eval_every, config.checkpoint_every) == (5 * per_epoch, per_epoch, per_epoch)
    assert config.selection_mode == "train" and config.eval_examples == 5000
    assert config.task_options == {"n": 2, "max_train_length": 10, "num_train": 5000, "num_test": 5000}
    assert config.optimizer.name == "adam" and config.optimizer.clip_value is None


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--languages", "D4"], "--languages: expected names from D2,D3, got 'D4'"),
        (["--models", "panm"], "--models: expected names from srnn,panm_srnn, got 'panm'"),
        (["--seeds", "x"], "--seeds: expected comma-separated non-negative integers, got 'x'"),
        (["--epochs", "0"], "--epochs: expected a positive integer, got 0"),
        (["--steps", "0"], "--steps: expected a positive integer, got 0"),
        (["--batch-size", "0"], "--batch-size: expected a positive integer, got 0"),
        (["--lr", "0"], "--lr: expected a positive number, got 0.0"),
        (["--num-test", "-3"], "--num-test: expected a positive integer, got -3"),
        (["--name", "a/b"], "--name: expected letters, digits, '-' or '_', got 'a/b'"),
    ],
)
def test_bad_options_give_one_line(argv, message):
    with pytest.raises(SystemExit) as err:
        dyck.main(argv)
    assert str(err.value) == message
