"""``evaluate_run`` and ``evaluate_run_range``: a run folder evaluated from Python, as ``panm-jax eval`` does it.

On the finished tiny run (``conftest.finished_run``): the recorded evaluation is
returned from ``results.json`` without computing; recomputed, it gives the same
numbers; another checkpoint and other modes are evaluated and nothing is
written; a range record; mistakes name the library's arguments (the command
line names its flags, ``test_reliability.py`` and ``test_validation.py``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from panm_jax.errors import UserError
from panm_jax.train import Evaluation, evaluate_run, evaluate_run_range


def _numbers(record: dict) -> dict:
    return {row["mode"]: {k: v for k, v in row.items() if k != "mode"} for row in record["modes"]}


def test_the_recorded_evaluation_is_read_back_and_recomputed_the_same(finished_run):
    recorded = json.loads((finished_run / "results.json").read_text())
    ev = evaluate_run(finished_run)
    assert isinstance(ev, Evaluation)
    assert ev.recorded_in == finished_run / "results.json" and ev.run is None and ev.params is None
    assert ev.record == recorded
    again = evaluate_run(finished_run, recompute=True)
    assert again.recorded_in is None and again.run is not None
    assert again.record["step"] == recorded["step"]
    got, want = _numbers(again.record), _numbers(recorded)
    assert got.keys() == want.keys()
    for mode in want:
        for name, value in want[mode].items():
            if isinstance(value, float):
                np.testing.assert_allclose(got[mode][name], value, rtol=1e-6, err_msg=f"{mode} {name}")
            else:
                assert got[mode][name] == value, (mode, name)


def test_another_checkpoint_and_modes_are_evaluated_and_nothing_is_written(run_copy):
    before = sorted(p.name for p in run_copy.iterdir())
    ev = evaluate_run(run_copy, checkpoint="4", modes=["L"], examples=8)
    assert ev.record["step"] == 4 and [row["mode"] for row in ev.record["modes"]] == ["L"]
    assert sorted(p.name for p in run_copy.iterdir()) == before  # no eval.json: the caller writes


def test_a_range_of_lengths(run_copy):
    ev = evaluate_run_range(run_copy, (1, 4), examples_per_length=8)
    assert ev.record["lengths"] == "1-4" and ev.record["num_lengths"] == 4
    assert 0.0 <= ev.record["score"] <= 1.0 and ev.record["step"] == 8


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda w: evaluate_run(w, modes=["L", "9L"]), r"modes: unknown mode\(s\) \['9L'\]"),
        (lambda w: evaluate_run(w, checkpoint="7"), r"checkpoint: expected best, latest or the step of a checkpoint"),
        (lambda w: evaluate_run(w, checkpoint="first"), r"checkpoint: expected best, latest or a step number"),
        (lambda w: evaluate_run(w, examples=0), r"examples: expected an integer"),
        (lambda w: evaluate_run(w / "nothing"), r"workdir: expected a run folder with config.json"),
        (lambda w: evaluate_run_range(w, (1, 10_000)), r"lengths: expected lengths of task 'copy'"),
    ],
)
def test_mistakes_name_the_argument(run_copy, call, message):
    with pytest.raises(UserError, match=message):
        call(run_copy)
