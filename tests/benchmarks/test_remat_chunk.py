"""benchmarks/checkpointing.py on a toy DNC: every chunk size compiles, agrees on the loss, reports its memory and is
timed (no timing asserted)."""

from __future__ import annotations

import pytest

from benchmarks import remat_chunk, speed

TOY = speed.Case("dnc", "DNC toy", "dnc", {"hidden": 16, "num_slots": 6, "word_size": 4, "num_reads": 3}, 3, 2, "adam")


def test_every_chunk_size_is_compiled_checked_and_timed_alternately():
    rows = remat_chunk.compare(TOY, [0, 2], rounds=2, repeats=1)
    assert [r["remat_chunk"] for r in rows] == [0, 2]
    assert all(len(r["rounds_s"]) == 2 and r["step_s"] > 0 and r["temp_mib"] >= 0 for r in rows)
    assert rows[0]["vs_off"] == 1.0 and rows[1]["vs_off"] == pytest.approx(rows[1]["step_s"] / rows[0]["step_s"])
    assert rows[1]["loss"] == pytest.approx(rows[0]["loss"], rel=1e-4)


def test_bad_arguments_are_named():
    with pytest.raises(SystemExit, match="--rounds: expected a positive integer, got 0"):
        remat_chunk.main(["--rounds", "0"])
    with pytest.raises(SystemExit, match="--every: expected distinct non-negative integers, got '0,-1'"):
        remat_chunk.main(["--every", "0,-1"])
    with pytest.raises(SystemExit, match="--every: expected comma-separated non-negative integers, got 'a'"):
        remat_chunk.main(["--every", "a"])
    with pytest.raises(SystemExit, match="--case: expected a memory-model case"):
        remat_chunk.main(["--case", "PANM D=256, Copy n=10, B=128"])
