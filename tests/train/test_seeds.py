"""Seeds (and learning rates) trained together (``train.seeds``) against the same runs trained alone.

Each seed of a batched run must write what its single run writes: the same
training losses, validation scores, selected checkpoint, checkpoints and test
results, up to floating-point rounding (the batched program's contractions and,
where the seeds' batches fall into different length buckets, its padding round
differently; see ``panm_jax/train/seeds.py``). The tiny run's training lengths
1..3 at batch 8 put the seeds of one step in different buckets at some steps,
so the padding path is exercised too. A grid of 2 seeds x 2 learning rates, one
member resumed from a run of its own, must equal its 4 single runs likewise.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import shutil

import chex
import jax
import numpy as np
import pytest

from benchmarks.speed.profile import hlo_metadata
from panm_jax.errors import UserError
from panm_jax.train.checkpoint import Checkpointer
from panm_jax.train.loop import train_and_evaluate, train_seeds
from panm_jax.train.seeds import check_seed_configs, rate_name
from tests.train.tiny import tiny_config

SEEDS = (0, 1, 2)
RTOL, ATOL = 2e-5, 2e-6  # rounding of float32 over 12 steps, with margin


RATES = (3e-3, 1e-3)  # the tiny run's rate, and another


def _config(seed, learning_rate=RATES[0], **changes):
    config = tiny_config(**{"seed": seed, "num_steps": 12, "eval_every": 4, "checkpoint_every": 4, **changes})
    return config.replace(optimizer=dataclasses.replace(config.optimizer, learning_rate=learning_rate))


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


def _assert_same_run(batched_dir, batched_result, single_dir, single_result, seed, learning_rate=RATES[0]):
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
    config = _config(seed, learning_rate)
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


@pytest.fixture(scope="module")
def grid_runs(tmp_path_factory):
    """Seeds 0, 1 x rates 3e-3, 1e-3 trained together to step 12, in the CLI's layout; member (seed 1, 1e-3)
    resumed from step 8 of a run of its own: the masked program at two rates, then the unmasked one."""
    root = tmp_path_factory.mktemp("grid")
    members = [(s, lr) for lr in RATES for s in (0, 1)]
    dirs = [root / rate_name(lr) / f"s{s}" for s, lr in members]
    train_and_evaluate(_config(1, RATES[1], num_steps=8), dirs[3], progress=False)
    return members, dirs, train_seeds([_config(s, lr) for s, lr in members], dirs, progress=False)


def test_a_grid_of_seeds_and_learning_rates_equals_its_single_runs(single_runs, grid_runs, tmp_path):
    members, dirs, results = grid_runs
    for (s, lr), d, r in zip(members, dirs, results):
        if lr == RATES[0]:
            single = single_runs[s]
        else:
            single = (tmp_path / f"s{s}", train_and_evaluate(_config(s, lr), tmp_path / f"s{s}", progress=False))
        _assert_same_run(d, r, *single, seed=s, learning_rate=lr)
        assert json.loads((d / "config.json").read_text()) == _config(s, lr).to_dict()
        assert r["config"]["optimizer"]["learning_rate"] == lr
    assert [d.relative_to(dirs[0].parent.parent).as_posix() for d in dirs] == [
        "lr3e-3/s0",
        "lr3e-3/s1",
        "lr1e-3/s0",
        "lr1e-3/s1",
    ]
    # The rate matters (so equality above is no accident), and members of one seed read the same batches:
    # their first losses (before any update) agree, their later ones do not.
    (a, _), (b, _) = _log(dirs[0]), _log(dirs[2])
    assert a[1] == pytest.approx(b[1], rel=RTOL) and a[12] != pytest.approx(b[12], rel=1e-3)
    assert [_parts(d) for d in dirs] == [[("started", 0)]] * 3 + [[("started", 0), ("resumed", 8)]]


def test_a_grid_member_resumes_alone(grid_runs, tmp_path):
    """A member's folder is its single run's: ``train_and_evaluate`` of its config accepts its checkpoints
    and, finding it finished, only evaluates it again, to the same results."""
    members, dirs, results = grid_runs
    (s, lr), r = members[2], results[2]
    d = shutil.copytree(dirs[2], tmp_path / "member")
    again = train_and_evaluate(_config(s, lr), d, progress=False)
    assert again["step"] == r["step"] and again["config"] == r["config"]
    for a, b in zip(again["modes"], r["modes"], strict=True):  # a single evaluation against the batched one
        assert a.keys() == b.keys() and a["mode"] == b["mode"]
        for key, value in b.items():
            if isinstance(value, float):
                assert a[key] == pytest.approx(value, rel=RTOL, abs=ATOL), (b["mode"], key)
    assert _parts(d)[-1] == ("resumed", 12)


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


def test_configs_must_differ_only_in_seed_and_learning_rate():
    check_seed_configs([_config(s, lr) for lr in RATES for s in (0, 1)])  # a grid: accepted
    with pytest.raises(
        UserError,
        match=r"differ only in their seed and learning rate; seed 1, learning rate 0.003 differs from seed 0, "
        r"learning rate 0.003 in \['batch_size'\]",
    ):
        check_seed_configs([_config(0), _config(1, batch_size=16)])
    other = _config(1, RATES[1])
    other = other.replace(optimizer=dataclasses.replace(other.optimizer, momentum=0.5))
    with pytest.raises(UserError, match=r"learning rate 0.001 differs from .* in \['optimizer.momentum'\]"):
        check_seed_configs([_config(0), other])
    with pytest.raises(UserError, match=r"expected distinct seeds, got \[3, 3\]"):
        check_seed_configs([_config(3), _config(3)])
    with pytest.raises(UserError, match=r"expected distinct \(seed, learning rate\) members, got \[\(3, 0.003\), "):
        check_seed_configs([_config(3), _config(3, RATES[1]), _config(3)])
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
        (
            ["--learning-rates", "1e-3,x"],
            "error: --learning-rates: expected comma-separated positive numbers (e.g. 1e-3,3e-4,1e-4), got '1e-3,x'",
        ),
        (["--learning-rates", "1e-3,-1e-4"], "--learning-rates: expected comma-separated positive numbers"),
        (["--learning-rates", "1e-3,nan"], "--learning-rates: expected comma-separated positive numbers"),
        (["--learning-rates", ""], "--learning-rates: expected comma-separated positive numbers"),
        (["--learning-rates", "1e-3,0.001"], "--learning-rates: expected distinct learning rates, got '1e-3,0.001'"),
        (["--learning-rates", "1e-3", "--lr", "1e-4"], "--learning-rates: give either --lr or --learning-rates"),
    ],
)
def test_cli_seeds_errors(flags, message, capsys):
    from panm_jax.cli import main

    assert main(["train", "--task", "copy", *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_cli_trains_learning_rates_together(tmp_path, capsys):
    """``--learning-rates`` without ``--seeds``: the one seed at each rate, in ``W/lr<r>/s<seed>``, each folder
    holding its rate in config.json and results.json."""
    from panm_jax.cli import main
    from tests.train.tiny import TINY

    sets = [a for item in TINY + ["num_steps=4", "eval_every=2"] for a in ("--set", item)]
    argv = ["train", "--task", "copy", "--model", "panm", "--seed", "5", "--learning-rates", "3e-3,0.001"]
    assert main([*argv, "--workdir", str(tmp_path / "w"), "--no-progress", *sets]) == 0
    out = capsys.readouterr().out
    assert "learning rate 0.003:" in out and "learning rate 0.001:" in out
    for name, rate in (("lr3e-3", 3e-3), ("lr1e-3", 1e-3)):
        run = tmp_path / "w" / name / "s5"
        for path in (run / "config.json", run / "results.json"):
            stored = json.loads(path.read_text())
            config = stored.get("config", stored)
            assert (config["seed"], config["optimizer"]["learning_rate"]) == (5, rate)


def _ops(compiled_text: str) -> collections.Counter:
    """How many instructions of each opcode a compiled program holds, fused computations included."""
    return collections.Counter(info["opcode"] for info in hlo_metadata(compiled_text).values())


def test_the_batched_program_holds_one_seeds_operations_with_a_seed_axis():
    """``vmap`` over seeds adds no matrix products, gathers, scatters or loops to the step: the compiled
    batched program has the single program's (at the seeds' summed batch), each over a leading seed axis."""
    from panm_jax.train.loop import Run, training_batch

    configs = [_config(s, buckets=[3]) for s in SEEDS]
    wide = configs[0].replace(batch_size=len(SEEDS) * configs[0].batch_size)
    run = Run(wide)
    single = run.train_step.lower(run.state, run.shard(training_batch(run.task, wide, 0, run.buckets)))
    group = Run(configs)
    batched = group._step_all.lower(group.state, group.batch([0] * len(SEEDS)), group.learning_rates)
    one, many = _ops(single.compile().as_text()), _ops(batched.compile().as_text())
    assert one["dot"] > 0
    for op in ("dot", "gather", "scatter", "while", "sort", "custom-call"):
        assert many[op] == one[op], (op, one[op], many[op])
