"""Range evaluation on the Chomsky-hierarchy tasks: train short, score every long length.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: at the defaults 30 runs (6 tasks x 5
models, seed 0) of 2 minutes of training, an hour, plus each run's range evaluation (22 s for an
untrained LSTM of width 64, ``range_eval_speed_cpu.json``). There is no ``--quick``: ``--tasks``,
``--models``, ``--minutes`` or ``--steps``, ``--length-step`` and ``--examples-per-length`` shorten it.

    .venv/bin/python -m benchmarks.accuracy.chomsky [--tasks parity_check,reverse_string] [--models lstm,stack_rnn]
        [--minutes 2 | --steps 2000] [--length-step 1] [--examples-per-length 64] [--seeds 0]
        [--set stack_rnn.stack_size=512] [--name NAME]

The protocol of Delétang et al. (2023), *Neural Networks and the Chomsky
Hierarchy* (ICLR 2023): train on lengths ``N ~ U{1..40}``; test at every length
``41..500``; score = token accuracy averaged over the test lengths (each length
weighing the same). For each task, model and seed this trains a run with
``panm_jax.train.train_and_evaluate`` (resumable: rerunning the command continues
unfinished runs and reads finished ones back), keeps the checkpoint that is best
on fresh examples at the *training* lengths (the task's ``"1-40"`` mode: no test
length is looked at), and range-evaluates it
(``panm_jax.train.range_eval.range_evaluate``: one compiled program per
power-of-two length bucket). It writes, under ``benchmarks/results/<device>/``,
``chomsky_<name>.{md,json,csv}`` (one row per task and model: score, steps
trained, the published score where the paper gives one; then each model's mean
per level of the hierarchy) and
``chomsky_<name>_<task>.png`` (accuracy against length, one line per model).
Nothing is written to ``benchmarks/results`` without ``--name``.

Our budget, not the paper's: the paper trains 1,000,000 steps per run over 10
seeds and 3 learning rates and reports the best; here each run gets
``--minutes`` of training, or ``--steps`` training steps (a budget that does not
depend on the machine's speed or on other work sharing it; compilation and
validation are not counted), with Adam 1e-3, global-norm clip 1, batch 128, and
``--length-step k`` evaluates every ``k``-th length of ``41..500`` (plus 500) with
``--examples-per-length`` examples each. Every table states the budget it ran
under.

Published scores (token accuracy %, the best of the paper's runs), from
Delétang et al. 2023's table of scores per task and architecture, for the cells
this runner compares with (Stack-RNN / LSTM): reverse string 100 / 60.9, stack
manipulation 100 / 59.1, duplicate string 52.8 / 57.6, parity check 100 / 100.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import jax

from benchmarks import common
from benchmarks.accuracy.reproduce import options_tag, parse_model_sets, steps_trained, trained_by
from panm_jax.tasks import get_task
from panm_jax.train.config import OptimizerConfig, TrainConfig
from panm_jax.train.io import atomic_write_text

TASKS = (
    "parity_check",
    "modular_arithmetic",
    "reverse_string",
    "stack_manipulation",
    "duplicate_string",
    "binary_addition",
)
MODELS = ("lstm", "stack_rnn", "ntm", "dnc", "panm")

# Delétang et al. 2023 (token accuracy %, best run), Stack-RNN and LSTM columns.
PUBLISHED: dict[str, dict[str, float]] = {
    "reverse_string": {"stack_rnn": 100.0, "lstm": 60.9},
    "stack_manipulation": {"stack_rnn": 100.0, "lstm": 59.1},
    "duplicate_string": {"stack_rnn": 52.8, "lstm": 57.6},
    "parity_check": {"stack_rnn": 100.0, "lstm": 100.0},
}


def make_config(
    task: str, model: str, seed: int, minutes: float | None, max_train: int, max_test: int, steps: int | None = None
) -> TrainConfig:
    """The CPU-budget run of ``model`` on ``task``: Adam 1e-3, clip 1, batch 128, ``minutes`` of training or
    ``steps`` steps (whichever is given; both: whichever ends first), the checkpoint selected on the training
    lengths."""
    t = get_task(task, max_train_length=max_train, max_test_length=max_test)
    select = next(m for m in t.test_modes if t.test_modes[m].hi == max_train)
    return TrainConfig(
        task=task,
        model=model,
        seed=seed,
        num_steps=steps if steps is not None else 1_000_000,
        max_minutes=minutes,
        batch_size=128,
        task_options={"max_train_length": max_train, "max_test_length": max_test},
        optimizer=OptimizerConfig(name="adam", learning_rate=1e-3, clip_value=None, clip_norm=1.0),
        eval_every=250,
        eval_examples=256,
        eval_batch_size=128,
        checkpoint_every=250,
        log_every=50,
        select_mode=select,
        eval_modes=[select],
    )


def finished(workdir: Path, config: TrainConfig) -> bool:
    """Whether ``workdir`` holds a finished run of exactly ``config``."""
    path = workdir / "results.json"
    if not path.exists():
        return False
    stored = json.loads(path.read_text()).get("config")
    # Read back through TrainConfig, so that fields added since the run (with their defaults) compare equal.
    return stored is not None and TrainConfig.from_dict(stored).to_dict() == config.to_dict()


def kept_record(path: Path, protocol: dict[str, Any]) -> dict[str, Any] | None:
    """The evaluation record kept in ``path`` when it was made under ``protocol``, else ``None``."""
    if path.exists():
        record = json.loads(path.read_text())
        if record.get("protocol") == protocol:
            return record
    return None


def selected_params(workdir: Path, config: TrainConfig):
    """``(run, params, step)``: the run's checkpoint best on its selection mode (the latest where there is
    none), its parameters on the run's mesh."""
    from panm_jax.train.checkpoint import Checkpointer
    from panm_jax.train.loop import Run, config_check
    from panm_jax.train.sharding import replicate

    run = Run(config)
    ckpt = Checkpointer(workdir, read_only=True)
    template, check = jax.device_get(run.state), config_check(config, workdir)
    found = ckpt.restore_best(template, check, then="evaluating the latest checkpoint instead")
    found = found or ckpt.restore_latest(template, check)
    ckpt.close()
    if found is None:
        raise SystemExit(f"{workdir}: no checkpoint to evaluate")
    state, meta = found
    return run, replicate(state.params, run.mesh), meta["step"]


def range_record(workdir: Path, config: TrainConfig, lengths: list[int], examples: int) -> dict[str, Any]:
    """The range evaluation of the run's selected checkpoint, computed once and kept in ``range.json``."""
    from panm_jax.train.range_eval import range_evaluate

    path = workdir / "range.json"
    key = {"lengths": lengths, "examples_per_length": examples}
    record = kept_record(path, key)
    if record is not None:
        return record
    run, params, step = selected_params(workdir, config)
    result = range_evaluate(run, params, lengths, examples_per_length=examples, batch_size=min(examples, 64))
    record = result.with_step(step).to_record()
    record["protocol"] = key
    atomic_write_text(path, json.dumps(record, indent=1) + "\n")
    return record


def per_level(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per level of the hierarchy (in the order met): each model's mean score over that level's rows."""
    cells: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        cells.setdefault(r["level"], {}).setdefault(r["model"], []).append(r["score"])
    return [
        {"level": level, **{m: round(sum(v) / len(v), 1) for m, v in by_model.items()}}
        for level, by_model in cells.items()
    ]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", default=",".join(TASKS))
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--seeds", default="0", help="comma-separated seeds")
    p.add_argument("--minutes", type=float, default=None, help="training minutes per task, model and seed (2)")
    p.add_argument("--steps", type=int, default=None, help="training steps per task, model and seed, instead")
    p.add_argument("--max-train-length", type=int, default=40)
    p.add_argument("--max-test-length", type=int, default=500)
    p.add_argument("--length-step", type=int, default=1, help="evaluate every k-th test length (and the last)")
    p.add_argument("--examples-per-length", type=int, default=64)
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="MODEL.OPTION=VALUE",
        help="one model option of one model (repeatable), e.g. stack_rnn.stack_size=512; joins the run's name",
    )
    p.add_argument("--workdir", default="runs/chomsky")
    p.add_argument("--name", default=None, help="record the tables under benchmarks/results/<device>/chomsky_NAME.*")
    args = p.parse_args(argv)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    seeds = [int(s) for s in args.seeds.split(",")]
    model_sets = parse_model_sets(args.set, models)
    if args.minutes is None and args.steps is None:
        args.minutes = 2.0
    if (
        (args.minutes is not None and args.minutes <= 0)
        or (args.steps is not None and args.steps < 1)
        or args.length_step < 1
        or args.examples_per_length < 1
    ):
        raise SystemExit("--minutes, --steps, --length-step and --examples-per-length: expected positive numbers")
    limits = ([(f"{args.minutes:g}m", f"{args.minutes:g} minutes of training")] if args.minutes is not None else []) + (
        [(f"{args.steps}steps", f"{args.steps:,} training steps")] if args.steps is not None else []
    )
    budget = "-".join(tag for tag, _ in limits)  # the run folder's suffix
    described = " and at most ".join(text for _, text in limits)
    lo, hi = args.max_train_length + 1, args.max_test_length
    lengths = sorted(set(range(lo, hi + 1, args.length_step)) | {hi})
    from panm_jax.train.loop import train_and_evaluate
    from panm_jax.train.report import plot_range

    rows, per_task = [], {}
    for task in tasks:
        level = get_task(task).level
        for model in models:
            for seed in seeds:
                config = make_config(
                    task, model, seed, args.minutes, args.max_train_length, args.max_test_length, args.steps
                )
                options = model_sets.get(model, {})
                if options:
                    config = config.replace(model_options={**config.model_options, **options})
                label = model + options_tag(options)  # a variant is its own run and its own column
                workdir = Path(args.workdir) / task / f"{label}-s{seed}-{budget}"
                if not finished(workdir, config):
                    print(f"== {model} on {task}, seed {seed} -> {workdir}", flush=True)
                    train_and_evaluate(config, workdir, progress=False)
                record = range_record(workdir, config, lengths, args.examples_per_length)
                steps = steps_trained(workdir)
                published = PUBLISHED.get(task, {}).get(model)
                score = 100 * record["score"]
                rows.append(
                    {
                        "task": task,
                        "level": level,
                        "model": label,
                        "seed": seed,
                        "steps": steps,
                        "selected_step": record.get("step"),
                        "score": round(score, 1),
                        "published": published if published is not None else "",
                        "difference": round(score - published, 1) if published is not None else "",
                        "compiles": record.get("compiles"),
                        "eval_seconds": round(record.get("wall_seconds", 0.0), 1),
                        "code": "; ".join(dict.fromkeys(trained_by(workdir))),
                    }
                )
                per_task.setdefault(task, []).append({**record, "model": label})
                print(
                    f"   {task} {label} s{seed}: {score:.1f}% over {len(lengths)} lengths ({steps} steps)", flush=True
                )
    cols = [
        "task",
        "level",
        "model",
        "seed",
        "steps",
        "selected_step",
        "score",
        "published",
        "difference",
        "compiles",
        "eval_seconds",
        "code",
    ]
    print(common.markdown_table(rows, cols))
    levels = per_level(rows)
    labels = [m + options_tag(model_sets.get(m, {})) for m in models]
    print(common.markdown_table(levels, ["level", *labels]))
    if not args.name:
        print("(not recorded: give --name to write benchmarks/results/<device>/chomsky_NAME.*)")
        return 0
    name = f"chomsky_{args.name}"
    command = ".venv/bin/python -m benchmarks.accuracy.chomsky " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    notes = (
        f"Score: token accuracy (%) averaged over the test lengths {lo}..{hi} (every {args.length_step}-th length "
        f"and {hi}: {len(lengths)} lengths, {args.examples_per_length} examples each), of the checkpoint best on "
        f"fresh examples at the training lengths 1..{args.max_train_length}. Budget: {described} per run "
        "(Adam 1e-3, global-norm clip 1, batch 128, default model sizes), seeds "
        f"{','.join(map(str, seeds))}; the paper's runs train 1,000,000 steps and it reports the best of 10 seeds "
        "and 3 learning rates, so 'difference' measures the budget as much as the model. 'published': "
        "Delétang et al. 2023, Neural Networks and the Chomsky Hierarchy (ICLR 2023), token accuracy of the "
        "best run, where it gives one for that task and model. 'compiles': eval-step compilations of the range "
        "evaluation (one per power-of-two length bucket); 'eval_seconds': its wall time; 'code': the commit and "
        "device of each part of the run ('unrecorded' for parts logged before runs recorded them)."
    )
    notes += (
        "\n\nMean score (%) per level of the hierarchy, over the tasks and seeds of this run:\n\n"
        + common.markdown_table(levels, ["level", *labels])
    )
    env = common.environment()
    common.write_results(name, "Chomsky-hierarchy tasks: range evaluation", rows, cols, env, notes, command)
    out = common.RESULTS_DIR / common.device_slug()
    lines = [",".join(cols)] + [",".join(str(r.get(c, "")) for c in cols) for r in rows]
    atomic_write_text(out / f"{name}.csv", "\n".join(lines) + "\n")
    for task, records in per_task.items():
        plot_range(records, out / f"{name}_{task}.png")
    print("wrote", out / f"{name}.md", ".json", ".csv", "and one plot per task")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
