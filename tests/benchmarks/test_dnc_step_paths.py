"""benchmarks/dnc_step_paths.py on a toy DNC: both link paths compile, agree on the loss and are timed (no timing
asserted)."""

from __future__ import annotations

import os

import pytest

from benchmarks import dnc_step_paths, speed
from panm_jax.kernels import _dnc_link_cpu

TOY = speed.Case("dnc", "DNC toy", "dnc", {"hidden": 16, "num_slots": 6, "word_size": 4, "num_reads": 3}, 3, 2, "adam")


def test_both_paths_are_compiled_checked_and_timed_alternately():
    if not _dnc_link_cpu.available():
        pytest.skip(f"the DNC link's CPU kernel could not be built: {_dnc_link_cpu._register()}")
    before = os.environ.get("PANM_JAX_DNC_LINK")
    row = dnc_step_paths.compare(TOY, rounds=2, repeats=1)
    assert os.environ.get("PANM_JAX_DNC_LINK") == before  # the setting is restored
    assert row["case"] == "DNC toy" and len(row["rounds_xla_s"]) == len(row["rounds_kernel_s"]) == 2
    assert row["xla_s"] > 0 and row["kernel_s"] > 0 and row["speedup"] == pytest.approx(row["xla_s"] / row["kernel_s"])


def test_bad_arguments_are_named():
    with pytest.raises(SystemExit, match="--rounds: expected a positive integer, got 0"):
        dnc_step_paths.main(["--rounds", "0"])
    with pytest.raises(SystemExit, match="--slots: case: expected a pattern matching exactly one"):
        dnc_step_paths.main(["--slots", "100"])
