"""The speed suite's bookkeeping: per-platform goals and the accelerator throughput sweep (no timing here), and a
step placed on several host devices."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.speed import suite


def test_goals_differ_by_platform_only_where_a_case_has_an_accelerator_goal():
    panm256 = suite.find_case("PANM D=256, Copy n=10, B=128")
    assert suite.goal_of(panm256, accelerator=False) == 0.200
    assert suite.goal_of(panm256, accelerator=True) == 0.010
    ntm = suite.find_case("NTM ctrl 100, 128x20, Copy n=20, B=128")
    assert suite.goal_of(ntm, accelerator=True) == suite.goal_of(ntm, accelerator=False) == 0.1
    dnc256 = suite.find_case("DNC N=1024, W=32, R=4, T=50, B=256")
    assert dnc256.accelerator_only and dnc256.goal_x_floor == 3.0 and suite.goal_of(dnc256, True) is None


def test_throughput_sweep_grows_x4_and_stops_at_the_first_batch_that_does_not_fit(monkeypatch):
    seen = []

    def fake_run_case(case, quick, bw, fault_cost_s=float("nan")):
        seen.append(case.batch)
        if case.batch >= 8192:
            raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 80.89GiB")
        return {"case": case.label, "B": case.batch, "median_s": 0.01}

    monkeypatch.setattr(suite, "run_case", fake_run_case)
    rows = suite.throughput_sweep(suite.find_case("PANM D=256, Copy n=10, B=128"), bw=1.0)
    assert seen == [512, 2048, 8192]
    assert [r["case"] for r in rows] == [f"PANM D=256, Copy n=10, B={b}" for b in (512, 2048, 8192)]
    assert rows[-1]["median_s"] == "out of memory" and rows[0]["median_s"] == 0.01


def test_throughput_sweep_raises_errors_other_than_out_of_memory(monkeypatch):
    def broken(case, quick, bw, fault_cost_s=float("nan")):
        raise RuntimeError("INTERNAL: something else")

    monkeypatch.setattr(suite, "run_case", broken)
    with pytest.raises(RuntimeError, match="something else"):
        suite.throughput_sweep(suite.find_case("PANM D=256, Copy n=10, B=128"), bw=1.0)


def test_floor_reports_both_floors_and_names_the_larger():
    flops_bound = suite.floor_of({"flops": 2e9, "bytes": 1e9}, rate_gflops=100.0, bandwidth_gbs=100.0)
    assert flops_bound == {"flop_floor_s": 0.02, "byte_floor_s": 0.01, "floor_s": 0.02, "bound": "FLOPs"}
    bytes_bound = suite.floor_of({"flops": 1e9, "bytes": 4e9}, rate_gflops=100.0, bandwidth_gbs=50.0)
    assert bytes_bound["floor_s"] == bytes_bound["byte_floor_s"] == 0.08 and bytes_bound["bound"] == "bytes"


def test_goal_columns_check_every_goal_of_a_case():
    ntm = suite.find_case("NTM ctrl 100, 128x20, Copy n=20, B=128")  # <= 0.1 s and <= 3 x floor
    fast_near_floor = {"median_s": 0.09, "floor_s": 0.04, "x_floor": 2.25}
    assert suite.goal_columns(ntm, fast_near_floor, accelerator=False) == {
        "goal": "<= 0.1 s; <= 3 x floor (0.12 s)",
        "meets_goal": True,
    }
    fast_far_from_floor = {"median_s": 0.09, "floor_s": 0.02, "x_floor": 4.5}
    assert suite.goal_columns(ntm, fast_far_from_floor, accelerator=False)["meets_goal"] is False
    dnc256 = suite.find_case("DNC N=256, W=32, R=4, T=50, B=32")  # <= 3 x floor and >= 5 x pytorch-dnc
    row = {"median_s": 0.2, "floor_s": 0.1, "x_floor": 2.0, "speedup_vs_peer": ""}
    cols = suite.goal_columns(dnc256, row, accelerator=False)
    assert cols["goal"] == "<= 3 x floor (0.3 s); >= 5 x pytorch-dnc" and cols["meets_goal"] is False  # no peers run
    assert suite.goal_columns(dnc256, {**row, "speedup_vs_peer": 5.5}, accelerator=False)["meets_goal"] is True
    assert suite.goal_columns(dnc256, {**row, "speedup_vs_peer": 4.9}, accelerator=False)["meets_goal"] is False
    stack = suite.find_case("Stack-LSTM ctrl 256, T=64, B=32")
    assert suite.goal_columns(stack, row, accelerator=False) == {"goal": "", "meets_goal": ""}


def test_fault_columns_subtract_the_faults_time_and_stay_empty_where_unknown():
    cols = suite.fault_columns(page_faults=20_000.0, fault_cost_s=1e-6, median_s=0.12, floor_s=0.03)
    assert cols["page_faults"] == 20_000
    assert cols["fault_s"] == pytest.approx(0.02)
    assert cols["x_floor_less_faults"] == pytest.approx((0.12 - 0.02) / 0.03)
    nan = float("nan")
    assert suite.fault_columns(20_000.0, nan, 0.12, 0.03) == {
        "page_faults": 20_000,
        "fault_s": "",
        "x_floor_less_faults": "",
    }
    assert suite.fault_columns(nan, nan, 0.12, 0.03) == {"page_faults": "", "fault_s": "", "x_floor_less_faults": ""}


def test_a_step_runs_data_parallel_over_every_host_device():
    # Its own process: the device count is fixed when JAX starts.
    code = (
        "import json; from benchmarks.speed import suite; "
        "case = suite.Case('ntm', 'tiny', 'ntm', {'hidden': 8, 'num_slots': 4, 'word_size': 3}, 2, 4, repeats=2); "
        "row = suite.run_case(case, True, 10.0); print(json.dumps({'devices': row['devices'], 's': row['median_s']}))"
    )
    env = {
        **os.environ,
        "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2",
        "JAX_PLATFORMS": "cpu",
    }
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    row = json.loads(done.stdout.strip().splitlines()[-1])
    assert row["devices"] == 2 and row["s"] > 0
