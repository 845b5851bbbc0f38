"""SCAN's length splits and two Mathematics modules: PANM on a Transformer against the Transformer baselines.

Time: at the defaults 65 (task, model) groups (11 SCAN cut-offs and 2 Mathematics modules, five
models) of up to ``--minutes`` (10) of training each, over ten hours on the 2-core CPU of
``benchmarks/results/cpu-2cores/``; the paper's protocol (five seeds of 50,000 steps) wants a GPU.
``benchmarks/findings/seq2seq.md`` gives the step budgets recorded on the CPU. There is no ``--quick``.

    .venv/bin/python -m benchmarks.accuracy.seq2seq [--cutoffs 22,24,...,40] [--math add_or_sub,place_value]
        [--models universal_transformer_rpe,transformer_rpe,universal_transformer,transformer,panm_transformer]
        [--panm-encoder paper|transformer|transformer_rpe] [--seeds 0,1,2] [--minutes 10] [--steps 50000]
        [--decoder teacher_forcing|blank] [--parallel 1] [--name NAME] [--workdir runs/seq2seq]

The paper's protocol (Le et al. 2024, Sec. 3.3, Table 4; five runs of 50,000 steps each):

    .venv/bin/python -m benchmarks.accuracy.seq2seq --seeds 0,1,2,3,4 --steps 50000 --minutes 0 --name paper

The comparison of Le et al. 2024 (Plug, Play, and Generalize: Length
Extrapolation with Pointer-Augmented Neural Memory), Sec. 3.3, Table 4 and
Table 19:

* SCAN (Lake & Baroni 2018, Generalization without Systematicity) with the
  length split at cut-off L: train on the commands whose action sequence has at
  most L actions, test on all the others (``panm_jax.tasks.scan``: the whole
  language generated from its grammar); every cut-off of Table 4 (22, 24, 25,
  26, 27, 28, 30, 32, 33, 36, 40) by default; metric: exact sequence match,
  reported as the paper does: the **median** over seeds (with the lowest and
  highest seed beside it);
* Mathematics (Saxton et al. 2019, Analysing Mathematical Reasoning Abilities
  of Neural Models): ``add_or_sub`` and ``place_value``, trained on the
  generator's training distribution and tested on its extrapolation set
  (``panm_jax.tasks.mathematics``; needs the ``[math]`` extra); metric: exact
  sequence match of the answer, the **mean ± std** over seeds (Table 19).

The five rows of Table 4 are the default ``--models``: U. TRM + RPE
(``universal_transformer_rpe``), TRM + RPE (``transformer_rpe``), U. TRM
(``universal_transformer``), TRM (``transformer``) and PANM
(``panm_transformer``).

PANM's encoder (``--panm-encoder``, the ``encoder`` option of
``panm_transformer``): ``paper`` (the default) takes the paper's for each task,
the plain Transformer on SCAN (Sec. 3.3: "we use Transformer as the Encoder,
which is the same as the TRM"; "although it does not use RPE") and the
Transformer with relative positions on Mathematics (App. D.3: "the Encoder is
Transformer with relative positional encoding (TRM + RPE)");
``transformer`` or ``transformer_rpe`` takes that one everywhere. The
``published`` column matches what runs: on Mathematics the plain encoder is
Table 19's "PANM TRM base" row, the relative one its "PANM TRM + RPE base"
row (Table 4's PANM); on SCAN the paper has no PANM with the relative encoder.

Each (task, model) trains its seeds together (``panm_jax.train.seeds``), each in
``<workdir>/<item>/<model>-s<seed>`` (PANM: ``panm_transformer-<encoder>-s<seed>``;
resumable: rerunning continues unfinished runs and reads finished ones back),
selects the checkpoint on fresh examples of the training split (the tasks'
``validation_mode``: the test sets are never looked at before the end; the paper
evaluates the model at the end of training instead) and reports it on the test
split (SCAN: every test command once, up to ``--test-examples``).

Decoder (``--decoder``): by default the models are built with
``teacher_forcing=True``, the paper's protocol (App. D.3, after Csordás et al.
2021): trained on the previous target token, evaluated by greedy decoding
(``panm_jax.models.teacher_forcing``); ``--decoder blank`` gives them blank
decoder inputs (``z_t = 0``) instead.

Our budget, not the paper's: Adam ``--lr`` (default 1e-4) with global-norm
clipping at 1, batch 128, at most ``--steps`` steps (the paper: 50,000) and
``--minutes`` minutes of training per (task, model) group (0: no time limit, so
the step budget decides), evaluation every 1,000 steps. The table states it.
``--parallel P`` trains P groups at once as separate processes (on a GPU, shared
with NVIDIA MPS).

``chance`` in the table: the exact match of the best constant answer, the share
of the test split's most frequent target (SCAN: a few commands share an action
sequence; Mathematics: every extrapolation answer of the pool is distinct).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.accuracy import published
from benchmarks.accuracy.chomsky import fit as chomsky_fit
from benchmarks.accuracy.criteria import fit_count
from benchmarks.accuracy.reproduce import code_column, finished_results, steps_trained, trained_by
from panm_jax import enable_compile_cache
from panm_jax.tasks.mathematics import MODULES
from panm_jax.tasks.scan import CUTOFFS
from panm_jax.train.config import OptimizerConfig, TrainConfig

# The models that run the rows of Le et al. 2024, Table 4, top to bottom (``published.seq2seq_row``).
MODELS = ("universal_transformer_rpe", "transformer_rpe", "universal_transformer", "transformer", "panm_transformer")
ENCODERS = ("transformer", "transformer_rpe")  # panm_transformer's encoder option
# --panm-encoder paper: the encoder of the paper's PANM row on each task (Sec. 3.3 and App. D.3).
PAPER_ENCODER = {"scan": "transformer", "mathematics": "transformer_rpe"}


def item_task(item: str) -> tuple[str, dict[str, Any]]:
    """``"scan-22"`` -> ``("scan", {"cutoff": 22})``; ``"add_or_sub"`` -> ``("mathematics", {"module": ...})``."""
    if item.startswith("scan-"):
        return "scan", {"cutoff": int(item.split("-", 1)[1])}
    return "mathematics", {"module": item}


def encoder_of(item: str, model: str, choice: str) -> str | None:
    """PANM's encoder on ``item`` under ``--panm-encoder choice``; None for the other models."""
    if model != "panm_transformer":
        return None
    return PAPER_ENCODER[item_task(item)[0]] if choice == "paper" else choice


def summary(item: str, values: list[float]) -> tuple[float, str]:
    """The paper's statistic over seeds and its cell: SCAN the median (Table 4) with the lowest and highest
    seed, ``"47.0 (12.5-50.1)"``; Mathematics the mean ± std (Table 19), ``"90.1 ± 2.0"``."""
    if item_task(item)[0] == "scan":
        median = statistics.median(values)
        spread = f" ({min(values):.1f}-{max(values):.1f})" if len(values) > 1 else ""
        return median, f"{median:.1f}{spread}"
    mean = statistics.mean(values)
    return mean, f"{mean:.1f}" + (f" ± {statistics.stdev(values):.1f}" if len(values) > 1 else "")


def chance(item: str) -> float:
    """The exact match (%) of the best constant answer: the share of the test split's most frequent target."""
    task, options = item_task(item)
    if task == "scan":
        from panm_jax.tasks.scan import split

        targets = [actions for _, actions in split(options["cutoff"])[1]]
    else:
        from panm_jax.tasks.mathematics import MathematicsTask

        targets = list(MathematicsTask(**options).pool("extrapolate").answers)
    return 100 * Counter(targets).most_common(1)[0][1] / len(targets)


def make_config(item: str, model: str, seed: int, args) -> TrainConfig:
    task, options = item_task(item)
    model_options: dict[str, Any] = {"teacher_forcing": args.decoder == "teacher_forcing"}
    encoder = encoder_of(item, model, args.panm_encoder)
    if encoder is not None:
        model_options["encoder"] = encoder
    return TrainConfig(
        task=task,
        task_options=options,
        model=model,
        model_options=model_options,
        seed=seed,
        num_steps=args.steps,
        max_minutes=args.minutes or None,
        optimizer=OptimizerConfig(name="adam", learning_rate=args.lr, clip_value=None, clip_norm=1.0),
        eval_every=args.eval_every,
        checkpoint_every=args.eval_every,
        eval_examples=args.test_examples,
    )


def folder(workdir: Path, item: str, model: str, seed: int, args) -> Path:
    encoder = encoder_of(item, model, args.panm_encoder)
    return workdir / item / (f"{model}-s{seed}" if encoder is None else f"{model}-{encoder}-s{seed}")


def finished(path: Path, config: TrainConfig) -> dict[str, Any] | None:
    """The results of a run that ended in ``path`` with this exact config, with the steps it trained; else None."""
    record = finished_results(path, config)
    if record is not None:
        record["steps_trained"] = steps_trained(path)
        record["trained_by"] = trained_by(path)
    return record


def train_group(item: str, model: str, seeds: list[int], args, workdir: Path) -> None:
    from panm_jax.train.loop import train_seeds

    plan = [(make_config(item, model, s, args), folder(workdir, item, model, s, args)) for s in seeds]
    todo = [(config, path) for config, path in plan if finished(path, config) is None]
    if todo:
        train_seeds([c for c, _ in todo], [p for _, p in todo], progress=False)


def run_all(groups: list[tuple[str, str]], seeds: list[int], args, workdir: Path, argv: list[str]) -> None:
    todo = [
        (item, model)
        for item, model in groups
        if any(
            finished(folder(workdir, item, model, s, args), make_config(item, model, s, args)) is None for s in seeds
        )
    ]
    jobs = [
        (
            f"{item} {model} seeds {seeds}",
            [sys.executable, "-m", "benchmarks.accuracy.seq2seq", *argv, "--one", json.dumps([item, model])],
            workdir / item / f"{model}.log",
        )
        for item, model in todo
    ]
    common.run_processes(jobs, args.parallel)


def parse_items(args) -> list[str]:
    """``--cutoffs`` and ``--math`` as items (``scan-22``, ``add_or_sub``), each checked; SystemExit naming
    the argument otherwise."""
    items = []
    for text in (c.strip() for c in args.cutoffs.split(",")):
        if not text:
            continue
        if not text.isdigit() or int(text) not in CUTOFFS:
            raise SystemExit(f"--cutoffs: expected cut-offs among {', '.join(map(str, CUTOFFS))}, got {text!r}")
        items.append(f"scan-{int(text)}")
    for module in (m.strip() for m in args.math.split(",")):
        if module and module not in MODULES:
            raise SystemExit(f"--math: expected modules among {', '.join(MODULES)}, got {module!r}")
        if module:
            items.append(module)
    return items


def parse_args(argv: list[str]):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cutoffs", default=",".join(map(str, CUTOFFS)), help="SCAN length cut-offs (empty: none)")
    p.add_argument("--math", default=",".join(MODULES), help="Mathematics modules (empty: none)")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument(
        "--panm-encoder",
        default="paper",
        help="panm_transformer's encoder: paper (transformer on SCAN, transformer_rpe on Mathematics, as the "
        "paper), transformer or transformer_rpe",
    )
    p.add_argument("--seeds", default="0", help="comma-separated seeds, trained together per (task, model)")
    p.add_argument("--minutes", type=float, default=10.0, help="training minutes per (task, model) group (0: no limit)")
    p.add_argument("--steps", type=int, default=50_000, help="at most this many training steps")
    p.add_argument("--lr", type=float, default=1e-4, help="Adam's learning rate")
    p.add_argument(
        "--eval-every",
        type=int,
        default=1_000,
        help="steps between validations on the training split (and checkpoints)",
    )
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
    if args.panm_encoder not in ("paper", *ENCODERS):
        raise SystemExit(f"--panm-encoder: expected one of paper, {', '.join(ENCODERS)}, got {args.panm_encoder!r}")
    if args.eval_every < 1:
        raise SystemExit(f"--eval-every: expected a positive integer, got {args.eval_every}")
    if args.minutes < 0:
        raise SystemExit(f"--minutes: expected 0 (no limit) or a positive number, got {args.minutes:g}")
    return args


def table_rows(items: list[str], models: list[str], seeds: list[int], args, workdir: Path) -> list[dict[str, Any]]:
    """One row per (item, model): the paper's statistic over the seeds, beside the paper's cell."""
    rows = []
    for item in items:
        floor = chance(item)
        for model in models:
            records = [
                finished(folder(workdir, item, model, s, args), make_config(item, model, s, args)) for s in seeds
            ]
            values = [
                100 * {r["mode"]: r for r in rec["modes"]}[rec["modes"][0]["mode"]][rec["metric"]] for rec in records
            ]
            headline, cell = summary(item, values)
            # fit: the runs whose token accuracy on the training split's validation examples reached FIT; each
            # run's best token accuracy there and the first validated step at which it did
            fitted = [
                chomsky_fit(folder(workdir, item, model, s, args), make_config(item, model, s, args).selection_mode)
                for s in seeds
            ]
            trained = [best for best, _ in fitted]
            encoder = encoder_of(item, model, args.panm_encoder)
            paper = published.seq2seq_cell(item, model, encoder)
            rows.append(
                {
                    "task": item,
                    "model": model if encoder is None else f"{model} ({encoder} encoder)",
                    "paper row": published.seq2seq_row(item, model, encoder) or "not in the paper",
                    "seeds": len(seeds),
                    "steps": ",".join(str(r["steps_trained"]) for r in records),
                    "best_step": ",".join(str(r["step"]) for r in records),
                    **common.cost_cells(records),
                    "exact_match": cell,
                    "per_seed": ",".join(f"{v:.1f}" for v in values),
                    "chance": f"{floor:.2f}",
                    "fit": fit_count(trained) if "" not in trained else "",  # type: ignore[arg-type]
                    "train_accuracy": ",".join(str(best) for best in trained),
                    "fit_step": ",".join(str(step) if step != "" else "-" for _, step in fitted),
                    "published": "" if paper is None else paper.text(),
                    "ours - published": ""
                    if paper is None or paper.value is None
                    else f"{headline - paper.value:+.1f}",
                    "code": code_column(records),
                }
            )
    return rows


COLUMNS = [
    "task",
    "model",
    "paper row",
    "seeds",
    "steps",
    "best_step",
    "exact_match",
    "per_seed",
    "chance",
    "fit",
    "train_accuracy",
    "fit_step",
    "published",
    "ours - published",
    "code",
]


def notes(args, seeds: list[int]) -> str:
    return (
        f"Exact sequence match (%) on the test split (SCAN: commands longer than the cut-off; Mathematics: "
        f"the extrapolation set), up to {args.test_examples:,} examples, of the checkpoint selected on fresh "
        f"training-split examples; seeds {seeds}: SCAN the median (lowest-highest seed), Mathematics the mean "
        f"± std, as the paper reports them. Budget: Adam {args.lr:g} with global-norm clipping at 1, batch "
        f"128, at most {args.steps:,} steps"
        + (f" and {args.minutes:g} minutes of training" if args.minutes else "")
        + f" per (task, model), the seeds trained together, validated every {args.eval_every:,} steps. "
        "'train_accuracy': each seed's best token accuracy (%) on fresh training-split examples; 'fit_step': the "
        "first validated step at which it reached 99 % ('-': never). Decoder: "
        + (
            "teacher forcing in training, greedy decoding in evaluation (the paper's, App. D.3)"
            if args.decoder == "teacher_forcing"
            else "blank inputs (z_t = 0), not the paper's teacher forcing"
        )
        + ". 'paper row': the row of Le et al. 2024 that the model runs; 'published': its cell, Table 4 for "
        "SCAN (median of 5 runs; '—': not legible in the printed table) and Table 19 for Mathematics (mean ± "
        "std of 5 runs, in %); the baselines' numbers are Csordás et al. 2021's. 'chance': the exact match "
        "of the best constant answer on the test split. 'code': the commit and device of each part of the "
        "runs ('unrecorded' for parts logged before runs recorded them)."
    )


def main(argv=None) -> int:
    enable_compile_cache()  # a rerun reads the programs it compiled (panm_jax/train/compile_cache.py)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    items = parse_items(args)
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
    run_all([(i, m) for i in items for m in models], seeds, args, workdir, argv)
    rows = table_rows(items, models, seeds, args, workdir)
    print(common.markdown_table(rows, COLUMNS))
    if args.name:
        name = f"seq2seq_{args.name}"
        common.write_results(
            name,
            "SCAN length splits and Mathematics: PANM on a Transformer and the baselines",
            rows,
            COLUMNS,
            common.environment(),
            notes(args, seeds),
            common.portable_command(argv, "benchmarks.accuracy.seq2seq"),
        )
        print("wrote", common.RESULTS_DIR / common.device_slug() / f"{name}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
