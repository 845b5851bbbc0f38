"""The profiler's attribution (benchmarks/speed/profile.py) and the speed suite's case lookup, on tiny functions."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import pytest

from benchmarks.speed import profile
from benchmarks.speed.suite import CASES, find_case
from panm_jax.kernels.scan import scan


def _f(x):
    return jnp.tanh(x @ x).sum()


def test_hlo_metadata_names_the_primitive_and_our_source_line():
    text = jax.jit(jax.grad(_f)).lower(jnp.ones((4, 4))).compile().as_text()
    meta = profile.hlo_metadata(text)
    tanh = [m for m in meta.values() if m["op_name"].endswith("/tanh")]
    assert tanh, "no tanh instruction found in the compiled HLO"
    line = inspect.getsourcelines(_f)[1] + 1
    assert tanh[0]["source"].endswith(f"test_profile.py:{line}")
    assert any(m["opcode"].startswith("fusion:k") for m in meta.values())  # fusion kinds are kept


def test_profile_sums_thunk_time_per_instruction_line_and_primitive(tmp_path):
    w = jnp.eye(64) * 0.5

    def run(xs):
        def step(c, x):
            c = jnp.tanh(c @ w + x)
            return c, c.sum()

        return scan(step, jnp.zeros((64,)), xs)[1].sum()

    res = profile.profile(jax.grad(run), (jnp.ones((20, 64)),), steps=2, logdir=tmp_path)
    assert res["wall_ms"] > 0 and res["ops_ms"] > 0
    assert sum(res["sources"].values()) == pytest.approx(res["ops_ms"], rel=1e-6)
    # The step's instructions run inside scan's while loop; the innermost panm_jax frame is scan.py's.
    assert any(k.startswith("panm_jax/kernels/scan.py:") for k in res["sources"]), res["sources"]
    assert list(tmp_path.glob("plugins/profile/*/*.trace.json.gz")), "the trace is kept in --logdir"
    assert res["page_faults_per_step"] is None or res["page_faults_per_step"] >= 0


def test_find_case_takes_an_exact_label_or_a_unique_fragment():
    assert find_case(CASES[0].label) is CASES[0]
    assert find_case("dnc n=64").batch == 32  # case-insensitive fragment
    assert find_case("dnc n=1024, w=32, r=4, t=50, b=256").batch == 256
    b1 = [c for c in CASES if c.label.endswith("B=1")][0]
    assert find_case(b1.label) is b1  # also a prefix of the B=128 label: the exact match wins
    with pytest.raises(ValueError, match="matches 0"):
        find_case("no such case")
    with pytest.raises(ValueError, match=r"matches \d"):
        find_case("PANM")


def _write_trace(logdir, events):
    import gzip
    import json

    folder = logdir / "plugins" / "profile" / "run"
    folder.mkdir(parents=True)
    with gzip.open(folder / "host.trace.json.gz", "wt") as f:
        json.dump({"traceEvents": events}, f)


def test_device_timeline_counts_only_the_device_and_merges_overlapping_kernels(tmp_path):
    meta = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "/host:CPU"}},
    ]
    kernels = [
        {"ph": "X", "pid": 1, "tid": 7, "ts": 0, "dur": 10, "name": "sm90_xmma_gemm_f32"},
        {"ph": "X", "pid": 1, "tid": 8, "ts": 5, "dur": 10, "name": "loop_add_fusion"},  # overlaps: busy 0-15
        {"ph": "X", "pid": 1, "tid": 7, "ts": 40, "dur": 20, "name": "loop_add_fusion"},
        {"ph": "X", "pid": 2, "tid": 1, "ts": 0, "dur": 1000, "name": "ExecuteOnHost"},  # the host: not counted
    ]
    _write_trace(tmp_path, meta + kernels)
    t = profile.device_timeline(tmp_path, steps=2)
    assert t["device_events"] == 3 and t["kernels_per_step"] == 1.5
    assert t["kernel_ms"] == pytest.approx(40 / 1e3 / 2)
    assert t["busy_ms"] == pytest.approx(35 / 1e3 / 2)  # [0, 15] and [40, 60]
    assert t["matmul_ms"] == pytest.approx(10 / 1e3 / 2)
    assert t["top"][0] == ("loop_add_fusion", pytest.approx(30 / 1e3 / 2))


def test_device_timeline_of_a_trace_without_a_device_is_empty(tmp_path):
    _write_trace(tmp_path, [{"ph": "X", "pid": 2, "ts": 0, "dur": 5, "name": "host"}])
    t = profile.device_timeline(tmp_path, steps=1)
    assert t["device_events"] == 0 and t["busy_ms"] == 0 and t["top"] == []
    with pytest.raises(FileNotFoundError, match="logdir"):
        profile.device_timeline(tmp_path / "missing", steps=1)
