"""benchmarks/host_devices.py: each count's environment, its process's row, and the arguments (no timing)."""

from __future__ import annotations

import json
import subprocess

import pytest

from benchmarks import allocators, host_devices


def test_the_device_count_replaces_any_count_already_set_and_keeps_the_other_flags(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_thunk_runtime=true --xla_force_host_platform_device_count=8")
    flags = host_devices.devices_env(2)["XLA_FLAGS"].split()
    assert flags == ["--xla_cpu_use_thunk_runtime=true", "--xla_force_host_platform_device_count=2"]
    monkeypatch.delenv("XLA_FLAGS")
    assert host_devices.devices_env(1)["XLA_FLAGS"] == "--xla_force_host_platform_device_count=1"


def _fake_run(devices):
    def run(cmd, env, **kwargs):
        assert env["XLA_FLAGS"].endswith("--xla_force_host_platform_device_count=2")
        row = {"devices": devices, "median_s": 0.1, "min_s": 0.1, "page_faults": 0, "loss": 2.3, "malloc": "glibc"}
        return subprocess.CompletedProcess(cmd, 0, stdout="compiling\n" + json.dumps(row) + "\n", stderr="")

    return run


def test_a_process_that_did_not_get_the_devices_asked_for_is_an_error(monkeypatch):
    monkeypatch.setattr(subprocess, "run", _fake_run(2))
    assert host_devices.measure("a case", "2", 5)["devices"] == 2
    monkeypatch.setattr(subprocess, "run", _fake_run(1))
    with pytest.raises(RuntimeError, match="asked for 2 host devices, the process had 1"):
        host_devices.measure("a case", "2", 5)


def test_losses_must_agree_to_the_tolerance_given(monkeypatch):
    losses = {"1": 2.0, "2": 2.0 * (1 + 5e-6)}

    def run(label, setting, repeats):
        return {"median_s": 0.1, "min_s": 0.1, "page_faults": 0.0, "loss": losses[setting], "malloc": "glibc"}

    rows = allocators.compare("a case", ["1", "2"], rounds=1, repeats=1, run=run, rtol=1e-5)
    assert [r["speedup_vs_1"] for r in rows] == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="the first step's loss differs between settings"):
        allocators.compare("a case", ["1", "2"], rounds=1, repeats=1, run=run)  # bit for bit by default
    losses["2"] = float("nan")
    with pytest.raises(RuntimeError, match="differs"):
        allocators.compare("a case", ["1", "2"], rounds=1, repeats=1, run=run, rtol=1e-5)


def test_bad_arguments_are_named():
    with pytest.raises(SystemExit, match="--devices: expected comma-separated positive integers, got '1,0'"):
        host_devices.main(["--devices", "1,0"])
    with pytest.raises(SystemExit, match="--devices: 3 does not divide the batch of 'NTM ctrl 100"):
        host_devices.main(["--devices", "1,3", "--cases", "NTM ctrl 100, 128x20, Copy n=20, B=128"])
    with pytest.raises(SystemExit, match="--rounds: expected a positive integer, got 0"):
        host_devices.main(["--rounds", "0"])
    with pytest.raises(SystemExit, match="--cases: case: expected a pattern"):
        host_devices.main(["--cases", "no such case"])
