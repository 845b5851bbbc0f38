"""The speed suite's bookkeeping: per-platform goals and the accelerator throughput sweep (no timing here)."""

from __future__ import annotations

import pytest

from benchmarks import speed


def test_goals_differ_by_platform_only_where_the_issue_gives_an_accelerator_goal():
    panm256 = speed.find_case("PANM D=256, Copy n=10, B=128")
    assert speed.goal_of(panm256, accelerator=False) == 0.200
    assert speed.goal_of(panm256, accelerator=True) == 0.010
    ntm = speed.find_case("NTM ctrl 100, 128x20, Copy n=20, B=128")
    assert speed.goal_of(ntm, accelerator=True) == speed.goal_of(ntm, accelerator=False) == 0.1
    dnc256 = speed.find_case("DNC N=1024, W=32, R=4, T=50, B=256")
    assert dnc256.accelerator_only and dnc256.goal_x_floor == 3.0 and speed.goal_of(dnc256, True) is None


def test_throughput_sweep_grows_x4_and_stops_at_the_first_batch_that_does_not_fit(monkeypatch):
    seen = []

    def fake_run_case(case, quick, bw):
        seen.append(case.batch)
        if case.batch >= 8192:
            raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 80.89GiB")
        return {"case": case.label, "B": case.batch, "median_s": 0.01}

    monkeypatch.setattr(speed, "run_case", fake_run_case)
    rows = speed.throughput_sweep(speed.find_case("PANM D=256, Copy n=10, B=128"), bw=1.0)
    assert seen == [512, 2048, 8192]
    assert [r["case"] for r in rows] == [f"PANM D=256, Copy n=10, B={b}" for b in (512, 2048, 8192)]
    assert rows[-1]["median_s"] == "out of memory" and rows[0]["median_s"] == 0.01


def test_throughput_sweep_raises_errors_other_than_out_of_memory(monkeypatch):
    def broken(case, quick, bw):
        raise RuntimeError("INTERNAL: something else")

    monkeypatch.setattr(speed, "run_case", broken)
    with pytest.raises(RuntimeError, match="something else"):
        speed.throughput_sweep(speed.find_case("PANM D=256, Copy n=10, B=128"), bw=1.0)
