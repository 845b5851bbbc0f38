"""benchmarks.accuracy.dyck: the recorded JSON, resuming, the epochs budget, the rendered page, bad options, the
options for Suzgun et al.'s loss, training set and the two PANM readings, and the path that runs their code."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
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


# ---- the departures from Suzgun et al.'s code as options ------------------------------------------


def test_the_options_reach_the_task_and_the_model():
    config = dyck.make_config(
        "D2",
        "panm_srnn",
        0,
        epochs=5,
        steps=None,
        batch=1,
        lr=0.003,
        num_train=5000,
        num_test=5000,
        loss="mse",
        train_set="sampled",
        reading="encoder",
    )
    assert config.task_options["loss"] == "mse" and config.task_options["train_set"] == "sampled"
    assert config.model_options == {"reading": "encoder"} and config.optimizer.learning_rate == 0.003
    assert config.num_steps == 5 * 5000  # the sampled set holds num_train strings, not D2's 1,618
    default = dyck.make_config("D2", "srnn", 0, epochs=5, steps=None, batch=1, lr=0.01, num_train=50, num_test=50)
    assert "loss" not in default.task_options and "train_set" not in default.task_options
    assert default.model_options == {}


def test_the_mse_loss_is_their_mse_of_the_sigmoids():
    from panm_jax.tasks import get_task

    task = get_task("dyck", n=2, loss="mse")
    batch = task.encode([[0, 2]])  # "()": targets (1, 1, 1, 0) after "(", (1, 1, 0, 0) after ")"
    logits = np.zeros((1, 2, 4), np.float32)
    logits[..., 0] = np.log(3.0)  # sigmoid 0.75 on the first unit, 0.5 on the others
    # each step: ((0.75 - 1)^2 + 3 * 0.5^2) / 4 = 0.203125 (nn.MSELoss: the mean over steps and units)
    assert float(task.loss(logits, batch)) == pytest.approx(0.203125, rel=1e-6)
    # the default: per step -log 0.75 + 3 log 2, summed over units, mean over steps
    bce = get_task("dyck", n=2).loss(logits, batch)
    assert float(bce) == pytest.approx(-np.log(0.75) + 3 * np.log(2.0), rel=1e-6)


def test_the_sampled_training_set_keeps_repeats():
    from panm_jax.tasks import get_task

    sampled = get_task("dyck", n=2, train_set="sampled").dataset("train")
    assert len(sampled) == 5000 and len(set(sampled)) < 1618
    assert all(2 <= len(s) <= 10 and len(s) % 2 == 0 for s in sampled)
    assert dyck.train_size("D2", 5000, 5000, "sampled") == 5000 and dyck.train_size("D2", 5000, 5000) == 1618
    distinct = get_task("dyck", n=2).dataset("train")
    assert len(set(distinct)) == len(distinct) == 1618


def test_the_two_panm_readings_build_different_models():
    import jax
    from flax import nnx

    from panm_jax.models import build_model
    from panm_jax.models.srnn import CausalPANMDecoder, CausalSRNNDecoder

    small = dict(hidden=8, mlp_hidden=8, address_bits=5, srnn_hidden=6, stack_depth=7, stack_width=3)
    models = {r: build_model("panm_srnn", input_size=4, output_size=4, reading=r, **small) for r in dyck.READINGS}
    assert isinstance(models["decoder"].decoder, CausalSRNNDecoder) and not hasattr(models["decoder"], "encoder")
    assert isinstance(models["encoder"].decoder, CausalPANMDecoder) and hasattr(models["encoder"], "encoder")
    # the encoder reading's memory holds the SRNN's states (E: srnn_hidden -> D), the decoder reading's the tokens
    assert models["encoder"].embedding.kernel.shape == (6, 8) and models["decoder"].embedding.kernel.shape == (4, 8)
    sizes = {r: sum(x.size for x in jax.tree.leaves(nnx.state(m, nnx.Param))) for r, m in models.items()}
    assert sizes["encoder"] != sizes["decoder"]
    config = dyck.make_config(
        "D2", "panm_srnn", 0, epochs=1, steps=None, batch=1, lr=0.01, num_train=8, num_test=4, reading="encoder"
    )
    assert config.model_config.reading == "encoder"


# ---- Suzgun et al.'s code, run by their Python (the subprocess faked) ----------------------------


PEER_ARGV = ["--code", "suzgun", "--models", "srnn", "--languages", "D2", "--seeds", "3", "--epochs", "2"]
PEER_ARGV += ["--num-train", "8", "--num-test", "4", "--peer-test-strings", "3,3,2,1", "--peer-commit", "63ac24d" * 5]


def test_the_peer_path_runs_their_code_and_records_its_rows(tmp_path, monkeypatch):
    repo = tmp_path / "marnns"
    repo.mkdir()
    (repo / "main.py").write_text("")
    calls = []

    def fake_run(command, env):
        calls.append(command)
        flags = dict(zip(command[2::2], command[3::2], strict=True))
        bins = json.loads(open(flags["--bins"]).read())
        results = {
            "argv": {"n_epoch": int(flags["--epochs"]), "training_size": int(flags["--training-size"]), "test_size": 9},
            "train_seconds": 12.0,
            "eval_seconds": 3.0,
            "train_sequence_accuracy": 99.5,
            "their_test_sequence_accuracy": 40.0,
            "their_test_window": [12, 20],
            "bins": {
                m: {"sequence_accuracy": 100.0 / (i + 1), "examples": len(v), "lengths": [min(map(len, v)), 96]}
                for i, (m, v) in enumerate(bins.items())
            },
            "torch": "2.13.0+cpu",
        }
        (Path(flags["--workdir"]) / "results.json").write_text(json.dumps(results))

    monkeypatch.setattr(dyck, "run_command", fake_run)
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path / "results")
    argv = [*PEER_ARGV, "--peer-python", "/opt/torch/bin/python", "--peer-repo", str(repo)]
    argv += ["--workdir", str(tmp_path / "runs"), "--name", "peer"]
    assert dyck.main(argv) == 0
    (command,) = calls
    assert command[:4] == ["/opt/torch/bin/python", str(dyck.PEER_SCRIPT), "--repo", str(repo)]
    flags = dict(zip(command[4::2], command[5::2], strict=True))
    assert flags["--num-par"] == "2" and flags["--max-train-length"] == "10" and flags["--training-size"] == "8"
    assert (flags["--epochs"], flags["--seed"], flags["--test-size"]) == ("2", "3", str(dyck.PEER_OWN_TEST))
    bins = json.loads(Path(flags["--bins"]).read_text())
    assert {m: len(v) for m, v in bins.items()} == {"L+2": 3, "2L": 3, "4L": 2, "8L": 1}
    assert set("".join(bins["L+2"])) <= set("()[]") and all(12 <= len(s) <= 14 for s in bins["L+2"])
    (path,) = (tmp_path / "results").glob("*/dyck_peer.json")
    data = json.loads(path.read_text())
    (row,) = data["rows"]
    assert (row["language"], row["model"], row["seed"], row["steps"], row["selected_epoch"]) == ("D2", "srnn", 3, 16, 2)
    assert (row["L+2"], row["2L"], row["4L"], row["8L"], row["mean"]) == (100.0, 50.0, 33.3, 25.0, 52.1)
    assert row["train_sequence_accuracy"] == 99.5 and row["fit"] is True
    assert row["code"] == "suzgunmirac/marnns@63ac24d (torch 2.13.0+cpu)"
    assert row["their_test"] == {"lengths": "12..20", "strings": 9, "sequence_accuracy": 40.0}
    assert data["settings"]["code"] == "suzgunmirac/marnns@" + "63ac24d" * 5 and data["settings"]["loss"].startswith(
        "mean"
    )
    assert "--peer-python PYTHON --peer-repo PEER_REPO" in data["command"]
    assert "/opt/torch" not in data["command"] and str(tmp_path) not in data["command"]

    def refuse(*args, **kwargs):
        raise AssertionError("a finished run of their code was run again")

    monkeypatch.setattr(dyck, "run_command", refuse)
    assert dyck.main(argv) == 0
    assert json.loads(path.read_text())["rows"] == data["rows"]


def test_the_peer_command_trains_on_all_of_d2_and_5000_d3_strings(tmp_path):
    args = argparse.Namespace(peer_python="py", peer_repo="repo", num_train=5000, num_test=5000, epochs=5)
    for language, size in (("D2", "1618"), ("D3", "5000")):
        command = dyck.peer_command(args, language, 0, tmp_path)
        assert command[command.index("--training-size") + 1] == size


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--loss", "l1"], "--loss: expected one of bce,mse, got 'l1'"),
        (["--train-set", "all"], "--train-set: expected one of distinct,sampled, got 'all'"),
        (["--panm-reading", "both"], "--panm-reading: expected one of decoder,encoder, got 'both'"),
        (["--code", "theirs"], "--code: expected one of ours,suzgun, got 'theirs'"),
        (["--code", "suzgun"], "--models: expected srnn with --code suzgun (their code's SRNN), got srnn,panm_srnn"),
        (["--code", "suzgun", "--models", "srnn"], "--peer-python, --peer-repo: expected both with --code suzgun"),
        (
            ["--code", "suzgun", "--models", "srnn", "--loss", "mse"],
            "--loss: not an option of --code suzgun (their code's own setting is used)",
        ),
        (
            ["--code", "suzgun", "--models", "srnn", "--peer-python", "p", "--peer-repo", "/nonexistent"],
            "--peer-repo: expected a copy of suzgunmirac/marnns (its main.py), got '/nonexistent'",
        ),
    ],
)
def test_bad_new_options_give_one_line(argv, message):
    with pytest.raises(SystemExit) as err:
        dyck.main(argv)
    assert str(err.value) == message


def test_their_main_gets_only_its_own_flags(tmp_path):
    from benchmarks.accuracy import dyck_peer

    args = argparse.Namespace(num_par=3, training_size=5000, test_size=1000, epochs=5, workdir=str(tmp_path))
    flags = dyck_peer.main_flags(args)
    assert flags[0] == "main.py"
    given = dict(zip(flags[1::2], flags[2::2], strict=True))
    assert given == {
        "--num_par": "3",
        "--model_name": "stack_rnn_softmax",
        "--training_size": "5000",
        "--test_size": "1000",
        "--n_epoch": "5",
        "--save_path": str(tmp_path / "weights.pth"),
    }  # the training window and the seed are set from outside: no flag of theirs can (dyck_peer's docstring)
