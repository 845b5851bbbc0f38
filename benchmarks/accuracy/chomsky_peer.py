"""The decisive cells of the Chomsky table trained by DeepMind's own code and by ours, at equal steps and seeds.

Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR 2023), claim per level of the
hierarchy: the RNN and the LSTM solve the regular tasks, the Stack-RNN the deterministic context-free ones,
the Tape-RNN the context-sensitive ones. Each cell below is one task and the architecture that the paper
says solves it (``CELLS``); for every cell and seed this trains

* **deepmind**: their released code (github.com/google-deepmind/neural_networks_chomsky_hierarchy, JAX +
  Haiku), unchanged, in a Python environment of its own (``--peer-python``), launched by
  ``benchmarks.speed.chomsky_peer``'s ``run_worker``: the model built by its
  ``experiments.constants.MODEL_BUILDERS`` and wrapped by ``experiments.utils.make_model_with_empty_targets``,
  with the loss and accuracy of ``experiments/example.py`` (the two closures of its ``main``, written out
  the same here because they cannot be imported), trained by its ``experiments.training.TrainingWorker``
  (Adam after global-norm clipping at 1, batch 128, the uniform curriculum over lengths 1..40, one batch of
  one length per step, no padding) and scored by its ``experiments.range_evaluation.range_evaluation``;
* **ours**: the same architecture trained by ``benchmarks.accuracy.chomsky``'s code path (``make_config``,
  ``panm_jax.train.train_and_evaluate``, ``range_record``): its batches padded to the task's length
  buckets, its checkpoint best on its validation at the training lengths range-evaluated.

Both sides get the same steps (``--steps``), seed numbers (``--seeds``; deepmind: ``seed`` and
``model_init_seed``; ours: ``TrainConfig.seed``) and learning rate (``--learning-rate``, default 1e-3, the
value both codes default to), and the same model sizes: hidden width 256, memory cells of width 8, and the
Stack-RNN's stack or the Tape-RNN's tape as large as ours, one cell per step of the longest test sequence
(``chomsky.longest_sequence``: 1000 for Reverse String). That size is the one setting of theirs changed
besides steps, seed and learning rate: ``example.py``'s 40 cells hold the training lengths but not the test
lengths. Their Modular Arithmetic task is used with one repair, made to the task object, not to their files
(``repair_operators``): without it their training stops with an error at the second length it draws.

Learning curve: each side's token accuracy on its own training batches (fresh examples, one length drawn
uniformly from 1..40 per batch on both sides), every step (deepmind: ``TrainingWorker``'s log with
``log_frequency`` 1; ours: ``metrics.jsonl`` with ``log_every`` 1), averaged over the last ``--curve-every``
steps at every multiple of it (``curve``). ``fit_step``: the first point of the curve at or above
``criteria.FIT`` (99 %). ``train_accuracy``: the curve's best point, ``last_accuracy`` its last. Ours also
records its runner's own fit (``validation_fit_step``: its validation on 256 fresh examples at the training
lengths, every 250 steps).

Score: token accuracy averaged over the test lengths (each weighing the same), on deepmind's side by its
``range_evaluation`` of the final parameters (its lengths set to the sweep's, ``only_lengths``; its examples
and seeds its own), on ours by the runner's ``range_record`` of the checkpoint it selected
(``selected_step``). The sweep: every length 41..500 (to ``--max-test-length``) with 64 examples each, or with
``--sampled`` every 10th length (and the last) with 16 examples each, the runner's ``--sampled``.

    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" taskset -c 0 \\
        .venv/bin/python -m benchmarks.accuracy.chomsky_peer --peer-python /tmp/dm-venv/bin/python \\
        --peer-repo /tmp/dm_chomsky --peer-commit 2b8eb4b [--cells parity_check:rnn,reverse_string:stack_rnn] \\
        [--seeds 0,1] [--steps 2000] [--curve-every 100] [--sampled] [--name NAME]

(the peer's environment as ``benchmarks.speed.chomsky_peer`` describes it). Runs are kept under
``--workdir`` (default ``runs/chomsky_peer``): rerunning the command reads finished runs back (ours resumes
an unfinished one). With ``--name`` it writes ``benchmarks/results/<device>/chomsky_peer_<name>.json`` (one
row per cell, code and seed, the curve in each row) and one plot per cell,
``chomsky_peer_<name>_<task>_<model>.png``, both codes' curves on it.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/`` (one thread, other work sharing the core, load
average 3 to 7), 1,000 steps with ``--sampled``: the RNN on Parity Check or Modular Arithmetic 2 to 6 minutes
per run of theirs (its 40 training and 47 evaluation compilations most of it) and 1.5 to 2 of ours; the
Stack-RNN on Reverse String, its stack of 1000 cells, 50 minutes of training for theirs and 18 for ours.
Their Tape-RNN moves its tape by multiplying it with a ``memory_size`` × ``memory_size`` matrix, one per
action (``TapeRNNCore._update_memory``), so its step costs the square of the tape: one value and gradient
of a batch of 128 Duplicate String inputs of length 20 took 2.1 s with a tape of 241 cells and 34.0 s
with 1501, the tape of test lengths to 500 (three processes on the two cores). ``--max-test-length 80``
(tapes of 240, 160 and 161 cells on Duplicate String, Odds First and Binary Addition) is what this CPU
affords for the Tape-RNN's cells (1,000 steps: 12 to 32 minutes of training for theirs, 5 to 9 for ours);
runs at other lengths are kept apart from the paper's (their folders say ``-train40-test80``).
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import json
import os
import statistics
import sys
import time
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks.accuracy import published
from benchmarks.accuracy.criteria import FIT
from benchmarks.speed import chomsky_peer as speed

# (task, our model): the architecture Delétang et al. 2023 find solves the task, one level of the hierarchy each.
CELLS: tuple[tuple[str, str], ...] = (
    ("parity_check", "rnn"),
    ("parity_check", "single_lstm"),
    ("modular_arithmetic", "rnn"),
    ("modular_arithmetic", "single_lstm"),
    ("reverse_string", "stack_rnn"),
    ("stack_manipulation", "stack_rnn"),
    ("modular_arithmetic_brackets", "stack_rnn"),
    ("duplicate_string", "tape_rnn"),
    ("odds_first", "tape_rnn"),
    ("binary_addition", "tape_rnn"),
)
CODES = ("deepmind", "ours")  # run in this order, cell by cell and seed by seed
PEER_MEMORY = {"stack_rnn": "stack_size", "tape_rnn": "memory_size"}  # their name of the memory's size
SAMPLED = (10, 16)  # --sampled: every 10th test length (and the last), 16 examples each (chomsky.SAMPLED)
FULL_EXAMPLES = 64  # examples per test length without --sampled (the chomsky runner's default)
BATCH = 128
COLUMNS = [
    "task",
    "level",
    "model",
    "code",
    "seed",
    "steps",
    "fit_step",
    "train_accuracy",
    "last_accuracy",
    "score",
    "selected_step",
    "validation_fit_step",
    "train_seconds",
    "eval_seconds",
]


# ----------------------------------------------------------------------------- shared (no jax: both environments)


def peer_arch(model: str) -> speed.Arch:
    """The speed runner's ``Arch`` of our ``model`` (its peer name and default sizes)."""
    for arch in speed.ARCHS.values():
        if arch.ours == model:
            return arch
    raise ValueError(
        f"no DeepMind architecture for {model!r}; expected one of {[a.ours for a in speed.ARCHS.values()]}"
    )


def test_lengths(lo: int, hi: int, step: int) -> list[int]:
    """Every ``step``-th length of ``lo..hi`` and ``hi`` (the chomsky runner's sweep)."""
    return sorted(set(range(lo, hi + 1, step)) | {hi})


def curve(accuracies: dict[int, float], every: int) -> list[list[float]]:
    """``[[step, accuracy %], ...]``: at every multiple of ``every`` (and the last step), the mean of the
    per-step training accuracies (fractions, keyed by the number of updates done, 1-based) of the steps
    since the previous point; a point with no logged step is left out."""
    if every < 1:
        raise ValueError(f"every: expected a positive integer, got {every}")
    if not accuracies:
        return []
    last = max(accuracies)
    ends = [*range(every, last + 1, every)] + ([last] if last % every else [])
    points, start = [], 0
    for end in ends:
        window = [accuracies[s] for s in range(start + 1, end + 1) if s in accuracies]
        if window:
            points.append([end, round(100 * statistics.fmean(window), 2)])
        start = end
    return points


def fit_step(points: Sequence[Sequence[float]]) -> int | str:
    """The first step of the curve at or above ``FIT`` (99 %); ``""`` where it never gets there."""
    return next((int(step) for step, acc in points if acc >= 100 * FIT - 1e-9), "")


@contextlib.contextmanager
def only_lengths(module, lengths: Sequence[int]) -> Iterator[None]:
    """Inside ``module``, ``range(1, max(lengths) + 1)`` is ``lengths``; every other ``range`` is the builtin.

    Their ``range_evaluation`` evaluates ``range(1, max_test_length + 1)``; this sets the lengths it
    iterates without changing its code (its per-length sampling, seeds and accuracy stay its own)."""
    span = (1, max(lengths) + 1)

    def chosen(*args):
        return list(lengths) if args == span else builtins.range(*args)

    module.range = chosen
    try:
        yield
    finally:
        del module.range


# ----------------------------------------------------------------------------- deepmind's side (their venv)


def repair_operators(task) -> bool:
    """Keep their Modular Arithmetic's operators in a tuple instead of a generator; whether it did.

    Their ``ModularArithmetic.__init__`` stores ``self._operators`` as a generator expression, and its jitted
    ``sample_batch`` reads it with ``list(self._operators)`` when traced: the first length traced empties it,
    and the next length's trace draws the operators from an empty array (``jax.random.choice`` raises "a must
    be greater than 0"), so their training loop stops at its second length. The same operators, in a tuple,
    are read alike at every trace. Their files are not changed."""
    operators = getattr(task, "_operators", None)
    if isinstance(operators, types.GeneratorType):
        task._operators = tuple(operators)
        return True
    return False


def peer_worker(args) -> dict[str, Any]:
    """Train and range-evaluate one run with their code (runs under ``--peer-python``): module docstring."""
    sys.path.insert(0, speed._peer_import_root(args.peer_repo))
    import jax
    import numpy as np
    from neural_networks_chomsky_hierarchy.experiments import constants, range_evaluation, training
    from neural_networks_chomsky_hierarchy.experiments import curriculum as curriculum_lib

    task = constants.TASK_BUILDERS[args.task]()
    repair_operators(task)
    model, loss_fn, accuracy_fn = speed.example_pieces(task, args.peer_model, json.loads(args.peer_kwargs))
    params = training.ClassicTrainingParams(
        seed=args.seed,
        model_init_seed=args.seed,
        training_steps=args.steps - 1,  # the loop runs training_steps + 1 steps
        log_frequency=1,  # every step's training accuracy: the learning curve
        length_curriculum=curriculum_lib.UniformCurriculum(values=list(range(1, args.max_train_length + 1))),
        batch_size=BATCH,
        task=task,
        model=model,
        loss_fn=loss_fn,
        learning_rate=args.learning_rate,
        accuracy_fn=accuracy_fn,
        compute_full_range_test=False,
        is_autoregressive=False,
    )
    t0 = time.perf_counter()
    logged, _, trained = training.TrainingWorker(params, use_tqdm=False).run()
    jax.block_until_ready(trained)
    train_seconds = time.perf_counter() - t0

    lengths = test_lengths(args.max_train_length + 1, args.max_test_length, args.length_step)
    evaluation = range_evaluation.EvaluationParams(
        model=model,
        params=trained,
        accuracy_fn=accuracy_fn,
        sample_batch=task.sample_batch,
        max_test_length=max(lengths),
        total_batch_size=args.examples_per_length,
        sub_batch_size=min(args.examples_per_length, 64),  # their sub-batch, capped by the examples
        is_autoregressive=False,
    )
    t0 = time.perf_counter()
    with only_lengths(range_evaluation, lengths):
        scored = range_evaluation.range_evaluation(evaluation, use_tqdm=False)
    eval_seconds = time.perf_counter() - t0
    per_length = [[int(r["length"]), float(r["accuracy"])] for r in scored]
    return {
        "accuracies": [float(r["train_accuracy"]) for r in logged],  # step r["step"] + 1, in order
        "per_length": per_length,
        "score": float(np.mean([a for _, a in per_length])),
        "train_seconds": train_seconds,
        "eval_seconds": eval_seconds,
        "params": sum(int(x.size) for x in jax.tree_util.tree_leaves(trained)),
        "versions": {
            **speed._versions(("jax", "jaxlib", "dm-haiku", "optax", "numpy")),
            "backend": jax.default_backend(),
        },
    }


# ----------------------------------------------------------------------------- the two sides, from the main process


def peer_kwargs(task: str, model: str, max_train: int, max_test: int) -> dict[str, Any]:
    """Their model's keyword arguments: the speed runner's sizes, the memory as large as ours (module docstring)."""
    from benchmarks.accuracy import chomsky

    kwargs = dict(peer_arch(model).peer_kwargs)
    if model in PEER_MEMORY:
        kwargs[PEER_MEMORY[model]] = chomsky.longest_sequence(task, max_train, max_test)
    return kwargs


def peer_command(
    python: str,
    repo: str,
    task: str,
    model: str,
    seed: int,
    steps: int,
    learning_rate: float,
    max_train: int,
    max_test: int,
    length_step: int,
    examples: int,
) -> list[str]:
    """The command that trains and scores one run of theirs (``--worker``, under their Python)."""
    return [
        python,
        "-m",
        "benchmarks.accuracy.chomsky_peer",
        "--worker",
        "--task",
        task,
        "--peer-model",
        peer_arch(model).peer,
        "--peer-kwargs",
        json.dumps(peer_kwargs(task, model, max_train, max_test), sort_keys=True),
        "--seeds",
        str(seed),
        "--steps",
        str(steps),
        "--learning-rate",
        repr(learning_rate),
        "--max-train-length",
        str(max_train),
        "--max-test-length",
        str(max_test),
        "--length-step",
        str(length_step),
        "--examples-per-length",
        str(examples),
        "--peer-repo",
        str(Path(repo).resolve()),
    ]


def run_peer(cmd: list[str], workdir: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """The worker's result for ``cmd``: read back from ``workdir/result.json`` when it was made with
    ``settings``, else computed by the worker (``speed.run_worker``) and kept there."""
    path = workdir / "result.json"
    if path.exists():
        kept = json.loads(path.read_text())
        if kept.get("settings") == settings:
            return kept["result"]
    result = speed.run_worker(cmd)
    workdir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"settings": settings, "result": result}) + "\n")
    return result


def ours_config(task: str, model: str, seed: int, steps: int, learning_rate: float, max_train: int, max_test: int):
    """The chomsky runner's configuration (``chomsky.make_config``) at ``steps`` and ``learning_rate``, logging
    every step's training metrics (the learning curve)."""
    import dataclasses

    from benchmarks.accuracy import chomsky

    config = chomsky.make_config(task, model, seed, None, max_train, max_test, steps)
    return config.replace(optimizer=dataclasses.replace(config.optimizer, learning_rate=learning_rate), log_every=1)


def run_ours(config, workdir: Path, lengths: list[int], examples: int) -> dict[str, Any]:
    """Train (or resume, or read back) one run of ours in ``workdir`` and range-evaluate it, as the runner does."""
    from benchmarks.accuracy import chomsky
    from panm_jax.train import loop
    from panm_jax.train.io import read_jsonl
    from panm_jax.train.range_eval import FITTED, PER_LENGTH

    if not chomsky.finished(workdir, config):
        print(f"== ours: {config.model} on {config.task}, seed {config.seed} -> {workdir}", flush=True)
        loop.train_and_evaluate(config, workdir, progress=False)
    max_train, max_test = config.task_options["max_train_length"], config.task_options["max_test_length"]
    exact = chomsky.exact_shapes(config.task, config.model, max_train, max_test)
    record = chomsky.range_record(workdir, config, lengths, examples, PER_LENGTH if exact else FITTED)
    accuracies = {}
    for r in read_jsonl(workdir / "metrics.jsonl"):  # a step logged twice (a resumed run): the later line
        if "token_accuracy" in r and "step" in r:
            accuracies[int(r["step"])] = float(r["token_accuracy"])
    _, validation_fit = chomsky.fit(workdir, config.select_mode)
    results = json.loads((workdir / "results.json").read_text())
    return {
        "accuracies": accuracies,
        "per_length": [[int(r["length"]), float(r[record["metric"]])] for r in record["rows"]],
        "score": float(record["score"]),
        "selected_step": record.get("step"),
        "validation_fit_step": validation_fit,
        "train_seconds": results.get("training", {}).get("wall_seconds"),
        "eval_seconds": record.get("wall_seconds"),
    }


def make_row(task: str, level: str, model: str, code: str, seed: int, out: dict[str, Any], every: int) -> dict:
    """One record row from a side's result (``accuracies``: fractions by step, as ``curve`` reads them; a list:
    one per step, in order); ``steps``: the steps it logged."""
    accuracies = out["accuracies"]
    if isinstance(accuracies, list):
        accuracies = {i + 1: a for i, a in enumerate(accuracies)}
    points = curve(accuracies, every)

    def seconds(v):
        return round(v, 1) if isinstance(v, int | float) else ""

    return {
        "task": task,
        "level": level,
        "model": model,
        "code": code,
        "seed": seed,
        "steps": max(accuracies, default=0),
        "fit_step": fit_step(points),
        "train_accuracy": round(max((a for _, a in points), default=0.0), 1),
        "last_accuracy": round(points[-1][1], 1) if points else "",
        "score": round(100 * out["score"], 1),
        "selected_step": out.get("selected_step", max(accuracies, default=0)),
        "validation_fit_step": out.get("validation_fit_step", ""),
        "train_seconds": seconds(out.get("train_seconds")),
        "eval_seconds": seconds(out.get("eval_seconds")),
        "curve": points,
        "test_accuracy": [[n, round(100 * a, 2)] for n, a in out["per_length"]],
    }


def plot_cell(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """Both codes' learning curves of one cell (one line per code and seed), the ``FIT`` line dotted; PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"deepmind": "tab:blue", "ours": "tab:orange"}
    styles = ("-", "--", ":", "-.")
    seeds = sorted({r["seed"] for r in rows})
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    for r in rows:
        xs = [p[0] for p in r["curve"]]
        ys = [p[1] for p in r["curve"]]
        fit = f", fit at {r['fit_step']}" if r["fit_step"] != "" else ""
        ax.plot(
            xs,
            ys,
            color=colours.get(r["code"], "grey"),
            ls=styles[seeds.index(r["seed"]) % len(styles)],
            lw=1.3,
            label=f"{r['code']} seed {r['seed']} (score {r['score']}%{fit})",
        )
    ax.axhline(100 * FIT, color="grey", lw=0.8, ls=":")
    ax.set_ylim(0, 102)
    ax.set_xlim(left=0)
    ax.set_xlabel("training step")
    ax.set_ylabel("training accuracy (%)")
    ax.set_title(f"{rows[0]['task']}, {rows[0]['model']}: DeepMind's code and ours")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def parse_cells(text: str) -> list[tuple[str, str]]:
    """``"parity_check:rnn,reverse_string:stack_rnn"`` -> cells; a model may be named as theirs (``lstm``)."""
    cells = []
    for item in (c.strip() for c in text.split(",") if c.strip()):
        task, _, model = item.partition(":")
        model = speed.ARCHS[model].ours if model in speed.ARCHS else model
        peer_arch(model)  # refuses a model without theirs
        cells.append((task, model))
    return cells


def summary(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per cell and code: seeds, how many fit, the fit steps, mean train accuracy and score."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["task"], r["model"], r["code"]), []).append(r)
    out = []
    for (task, model, code), runs in groups.items():
        out.append(
            {
                "cell": f"{task}: {model}",
                "code": code,
                "seeds": ",".join(str(r["seed"]) for r in runs),
                "steps": ",".join(sorted({str(r["steps"]) for r in runs})),
                "fit": f"{sum(r['fit_step'] != '' for r in runs)} of {len(runs)}",
                "fit_step": ",".join(str(r["fit_step"]) or "-" for r in runs),
                "train_accuracy": round(statistics.fmean(r["train_accuracy"] for r in runs), 1),
                "score": round(statistics.fmean(r["score"] for r in runs), 1),
            }
        )
    return out


SUMMARY_COLUMNS = ["cell", "code", "seeds", "steps", "fit", "fit_step", "train_accuracy", "score"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peer-python", default="", help="a Python interpreter with jax, dm-haiku, optax installed")
    p.add_argument("--peer-repo", default="", help=f"a checkout of github.com/{speed.PEER_REPO}")
    p.add_argument("--peer-commit", default="", help="the checkout's commit, where it is not a git work tree")
    p.add_argument(
        "--cells", default=",".join(f"{t}:{m}" for t, m in CELLS), help="comma-separated task:model (default: CELLS)"
    )
    p.add_argument("--seeds", default="0,1", help="comma-separated seeds (default 0,1)")
    p.add_argument("--steps", type=int, default=2000, help="training steps per run, both codes (default 2000)")
    p.add_argument("--curve-every", type=int, default=100, help="steps per point of the learning curve (100)")
    p.add_argument("--learning-rate", type=float, default=1e-3, help="Adam's learning rate, both codes (1e-3)")
    paper_train, paper_test = published.CHOMSKY_LENGTHS
    p.add_argument(
        "--max-train-length",
        type=int,
        default=paper_train,
        help=f"longest training length ({paper_train}, the paper's)",
    )
    p.add_argument(
        "--max-test-length",
        type=int,
        default=paper_test,
        help=f"longest test length ({paper_test}, the paper's); it sizes the memories, and DeepMind's Tape-RNN costs "
        "the square of its tape per step",
    )
    p.add_argument("--sampled", action="store_true", help="every 10th test length (and the last), 16 examples each")
    p.add_argument("--length-step", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--examples-per-length", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--workdir", default="runs/chomsky_peer")
    p.add_argument("--name", default=None, help="record under benchmarks/results/<device>/chomsky_peer_NAME.*")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--task", default="", help=argparse.SUPPRESS)
    p.add_argument("--peer-model", default="", help=argparse.SUPPRESS)
    p.add_argument("--peer-kwargs", default="{}", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.length_step = args.length_step or (SAMPLED[0] if args.sampled else 1)
    args.examples_per_length = args.examples_per_length or (SAMPLED[1] if args.sampled else FULL_EXAMPLES)
    if args.worker:  # under --peer-python: no flax, no panm_jax, no benchmarks.common
        args.seed = int(args.seeds)
        print(speed.RESULT_PREFIX + json.dumps(peer_worker(args)), flush=True)
        return 0

    cells = parse_cells(args.cells)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    for name in ("steps", "curve_every", "length_step", "examples_per_length"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')}: expected a positive integer, got {getattr(args, name)}")
    if not cells or not seeds:
        raise SystemExit("--cells and --seeds: expected at least one each")
    if args.max_train_length < 1:
        raise SystemExit(f"--max-train-length: expected a positive integer, got {args.max_train_length}")
    if args.max_test_length <= args.max_train_length:
        raise SystemExit(
            f"--max-test-length: expected more than --max-train-length ({args.max_train_length}), "
            f"got {args.max_test_length}"
        )
    if not args.peer_python or not os.access(args.peer_python, os.X_OK):
        raise SystemExit(f"--peer-python: not an executable file: {args.peer_python!r}")
    if not (Path(args.peer_repo) / speed.PEER_MARKER).is_file():
        raise SystemExit(
            f"--peer-repo: {args.peer_repo!r} has no {speed.PEER_MARKER}; expected a checkout of {speed.PEER_REPO}"
        )

    from benchmarks import common
    from benchmarks.speed.peers import checkout_commit, load_average
    from panm_jax.tasks import get_task
    from panm_jax.tasks.chomsky import CHOMSKY_TASKS

    unknown = [t for t, _ in cells if t not in CHOMSKY_TASKS]
    if unknown:
        raise SystemExit(f"--cells: unknown tasks {unknown}; expected names among {list(CHOMSKY_TASKS)}")
    lo, hi = args.max_train_length + 1, args.max_test_length
    lengths = test_lengths(lo, hi, args.length_step)
    commit = args.peer_commit or checkout_commit(args.peer_repo)
    env = {**common.environment(), "load_average_before": load_average()}
    env["affinity"] = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "unknown"
    env["peer_checkout"] = f"{speed.PEER_REPO} @ {commit}"
    lr_tag = "" if args.learning_rate == 1e-3 else f"-lr{args.learning_rate:g}"
    # Other lengths size the memories differently: their runs are kept apart.
    paper = (args.max_train_length, hi) == published.CHOMSKY_LENGTHS
    range_tag = "" if paper else f"-train{args.max_train_length}-test{hi}"
    sweep = (
        f"every {args.length_step}-th length of {lo}..{hi} and {hi}"
        if args.length_step > 1
        else f"every length {lo}..{hi}"
    )
    repaired = (
        "; its Modular Arithmetic task with its operators kept in a tuple instead of a generator, without which "
        "its training stops at the second length it draws (repair_operators)"
        if any(task == "modular_arithmetic" for task, _ in cells)
        else ""
    )
    notes = (
        f"Each cell trained by DeepMind's code (code 'deepmind', {speed.PEER_REPO} @ {commit}, run "
        f"unchanged{repaired}) and by ours ('ours', benchmarks.accuracy.chomsky's code path) for {args.steps:,} "
        "steps, seeds "
        f"{','.join(map(str, seeds))} on both sides, Adam {args.learning_rate:g} after global-norm clipping at 1, "
        f"batch {BATCH}, lengths 1..{args.max_train_length} drawn uniformly (one per batch), hidden width 256, "
        "memory cells of width 8, the Stack-RNN's stack and the Tape-RNN's tape one cell per step of the longest "
        "test sequence on both sides. 'curve': [step, %] the mean token accuracy of each side's own training "
        f"batches over the {args.curve_every} steps up to the step; 'fit_step': its first point at or above "
        f"{100 * FIT:g} % (blank: never); 'train_accuracy' / 'last_accuracy': its best / last point. 'score': token "
        f"accuracy (%) averaged over the test lengths ({sweep}: {len(lengths)} lengths, {args.examples_per_length} "
        "examples each), by DeepMind's range_evaluation of its final parameters, by our runner's range evaluation "
        "of its checkpoint best on its validation at the training lengths ('selected_step'); 'validation_fit_step': "
        f"the first of our runner's validations (256 examples, every 250 steps) at or above {100 * FIT:g} %. "
        "'train_seconds': training wall time, compilation included; 'eval_seconds': the range evaluation's. "
        "'test_accuracy': [length, %] per test length."
    )
    command = common.portable_command(argv, "benchmarks.accuracy.chomsky_peer")
    name = f"chomsky_peer_{args.name}" if args.name else None
    rows: list[dict[str, Any]] = []

    def record() -> None:
        if name is None:
            return
        env["load_average_after"] = load_average()
        title = "Chomsky-hierarchy tasks: DeepMind's code and ours at equal steps and seeds"
        path = common.write_results(name, title, rows, COLUMNS, env, notes, command=command)
        for task, model in dict.fromkeys((r["task"], r["model"]) for r in rows):
            plot_cell(
                [r for r in rows if (r["task"], r["model"]) == (task, model)],
                path.parent / f"{name}_{task}_{model}.png",
            )

    for task, model in cells:
        level = get_task(task).level
        for seed in seeds:
            folder = Path(args.workdir) / task
            budget = f"s{seed}-{args.steps}steps{lr_tag}{range_tag}"
            cmd = peer_command(
                args.peer_python,
                args.peer_repo,
                task,
                model,
                seed,
                args.steps,
                args.learning_rate,
                args.max_train_length,
                args.max_test_length,
                args.length_step,
                args.examples_per_length,
            )
            settings = {"command": cmd[1:-1], "peer_checkout": env["peer_checkout"]}  # not the interpreter's path
            t0 = time.perf_counter()
            theirs = run_peer(cmd, folder / f"{model}-deepmind-{budget}", settings)
            env.setdefault("peer_versions", theirs.get("versions", {}))
            rows.append(make_row(task, level, model, "deepmind", seed, theirs, args.curve_every))
            print(f"   {task} {model} s{seed} deepmind: {time.perf_counter() - t0:.0f} s", flush=True)
            t0 = time.perf_counter()
            config = ours_config(task, model, seed, args.steps, args.learning_rate, args.max_train_length, hi)
            ours = run_ours(config, folder / f"{model}-ours-{budget}", lengths, args.examples_per_length)
            rows.append(make_row(task, level, model, "ours", seed, ours, args.curve_every))
            print(f"   {task} {model} s{seed} ours: {time.perf_counter() - t0:.0f} s", flush=True)
            for r in rows[-2:]:
                print(
                    f"   {r['code']}: fit at {r['fit_step'] or '-'}, train {r['train_accuracy']}%, score {r['score']}%",
                    flush=True,
                )
            record()
    print(common.markdown_table(summary(rows), SUMMARY_COLUMNS))
    if name is None:
        print("(not recorded: give --name to write benchmarks/results/<device>/chomsky_peer_NAME.*)")
    else:
        print("wrote", common.RESULTS_DIR / common.device_slug() / f"{name}.json", "and one plot per cell")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
