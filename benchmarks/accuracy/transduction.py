"""The transduction table of Grefenstette et al. 2015: deep-LSTM baselines and Stack-, Queue-, DeQue-LSTMs.

Grefenstette, Hermann, Suleyman & Blunsom 2015, *Learning to Transduce with Unbounded Memory*
(NeurIPS 2015), Figure 2a (the results table, "Comparing Enhanced LSTMs to Best Benchmarks") and
Table 3 of its appendix E ("Full Results", every LSTM depth). Five tasks
(``panm_jax/tasks/transduction.py``): sequence copying, sequence reversal, bigram flipping (random
strings over 128 symbols), SVO to SOV and gender conjugation (the inversion transduction grammars of
the paper's Table 1, appendix C). Training source lengths ``U{8..64}``, test ``U{65..128}``; *coarse* =
the share of test sequences entirely right (end symbol included), *fine* = the mean share of each target
right before its first error (the paper's Section 4.3).

    .venv/bin/python -m benchmarks.accuracy.transduction [--tasks transduction_copy,bigram_flip]
        [--models lstm,lstm2,lstm4,lstm8,stack_lstm,queue_lstm,deque_lstm] [--steps 200] [--seeds 0]
        [--extra-seeds 1,2] [--decisive-only]
        [--hidden 256] [--test-examples 100] [--eval-every STEPS]
        [--vocab-size 128] [--max-train-length 64] [--max-test-length 128] [--name NAME]

For each task, model and seed this trains one run with ``panm_jax.train.train_and_evaluate``
(resumable: rerunning the command continues unfinished runs and reads finished ones back), evaluates
its last checkpoint (selected on fresh training-length examples, as the paper selects on training
perplexity; with one evaluation per run it is the last) on ``--test-examples`` test sequences, and
writes, with ``--name``, ``transduction_<name>.json`` under ``benchmarks/results/<device>/``:
one row per run (its test coarse, fine and token accuracy, training-length coarse and fine, steps, the code that trained
it) with the published cells of its task and model. ``--extra-seeds`` adds seeds to the cells that
decide the paper's claims (``DECISIVE``: the Queue on copying, the Stack on reversal, the DeQue on
both, the one-layer LSTM and the three memory models on bigram flipping); ``--decisive-only`` trains those
cells alone. ``python -m benchmarks.pages``
renders the file, means over seeds and ``ours - published``, on the transduction results page (``make docs``).

The paper's setup where it is stated, and where we differ:

* optimiser: RMSProp (learning rate ``--lr``, default 1e-3, one point of the paper's grid
  {5e-3 .. 5e-5}), batch 10, every gradient value clipped at 1; pop biases start at -1 (the models');
* widths: ``--hidden`` 256 for every LSTM (the paper ran 256 and 512); the pushed values are 64 wide
  (the models' default; the paper's are 256);
* baselines: the paper's deep LSTMs of 1, 2, 4 and 8 layers are ``lstm``, ``lstm2``, ``lstm4`` and
  ``lstm8`` (``LSTM_DEPTHS``: our LSTM encoder-decoder with option ``layers``, the layers stacked in the
  encoder and in the decoder), each beside Table 3's LSTM of its depth (Figure 2a shows the best
  depth of each task: 4 layers on copying, 8 on reversal, SVO to SOV and gender conjugation, 2 on
  bigram flipping). Without the row of the best depth in a table, that deep LSTM is shown under
  ``lstm``, published only. Our encoder and decoder are separate LSTM stacks (Sutskever et al. 2014's
  design), so at width 256 they hold about twice the parameters of the paper's Table 2 (1, 2, 4, 8
  layers: 0.70, 1.75, 3.86, 8.07 million against 0.33, 0.91, 2.1, 4.5 million); our Stack- and
  Queue-LSTMs hold 0.51 million and the DeQue-LSTM 0.60 (the paper: 0.67 and 1.0, with pushed values
  256 wide);
* format: the model reads ``<s> source |||`` and then emits the target and ``</s>`` with a blank decoder
  input (``panm_jax/tasks/transduction.py``); the paper trains one joint sequence, feeding the true
  previous symbol in training and its own prediction at test;
* budget: ``--steps`` training steps per run, the same for every cell; the paper trains "an unbounded
  number of steps" until convergence and reports the best of several runs;
* test sets: ``--test-examples`` sequences (the paper: 1,000).

Scale. The paper's lengths and vocabulary are the defaults: sources of 8 to ``--max-train-length`` (64)
symbols in training and up to ``--max-test-length`` (128) at test, random strings over ``--vocab-size``
(128) symbols. A smaller scale (e.g. ``--vocab-size 8 --max-train-length 16 --max-test-length 32``) asks
the same question, whether the model carries what it learnt to twice the longest training source, at a
cost the CPU affords; its rows are then not the paper's cells, and the results page shows the paper's
figures beside them without a difference. ``--eval-every`` validates at the training lengths every so
many steps, so that a row gives the first step whose training-length coarse accuracy fits (``fit_step``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.accuracy import published
from benchmarks.accuracy.chomsky import finished
from benchmarks.accuracy.criteria import fits
from benchmarks.accuracy.reproduce import steps_trained, trained_by
from panm_jax import enable_compile_cache
from panm_jax.tasks.transduction import TransductionCopyTask
from panm_jax.train.config import OptimizerConfig, TrainConfig
from panm_jax.train.io import read_jsonl

TASKS = ("transduction_copy", "transduction_reversal", "bigram_flip", "svo_sov", "gender_conjugation")
# Our ``lstm`` at the paper's LSTM depths (Section 4's deep LSTM baselines: 1, 2, 4 and 8 layers); a row's
# model is its name here, trained as the registry's ``lstm`` with option ``layers``.
LSTM_DEPTHS = published.TRANSDUCTION_LSTM_DEPTHS
MODELS = (*LSTM_DEPTHS, "stack_lstm", "queue_lstm", "deque_lstm")
TITLES = {
    "transduction_copy": "Sequence Copying",
    "transduction_reversal": "Sequence Reversal",
    "bigram_flip": "Bigram Flipping",
    "svo_sov": "SVO to SOV",
    "gender_conjugation": "Gender Conjugation",
}

# The cells that decide the paper's claims: the Queue solves copying and the Stack reversal, the DeQue
# both; bigram flipping stops near 0.55 coarse for every model (the one-layer LSTM standing for the deep ones).
DECISIVE = frozenset(
    {
        ("transduction_copy", "queue_lstm"),
        ("transduction_reversal", "stack_lstm"),
        ("transduction_copy", "deque_lstm"),
        ("transduction_reversal", "deque_lstm"),
        *(("bigram_flip", m) for m in ("lstm", "stack_lstm", "queue_lstm", "deque_lstm")),
    }
)

# The paper of every published cell here: its Figure 2a and Table 3 (``benchmarks.accuracy.published``).
PAPER = published.GREFENSTETTE_2015


def reference_train_coarse(task: str, model: str) -> float | None:
    """The paper's coarse accuracy (%) at the training lengths for ``model`` on ``task``, where it prints one."""
    cells = published.transduction_cells(task, model)
    return 100 * cells["published_train_coarse"] if cells else None


# The tasks of random strings, the ones whose vocabulary ``--vocab-size`` sets (the grammar tasks' is their grammar's).
RANDOM_STRING_TASKS = ("transduction_copy", "transduction_reversal", "bigram_flip")
# The paper's scale is the tasks' defaults (sources of 8..64 symbols in training, up to 128 at test, 128
# symbols): read from the tasks' options, the one place they are set.
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(TransductionCopyTask.Options)}
PAPER_SCALE = {k: _DEFAULTS[k] for k in ("vocab_size", "max_train_length", "max_test_length")}
MIN_TRAIN_LENGTH = _DEFAULTS["min_train_length"]  # the shortest training source at every scale


def task_options(task: str, scale: dict[str, int]) -> dict[str, int]:
    """The task options of ``scale`` (``PAPER_SCALE``'s keys) that differ from the paper's, for ``task``."""
    options = {k: v for k, v in scale.items() if v != PAPER_SCALE[k]}
    if task not in RANDOM_STRING_TASKS:
        options.pop("vocab_size", None)
    return options


def scale_text(scale: dict[str, int], named: bool = True) -> str:
    """``"paper"`` at the paper's scale (with ``named``), else e.g. ``"8 symbols, train 8..16, test 17..32"``."""
    if named and scale == PAPER_SCALE:
        return "paper"
    return (
        f"{scale['vocab_size']} symbols, train {MIN_TRAIN_LENGTH}..{scale['max_train_length']}, "
        f"test {scale['max_train_length'] + 1}..{scale['max_test_length']}"
    )


def make_config(
    task: str,
    model: str,
    seed: int,
    steps: int,
    hidden: int,
    lr: float,
    test_examples: int,
    scale: dict[str, int] | None = None,
    eval_every: int | None = None,
) -> TrainConfig:
    """One run of ``model`` (a name of ``MODELS``: ``lstmL`` is the registry's ``lstm`` with ``layers = L``):
    RMSProp ``lr`` (no momentum), batch 10, gradient values clipped at 1, ``steps`` steps, at ``scale``
    (``PAPER_SCALE`` by default), validated every ``eval_every`` steps (default: once, at the end) on
    ``test_examples`` fresh training-length sequences, which select, and tested at the end on as many."""
    layers = LSTM_DEPTHS.get(model, 1)
    every = min(eval_every or steps, steps)
    return TrainConfig(
        task=task,
        task_options=task_options(task, scale or PAPER_SCALE),
        model="lstm" if model in LSTM_DEPTHS else model,
        model_options={"hidden": hidden, **({"layers": layers} if layers > 1 else {})},
        seed=seed,
        num_steps=steps,
        batch_size=10,
        optimizer=OptimizerConfig(name="rmsprop", learning_rate=lr, momentum=0.0, clip_value=1.0),
        eval_every=every,
        eval_examples=test_examples,
        eval_batch_size=min(test_examples, 100),
        checkpoint_every=every,
        log_every=max(1, min(50, steps)),
        select_mode="train",
        eval_modes=("test",),
    )


def selection_record(workdir: Path, step: int) -> dict[str, Any]:
    """The training-length validation (``"train"`` mode) of ``step``, from the run's log (``{}`` if absent)."""
    for r in read_jsonl(workdir / "metrics.jsonl"):
        if r.get("step") == step and "validation" in r:
            return r["validation"].get("train", {})
    return {}


def fit_step(workdir: Path, task: str, model: str) -> int | str:
    """The first validated step whose coarse accuracy at the training lengths fits (``criteria.fits``), ``""``
    where none does."""
    for r in sorted(read_jsonl(workdir / "metrics.jsonl"), key=lambda r: r.get("step", 0)):
        train = r.get("validation", {}).get("train")
        if train and fits(100 * train["coarse_accuracy"], reference_train_coarse(task, model)):
            return r["step"]
    return ""


def run_row(task: str, model: str, seed: int, workdir: Path, models: list[str]) -> dict[str, Any]:
    """The table row of one finished run: its test and training-length accuracies and the published cells
    (``models``: every model of the table, which decides whether the best deep LSTM has a row of its own)."""
    results = json.loads((workdir / "results.json").read_text())
    (test,) = [m for m in results["modes"] if m["mode"] == "test"]
    train = selection_record(workdir, results["step"])
    return {
        "task": task,
        "model": model,
        "seed": seed,
        "steps": steps_trained(workdir),
        "selected_step": results["step"],
        "coarse": round(test["coarse_accuracy"], 4),
        "fine": round(test["fine_accuracy"], 4),
        "token": round(test["token_accuracy"], 4),
        "train_coarse": round(train["coarse_accuracy"], 4) if train else "",
        "train_fine": round(train["fine_accuracy"], 4) if train else "",
        # fit: its coarse accuracy at the training lengths reaches FIT (or the paper's there, less its slack)
        "fit": fits(100 * train["coarse_accuracy"], reference_train_coarse(task, model)) if train else "",
        "fit_step": fit_step(workdir, task, model),
        "test_examples": test["examples"],
        **published.transduction_cells(task, model, published.transduction_deep_run(task, models)),
        "code": "; ".join(dict.fromkeys(trained_by(workdir))),
        **common.cost_cells([results]),
    }


def run_plan(
    tasks: list[str], models: list[str], seeds: list[int], extra: list[int], decisive_only: bool = False
) -> list[tuple[str, str, int]]:
    """The runs in the order they train: every cell's ``seeds`` first, then the ``extra`` seeds of the cells of
    ``DECISIVE``, one seed at a time, so that a budget cut short leaves whole passes; with ``decisive_only``
    the cells of ``DECISIVE`` alone."""
    cells = [(t, m) for t in tasks for m in models if (t, m) in DECISIVE or not decisive_only]
    plan = [(t, m, s) for s in seeds for t, m in cells]
    return plan + [(t, m, s) for s in extra for t, m in cells if (t, m) in DECISIVE]


def names(text: str, what: str, known: tuple[str, ...]) -> list[str]:
    """A comma-separated list of names, each one of ``known``; SystemExit naming the first unknown."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise SystemExit(f"--{what}: expected one or more of {','.join(known)}, got {text!r}")
    for item in items:
        if item not in known:
            raise SystemExit(f"--{what}: expected names from {','.join(known)}, got {item!r}")
    return items


def seed_list(text: str, what: str, allow_empty: bool = False) -> list[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]``; SystemExit naming ``--what`` on anything but non-negative integers."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items and not allow_empty:
        raise SystemExit(f"--{what}: expected comma-separated non-negative integers, got {text!r}")
    for item in items:
        if not item.isdigit():
            raise SystemExit(f"--{what}: expected comma-separated non-negative integers, got {item!r}")
    return [int(i) for i in items]


def positive(value: float, what: str) -> None:
    if not value > 0:
        raise SystemExit(f"--{what}: expected a positive number, got {value}")


COLUMNS = [
    "task",
    "model",
    "seed",
    "steps",
    "coarse",
    "fine",
    "token",
    "train_coarse",
    "fit",
    "fit_step",
    "train_fine",
    "published_coarse",
    "published_fine",
    "published_source",
    "code",
]


def main(argv=None) -> int:
    enable_compile_cache()  # a rerun reads the programs it compiled (panm_jax/train/compile_cache.py)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", default=",".join(TASKS))
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--seeds", default="0", help="seeds of every cell (comma-separated)")
    p.add_argument("--extra-seeds", default="", help="more seeds for the cells of DECISIVE (comma-separated)")
    p.add_argument("--decisive-only", action="store_true", help="train only the cells of DECISIVE among the others")
    p.add_argument("--steps", type=int, default=200, help="training steps per run, the same for every cell")
    p.add_argument("--hidden", type=int, default=256, help="LSTM width of every model (the paper: 256 or 512)")
    p.add_argument("--lr", type=float, default=1e-3, help="RMSProp learning rate")
    p.add_argument("--test-examples", type=int, default=100, help="test sequences per run (the paper: 1,000)")
    p.add_argument(
        "--eval-every",
        type=int,
        default=None,
        help="validate at the training lengths every STEPS (default: at the end)",
    )
    p.add_argument(
        "--vocab-size", type=int, default=None, help="random-string tasks: source symbols (default: the paper's)"
    )
    p.add_argument(
        "--max-train-length",
        type=int,
        default=PAPER_SCALE["max_train_length"],
        help=f"training sources are {MIN_TRAIN_LENGTH}..this long (default: the paper's)",
    )
    p.add_argument(
        "--max-test-length",
        type=int,
        default=PAPER_SCALE["max_test_length"],
        help="test sources are up to this long (default: the paper's)",
    )
    p.add_argument("--workdir", default="runs/transduction")
    p.add_argument("--name", default=None, help="record the table as benchmarks/results/<device>/transduction_NAME.*")
    args = p.parse_args(argv)
    tasks = names(args.tasks, "tasks", TASKS)
    models = names(args.models, "models", MODELS)
    seeds = seed_list(args.seeds, "seeds")
    extra = [s for s in seed_list(args.extra_seeds, "extra-seeds", allow_empty=True) if s not in seeds]
    for what in ("steps", "hidden", "test_examples", "eval_every"):
        value = getattr(args, what)
        if value is not None and value < 1:
            raise SystemExit(f"--{what.replace('_', '-')}: expected a positive integer, got {value}")
    positive(args.lr, "lr")
    grammar = [t for t in tasks if t not in RANDOM_STRING_TASKS]
    if args.vocab_size is not None and grammar:
        raise SystemExit(
            f"--vocab-size: sets the random-string tasks' vocabulary ({','.join(RANDOM_STRING_TASKS)}), "
            f"got it with {','.join(grammar)}"
        )
    if args.vocab_size is not None and args.vocab_size < 2:
        raise SystemExit(f"--vocab-size: expected an integer of at least 2, got {args.vocab_size}")
    if args.max_train_length < MIN_TRAIN_LENGTH:
        raise SystemExit(
            f"--max-train-length: expected at least {MIN_TRAIN_LENGTH} (training sources are {MIN_TRAIN_LENGTH}..N), "
            f"got {args.max_train_length}"
        )
    if args.max_test_length <= args.max_train_length + 1:
        raise SystemExit(
            f"--max-test-length: expected more than --max-train-length + 1 ({args.max_train_length + 1}), "
            f"got {args.max_test_length}"
        )
    scale = {
        "vocab_size": args.vocab_size or PAPER_SCALE["vocab_size"],
        "max_train_length": args.max_train_length,
        "max_test_length": args.max_test_length,
    }
    if args.name is not None and not args.name.replace("_", "").replace("-", "").isalnum():
        raise SystemExit(f"--name: expected letters, digits, '-' or '_', got {args.name!r}")
    from panm_jax.train.loop import train_and_evaluate

    rows = []
    plan = run_plan(tasks, models, seeds, extra, args.decisive_only)
    if not plan:
        raise SystemExit(f"--decisive-only: expected a decisive cell among --tasks and --models, got none of {tasks}")
    for task, model, seed in plan:
        config = make_config(
            task, model, seed, args.steps, args.hidden, args.lr, args.test_examples, scale, args.eval_every
        )
        tag = f"s{seed}-{args.steps}steps-h{args.hidden}-lr{args.lr:g}-test{args.test_examples}"
        if args.eval_every:
            tag += f"-every{args.eval_every}"
        if scale != PAPER_SCALE:
            tag += f"-v{scale['vocab_size']}-L{scale['max_train_length']}-T{scale['max_test_length']}"
        workdir = Path(args.workdir) / task / f"{model}-{tag}"
        if not finished(workdir, config):
            print(f"== {model} on {task}, seed {seed} -> {workdir}", flush=True)
            train_and_evaluate(config, workdir, progress=False)
        row = run_row(task, model, seed, workdir, models)
        rows.append(row)
        print(f"   {task} {model} s{seed}: coarse {row['coarse']:.2f}, fine {row['fine']:.2f}", flush=True)
    print(common.markdown_table(rows, COLUMNS))
    if not args.name:
        print("(not recorded: give --name to write benchmarks/results/<device>/transduction_NAME.*)")
        return 0
    command = common.portable_command(argv, "benchmarks.accuracy.transduction")
    settings = {
        "tasks": tasks,
        "models": models,
        "seeds": seeds,
        "extra_seeds": extra,
        "decisive_cells": sorted(f"{t}/{m}" for t, m in DECISIVE if t in tasks and m in models),
        "decisive_only": args.decisive_only,
        "steps": args.steps,
        "hidden": args.hidden,
        "batch_size": 10,
        "optimizer": f"rmsprop lr {args.lr:g}, no momentum, gradient values clipped at 1",
        "test_examples": args.test_examples,
        "scale": scale_text(scale),
        "eval_every": args.eval_every or args.steps,
        "train_lengths": f"{MIN_TRAIN_LENGTH}..{args.max_train_length} (bigram flipping: even)",
        "test_lengths": f"{args.max_train_length + 1}..{args.max_test_length} (bigram flipping: even)",
        "grammars": "Table 1 of the paper (the tasks' default)",
        "name": args.name,
    }
    spent = sum(r["steps"] for r in rows)
    notes = (
        f"Budget: {args.steps:,} training steps per run (batch 10, RMSProp {args.lr:g}, gradient values clipped "
        f"at 1, LSTM width {args.hidden}), {spent:,} steps in all; coarse and fine test accuracy on "
        f"{args.test_examples} sequences of source length {args.max_train_length + 1}..{args.max_test_length} "
        f"(train_*: as many of length {MIN_TRAIN_LENGTH}..{args.max_train_length}). "
        f"Published: {PAPER}, Figure 2a (Stack-, Queue-, DeQue-LSTMs) and Table 3 (the LSTM of each depth), "
        "testing coarse and fine; "
        + (
            "the paper trains to convergence, so 'ours - published' measures the budget as much as the models."
            if scale == PAPER_SCALE
            else f"at the paper's scale ({scale_text(PAPER_SCALE, named=False)}), not this one ({scale_text(scale)}): "
            "shown for reference, not as a difference."
        )
    )
    common.write_results(
        f"transduction_{args.name}",
        "Transduction tasks of Grefenstette et al. 2015",
        rows,
        COLUMNS,
        common.environment(),
        notes,
        command,
        settings=settings,
    )
    print("wrote", common.RESULTS_DIR / common.device_slug() / f"transduction_{args.name}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
