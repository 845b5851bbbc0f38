"""A grid of seeds x learning rates trained in one program against its members trained one by one.

    python -m benchmarks.speed.grid_speed [--seeds 0,1] [--learning-rates 1e-3,3e-4,1e-4] [--steps 200]
        [--task copy] [--model panm] [--set model_options.hidden=32 ...] [--workdir runs/grid_speed]

Delétang et al. 2023 train every cell at several seeds x 3 learning rates. Here the
grid's S x R members are trained together by ``train_seeds`` (``train/seeds.py``:
one ``jit(vmap(train_step))``, the rate a traced per-member value), then each
member alone by ``train_and_evaluate``, each in a fresh folder under
``--workdir`` (emptied first). Each is timed whole, as a user waits for it:
compilation, validation, checkpoints and the final test evaluation included (the
persistent compilation cache is not turned on, so both sides compile; the single
runs compile one program per rate, the rate being a constant in theirs).

Then every member is compared with its single run, which must agree up to
floating-point rounding: the largest absolute difference of any number each
records (every training metric of every logged step in ``metrics.jsonl``, every
validation number, every test number in ``results.json``), and of any parameter
of the final checkpoint; and whether the same best checkpoint was selected.
Writes ``grid_speed_<model>_<task>_<S>x<R>.json`` under
``benchmarks/results/<device>/``.

The default run is small, for a CPU: PANM on Copy at hidden size 32, batch 32,
200 steps, validated every 50. On the 2-core CPU of ``benchmarks/results/cpu-2cores/``
(shared with other work) the 2 x 3 grid took about 4 minutes and each single run
about 3, so the whole comparison takes about 20 minutes; ``--steps`` and fewer
seeds or rates shorten it. Over 200 steps at the larger rates the members drift
from their single runs further than at the start: rounding differences of 1e-7
in the first steps grow as training amplifies them (RMSprop divides by small
gradient magnitudes), so compare the early steps to see equality of the programs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from benchmarks import common
from panm_jax.train.checkpoint import Checkpointer
from panm_jax.train.config import TrainConfig, load_config
from panm_jax.train.loop import Run, train_and_evaluate, train_seeds
from panm_jax.train.seeds import rate_name

SMALL = [
    "model_options.hidden=32",
    "batch_size=32",
    "eval_examples=64",
    "eval_batch_size=64",
    "log_every=10",
]


def logged(workdir: Path) -> dict[str, float]:
    """Every number a run recorded, by where it stands: ``train/<step>/<metric>``, ``validation/<step>/<mode>/
    <key>`` (``metrics.jsonl``) and ``test/<mode>/<key>`` (``results.json``); timings left out."""
    out = {}
    for line in (workdir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line) if line.strip() else {}
        if "validation" in row:
            for mode, values in row["validation"].items():
                out |= {f"validation/{row['step']}/{mode}/{k}": v for k, v in values.items()}
        elif "loss" in row:
            out |= {f"train/{row['step']}/{k}": v for k, v in row.items() if k not in ("step", "time", "steps_per_s")}
    results = json.loads((workdir / "results.json").read_text())
    for mode in results["modes"]:
        out |= {f"test/{mode['mode']}/{k}": v for k, v in mode.items() if k != "mode"}
    return {k: float(v) for k, v in out.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def final_params(workdir: Path, config: TrainConfig) -> list[np.ndarray]:
    """The parameters of the run's latest checkpoint, leaf by leaf (host arrays)."""
    ckpt = Checkpointer(workdir, read_only=True)
    try:
        state, _ = ckpt.restore_latest(jax.device_get(Run(config).state))
    finally:
        ckpt.close()
    return [np.asarray(x, np.float64) for x in jax.tree_util.tree_leaves(state.params)]


def compare(grid_dir: Path, single_dir: Path, config: TrainConfig) -> dict[str, Any]:
    """The largest differences between a member and its single run (module docstring)."""
    a, b = logged(grid_dir), logged(single_dir)
    if a.keys() != b.keys():
        raise SystemExit(f"{grid_dir} and {single_dir} recorded different numbers: {sorted(a.keys() ^ b.keys())[:5]}")
    diffs = {k: abs(a[k] - b[k]) for k in a}
    worst = max(diffs, key=diffs.get)
    pairs = zip(final_params(grid_dir, config), final_params(single_dir, config), strict=True)
    params = max(float(np.max(np.abs(x - y))) for x, y in pairs)
    same_best = (
        json.loads((grid_dir / "results.json").read_text())["step"]
        == json.loads((single_dir / "results.json").read_text())["step"]
    )
    return {
        "numbers": len(a),
        "max_metric_diff": diffs[worst],
        "where": worst,
        "max_param_diff": params,
        "same": same_best,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", default="0,1", help="comma-separated seeds")
    p.add_argument("--learning-rates", default="1e-3,3e-4,1e-4", dest="learning_rates", help="comma-separated rates")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--task", default="copy")
    p.add_argument("--model", default="panm")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="a config field (repeatable)")
    p.add_argument("--workdir", default="runs/grid_speed")
    args = p.parse_args(argv)
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
        rates = [float(r) for r in args.learning_rates.split(",")]
    except ValueError:
        raise SystemExit(
            f"--seeds, --learning-rates: expected comma-separated numbers, got {args.seeds!r}, {args.learning_rates!r}"
        ) from None
    if args.steps < 4:
        raise SystemExit(f"--steps: expected at least 4, got {args.steps}")
    every = args.steps // 4
    base = load_config(
        None,
        [f"task={args.task}", f"model={args.model}", f"num_steps={args.steps}", f"eval_every={every}"]
        + [f"checkpoint_every={args.steps}", *SMALL, *args.set],
    )
    members = [(s, r) for r in rates for s in seeds]
    configs = [base.replace(seed=s, optimizer=dataclasses.replace(base.optimizer, learning_rate=r)) for s, r in members]
    root = Path(args.workdir)
    shutil.rmtree(root, ignore_errors=True)
    names = [f"{rate_name(r)}/s{s}" for s, r in members]
    t0 = time.perf_counter()
    train_seeds(configs, [root / "grid" / n for n in names], progress=False)
    t_grid = time.perf_counter() - t0
    print(f"grid of {len(members)} members: {t_grid:.1f} s", flush=True)
    rows, t_singles = [], 0.0
    for (s, r), name, config in zip(members, names, configs, strict=True):
        t0 = time.perf_counter()
        train_and_evaluate(config, root / "single" / name, progress=False)
        t = time.perf_counter() - t0
        t_singles += t
        c = compare(root / "grid" / name, root / "single" / name, config)
        rows.append(
            {
                "member": f"seed {s}, lr {r:g}",
                "single_seconds": round(t, 1),
                "numbers_compared": c["numbers"],
                "max_metric_diff": f"{c['max_metric_diff']:.3g}",
                "at": c["where"],
                "max_param_diff": f"{c['max_param_diff']:.3g}",
                "same_best_step": c["same"],
            }
        )
        print(f"  {rows[-1]}", flush=True)
    rows.append(
        {
            "member": f"all {len(members)}: grid in one program / singles one by one",
            "single_seconds": f"{t_grid:.1f} / {t_singles:.1f} (x{t_singles / t_grid:.2f})",
            "numbers_compared": sum(r["numbers_compared"] for r in rows),
            "max_metric_diff": f"{max(float(r['max_metric_diff']) for r in rows):.3g}",
            "at": "",
            "max_param_diff": f"{max(float(r['max_param_diff']) for r in rows):.3g}",
            "same_best_step": all(r["same_best_step"] for r in rows),
        }
    )
    cols = list(rows[0])
    command = common.portable_command(argv, "benchmarks.speed.grid_speed")
    notes = (
        f"{args.model} on {args.task}, seeds {args.seeds} x learning rates {args.learning_rates} "
        f"({base.optimizer.name}, {args.steps} steps, batch {base.batch_size}, validation every {every} steps; "
        f"settings {SMALL + args.set}). 'single_seconds': the wall time of the member's single run "
        "(train_and_evaluate, from scratch: compilation, validation, checkpoints and test evaluation included); "
        "the last row, the grid's (train_seeds, all members in one program) against the sum of the singles. "
        "'max_metric_diff': the largest absolute difference between the member in the grid and its single run "
        "over every number both recorded ('numbers_compared': training metrics per logged step, validation and "
        "test rows), 'at' where; 'max_param_diff': over every parameter of the final checkpoint; "
        "'same_best_step': whether both selected the same best checkpoint."
    )
    name = f"grid_speed_{args.model}_{args.task}_{len(seeds)}x{len(rates)}"
    path = common.write_results(
        name,
        "A grid of seeds x learning rates in one program against its single runs",
        rows,
        cols,
        common.environment(),
        notes,
        command,
    )
    print(common.markdown_table(rows, cols))
    print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
