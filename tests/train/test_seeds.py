"""Seeds trained together (``train.seeds``) against the same seeds trained alone.

Each seed of a batched run must write what its single run writes: the same
training losses, validation scores, selected checkpoint, checkpoints and test
results, up to floating-point rounding (the batched program's contractions and,
where the seeds' batches fall into different length buckets, its padding round
differently; see ``panm_jax/train/seeds.py``). The tiny run's training lengths
1..3 at batch 8 put the seeds of one step in different buckets at some steps,
so the padding path is exercised too.
"""

from __future__ import annotations

import collections
import json
import shutil

import chex
import jax
import numpy as np
import pytest

from benchmarks.speed.profile import hlo_metadata
from panm_jax.errors import UserError
from panm_jax.train.checkpoint import Checkpointer
from panm_jax.train.loop import train_and_evaluate
from panm_jax.train.seeds import check_seed_configs, train_seeds
from tests.train.tiny import tiny_config

SEEDS = (0, 1, 2)
RTOL, ATOL = 2e-5, 2e-6  # rounding of float32 over 12 steps, with margin


def _config(seed, **changes):
    return tiny_config(**{"seed": seed, "num_steps": 12, "eval_every": 4, "checkpoint_every": 4, **changes})


def _log(workdir):
    rows = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    losses = {r["step"]: r["loss"] for r in rows if "loss" in r and "validation" not in r}
    vals = {r["step"]: r["validation"] for r in rows if "validation" in r}
    return losses, vals


def _params(workdir, config, step):
    from panm_jax.train.loop import Run

    ckpt = Checkpointer(workdir, keep=config.keep_checkpoints, read_only=True)
    try:
        state, meta = ckpt.restore_latest(jax.device_get(Run(config).state))
    finally:
        ckpt.close()
    assert meta["step"] == step
    return state


@pytest.fixture(scope="module")
def single_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("single")
    return {s: (root / f"s{s}", train_and_evaluate(_config(s), root / f"s{s}", progress=False)) for s in SEEDS}


def _assert_same_run(batched_dir, batched_result, single_dir, single_result, seed):
    losses_b, vals_b = _log(batched_dir)
    losses_s, vals_s = _log(single_dir)
    assert sorted(losses_b) == sorted(losses_s) == list(range(1, 13))
    np.testing.assert_allclose(
        [losses_b[k] for k in sorted(losses_b)],
        [losses_s[k] for k in sorted(losses_s)],
        rtol=RTOL,
        atol=ATOL,
        err_msg=f"seed {seed}: training losses",
    )
    assert sorted(vals_b) == sorted(vals_s) == [4, 8, 12]
    for step in vals_b:
        for mode, row in vals_s[step].items():
            for key, value in row.items():
                if isinstance(value, float):
                    assert vals_b[step][mode][key] == pytest.approx(value, rel=RTOL, abs=ATOL), (seed, step, key)
    assert batched_result["step"] == single_result["step"], f"seed {seed}: a different checkpoint was selected"
    for rb, rs in zip(batched_result["modes"], single_result["modes"]):
        assert rb["mode"] == rs["mode"]
        for key, value in rs.items():
            if isinstance(value, float):
                assert rb[key] == pytest.approx(value, rel=RTOL, abs=ATOL), (seed, rs["mode"], key)
    assert batched_result["config"] == single_result["config"]
    config = _config(seed)
    a, b = _params(batched_dir, config, 12), _params(single_dir, config, 12)
    # Adam's update is about lr * sign(g) where |g| is tiny, so a rounding difference in such a gradient moves its
    # parameter by a fraction of one step (lr = 3e-3): atol 1e-4 is 3 % of a step; the losses above agree to 2e-5.
    # Same tree structure (every parameter, by name), then every leaf close, compared in float64.
    a, b = (jax.tree_util.tree_map(lambda x: np.asarray(x, np.float64), t) for t in (a, b))
    chex.assert_trees_all_close(a, b, rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def batched_runs(tmp_path_factory):
    """Seeds 0, 1, 2 trained together to step 12, seed 0 resumed from step 8 of a run of its own, seeds 1 and 2
    from scratch: the masked program (seed 0 held) until the three are at one step, then the unmasked one."""
    root = tmp_path_factory.mktemp("batched")
    dirs = [root / f"s{s}" for s in SEEDS]
    train_and_evaluate(_config(0, num_steps=8), dirs[0], progress=False)
    return dirs, train_seeds([_config(s) for s in SEEDS], dirs, progress=False)


def test_three_seeds_batched_equal_three_single_runs(single_runs, batched_runs):
    dirs, results = batched_runs
    assert [r["config"]["seed"] for r in results] == list(SEEDS)
    for s, d, r in zip(SEEDS, dirs, results):
        _assert_same_run(d, r, *single_runs[s], seed=s)
        assert (d / "results.json").is_file() and (d / "accuracy.png").is_file()
        assert json.loads((d / "config.json").read_text()) == _config(s).to_dict()
    # The seeds differ from one another (independent initialisations and data), so equality above is no accident.
    assert _log(dirs[1])[0][1] != _log(dirs[2])[0][1]


def _parts(workdir):
    rows = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return [(r["event"], r["step"]) for r in rows if r.get("event") in ("started", "resumed")]


def test_resume_per_seed_from_different_steps(batched_runs):
    """Seed 0 had trained alone to step 8, seeds 1 and 2 not at all: the batched run resumed seed 0 at step 8
    and started the others, and each ended where its single run did (the test above)."""
    dirs, _ = batched_runs
    assert [_parts(d) for d in dirs] == [[("started", 0), ("resumed", 8)], [("started", 0)], [("started", 0)]]


def test_finished_seeds_are_not_trained_again(single_runs, batched_runs, tmp_path):
    dirs = [tmp_path / d.name for d in batched_runs[0]]
    for src, dst in zip(batched_runs[0], dirs):
        shutil.copytree(src, dst)
    before = [(d / "metrics.jsonl").read_text() for d in dirs]
    again = train_seeds([_config(s) for s in SEEDS], dirs, progress=False)
    after = [(d / "metrics.jsonl").read_text() for d in dirs]
    for b, a in zip(before, after):
        assert a.startswith(b) and all('"loss"' not in line for line in a[len(b) :].splitlines())
    assert [r["step"] for r in again] == [single_runs[s][1]["step"] for s in SEEDS]


def test_configs_must_differ_only_in_seed():
    with pytest.raises(UserError, match=r"differ only in their seed; seed 1 differs from seed 0 in \['batch_size'\]"):
        check_seed_configs([_config(0), _config(1, batch_size=16)])
    with pytest.raises(UserError, match=r"expected distinct seeds, got \[3, 3\]"):
        check_seed_configs([_config(3), _config(3)])
    with pytest.raises(UserError, match="one folder per seed"):
        train_seeds([_config(0), _config(1)], ["x"], progress=False)


def test_cli_trains_seeds_together(tmp_path, capsys):
    from panm_jax.cli import main
    from tests.train.tiny import TINY

    sets = [a for item in TINY + ["num_steps=4", "eval_every=2"] for a in ("--set", item)]
    code = main(
        [
            "train",
            "--task",
            "copy",
            "--model",
            "panm",
            "--seeds",
            "3,4",
            "--workdir",
            str(tmp_path / "w"),
            "--no-progress",
            *sets,
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "2 seeds" in out and "mean ± std" in out
    for seed in (3, 4):
        record = json.loads((tmp_path / "w" / f"s{seed}" / "results.json").read_text())
        assert record["config"]["seed"] == seed


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--seeds", "0,x"], "--seeds: expected comma-separated integers"),
        (["--seeds", "1,1"], "--seeds: expected distinct seeds"),
        (["--seeds", "0,1", "--seed", "2"], "--seeds: give either --seed or --seeds"),
    ],
)
def test_cli_seeds_errors(flags, message, capsys):
    from panm_jax.cli import main

    assert main(["train", "--task", "copy", *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def _ops(compiled_text: str) -> collections.Counter:
    """How many instructions of each opcode a compiled program holds, fused computations included."""
    return collections.Counter(info["opcode"] for info in hlo_metadata(compiled_text).values())


def test_the_batched_program_holds_one_seeds_operations_with_a_seed_axis():
    """``vmap`` over seeds adds no matrix products, gathers, scatters or loops to the step: the compiled
    batched program has the single program's (at the seeds' summed batch), each over a leading seed axis."""
    from panm_jax.train.loop import Run, training_batch
    from panm_jax.train.seeds import SeedGroup

    configs = [_config(s, buckets=[3]) for s in SEEDS]
    wide = configs[0].replace(batch_size=len(SEEDS) * configs[0].batch_size)
    run = Run(wide)
    single = run.train_step.lower(run.state, run.shard(training_batch(run.task, wide, 0, run.buckets)))
    group = SeedGroup(configs)
    batched = group._step_all.lower(group.state, group.batch([0] * len(SEEDS)))
    one, many = _ops(single.compile().as_text()), _ops(batched.compile().as_text())
    assert one["dot"] > 0
    for op in ("dot", "gather", "scatter", "while", "sort", "custom-call"):
        assert many[op] == one[op], (op, one[op], many[op])
