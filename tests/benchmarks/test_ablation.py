"""The ablation runner's argument checks, made before anything trains."""

from __future__ import annotations

import pytest

from benchmarks import ablation


def test_a_bad_results_name_is_refused_before_training(tmp_path):
    with pytest.raises(SystemExit, match=r"--name: expected letters, digits"):
        ablation.main(["--tasks", "copy", "--name", "a b", "--workdir", str(tmp_path)])
    assert not any(tmp_path.iterdir())


def test_an_unknown_task_is_refused(tmp_path):
    with pytest.raises(SystemExit, match=r"--tasks: expected tasks among"):
        ablation.main(["--tasks", "dyck", "--workdir", str(tmp_path)])
