"""benchmarks/allocators.py: each setting's environment, and the table made of its processes' rows (no timing)."""

from __future__ import annotations

import pytest

from benchmarks import allocators


def test_each_setting_starts_from_an_environment_without_the_others(monkeypatch):
    monkeypatch.setenv("LD_PRELOAD", "libsomething.so")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=1")
    monkeypatch.setenv("PANM_JAX_MALLOC", "keep")
    glibc = allocators.setting_env("glibc")
    assert not {"LD_PRELOAD", "GLIBC_TUNABLES", "PANM_JAX_MALLOC"} & set(glibc)
    huge = allocators.setting_env("hugetlb")
    assert huge["GLIBC_TUNABLES"] == "glibc.malloc.hugetlb=1" and "LD_PRELOAD" not in huge
    monkeypatch.setattr(allocators, "library", lambda setting: f"lib{setting}.so.9")
    tc = allocators.setting_env("tcmalloc")
    assert tc["LD_PRELOAD"] == "libtcmalloc.so.9" and "GLIBC_TUNABLES" not in tc
    monkeypatch.setattr(allocators, "library", lambda setting: None)
    with pytest.raises(SystemExit, match="--settings: jemalloc is not installed here"):
        allocators.setting_env("jemalloc")


def _fake_measure(times, losses=None):
    calls = []

    def measure(label, setting, repeats):
        calls.append(setting)
        step = times[setting][sum(c == setting for c in calls) - 1]
        loss = (losses or {}).get(setting, 1.25)
        return {"median_s": step, "min_s": step / 2, "page_faults": 10.0, "loss": loss, "malloc": setting}

    return measure, calls


def test_rows_take_the_median_over_rounds_and_the_speedup_over_the_first_setting(monkeypatch):
    measure, calls = _fake_measure({"glibc": [1.0, 3.0, 2.0], "tcmalloc": [0.5, 1.0, 4.0]})
    monkeypatch.setattr(allocators, "measure", measure)
    rows = allocators.compare("a case", ["glibc", "tcmalloc"], rounds=3, repeats=2)
    assert calls == ["glibc", "tcmalloc"] * 3  # the settings in turn, round after round
    glibc, tc = rows
    assert glibc["step_s"] == 2.0 and tc["step_s"] == 1.0
    assert glibc["speedup_vs_glibc"] == 1.0 and tc["speedup_vs_glibc"] == 2.0
    assert tc["min_s"] == 0.25 and tc["rounds_s"] == [0.5, 1.0, 4.0]


def test_a_loss_that_differs_between_allocators_is_an_error(monkeypatch):
    measure, _ = _fake_measure({"glibc": [1.0], "hugetlb": [1.0]}, losses={"hugetlb": 1.5})
    monkeypatch.setattr(allocators, "measure", measure)
    with pytest.raises(RuntimeError, match="the first step's loss differs between settings"):
        allocators.compare("a case", ["glibc", "hugetlb"], rounds=1, repeats=1)


def test_bad_arguments_are_named():
    with pytest.raises(SystemExit, match="--settings: expected names from glibc, hugetlb, tcmalloc, jemalloc"):
        allocators.main(["--settings", "glibc,ptmalloc9"])
    with pytest.raises(SystemExit, match="--rounds: expected a positive integer, got 0"):
        allocators.main(["--rounds", "0"])
    with pytest.raises(SystemExit, match="--cases: case: expected a pattern matching exactly one"):
        allocators.main(["--settings", "glibc", "--cases", "no such case"])
