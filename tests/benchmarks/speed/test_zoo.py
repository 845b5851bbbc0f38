"""The model zoo (benchmarks/speed/zoo.py): every model has a home task, a tiny real step, the record's fields."""

from __future__ import annotations

import json

import numpy as np

from benchmarks import common
from benchmarks.speed import zoo
from panm_jax.models import list_models
from panm_jax.tasks import get_task


def test_every_registered_model_has_a_home_task_that_samples_at_its_length():
    assert set(list_models()) <= set(zoo.HOMES)
    for name in list_models():
        home = zoo.home_of(name)
        assert home.optimizer in zoo.OPTIMIZERS
        task = get_task(home.task, **home.task_options)
        batch = task.sample(np.random.default_rng(0), 2, home.length)
        assert batch.inputs.shape[0] == 2


def test_quick_run_times_a_real_step_against_its_floor_and_records_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(common, "memory_bandwidth", lambda repeats=20: 50.0)
    monkeypatch.setattr(common, "matmul_rate", lambda b, k, n, repeats=20: 10.0)
    (row,) = zoo.run(quick=True, names=["srnn"])
    assert (row["model"], row["task"], row["B"], row["n"]) == ("srnn", "dyck n=2", 1, 10)
    assert row["median_s"] > 0 and row["compile_s"] > 0 and row["GFLOP"] > 0
    assert row["floor_s"] == max(row["flop_floor_s"], row["byte_floor_s"])
    assert row["flop_floor_s"] == row["GFLOP"] / 10.0
    assert row["x_floor"] == row["median_s"] / row["floor_s"]
    assert not any(tmp_path.iterdir())


def test_a_full_run_writes_zoo_json_alone_after_every_model(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(common, "memory_bandwidth", lambda repeats=20: 50.0)
    seen = []

    def fake_run_model(name, repeats, bandwidth, rates):
        seen.append((name, repeats, bandwidth))
        return {"model": name, "median_s": 0.1, "floor_s": 0.05, "x_floor": 2.0}

    monkeypatch.setattr(zoo, "run_model", fake_run_model)
    zoo.main(["--models", "rnn,panm"])
    assert seen == [("rnn", 10, 50.0), ("panm", 10, 50.0)]
    (folder,) = tmp_path.iterdir()
    record = json.loads((folder / "zoo.json").read_text())
    assert [r["model"] for r in record["rows"]] == ["rnn", "panm"]
    assert record["command"].endswith("python -m benchmarks.speed.zoo --models rnn,panm")
    assert "cost.py" in record["notes"] and "50.0 GB/s" in record["notes"]
    assert [p.name for p in folder.iterdir()] == ["zoo.json"]
