"""M10AE: train memory models on short modulo-10 arithmetic expressions, test them longer and deeper.

The task (``panm_jax/tasks/m10ae.py``, docs/tasks.md): an expression over the digits, ``+ - *`` and
parentheses; the label is its value mod 10, computed by the shift-reduce stack evaluator of the M10AE
appendix (Algorithms 1-3). The source states a finding (only the stack-augmented model generalises to
longer expressions; the NTM does not) but gives no number, lengths or splits: there is no published
cell to put beside ours, and this table is the first.

    .venv/bin/python -m benchmarks.accuracy.m10ae [--models lstm,stack_lstm,ntm,dnc] [--steps 300] [--seeds 0]
        [--max-train-length 19] [--test-examples 200] [--name NAME]

For each model and seed this trains one run with ``panm_jax.train.train_and_evaluate`` (resumable:
rerunning the command continues unfinished runs and reads finished ones back) on expressions of
``1, 3, ..., L`` tokens (``--max-train-length``, the task's default 19), evaluates its last checkpoint
(selected on fresh training-length expressions; with one evaluation per run it is the last) at the
task's test lengths ``L, L+2, 2L+1, 4L+1, 8L+1`` (accuracy of the one output, the value mod 10; chance
is 10%), and then again by nesting depth: at each test length ``--test-examples`` fresh expressions are
grouped by the depth of their parentheses (``M10AETask.batches_by_depth``; the generator sets the
length, the depth falls as it may), each group's accuracy and size kept in the run's ``depth.json``.
With ``--name`` it writes ``m10ae_<name>.json`` under ``benchmarks/results/<device>/``, one row
per run; ``make docs`` renders it on the M10AE results page.

Budget (ours; the source gives none): ``--steps`` steps per run, Adam 1e-3, global-norm clip 1, batch 32,
the models' default sizes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import jax
import numpy as np

from benchmarks import common
from benchmarks.accuracy.chomsky import finished, kept_record, selected_params
from benchmarks.accuracy.criteria import fits
from benchmarks.accuracy.reproduce import steps_trained, trained_by
from benchmarks.accuracy.transduction import names, seed_list
from panm_jax import enable_compile_cache
from panm_jax.tasks import get_task
from panm_jax.train.config import OptimizerConfig, TrainConfig
from panm_jax.train.io import atomic_write_text

MODELS = ("lstm", "stack_lstm", "queue_lstm", "deque_lstm", "ntm", "dnc")
DEFAULT_MODELS = ("lstm", "stack_lstm", "ntm", "dnc")
MODES = ("L", "L+2", "2L+1", "4L+1", "8L+1")


def make_config(model: str, seed: int, steps: int, max_train: int, test_examples: int) -> TrainConfig:
    """One run: Adam 1e-3, global-norm clip 1, batch 32, ``steps`` steps, one evaluation at the end."""
    return TrainConfig(
        task="m10ae",
        task_options={"max_train_length": max_train},
        model=model,
        seed=seed,
        num_steps=steps,
        batch_size=32,
        optimizer=OptimizerConfig(name="adam", learning_rate=1e-3, clip_value=None, clip_norm=1.0),
        eval_every=steps,
        eval_examples=test_examples,
        eval_batch_size=test_examples,
        checkpoint_every=steps,
        log_every=max(1, min(50, steps)),
        select_mode="train",
    )


def depth_record(workdir: Path, config: TrainConfig, examples: int, seed: int) -> dict[str, Any]:
    """Accuracy by nesting depth at each test length of the run's selected checkpoint: ``{"by_length":
    {length: {depth: [accuracy, examples]}}}``, computed once and kept in ``depth.json``."""
    from panm_jax.train.range_eval import _fill_rows

    path = workdir / "depth.json"
    key = {"examples_per_length": examples, "seed": seed}
    record = kept_record(path, key)
    if record is not None:
        return record
    run, params, step = selected_params(workdir, config)
    task = run.task
    by_length: dict[str, dict[str, list[float]]] = {}
    for mode in MODES:
        length = task.test_modes[mode].lo
        rng = np.random.default_rng([seed, length])
        cells = {}
        for depth, batch in task.batches_by_depth(rng, length, examples).items():
            n = int(batch.inputs.shape[0])
            metrics = run.eval_step(params, run.shard(_fill_rows(batch, examples)), jax.random.key(length))
            cells[str(depth)] = [round(float(metrics["token_accuracy"]), 4), n]
        by_length[str(length)] = cells
    record = {"step": step, "by_length": by_length, "protocol": key}
    atomic_write_text(path, json.dumps(record, indent=1) + "\n")
    return record


def pooled_by_depth(by_length: dict[str, dict[str, list[float]]], lengths: list[str]) -> dict[str, list[float]]:
    """``{depth: [accuracy, examples]}`` over ``lengths`` (each group weighted by its size)."""
    sums: dict[str, list[float]] = {}
    for length in lengths:
        for depth, (acc, n) in by_length.get(length, {}).items():
            total = sums.setdefault(depth, [0.0, 0])
            total[0] += acc * n
            total[1] += n
    return {d: [round(s / n, 4), n] for d, (s, n) in sorted(sums.items(), key=lambda kv: int(kv[0])) if n}


def run_row(model: str, seed: int, workdir: Path, depth: dict[str, Any], max_train: int) -> dict[str, Any]:
    """The table row of one finished run: accuracy (%) per test length, and per depth over the longer lengths."""
    results = json.loads((workdir / "results.json").read_text())
    by_mode = {m["mode"]: m for m in results["modes"]}
    longer = [length for length in depth["by_length"] if int(length) > max_train]
    row: dict[str, Any] = {"model": model, "seed": seed, "steps": steps_trained(workdir), "step": results["step"]}
    for mode in MODES:
        row[f"{mode} ({by_mode[mode]['length']})"] = round(100 * by_mode[mode]["token_accuracy"], 1)
    # fit: its token accuracy at L, the longest training length, reaches FIT (benchmarks.accuracy.criteria)
    row["fit"] = fits(100 * by_mode[MODES[0]]["token_accuracy"])
    for d, (acc, n) in pooled_by_depth(depth["by_length"], longer).items():
        row[f"depth {d}"] = f"{100 * acc:.1f} ({n})"
    row["by_depth"] = depth["by_length"]
    row.update(common.cost_cells([results]))
    row["code"] = "; ".join(dict.fromkeys(trained_by(workdir)))
    return row


def main(argv=None) -> int:
    enable_compile_cache()  # a rerun reads the programs it compiled (panm_jax/train/compile_cache.py)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(DEFAULT_MODELS), help=f"from {','.join(MODELS)}")
    p.add_argument("--seeds", default="0")
    p.add_argument("--steps", type=int, default=300, help="training steps per run")
    p.add_argument("--max-train-length", type=int, default=19, help="L: training expressions of 1..L tokens (odd)")
    p.add_argument("--test-examples", type=int, default=200, help="expressions per test length (and per depth pass)")
    p.add_argument("--workdir", default="runs/m10ae")
    p.add_argument("--name", default=None, help="record the table as benchmarks/results/<device>/m10ae_NAME.*")
    args = p.parse_args(argv)
    models = names(args.models, "models", MODELS)
    seeds = seed_list(args.seeds, "seeds")
    for what in ("steps", "test_examples"):
        if getattr(args, what) < 1:
            raise SystemExit(f"--{what.replace('_', '-')}: expected a positive integer, got {getattr(args, what)}")
    L = args.max_train_length
    if L < 1 or L % 2 == 0:
        raise SystemExit(f"--max-train-length: expected an odd positive integer, got {L}")
    if args.name is not None and not args.name.replace("_", "").replace("-", "").isalnum():
        raise SystemExit(f"--name: expected letters, digits, '-' or '_', got {args.name!r}")
    get_task("m10ae", max_train_length=L)  # the task's own checks (8L + 1 within its longest length)
    from panm_jax.train.loop import train_and_evaluate

    rows = []
    for seed in seeds:
        for model in models:
            config = make_config(model, seed, args.steps, L, args.test_examples)
            workdir = Path(args.workdir) / f"{model}-s{seed}-{args.steps}steps-L{L}-test{args.test_examples}"
            if not finished(workdir, config):
                print(f"== {model}, seed {seed} -> {workdir}", flush=True)
                train_and_evaluate(config, workdir, progress=False)
            depth = depth_record(workdir, config, args.test_examples, seed)
            rows.append(run_row(model, seed, workdir, depth, L))
            print(f"   {model} s{seed}: {rows[-1]}", flush=True)
    columns = list(dict.fromkeys(c for r in rows for c in r if c != "by_depth"))
    columns = [c for c in columns if not c.startswith("depth ")] + sorted(
        {c for r in rows for c in r if c.startswith("depth ")}, key=lambda c: int(c.split()[1])
    )
    columns.remove("code")
    columns.append("code")
    print(common.markdown_table(rows, columns))
    if not args.name:
        print("(not recorded: give --name to write benchmarks/results/<device>/m10ae_NAME.*)")
        return 0
    command = common.portable_command(argv, "benchmarks.accuracy.m10ae")
    settings = {
        "models": models,
        "seeds": seeds,
        "steps": args.steps,
        "max_train_length": L,
        "test_examples": args.test_examples,
        "batch_size": 32,
        "optimizer": "adam 1e-3, global-norm clip 1",
        "name": args.name,
    }
    notes = (
        f"Accuracy (%) of the value mod 10 (chance: 10%) at each test length, on {args.test_examples} fresh "
        f"expressions per length; training expressions of 1..{L} tokens. 'depth d': accuracy (%) and, in "
        f"brackets, the number of expressions of nesting depth d, over another {args.test_examples} expressions "
        f"at each test length longer than {L}, grouped by depth (the JSON's by_depth keeps every length). "
        f"Budget: {args.steps:,} steps per run, batch 32, Adam 1e-3, global-norm clip 1, default model sizes. "
        "No published numbers exist for this task: the source states its finding without a table."
    )
    common.write_results(
        f"m10ae_{args.name}",
        "M10AE: modulo-10 arithmetic expressions",
        rows,
        columns,
        common.environment(),
        notes,
        command,
        settings=settings,
    )
    print("wrote", common.RESULTS_DIR / common.device_slug() / f"m10ae_{args.name}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
