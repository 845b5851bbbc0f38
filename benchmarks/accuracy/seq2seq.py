"""SCAN's length splits and two Mathematics modules: PANM on a Transformer against the Transformer baselines.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: at the defaults 25 groups (SCAN
cut-offs 22, 24, 25 and two Mathematics modules, five models, seed 0) of up to 10 minutes of training
each, over four hours with the tests; the paper's step counts want a GPU. There is no ``--quick``.

    .venv/bin/python -m benchmarks.accuracy.seq2seq [--cutoffs 22,24,25] [--math add_or_sub,place_value]
        [--models panm_transformer,transformer,transformer_rpe,universal_transformer,universal_transformer_rpe]
        [--seeds 0,1,2] [--minutes 10] [--steps 50000] [--decoder teacher_forcing|blank] [--parallel 1]
        [--name NAME] [--workdir runs/seq2seq]

The comparison of Le et al. 2024 (Plug, Play, and Generalize: Length
Extrapolation with Pointer-Augmented Neural Memory), Sec. 3.3 and Table 4:

* SCAN (Lake & Baroni 2018, Generalization without Systematicity) with the
  length split at cut-off L: train on the commands whose action sequence has at
  most L actions, test on all the others (``panm_jax.tasks.scan``: the whole
  language generated from its grammar); metric: exact sequence match;
* Mathematics (Saxton et al. 2019, Analysing Mathematical Reasoning Abilities
  of Neural Models): ``add_or_sub`` and ``place_value``, trained on the
  generator's training distribution and tested on its extrapolation set
  (``panm_jax.tasks.mathematics``; needs the ``[math]`` extra); metric: exact
  sequence match of the answer.

Each (task, model) trains its seeds together (``panm_jax.train.seeds``), each in
``<workdir>/<item>/<model>-s<seed>`` (resumable: rerunning continues unfinished
runs and reads finished ones back), selects the checkpoint on fresh examples of
the training split (the tasks' ``validation_mode``: the test sets are never
looked at before the end) and reports it on the whole test split (SCAN: every
test command once, up to ``--test-examples``).

Decoder (``--decoder``): by default the models are built with
``teacher_forcing=True``, the paper's protocol (App. D.3, after Csordás et al.
2021): trained on the previous target token, evaluated by greedy decoding
(``panm_jax.models.teacher_forcing``); ``--decoder blank`` gives them blank
decoder inputs (``z_t = 0``) instead.

Our budget, not the paper's (which does not state one for these runs): Adam
``--lr`` (default 1e-4) with global-norm clipping at 1, batch 128, at most
``--steps`` steps and ``--minutes`` minutes of training per (task, model) group,
evaluation every 1,000 steps. The table states it. ``--parallel P`` trains P
groups at once as separate processes (on a GPU, shared with NVIDIA MPS).

Published (Le et al. 2024, Table 4, exact match %): SCAN cut-off 22 / 24 / 25:
Transformer+RPE 20 / 12 / 31, Universal Transformer+RPE 20 / 12 / 71, PANM
22 / 47 / 100; Mathematics add_or_sub / place_value: Universal Transformer+RPE
97 / 75, PANM 97 / 86.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.accuracy.reproduce import code_column, finished_results, steps_trained, trained_by
from panm_jax.train.config import OptimizerConfig, TrainConfig
from panm_jax.train.io import atomic_write_text

MODELS = ("panm_transformer", "transformer", "transformer_rpe", "universal_transformer", "universal_transformer_rpe")

# Le et al. 2024, Table 4 (exact match %), the cells it gives for these models.
PUBLISHED: dict[str, dict[str, float]] = {
    "scan-22": {"transformer_rpe": 20, "universal_transformer_rpe": 20, "panm_transformer": 22},
    "scan-24": {"transformer_rpe": 12, "universal_transformer_rpe": 12, "panm_transformer": 47},
    "scan-25": {"transformer_rpe": 31, "universal_transformer_rpe": 71, "panm_transformer": 100},
    "add_or_sub": {"universal_transformer_rpe": 97, "panm_transformer": 97},
    "place_value": {"universal_transformer_rpe": 75, "panm_transformer": 86},
}


def item_task(item: str) -> tuple[str, dict[str, Any]]:
    """``"scan-22"`` -> ``("scan", {"cutoff": 22})``; ``"add_or_sub"`` -> ``("mathematics", {"module": ...})``."""
    if item.startswith("scan-"):
        return "scan", {"cutoff": int(item.split("-", 1)[1])}
    return "mathematics", {"module": item}


def make_config(item: str, model: str, seed: int, args) -> TrainConfig:
    task, options = item_task(item)
    return TrainConfig(
        task=task,
        task_options=options,
        model=model,
        model_options={"teacher_forcing": args.decoder == "teacher_forcing"},
        seed=seed,
        num_steps=args.steps,
        max_minutes=args.minutes,
        optimizer=OptimizerConfig(name="adam", learning_rate=args.lr, clip_value=None, clip_norm=1.0),
        eval_every=1_000,
        checkpoint_every=1_000,
        eval_examples=args.test_examples,
    )


def folder(workdir: Path, item: str, model: str, seed: int) -> Path:
    return workdir / item / f"{model}-s{seed}"


def finished(path: Path, config: TrainConfig) -> dict[str, Any] | None:
    """The results of a run that ended in ``path`` with this exact config, with the steps it trained; else None."""
    record = finished_results(path, config)
    if record is not None:
        record["steps_trained"] = steps_trained(path)
        record["trained_by"] = trained_by(path)
    return record


def train_group(item: str, model: str, seeds: list[int], args, workdir: Path) -> None:
    from panm_jax.train.seeds import train_seeds

    todo = [s for s in seeds if finished(folder(workdir, item, model, s), make_config(item, model, s, args)) is None]
    if todo:
        train_seeds(
            [make_config(item, model, s, args) for s in todo],
            [folder(workdir, item, model, s) for s in todo],
            progress=False,
        )


def run_all(groups: list[tuple[str, str]], seeds: list[int], args, workdir: Path, argv: list[str]) -> None:
    todo = [g for g in groups if any(finished(folder(workdir, *g, s), make_config(*g, s, args)) is None for s in seeds)]
    jobs = [
        (
            f"{item} {model} seeds {seeds}",
            [sys.executable, "-m", "benchmarks.accuracy.seq2seq", *argv, "--one", json.dumps([item, model])],
            workdir / item / f"{model}.log",
        )
        for item, model in todo
    ]
    common.run_processes(jobs, args.parallel)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cutoffs", default="22,24,25", help="SCAN length cut-offs (empty: none)")
    p.add_argument("--math", default="add_or_sub,place_value", help="Mathematics modules (empty: none)")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--seeds", default="0", help="comma-separated seeds, trained together per (task, model)")
    p.add_argument("--minutes", type=float, default=10.0, help="training minutes per (task, model) group")
    p.add_argument("--steps", type=int, default=50_000, help="at most this many training steps")
    p.add_argument("--lr", type=float, default=1e-4, help="Adam's learning rate")
    p.add_argument(
        "--test-examples",
        type=int,
        default=4_000,
        help="examples of the validation and test sets (SCAN's test split at cut-off 22 has 3,920)",
    )
    p.add_argument(
        "--decoder",
        choices=("teacher_forcing", "blank"),
        default="teacher_forcing",
        help="teacher_forcing (the paper's, App. D.3: previous target token in training, greedy decoding in "
        "evaluation) or blank (z_t = 0, the library's default for other tasks)",
    )
    p.add_argument("--parallel", type=int, default=1, help="(task, model) groups trained at once, as processes")
    p.add_argument("--workdir", default="runs/seq2seq")
    p.add_argument("--name", default=None, help="record the table as benchmarks/results/<device>/seq2seq_NAME.*")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    items = [f"scan-{int(c)}" for c in args.cutoffs.split(",") if c.strip()] + [
        m.strip() for m in args.math.split(",") if m.strip()
    ]
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if not items or not models or not seeds:
        raise SystemExit("--cutoffs/--math, --models, --seeds: expected at least one of each")
    for model in models:
        if model not in MODELS:
            raise SystemExit(f"--models: expected models among {', '.join(MODELS)}, got {model!r}")
    for item in items:  # every (task, model) config is valid before anything trains
        for model in models:
            try:
                make_config(item, model, seeds[0], args)
            except ValueError as err:
                raise SystemExit(f"{item}, {model}: {err}") from None
    workdir = Path(args.workdir)
    if args.one is not None:
        item, model = json.loads(args.one)
        train_group(item, model, seeds, args, workdir)
        return 0
    child_argv = [a for a in argv]
    run_all([(i, m) for i in items for m in models], seeds, args, workdir, child_argv)
    rows = []
    for item in items:
        for model in models:
            records = [finished(folder(workdir, item, model, s), make_config(item, model, s, args)) for s in seeds]
            values = [
                100 * {r["mode"]: r for r in rec["modes"]}[mode][rec["metric"]]
                for rec in records
                for mode in [rec["modes"][0]["mode"]]
            ]
            mean = statistics.mean(values)
            std = statistics.stdev(values) if len(values) > 1 else 0.0
            published = PUBLISHED.get(item, {}).get(model)
            rows.append(
                {
                    "task": item,
                    "model": model,
                    "seeds": len(seeds),
                    "steps": ",".join(str(r["steps_trained"]) for r in records),
                    "best_step": ",".join(str(r["step"]) for r in records),
                    "exact_match": f"{mean:.1f}" + (f" ± {std:.1f}" if len(values) > 1 else ""),
                    "per_seed": ",".join(f"{v:.1f}" for v in values),
                    "published": "" if published is None else f"{published:g}",
                    "ours - published": "" if published is None else f"{mean - published:+.1f}",
                    "code": code_column(records),
                }
            )
    cols = [
        "task",
        "model",
        "seeds",
        "steps",
        "best_step",
        "exact_match",
        "per_seed",
        "published",
        "ours - published",
        "code",
    ]
    print(common.markdown_table(rows, cols))
    if args.name:
        notes = (
            f"Exact sequence match (%) on the test split (SCAN: commands longer than the cut-off; Mathematics: "
            f"the extrapolation set), up to {args.test_examples:,} examples, of the checkpoint selected on fresh "
            f"training-split examples; seeds {seeds}, mean ± std. Budget: Adam {args.lr:g} with global-norm "
            f"clipping at 1, batch 128, at most {args.steps:,} steps and {args.minutes:g} minutes of training per "
            "(task, model), the seeds trained together. Decoder: "
            + (
                "teacher forcing in training, greedy decoding in evaluation (the paper's, App. D.3)"
                if args.decoder == "teacher_forcing"
                else "blank inputs (z_t = 0), not the paper's teacher forcing"
            )
            + ". 'published' is Le et al. 2024, Table 4. 'code': the commit and device of each part of the runs "
            "('unrecorded' for parts logged before runs recorded them)."
        )
        name = f"seq2seq_{args.name}"
        common.write_results(
            name,
            "SCAN length splits and Mathematics: PANM on a Transformer and the baselines",
            rows,
            cols,
            common.environment(),
            notes,
            "python -m benchmarks.accuracy.seq2seq " + shlex.join(argv),
        )
        out = common.RESULTS_DIR / common.device_slug()
        lines = [",".join(cols)] + [",".join(str(r.get(c, "")).replace(",", ";") for c in cols) for r in rows]
        atomic_write_text(out / f"{name}.csv", "\n".join(lines) + "\n")
        print("wrote", out / f"{name}.md", ".json", ".csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
