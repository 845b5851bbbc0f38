"""Range evaluation on the Chomsky-hierarchy tasks: train short, score every long length.

The protocol of Delétang et al. (2023), *Neural Networks and the Chomsky
Hierarchy* (ICLR 2023), Table 2: train on lengths ``N ~ U{1..40}``; test at every
length ``41..500``; score = token accuracy averaged over the test lengths (each
length weighing the same). Their 15 tasks (``panm_jax.tasks.chomsky``) and their
five architectures, built as they build them, plus PANM:

    paper column   model here              what it is
    RNN            rnn                     one Elman RNN: the input, then blank steps
    Stack-RNN      stack_rnn               Elman RNN + stack, sized to the longest test sequence
    Tape-RNN       tape_rnn                Elman RNN + tape (input-length jumps), sized likewise
    Transformer    transformer_encoder     encoder-only, input + blank tokens, sin/cos positions
    LSTM           single_lstm             one LSTM: the input, then blank steps
    (ours)         panm                    Pointer-Augmented Neural Memory (Le et al. 2024)

    .venv/bin/python -m benchmarks.accuracy.chomsky [--tasks parity_check,reverse_string]
        [--models rnn,stack_rnn,tape_rnn,transformer_encoder,single_lstm,panm] [--steps 2000 | --minutes 2]
        [--sampled | --length-step 1 --examples-per-length 64] [--seeds 0] [--set stack_rnn.stack_size=512]
        [--name NAME]

For each task, model and seed this trains a run with
``panm_jax.train.train_and_evaluate`` (resumable: rerunning the command continues
unfinished runs and reads finished ones back), keeps the checkpoint that is best
on fresh examples at the *training* lengths (the task's ``"1-40"`` mode: no test
length is looked at), and range-evaluates it
(``panm_jax.train.range_eval.range_evaluate``). It writes, under
``benchmarks/results/<device>/``, ``chomsky_<name>.json``: one row per
task, model and seed (score, steps trained, the step at which the run first fit
the training lengths, the published score where known), then the published
Table 2 beside ours and each model's mean per level of the hierarchy (regular,
context-free, context-sensitive), ours and published; and
``chomsky_<name>_<task>.png`` (accuracy against length, one line per model).
Nothing is written to ``benchmarks/results`` without ``--name``.

Evaluation: every length ``41..500`` with 64 examples each by default (the
paper's sweep); ``--sampled`` evaluates every 10th length (and 500) with 16
examples each, about a fortieth of the work; ``--length-step`` and
``--examples-per-length`` set either part. One compiled program per length bucket
(the fewest that compute within 10 % of the lengths' own steps: nine for 41..500),
except for the encoder-only Transformer on a task whose answer length varies with
``N``: its blank tokens attend to each other, so each length is evaluated (and
trained) at its exact shape, one compilation per length. Its
checkpoint selection reads the library's validation batches, padded to length 40,
whose padded blank tokens do take part: for those tasks the selection is
approximate (the score itself is exact).

Memory sizes: the Stack-RNN's stack and the Tape-RNN's tape get one cell per step
of the longest test sequence, ``T_in(500) + T_out(500)`` (Delétang et al. make
them large enough for the test lengths; a 30-cell stack, the default of their
released code and ours, holds the last 30 symbols only); ``--set
stack_rnn.stack_size=30`` gives the small one back. ``--set task.OPTION=VALUE`` sets an
option of every task of the run (``task.padding=zero``: the answers of stack
manipulation and the binary tasks padded with 0 after their ``END``, as the
released code pads; ``panm_jax.tasks.chomsky.base.EndedAnswerTask``); it joins
the run's name and column like a model's option.

Our budget, not the paper's: the paper trains 1,000,000 steps per run over 10
seeds and 3 learning rates and reports the best; here each run gets ``--steps``
training steps (a budget that does not depend on the machine's speed or on
other work sharing it; compilation and validation are not counted) or
``--minutes`` of training, with Adam 1e-3, global-norm clip 1, batch 128. Every
table states the budget it ran under.

Published scores: Delétang et al. 2023, Table 2, token accuracy (%) of the best
run, as ``benchmarks.accuracy.published.chomsky`` holds it; a cell not known
there is left blank, and the notes count the blanks.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import jax

from benchmarks import common
from benchmarks.accuracy import published
from benchmarks.accuracy.criteria import FIT
from benchmarks.accuracy.reproduce import TASK, options_tag, parse_model_sets, steps_trained, trained_by
from panm_jax.tasks import TaskOptionError, get_task
from panm_jax.tasks.chomsky import CHOMSKY_TASKS
from panm_jax.train.config import OptimizerConfig, TrainConfig
from panm_jax.train.io import atomic_write_text, read_jsonl

TASKS = tuple(CHOMSKY_TASKS)  # the 15 tasks of Table 2, level by level
PAPER_MODELS = published.CHOMSKY_MODELS  # Table 2's columns: (its heading, the model here)
MODELS = (*(model for _, model in PAPER_MODELS), "panm")
SAMPLED = (10, 16)  # --sampled: every 10th length (and the last), 16 examples each

# The memory option that each memory model gets sized to the longest test sequence.
MEMORY_SIZES = {"stack_rnn": "stack_size", "tape_rnn": "tape_size"}


def longest_sequence(task: str, max_train: int, max_test: int) -> int:
    """``T_in + T_out`` at the longest test length: the steps of the longest sequence a model runs."""
    t = get_task(task, max_train_length=max_train, max_test_length=max_test)
    return t.input_steps(max_test) + t.output_steps(max_test)


def exact_shapes(task: str, model: str, max_train: int = 40, max_test: int = 500) -> bool:
    """Whether ``model`` must see each length of ``task`` at its exact shape: the encoder-only Transformer's blank
    tokens attend to each other, so padded output steps would change its answers where ``T_out`` varies."""
    if model != "transformer_encoder":
        return False
    t = get_task(task, max_train_length=max_train, max_test_length=max_test)
    return t.output_steps(t.lengths.lo) != t.output_steps(max_test)


def make_config(
    task: str, model: str, seed: int, minutes: float | None, max_train: int, max_test: int, steps: int | None = None
) -> TrainConfig:
    """The CPU-budget run of ``model`` on ``task``: Adam 1e-3, clip 1, batch 128, ``minutes`` of training or
    ``steps`` steps (whichever is given; both: whichever ends first), the checkpoint selected on the training
    lengths. The Stack-RNN's stack and the Tape-RNN's tape hold ``longest_sequence`` cells; the encoder-only
    Transformer trains at exact shapes (one bucket per training length) where ``exact_shapes`` says so."""
    t = get_task(task, max_train_length=max_train, max_test_length=max_test)
    select = next(m for m in t.test_modes if t.test_modes[m].hi == max_train)
    options = {}
    if model in MEMORY_SIZES:
        options[MEMORY_SIZES[model]] = longest_sequence(task, max_train, max_test)
    buckets = tuple(range(t.train_lengths.lo, max_train + 1)) if exact_shapes(task, model, max_train, max_test) else ()
    return TrainConfig(
        task=task,
        model=model,
        seed=seed,
        num_steps=steps if steps is not None else 1_000_000,
        max_minutes=minutes,
        batch_size=128,
        task_options={"max_train_length": max_train, "max_test_length": max_test},
        model_options=options,
        optimizer=OptimizerConfig(name="adam", learning_rate=1e-3, clip_value=None, clip_norm=1.0),
        eval_every=250,
        eval_examples=256,
        eval_batch_size=128,
        checkpoint_every=250,
        log_every=50,
        select_mode=select,
        eval_modes=[select],
        buckets=buckets,
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
    from panm_jax.train.engine import config_check
    from panm_jax.train.loop import Run
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


def range_record(
    workdir: Path, config: TrainConfig, lengths: list[int], examples: int, buckets: str = "fitted"
) -> dict[str, Any]:
    """The range evaluation of the run's selected checkpoint, computed once and kept in ``range.json``."""
    from panm_jax.train.range_eval import range_evaluate

    path = workdir / "range.json"
    key = {"lengths": lengths, "examples_per_length": examples, "buckets": buckets}
    record = kept_record(path, key)
    if record is not None:
        return record
    run, params, step = selected_params(workdir, config)
    result = range_evaluate(
        run, params, lengths, examples_per_length=examples, batch_size=min(examples, 64), buckets=buckets
    )
    record = result.with_step(step).to_record()
    record["protocol"] = key
    atomic_write_text(path, json.dumps(record, indent=1) + "\n")
    return record


def fit(workdir: Path, mode: str) -> tuple[float | str, int | str]:
    """``(best token accuracy (%) at the training lengths, the first step at which it reached FIT)`` from the
    run's validation log; ``""`` where there is none (the step: where it never reached FIT)."""
    logged = [
        (r["step"], r["validation"][mode]["token_accuracy"])
        for r in read_jsonl(workdir / "metrics.jsonl")
        if mode in r.get("validation", {})
    ]
    if not logged:
        return "", ""
    best = round(100 * max(acc for _, acc in logged), 1)
    first = next((step for step, acc in sorted(logged) if acc >= FIT), "")
    return best, first


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
    p.add_argument("--minutes", type=float, default=None, help="training minutes per task, model and seed")
    p.add_argument("--steps", type=int, default=None, help="training steps per task, model and seed (2000)")
    p.add_argument("--max-train-length", type=int, default=published.CHOMSKY_LENGTHS[0])
    p.add_argument("--max-test-length", type=int, default=published.CHOMSKY_LENGTHS[1])
    p.add_argument(
        "--sampled",
        action="store_true",
        help=f"the sampled sweep: every {SAMPLED[0]}th test length (and the last), {SAMPLED[1]} examples each",
    )
    p.add_argument("--length-step", type=int, default=None, help="evaluate every k-th test length and the last (1)")
    p.add_argument("--examples-per-length", type=int, default=None, help="examples per test length (64)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="MODEL.OPTION=VALUE | task.OPTION=VALUE",
        help="one option of one model, or of every task with task.OPTION (repeatable), e.g. stack_rnn.stack_size=30, "
        "task.padding=zero; joins the run's name",
    )
    p.add_argument("--workdir", default="runs/chomsky")
    p.add_argument("--name", default=None, help="record the tables under benchmarks/results/<device>/chomsky_NAME.*")
    args = p.parse_args(argv)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [t for t in tasks if t not in CHOMSKY_TASKS]
    if unknown:
        raise SystemExit(f"--tasks: expected names among {list(TASKS)}, got {unknown}")
    seeds = [int(s) for s in args.seeds.split(",")]
    model_sets = parse_model_sets(args.set, models)
    task_sets = model_sets.pop(TASK, {})
    for task in tasks:
        try:
            get_task(task, **task_sets)
        except TaskOptionError as err:
            raise SystemExit(f"--set task.OPTION: {err}") from None
    task_tag = options_tag({f"{TASK}.{k}": v for k, v in task_sets.items()})
    if args.minutes is None and args.steps is None:
        args.steps = 2000
    length_step = args.length_step if args.length_step is not None else (SAMPLED[0] if args.sampled else 1)
    examples = (
        args.examples_per_length if args.examples_per_length is not None else (SAMPLED[1] if args.sampled else 64)
    )
    if (
        (args.minutes is not None and args.minutes <= 0)
        or (args.steps is not None and args.steps < 1)
        or length_step < 1
        or examples < 1
    ):
        raise SystemExit("--minutes, --steps, --length-step and --examples-per-length: expected positive numbers")
    limits = ([(f"{args.minutes:g}m", f"{args.minutes:g} minutes of training")] if args.minutes is not None else []) + (
        [(f"{args.steps}steps", f"{args.steps:,} training steps")] if args.steps is not None else []
    )
    budget = "-".join(tag for tag, _ in limits)  # the run folder's suffix
    described = " and at most ".join(text for _, text in limits)
    lo, hi = args.max_train_length + 1, args.max_test_length
    lengths = sorted(set(range(lo, hi + 1, length_step)) | {hi})
    from panm_jax.train.loop import train_and_evaluate
    from panm_jax.train.range_eval import FITTED, PER_LENGTH
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
                if task_sets:
                    config = config.replace(task_options={**config.task_options, **task_sets})
                label = model + task_tag + options_tag(options)  # a variant is its own run and its own column
                workdir = Path(args.workdir) / task / f"{label}-s{seed}-{budget}"
                if not finished(workdir, config):
                    print(f"== {model} on {task}, seed {seed} -> {workdir}", flush=True)
                    train_and_evaluate(config, workdir, progress=False)
                exact = exact_shapes(task, model, args.max_train_length, args.max_test_length)
                record = range_record(workdir, config, lengths, examples, PER_LENGTH if exact else FITTED)
                steps = steps_trained(workdir)
                train_accuracy, fit_step = fit(workdir, config.select_mode)
                theirs = published.chomsky(task).get(model)
                score = 100 * record["score"]
                rows.append(
                    {
                        "task": task,
                        "level": level,
                        "model": label,
                        "seed": seed,
                        "steps": steps,
                        "selected_step": record.get("step"),
                        "train_accuracy": train_accuracy,
                        "fit_step": fit_step,
                        "score": round(score, 1),
                        "published": theirs if theirs is not None else "",
                        "difference": round(score - theirs, 1) if theirs is not None else "",
                        "compiles": record.get("compiles"),
                        "eval_seconds": round(record.get("wall_seconds", 0.0), 1),
                        "code": "; ".join(dict.fromkeys(trained_by(workdir))),
                    }
                )
                per_task.setdefault(task, []).append({**record, "model": label})
                print(
                    f"   {task} {label} s{seed}: {score:.1f}% over {len(lengths)} lengths ({steps} steps; "
                    f"{train_accuracy}% at the training lengths, fit at step {fit_step or '-'})",
                    flush=True,
                )
    cols = [
        "task",
        "level",
        "model",
        "seed",
        "steps",
        "selected_step",
        "train_accuracy",
        "fit_step",
        "score",
        "published",
        "difference",
        "compiles",
        "eval_seconds",
        "code",
    ]
    labels = [m + task_tag + options_tag(model_sets.get(m, {})) for m in models]
    levels = per_level(rows)
    task_levels = {t: get_task(t).level for t in tasks}
    paper = published.chomsky_table_two(rows, task_levels)
    paper_cols = ["level", "task", *(h for h, _ in PAPER_MODELS)] + (["PANM"] if "panm" in labels else [])
    published_levels = published.chomsky_per_level(task_levels)
    missing = sum(m not in published.chomsky(t) for t in tasks for _, m in PAPER_MODELS)
    print(common.markdown_table(rows, cols))
    print(common.markdown_table(paper, paper_cols))
    print(common.markdown_table(levels, ["level", *labels]))
    if not args.name:
        print("(not recorded: give --name to write benchmarks/results/<device>/chomsky_NAME.*)")
        return 0
    name = f"chomsky_{args.name}"
    command = common.portable_command(argv, "benchmarks.accuracy.chomsky")
    sweep = f"every {length_step}-th length and {hi}" if length_step > 1 else "every length"
    notes = (
        f"Score: token accuracy (%) averaged over the test lengths {lo}..{hi} ({sweep}: {len(lengths)} lengths, "
        f"{examples} examples each), of the checkpoint best on fresh examples at the training lengths "
        f"1..{args.max_train_length}. 'train_accuracy': the best token accuracy (%) there; 'fit_step': the first "
        f"validation (every 250 steps) at which it reached {100 * FIT:g} % (blank: never). Budget: {described} per "
        "run (Adam 1e-3, global-norm clip 1, batch 128, default model sizes; the Stack-RNN's stack and the "
        "Tape-RNN's tape hold one cell per step of the longest test sequence), seeds "
        f"{','.join(map(str, seeds))}; the paper's runs train 1,000,000 steps and it reports the best of 10 seeds "
        "and 3 learning rates, so 'difference' measures the budget as much as the model. 'published': "
        "Delétang et al. 2023, Neural Networks and the Chomsky Hierarchy (ICLR 2023), Table 2, token accuracy of "
        "the best run, where this package knows the cell. 'compiles': eval-step compilations of the range "
        "evaluation (one per fitted length bucket; one per length for the encoder-only Transformer where "
        "the answer's length varies); 'eval_seconds': its wall time; 'code': the commit and device of each part "
        "of the run."
    )
    notes += (
        "\n\nTable 2 of Delétang et al. 2023 beside ours, each cell 'ours / published' (ours: the best seed; "
        f"'-': not run here, or a published cell not known to this package: {missing} of the "
        f"{len(tasks) * len(PAPER_MODELS)} cells of these tasks). Columns: RNN = rnn, Stack-RNN = stack_rnn, "
        "Tape-RNN = tape_rnn, Transformer = transformer_encoder, LSTM = single_lstm.\n\n"
        + common.markdown_table(paper, paper_cols)
    )
    notes += (
        "\n\nMean score (%) per level of the hierarchy, over the tasks and seeds of this run:\n\n"
        + common.markdown_table(levels, ["level", *labels])
        + "\n\nPublished mean per level over the same tasks (blank where a cell of the level is not known):\n\n"
        + common.markdown_table(published_levels, ["level", *(m for _, m in PAPER_MODELS)])
    )
    env = common.environment()
    path = common.write_results(name, "Chomsky-hierarchy tasks: range evaluation", rows, cols, env, notes, command)
    out = path.parent
    for task, records in per_task.items():
        plot_range(records, out / f"{name}_{task}.png")
    print("wrote", path, "and one plot per task")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
