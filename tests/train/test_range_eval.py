"""Tests of panm_jax/train/range_eval.py and ``panm-jax eval --lengths``: every length on its own, few compilations.

One tiny run (an LSTM of width 8 on reverse_string, trained on lengths 1..5 for
2 steps) is range-evaluated at lengths 6..40: the eval step compiles once per
bucket, padding changes no metric, the score is the mean over lengths, and any
subset of lengths gets the same numbers.
"""

from __future__ import annotations

import functools
import json

import jax
import numpy as np
import pytest

from panm_jax.cli import main
from panm_jax.tasks import get_task
from panm_jax.tasks.buckets import fitted_buckets, padding_efficiency
from panm_jax.train.checkpoint import Checkpointer
from panm_jax.train.config import load_config
from panm_jax.train.loop import Run, train_and_evaluate
from panm_jax.train.range_eval import (
    PER_LENGTH,
    POWERS_OF_TWO,
    RangeResult,
    length_batches,
    length_seed,
    range_buckets,
    range_evaluate,
)
from panm_jax.train.sharding import replicate
from panm_jax.train.steps import make_eval_step

LENGTHS = range(6, 41)
EXAMPLES, BATCH = 6, 4  # two steps per length, the second filled up with masked rows
TINY_LSTM = [
    "task=reverse_string",
    "model=lstm",
    "model_options.hidden=8",
    "task_options.max_train_length=5",
    "task_options.max_test_length=40",
    'select_mode="6-40"',
    "batch_size=8",
    "eval_examples=8",
    "eval_batch_size=8",
    "num_steps=2",
    "eval_every=2",
    "checkpoint_every=2",
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """``(workdir, config)`` of the tiny LSTM run, trained for 2 steps."""
    config = load_config(None, TINY_LSTM)
    workdir = tmp_path_factory.mktemp("range") / "run"
    train_and_evaluate(config, workdir, progress=False)
    return workdir, config


def _counted_run(config):
    """A fresh ``Run`` whose jitted eval step records the input shape of every trace."""
    run = Run(config)
    inner = make_eval_step(run.graphdef, run.task)
    traces = []

    @functools.wraps(inner)
    def eval_step(params, batch, key=None):
        traces.append(tuple(batch.inputs.shape))  # runs only while jit traces
        return inner(params, batch, key)

    run.eval_step = jax.jit(eval_step)
    return run, traces


def _best_params(run, workdir):
    ckpt = Checkpointer(workdir, read_only=True)
    try:
        state, meta = ckpt.restore_best(jax.device_get(run.state))
    finally:
        ckpt.close()
    assert meta["step"] == 2
    return replicate(state.params, run.mesh)


def test_range_compiles_once_per_bucket_and_padding_is_inert(trained):
    workdir, config = trained
    run, traces = _counted_run(config)
    params = _best_params(run, workdir)
    result = range_evaluate(run, params, LENGTHS, EXAMPLES, BATCH, buckets=POWERS_OF_TWO, seed=7)

    buckets = range_buckets(LENGTHS)
    assert buckets == (8, 16, 32, 64) and result.buckets == buckets
    assert result.lengths == tuple(LENGTHS) and result.buckets_used == buckets
    # One compilation (and one trace) per bucket used, not per length: 4, not 35.
    assert result.compiles == len(traces) == len(result.buckets_used) == 4
    assert sorted(t[1] for t in traces) == [8, 16, 32, 64]
    assert {t[0] for t in traces} == {BATCH}  # the filled-up last batches add no shape
    assert result.wall_seconds > 0 and result.compile_seconds > 0
    # The score is the mean over lengths of the per-length token accuracies.
    accs = [result.per_length[n]["token_accuracy"] for n in LENGTHS]
    assert result.metric == "token_accuracy" and result.score == pytest.approx(float(np.mean(accs)), abs=1e-12)
    assert all(r["examples"] == EXAMPLES for r in result.rows)

    # Each length alone, unpadded (one program per length): the same metrics. Length 8's shape is bucket 8's,
    # compiled above: only 9 and 40 compile.
    alone_lengths = [8, 9, 40]
    alone = range_evaluate(run, params, alone_lengths, EXAMPLES, BATCH, buckets=PER_LENGTH, seed=7)
    assert [r["bucket"] for r in alone.rows] == alone_lengths
    assert alone.compiles == 2 and sorted(t[1] for t in traces[4:]) == [9, 40]
    for n in alone_lengths:
        a, b = result.per_length[n], alone.per_length[n]
        assert a["token_accuracy"] == b["token_accuracy"] and a["sequence_accuracy"] == b["sequence_accuracy"]
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)

    # By hand for one length: the unpadded batches through the step, weighted by target steps.
    n = 9
    hits = steps = 0.0
    for j, batch in enumerate(length_batches(run.task, n, EXAMPLES, BATCH, 7)):
        key = jax.random.fold_in(jax.random.key(length_seed(run.task, n, 7)), j)
        m = jax.device_get(run.eval_step(params, run.shard(batch), key))
        hits += float(m["token_accuracy"]) * float(batch.target_mask.sum())
        steps += float(batch.target_mask.sum())
    assert steps == EXAMPLES * n
    assert result.per_length[n]["token_accuracy"] == pytest.approx(hits / steps, abs=1e-7)

    # A subset of lengths, in any order: the numbers of the full range; its shapes are compiled already.
    subset = range_evaluate(run, params, [40, 9, 17, 9], EXAMPLES, BATCH, buckets=buckets, seed=7)
    assert subset.lengths == (9, 17, 40) and subset.compiles == 0
    for n in subset.lengths:
        assert subset.per_length[n] == result.per_length[n]
    # Another seed draws other examples.
    other = range_evaluate(run, params, [9, 17, 40], EXAMPLES, BATCH, buckets=buckets, seed=8)
    assert any(other.per_length[n] != result.per_length[n] for n in other.lengths)

    assert RangeResult.from_record(json.loads(json.dumps(result.to_record()))) == result

    # The default buckets, fitted to the lengths: more programs, fewer padded steps, the same numbers.
    fitted = range_evaluate(run, params, LENGTHS, EXAMPLES, BATCH, seed=7)
    assert fitted.buckets == fitted_buckets(run.task, LENGTHS) == fitted.buckets_used
    assert fitted.padding_efficiency >= 1 / 1.10 > 0.8 > result.padding_efficiency
    assert result.padding_efficiency == pytest.approx(padding_efficiency(run.task, buckets, LENGTHS), abs=1e-4)
    for n in LENGTHS:
        a, b = fitted.per_length[n], result.per_length[n]
        assert a["token_accuracy"] == b["token_accuracy"] and a["loss"] == pytest.approx(b["loss"], rel=1e-5)
    assert RangeResult.from_record(json.loads(json.dumps(fitted.to_record()))) == fitted


def test_range_evaluate_rejects_bad_arguments(trained):
    _, config = trained
    run = Run(config)
    with pytest.raises(ValueError, match=r"lengths: expected lengths of task 'reverse_string' .*got 5000"):
        range_evaluate(run, run.state.params, [6, 5000])
    with pytest.raises(ValueError, match=r"lengths: expected at least one length"):
        range_evaluate(run, run.state.params, [])
    with pytest.raises(ValueError, match=r"examples_per_length: expected a positive integer, got 0"):
        range_evaluate(run, run.state.params, [6], examples_per_length=0)
    with pytest.raises(ValueError, match=r"buckets: expected 'fitted', 'powers-of-two', 'per-length' or a list"):
        range_evaluate(run, run.state.params, [6], buckets="pow2")
    with pytest.raises(ValueError, match=r"buckets: expected a bucket holding 40 input and 40 output steps"):
        range_evaluate(run, run.state.params, [40], buckets=(8, 16))


def test_cli_eval_lengths_writes_range_files_and_table(trained, capsys, tmp_path):
    workdir, _ = trained
    code = main(["eval", "--workdir", str(workdir), "--lengths", "6-40", "--examples-per-length", "4"])
    out = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert code == 0
    record = json.loads((workdir / "range.json").read_text())
    assert (record["task"], record["model"], record["step"], record["lengths"]) == ("reverse_string", "lstm", 2, "6-40")
    assert [r["length"] for r in record["rows"]] == list(LENGTHS) and record["examples_per_length"] == 4
    fitted = list(fitted_buckets(get_task("reverse_string"), LENGTHS))  # (10, 15, ..., 40): 7 buckets
    assert record["compiles"] == 7 and record["buckets_used"] == fitted and record["train_lengths"] == [1, 5]
    assert record["score"] == pytest.approx(np.mean([r["token_accuracy"] for r in record["rows"]]))
    csv_lines = (workdir / "range.csv").read_text().splitlines()
    assert csv_lines[0].startswith("length,bucket,token_accuracy,") and len(csv_lines) == 1 + len(LENGTHS)
    assert (workdir / "range.png").read_bytes()[:4] == b"\x89PNG"
    assert "mean (35 lengths)" in out and "7 compilation(s) of the eval step for 7 bucket(s)" in out
    assert "wall time" in out and "wrote" in out
    assert not list(workdir.glob(".range*"))  # no temporary files left

    # panm-jax plot --range draws the same file.
    assert main(["plot", "--range", str(workdir), str(workdir / "range.json"), "--out", str(tmp_path / "r.png")]) == 0
    assert (tmp_path / "r.png").is_file()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--lengths", "40-6"], "error: --lengths: expected LO <= HI, got '40-6'"),
        (
            ["--lengths", "six-40"],
            "error: --lengths: expected LO-HI, two positive integers (e.g. 41-500), got 'six-40'",
        ),
        (["--lengths", "0-40"], "error: --lengths: expected lengths of at least 1, got '0-40'"),
        (
            ["--lengths", "6-5000"],
            "error: --lengths: expected lengths of task 'reverse_string' (an integer in [1, 4096]), got '6-5000'",
        ),
        (
            ["--lengths", "6-40", "--modes", "6-40"],
            "error: --lengths: a range evaluation writes range.* in WORKDIR and takes no --modes",
        ),
        (["--examples-per-length", "8"], "error: --examples-per-length: only used with --lengths"),
    ],
)
def test_cli_bad_lengths_is_a_named_error(trained, capsys, args, message):
    workdir, _ = trained
    assert main(["eval", "--workdir", str(workdir), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and len(err.strip().splitlines()) == 1
