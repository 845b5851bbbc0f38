"""benchmarks.accuracy.chomsky_peer: what each side is given, the curve and fit, the record's rows and the plots."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest

from benchmarks import common
from benchmarks.accuracy import chomsky
from benchmarks.accuracy import chomsky_peer as runner
from benchmarks.speed import chomsky_peer as speed


def test_the_curve_averages_each_window_of_steps_and_the_fit_is_its_first_point_at_99():
    accuracies = {s: (0.5 if s <= 100 else 0.98 if s <= 200 else 1.0) for s in range(1, 251)}
    accuracies[150] = 0.0  # one bad batch drags its window under 99 %
    points = runner.curve(accuracies, 100)
    assert points == [[100, 50.0], [200, 97.02], [250, 100.0]]  # the last, shorter window kept
    assert runner.fit_step(points) == 250
    assert runner.fit_step([[100, 98.99], [200, 99.0]]) == 200
    assert runner.fit_step([[100, 50.0]]) == ""  # never
    assert runner.curve({}, 10) == []
    with pytest.raises(ValueError):
        runner.curve(accuracies, 0)


def test_a_window_without_a_logged_step_has_no_point():
    assert runner.curve({1: 1.0, 2: 1.0, 5: 0.0}, 2) == [[2, 100.0], [5, 0.0]]  # (2, 4] has none


def test_their_range_evaluation_iterates_only_the_lengths_given():
    module = types.ModuleType("theirs")
    exec("def lengths(hi, repeats):\n    return [(n, len(range(repeats))) for n in range(1, hi + 1)]", module.__dict__)
    with runner.only_lengths(module, [41, 51, 500]):
        assert module.lengths(500, 3) == [(41, 3), (51, 3), (500, 3)]  # the inner range stays the builtin
    assert len(module.lengths(500, 1)) == 500 and "range" not in module.__dict__


def test_both_sides_get_the_same_steps_seed_learning_rate_and_memory():
    cmd = runner.peer_command("PY", "/x/dm", "reverse_string", "stack_rnn", 3, 700, 3e-4, 40, 500, 10, 16)
    assert cmd[:4] == ["PY", "-m", "benchmarks.accuracy.chomsky_peer", "--worker"]
    flags = dict(zip(cmd[4::2], cmd[5::2], strict=True))
    longest = chomsky.longest_sequence("reverse_string", 40, 500)
    assert longest == 1000
    assert flags["--peer-model"] == "stack_rnn" and flags["--task"] == "reverse_string"
    assert json.loads(flags["--peer-kwargs"]) == {"hidden_size": 256, "stack_cell_size": 8, "stack_size": longest}
    assert (flags["--seeds"], flags["--steps"], float(flags["--learning-rate"])) == ("3", "700", 3e-4)
    assert (flags["--length-step"], flags["--examples-per-length"], flags["--max-test-length"]) == ("10", "16", "500")
    config = runner.ours_config("reverse_string", "stack_rnn", 3, 700, 3e-4, 40, 500)
    assert (config.seed, config.num_steps, config.optimizer.learning_rate) == (3, 700, 3e-4)
    assert config.model_options["stack_size"] == longest and config.log_every == 1
    assert config.batch_size == 128 and config.optimizer.clip_norm == 1.0 and config.optimizer.name == "adam"
    tape = runner.peer_command("PY", "/x/dm", "duplicate_string", "tape_rnn", 0, 10, 1e-3, 40, 500, 1, 64)
    kwargs = json.loads(tape[tape.index("--peer-kwargs") + 1])
    assert kwargs["memory_size"] == chomsky.longest_sequence("duplicate_string", 40, 500)
    assert runner.parse_cells("parity_check:lstm,reverse_string:stack_rnn") == [
        ("parity_check", "single_lstm"),
        ("reverse_string", "stack_rnn"),
    ]
    with pytest.raises(ValueError):
        runner.parse_cells("parity_check:panm")  # no architecture of theirs


def test_a_run_records_both_codes_rows_and_one_plot_per_cell(tmp_path, monkeypatch):
    """Their worker's process is faked (no peer environment here) and so is our training: the test sees the
    command each side is given and what the record makes of their results."""
    repo = tmp_path / "dm"
    (repo / "experiments").mkdir(parents=True)
    (repo / speed.PEER_MARKER).write_text("")
    given = {"peer": [], "ours": []}
    real_run = subprocess.run

    def fake_run(cmd, *a, **k):
        if "--worker" not in cmd:
            return real_run(cmd, *a, **k)
        given["peer"].append(list(cmd))
        seed = int(cmd[cmd.index("--seeds") + 1])
        result = {
            "accuracies": [0.5] * 100 + [1.0] * 100,  # fits in the second window of 100
            "per_length": [[41, 0.75], [500, 0.25 + 0.5 * seed]],
            "score": 0.5 + 0.25 * seed,
            "train_seconds": 12.0,
            "eval_seconds": 3.0,
            "versions": {"jax": "0.4.30"},
        }
        return subprocess.CompletedProcess(cmd, 0, "log\n" + speed.RESULT_PREFIX + json.dumps(result) + "\n", "")

    def fake_train(config, workdir, progress=True):
        given["ours"].append(config)
        lines = [{"event": "started", "step": 0}]
        lines += [{"step": s, "loss": 1.0, "token_accuracy": 0.9} for s in range(1, config.num_steps + 1)]
        lines.insert(200, {"step": 200, "validation": {config.select_mode: {"token_accuracy": 0.995}}})
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        results = {"config": config.to_dict(), "training": {"wall_seconds": 20.0}}
        (workdir / "results.json").write_text(json.dumps(results))

    def fake_range(workdir, config, lengths, examples, buckets="fitted"):
        rows = [{"length": n, "token_accuracy": 0.5} for n in lengths]
        return {"metric": "token_accuracy", "rows": rows, "score": 0.5, "step": 200, "wall_seconds": 2.0}

    monkeypatch.setattr(speed.subprocess, "run", fake_run)
    monkeypatch.setattr("panm_jax.train.loop.train_and_evaluate", fake_train)
    monkeypatch.setattr(chomsky, "range_record", fake_range)
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path / "results")
    argv = ["--peer-python", sys.executable, "--peer-repo", str(repo), "--peer-commit", "abc1234"]
    argv += ["--cells", "parity_check:rnn", "--seeds", "0,1", "--steps", "200", "--curve-every", "100"]
    argv += ["--sampled", "--workdir", str(tmp_path / "runs"), "--name", "t"]
    assert runner.main(argv) == 0

    assert [c[c.index("--seeds") + 1] for c in given["peer"]] == ["0", "1"]
    assert all(c[0] == sys.executable and c[c.index("--steps") + 1] == "200" for c in given["peer"])
    assert [(c.seed, c.num_steps, c.model) for c in given["ours"]] == [(0, 200, "rnn"), (1, 200, "rnn")]
    folder = tmp_path / "results" / common.device_slug()
    record = json.loads((folder / "chomsky_peer_t.json").read_text())
    assert "python -m benchmarks.accuracy.chomsky_peer --peer-python PYTHON --peer-repo PEER_REPO" in record["command"]
    assert "abc1234" in record["environment"]["peer_checkout"]
    rows = record["rows"]
    assert [(r["code"], r["seed"]) for r in rows] == [("deepmind", 0), ("ours", 0), ("deepmind", 1), ("ours", 1)]
    theirs, ours = rows[0], rows[1]
    assert theirs["curve"] == [[100, 50.0], [200, 100.0]] and theirs["fit_step"] == 200
    assert (theirs["train_accuracy"], theirs["score"], theirs["steps"], theirs["level"]) == (
        100.0,
        50.0,
        200,
        "regular",
    )
    assert rows[2]["score"] == 75.0 and rows[2]["test_accuracy"] == [[41, 75.0], [500, 75.0]]
    assert ours["curve"] == [[100, 90.0], [200, 90.0]] and ours["fit_step"] == ""  # 90 % is no fit
    assert (ours["validation_fit_step"], ours["selected_step"], ours["train_seconds"]) == (200, 200, 20.0)
    assert len(ours["test_accuracy"]) == 47  # --sampled: 41, 51, ..., 491 and 500
    assert (folder / "chomsky_peer_t_parity_check_rnn.png").read_bytes()[:4] == b"\x89PNG"

    # Run again: both sides are read back, nothing is trained or launched.
    given["peer"].clear(), given["ours"].clear()
    assert runner.main(argv) == 0
    assert given == {"peer": [], "ours": []}

    # Shorter test lengths are other runs, kept in folders of their own; a test length not past the training
    # lengths is refused in one line.
    assert runner.main([*argv[:-2], "--max-test-length", "80", "--seeds", "0"]) == 0
    assert [c[c.index("--max-test-length") + 1] for c in given["peer"]] == ["80"]
    assert [c.task_options["max_test_length"] for c in given["ours"]] == [80]
    assert sorted(p.name for p in (tmp_path / "runs" / "parity_check").iterdir()) == [
        f"rnn-{code}-s{seed}-200steps{tag}"
        for code in ("deepmind", "ours")
        for seed, tag in [(0, ""), (0, "-train40-test80"), (1, "")]
    ]
    with pytest.raises(SystemExit, match=r"^--max-test-length: expected more than --max-train-length \(40\), got 40$"):
        runner.main([*argv, "--max-test-length", "40"])


def test_the_plot_of_a_cell_is_written(tmp_path):
    rows = [
        {"task": "parity_check", "model": "rnn", "code": code, "seed": seed, "score": 50.0, "fit_step": fit, "curve": c}
        for code, seed, fit, c in [
            ("deepmind", 0, 200, [[100, 60.0], [200, 99.5]]),
            ("ours", 0, "", [[100, 55.0], [200, 70.0]]),
        ]
    ]
    path = runner.plot_cell(rows, tmp_path / "cell.png")
    assert path.read_bytes()[:4] == b"\x89PNG"
    lines = runner.summary([{**r, "steps": 200, "train_accuracy": r["curve"][-1][1]} for r in rows])
    assert [(x["code"], x["fit"], x["fit_step"]) for x in lines] == [
        ("deepmind", "1 of 1", "200"),
        ("ours", "0 of 1", "-"),
    ]


def test_their_modular_arithmetic_operators_are_kept_in_a_tuple_and_nothing_else_is_touched():
    task = types.SimpleNamespace(_operators=(op for op in (0, 2, 1)))  # as their ModularArithmetic stores them
    assert runner.repair_operators(task) and task._operators == (0, 2, 1)
    assert list(task._operators) == list(task._operators)  # read alike at every trace
    other = types.SimpleNamespace(_operators=(0, 1))
    assert not runner.repair_operators(other) and not runner.repair_operators(types.SimpleNamespace())
