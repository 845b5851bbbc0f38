"""benchmarks/speed/seeds_speed.py: the table it writes (a tiny LSTM, so it runs in seconds)."""

from __future__ import annotations

import json

import pytest

from benchmarks import common
from benchmarks.speed import seeds_speed


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """One run of the command, with --trace: the table and the trace's table (one compilation of each program)."""
    tmp = tmp_path_factory.mktemp("seeds_speed")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(common, "RESULTS_DIR", tmp / "results")
        argv = ["--seeds", "2", "--steps", "2", "--model", "lstm", "--trace", str(tmp / "tr"), "--trace-steps", "1"]
        assert seeds_speed.main(argv) == 0
    return tmp


def test_the_table_times_the_seeds_alone_batched_and_one_seed_at_their_summed_batch(written):
    (written,) = (written / "results").glob("*/seeds_speed_lstm_copy_s2.json")
    rows = json.loads(written.read_text())["rows"]
    cases = [r["case"] for r in rows]
    assert cases == [
        "2 seeds one after another",
        "2 seeds batched (vmap)",
        "one seed at batch 256 (the batched step's sequences)",
        "2 seeds one after another, one batch reused (device only)",
        "2 seeds batched (vmap), one batch reused (device only)",
        "one seed at batch 256 (the batched step's sequences), one batch reused (device only)",
        "host only: one seed's batch (generation, padding, transfer)",
        "host only: the 2 seeds' stacked batch (generation, padding, transfer)",
    ]
    for r in rows[:6]:
        assert float(r["seconds_per_step"]) > 0 and float(r["ratio"]) > 0
    # The wide row's ratio is its sequences per second over one seed's: S * t_single / t_wide.
    single, wide = rows[0], rows[2]
    expected = 2 * float(single["seconds_per_step"]) / float(wide["seconds_per_step"])
    assert abs(float(wide["ratio"]) - expected) <= 0.01 * expected + 0.01
    per_second = 256 / float(wide["seconds_per_step"])
    assert abs(float(wide["sequences_per_s"]) - per_second) <= 0.01 * per_second


def test_trace_records_the_three_device_only_programs(written):
    tmp_path = written
    (written,) = (tmp_path / "results").glob("*/seeds_trace_lstm_copy_s2.json")
    rows = json.loads(written.read_text())["rows"]
    assert [r["program"] for r in rows] == ["one seed", "2 seeds batched (vmap)", "one seed at batch 256"]
    for r in rows:
        assert r["wall_ms"] > 0 and r["kernels_per_step"] >= 0
    assert len(list((tmp_path / "tr").glob("*/plugins/profile/*/*.trace.json.gz"))) == 3
