"""The SCAN and Mathematics runner's argument checks, made before anything trains."""

from __future__ import annotations

import pytest

from benchmarks.accuracy import seq2seq


def test_a_model_the_runner_cannot_run_is_refused_by_name(tmp_path):
    with pytest.raises(SystemExit, match=r"--models: expected models among panm_transformer, .*got 'lstm'"):
        seq2seq.main(["--cutoffs", "22", "--math", "", "--models", "lstm", "--workdir", str(tmp_path)])
    assert not any(tmp_path.iterdir())


def test_nothing_to_run_is_refused(tmp_path):
    with pytest.raises(SystemExit, match=r"expected at least one of each"):
        seq2seq.main(["--cutoffs", "", "--math", "", "--workdir", str(tmp_path)])
