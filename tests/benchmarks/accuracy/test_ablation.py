"""The ablation runner's argument checks, made before anything trains."""

from __future__ import annotations

import pytest

from benchmarks.accuracy import ablation


def test_a_bad_results_name_is_refused_before_training(tmp_path):
    with pytest.raises(SystemExit, match=r"--name: expected letters, digits"):
        ablation.main(["--tasks", "copy", "--name", "a b", "--workdir", str(tmp_path)])
    assert not any(tmp_path.iterdir())


def test_an_unknown_task_is_refused(tmp_path):
    with pytest.raises(SystemExit, match=r"--tasks: expected tasks among"):
        ablation.main(["--tasks", "dyck", "--workdir", str(tmp_path)])


def test_a_long_variant_gets_a_short_distinct_folder_name():
    short = "panm.score=scaled_dot"
    assert ablation.slug(short) == short  # recorded runs keep their folders
    options = "panm.encoder=bigru,panm.hidden=128,panm.score=scaled_dot,panm.address_bits=8,panm.init=pytorch,"
    long_a = options + "panm.controller_start=encoder_final,panm.controller_reads_mode2=false,select=2L+1"
    long_b = options + "panm.controller_start=encoder_final,panm.controller_reads_mode2=true,select=2L+1"
    a, b = ablation.slug(long_a), ablation.slug(long_b)
    assert len(a) <= ablation.SLUG_MAX and len(b) <= ablation.SLUG_MAX and a != b
    assert a.startswith(long_a[:100]) and ablation.slug(long_a) == a  # readable, and the same every time


def test_the_table_says_a_run_was_short_only_when_it_was():
    full = ablation.table_notes([0, 1, 2], None, ablation.PROTOCOL_STEPS)
    assert "not the protocol's" not in full and "seeds [0, 1, 2]" in full
    assert "trained at most 10,000 steps, not the protocol's 50,000" in ablation.table_notes([0], None, 10_000)
    assert "capped at 7 minutes" in ablation.table_notes([0], 7, None)
