"""Dyck languages, Fig. 3a of Le et al. 2024: PANM on the SRNN of Suzgun et al. 2019 against the SRNN alone.

Le, Nguyen, Do, Venkatesh & Tran 2024, *Plug, Play, and Generalize: Length Extrapolation with
Pointer-Augmented Neural Memory* (TMLR), §3.2 and Fig. 3a (Fig. 5, left, in its appendix): next-bracket
prediction on ``D_2`` (training strings of length up to L = 10) and ``D_3`` (L = 20), tested on strings
near ``L+2``, ``2L``, ``4L``, ``8L`` (``panm_jax/tasks/dyck.py``: Suzgun et al.'s generator, multi-hot
targets of the brackets that may come next); the metric is sequence accuracy (a string counts only if
every step's thresholded prediction is right). Models: ``srnn`` (Suzgun et al.'s Stack-RNN with the
softmax gate, their code's sizes) and ``panm_srnn`` (PANM's pointer memory over the tokens seen so far,
the SRNN as its controller; ``panm_jax/models/srnn.py``).

    .venv/bin/python -m benchmarks.accuracy.dyck [--languages D2,D3] [--models srnn,panm_srnn]
        [--seeds 0,1,2,3,4] [--epochs 5 | --steps N] [--batch-size 1] [--lr 0.01]
        [--loss bce|mse] [--train-set distinct|sampled] [--panm-reading decoder|encoder]
        [--num-train 5000] [--num-test 5000] [--name NAME]
    .venv/bin/python -m benchmarks.accuracy.dyck --code suzgun --models srnn --peer-python PYTHON
        --peer-repo DIR [--peer-commit SHA] [--peer-test-strings 500] [--languages ...] [--seeds ...]
        [--epochs 5] [--name NAME]

The paper's protocol (§3.2) and how this runner follows it:

* data: 5,000 training and 5,000 test strings per test length, fixed by the task's ``data_seed``
  (unique strings; ``D_2`` has only 1,618 strings of length 2..10, so its training set is all of them);
* 5 epochs (``--epochs``): an epoch is ``ceil(training strings / batch)`` steps, each batch drawn
  uniformly with replacement from the fixed training set (the training loop's way: not a shuffled pass
  over it, as Suzgun et al.'s code makes);
* the checkpoint chosen "on the training data at the end of each epoch": the loop's ``train`` selection
  mode evaluates the whole fixed training set (Dyck's ``eval_batches("train")``) every epoch and keeps
  the checkpoint with the best sequence accuracy (ties: the lower loss); the test sets are scored once,
  with that checkpoint;
* 5 seeds (``--seeds``), mean and standard deviation over them;
* training as in Suzgun et al.'s code, which the paper says it runs "using the default parameters"
  (its Appendix D.2): Adam with learning rate 0.01 (``--lr``), one string per step (``--batch-size``),
  no gradient clipping, the SRNN's sizes (8 hidden units, a stack of 104 cells of width 5). Where we
  differ: the loss is by default the task's sigmoid cross-entropy (their code: mean squared error of the
  sigmoids, ``--loss mse``), the initialisation is this library's (theirs: PyTorch's), the checkpoint is
  selected (their code keeps the last epoch's), and PANM's own sizes (``panm_srnn``'s defaults) are
  ours: the paper gives none.

Options for the departures from Suzgun et al.'s code (defaults: ours):

* ``--loss mse``: their loss, the mean squared error of the sigmoid outputs (the task's option ``loss``,
  ``panm_jax.tasks.losses.sigmoid_mean_squared_error``); default ``bce``, the sigmoid cross-entropy;
* ``--train-set sampled``: ``--num-train`` strings drawn by their generator with repeats kept (the task's
  option ``train_set``; ``D_2``'s 5,000 then hold about 420 distinct strings, mostly short ones). Their code
  does not do this: its ``generate_list`` rejects repeats, so the default ``distinct`` (unique strings, the
  same distribution of lengths) is theirs, and at ``D_2``, L = 10 their code can draw no more than the 1,618
  strings there are;
* ``--panm-reading``: ``decoder`` (default, Le et al. §3.2: raw tokens in the memory, the SRNN as the
  decoder) or ``encoder`` (their App. D.2: the SRNN encodes, its states fill the memory, PANM's own
  Controller GRU decodes); ``panm_srnn``'s option ``reading`` (``panm_jax/models/srnn.py``);
* ``--lr``: Adam's learning rate for every model of the command.

``--code suzgun`` trains and scores Suzgun et al.'s SRNN with their own code instead (github.com/
suzgunmirac/marnns, under ``--peer-python``, a Python with PyTorch and NumPy; ``--peer-repo``, a copy of
it, files unchanged): ``benchmarks/accuracy/dyck_peer.py`` runs their ``main.py`` with their defaults
(Adam 0.01, mean squared error, one string per step, the training strings in the order drawn, the last
epoch's weights), setting from outside only the language, the training window ``2..L``, the number of
distinct training strings (as many as this runner trains on: all 1,618 of ``D_2``, 5,000 of ``D_3``),
``--epochs``, the seed, and where outputs go; their ``test_model`` then scores the trained weights on the
first ``--peer-test-strings`` strings of each of this runner's test sets (their evaluation is one string at
a time), and their own test set (1,000 strings of lengths ``L+2..2L``) is kept as ``their_test``. A row
has the same columns as this runner's own (no step accuracy), ``code`` naming their commit
(``--peer-commit``, default ``git rev-parse HEAD`` in ``--peer-repo``).

``--steps N`` replaces the epochs with ``N`` steps per run and one selection at the end (a quick check,
not the protocol). Each run trains with ``panm_jax.train.train_and_evaluate`` in its own folder under
``--workdir`` (resumable: rerunning the command continues unfinished runs and reads finished ones
back). With ``--name`` the table (one row per run) is written to
``benchmarks/results/<device>/dyck_<name>.json`` after every run, so a recording cut short keeps
what it finished (``settings.planned_runs`` says how many the command asked for), with
``dyck_<name>.png``: sequence accuracy against test length, SRNN and PANM side by side, mean ± std over
seeds. ``make docs`` renders it on the Dyck results page beside the paper's one
published number per model (``benchmarks.accuracy.published.dyck``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.accuracy import published
from benchmarks.accuracy.chomsky import finished
from benchmarks.accuracy.criteria import fits
from benchmarks.accuracy.reproduce import steps_trained, trained_by
from benchmarks.accuracy.transduction import names, positive, seed_list, selection_record
from panm_jax import enable_compile_cache
from panm_jax.tasks import get_task
from panm_jax.train.config import OptimizerConfig, TrainConfig

# The paper's languages: the number of bracket types and the longest training string L.
LANGUAGES = {"D2": (2, 10), "D3": (3, 20)}
MODELS = ("srnn", "panm_srnn")
MODES = ("L+2", "2L", "4L", "8L")
LABELS = {"srnn": "SRNN", "panm_srnn": "PANM"}
MAX_EVAL_BATCH = 500
CODES = ("ours", "suzgun")
PEER = "suzgunmirac/marnns"  # Suzgun et al.'s code
PEER_SCRIPT = Path(__file__).with_name("dyck_peer.py")  # runs it under its own Python
PEER_TEST_STRINGS = 500  # test strings per bin scored by their code (its evaluation is one string at a time)
PEER_OWN_TEST = 1000  # their main.py's own test set (lengths L+2..2L; their default --test_size)
# --loss, --train-set, --panm-reading: each value and what it means (the record's settings spell it out).
LOSSES = {
    "bce": "sigmoid cross-entropy, summed over the outputs, mean over steps (ours)",
    "mse": "mean squared error of the sigmoid outputs, mean over steps and outputs (Suzgun et al.'s code)",
}
TRAIN_SETS = {
    "distinct": "distinct strings drawn by Suzgun et al.'s generator (all 1,618 of D2)",
    "sampled": "num_train strings drawn by Suzgun et al.'s generator, repeats kept",
}
READINGS = {
    "decoder": "Le et al. §3.2: raw tokens in the memory, the SRNN as the decoder (controller)",
    "encoder": "Le et al. App. D.2: the SRNN as the encoder filling the memory, PANM's Controller GRU, no decoder",
}


def task_options(
    language: str, num_train: int, num_test: int, loss: str = "bce", train_set: str = "distinct"
) -> dict[str, Any]:
    """The Dyck task's options (``loss`` and ``train_set`` only where they are not the defaults)."""
    n, L = LANGUAGES[language]
    options: dict[str, Any] = {"n": n, "max_train_length": L, "num_train": num_train, "num_test": num_test}
    if loss != "bce":
        options["loss"] = loss
    if train_set != "distinct":
        options["train_set"] = train_set
    return options


def train_size(language: str, num_train: int, num_test: int, train_set: str = "distinct") -> int:
    """How many training strings the language's fixed set holds (``distinct``: fewer than ``num_train`` where
    the lengths 2..L hold fewer strings, all 1,618 of ``D_2``; ``sampled``: ``num_train``)."""
    options = task_options(language, num_train, num_test, train_set=train_set)
    return get_task("dyck", **options).dataset_size("train")


def make_config(
    language: str,
    model: str,
    seed: int,
    *,
    epochs: int,
    steps: int | None,
    batch: int,
    lr: float,
    num_train: int,
    num_test: int,
    loss: str = "bce",
    train_set: str = "distinct",
    reading: str = "decoder",
) -> TrainConfig:
    """One run: Adam ``lr``, no clipping, ``epochs`` epochs of ``ceil(training strings / batch)`` steps, the
    checkpoint selected on the whole training set at each epoch's end (``steps``: that many steps and one
    selection at the end instead). ``loss`` and ``train_set``: the task's options of those names;
    ``reading``: ``panm_srnn``'s option of that name (``LOSSES``, ``TRAIN_SETS``, ``READINGS``)."""
    size = train_size(language, num_train, num_test, train_set)
    per_epoch = math.ceil(size / batch)
    total = steps if steps is not None else epochs * per_epoch
    every = steps if steps is not None else per_epoch
    examples = max(size, num_test)  # each evaluation set is walked whole: eval_batches stops at its end
    return TrainConfig(
        task="dyck",
        task_options=task_options(language, num_train, num_test, loss, train_set),
        model=model,
        model_options={"reading": reading} if model == "panm_srnn" and reading != "decoder" else {},
        seed=seed,
        num_steps=total,
        batch_size=batch,
        optimizer=OptimizerConfig(name="adam", learning_rate=lr, clip_value=None, clip_norm=None),
        eval_every=every,
        eval_examples=examples,
        eval_batch_size=min(examples, MAX_EVAL_BATCH),
        checkpoint_every=every,
        log_every=max(1, min(50, every)),
        select_mode="train",
        eval_modes=MODES,
    )


def run_row(language: str, model: str, seed: int, workdir: Path, per_epoch: int | None) -> dict[str, Any]:
    """The table row of one finished run: sequence accuracy (%) per test length, the training-set accuracy of
    the selected checkpoint, and step accuracy (%) per test length."""
    results = json.loads((workdir / "results.json").read_text())
    by_mode = {m["mode"]: m for m in results["modes"]}
    selected = selection_record(workdir, results["step"])
    row: dict[str, Any] = {
        "language": language,
        "model": model,
        "seed": seed,
        "steps": steps_trained(workdir),
        "selected_step": results["step"],
        "selected_epoch": results["step"] // per_epoch if per_epoch else "",
        "train_sequence_accuracy": round(100 * selected["sequence_accuracy"], 1) if selected else "",
        # fit: its sequence accuracy on the training strings reaches FIT (benchmarks.accuracy.criteria)
        "fit": fits(100 * selected["sequence_accuracy"]) if selected else "",
    }
    for mode in MODES:
        row[mode] = round(100 * by_mode[mode]["sequence_accuracy"], 1)
    row["mean"] = round(statistics.mean(100 * by_mode[m]["sequence_accuracy"] for m in MODES), 1)
    row["lengths"] = {m: by_mode[m]["length"] for m in MODES}
    row["test_strings"] = {m: by_mode[m]["examples"] for m in MODES}
    row["step_accuracy"] = {m: round(100 * by_mode[m]["step_accuracy"], 1) for m in MODES}
    row.update(common.cost_cells([results]))
    row["code"] = "; ".join(dict.fromkeys(trained_by(workdir)))
    return row


def peer_commit(repo: str, given: str | None) -> str:
    """The commit of the copy of Suzgun et al.'s code: ``given`` (``--peer-commit``), else ``git rev-parse
    HEAD`` in ``repo``."""
    if given:
        return given
    try:
        done = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        raise SystemExit(f"--peer-commit: expected the commit of {repo} (not a git checkout)") from None
    return done.stdout.strip()


def peer_counts(text: str) -> dict[str, int]:
    """``--peer-test-strings``: one count for every test bin, or four (``L+2,2L,4L,8L``)."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) == 1:
        values *= len(MODES)
    if len(values) != len(MODES) or min(values) < 1:
        raise SystemExit(f"--peer-test-strings: expected one positive count or four (L+2,2L,4L,8L), got {text!r}")
    return dict(zip(MODES, values, strict=True))


def peer_bins(language: str, num_train: int, num_test: int, counts: dict[str, int]) -> dict[str, list[str]]:
    """The first ``counts[mode]`` strings of each of this runner's fixed test sets, written in Suzgun et al.'s
    alphabet (``()[]{}``: the task's own symbols)."""
    task = get_task("dyck", **task_options(language, num_train, num_test))
    return {m: ["".join(task.symbols[i] for i in s) for s in task.dataset(m)[: counts[m]]] for m in MODES}


def peer_command(args, language: str, seed: int, workdir: Path) -> list[str]:
    """The command that trains and scores Suzgun et al.'s SRNN (``dyck_peer.py`` under ``--peer-python``): their
    ``main.py``'s defaults but for the language, the training window ``2..L``, as many distinct training strings as
    this runner trains on (all 1,618 of ``D_2``), ``--epochs`` and the seed."""
    n, L = LANGUAGES[language]
    size = train_size(language, args.num_train, args.num_test)
    return [
        args.peer_python,
        str(PEER_SCRIPT),
        "--repo",
        args.peer_repo,
        "--num-par",
        str(n),
        "--max-train-length",
        str(L),
        "--training-size",
        str(size),
        "--test-size",
        str(PEER_OWN_TEST),
        "--epochs",
        str(args.epochs),
        "--seed",
        str(seed),
        "--bins",
        str(workdir / "bins.json"),
        "--workdir",
        str(workdir),
    ]


def run_peer(args, language: str, seed: int, workdir: Path) -> None:
    """Train and score one run of Suzgun et al.'s code in ``workdir`` unless it holds a finished run of the same
    request (their commit, the command's flags, the test strings)."""
    command = peer_command(args, language, seed, workdir)
    request = {"commit": args.commit, "flags": command[4:], "test_strings": args.peer_counts}
    done = workdir / "request.json"
    if (workdir / "results.json").exists() and done.exists() and json.loads(done.read_text()) == request:
        return
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "results.json").unlink(missing_ok=True)
    bins = peer_bins(language, args.num_train, args.num_test, args.peer_counts)
    (workdir / "bins.json").write_text(json.dumps(bins))
    print(f"== Suzgun et al.'s srnn on {language}, seed {seed} -> {workdir}", flush=True)
    run_command(command, {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")})
    done.write_text(json.dumps(request))


def run_command(command: list[str], env: dict[str, str]) -> None:
    """Run ``command`` (their code, under its own Python) with ``env``; a failure stops the runner."""
    subprocess.run(command, check=True, env=env)


def peer_row(language: str, seed: int, workdir: Path, commit: str) -> dict[str, Any]:
    """The table row of one finished run of Suzgun et al.'s code: as ``run_row``'s, the last epoch's weights (their
    code selects no checkpoint), sequence accuracy only (their ``test_model``), and their own test set's score."""
    results = json.loads((workdir / "results.json").read_text())
    flags, bins = results["argv"], results["bins"]
    steps = flags["n_epoch"] * flags["training_size"]
    train = results["train_sequence_accuracy"]
    row: dict[str, Any] = {
        "language": language,
        "model": "srnn",
        "seed": seed,
        "steps": steps,
        "selected_step": steps,
        "selected_epoch": flags["n_epoch"],
        "train_sequence_accuracy": round(train, 1),
        "fit": fits(train),
    }
    for mode in MODES:
        row[mode] = round(bins[mode]["sequence_accuracy"], 1)
    row["mean"] = round(statistics.mean(bins[m]["sequence_accuracy"] for m in MODES), 1)
    row["lengths"] = {m: "{}..{} (even)".format(*bins[m]["lengths"]) for m in MODES}
    row["test_strings"] = {m: bins[m]["examples"] for m in MODES}
    lo, hi = results["their_test_window"]
    row["their_test"] = {
        "lengths": f"{lo}..{hi}",
        "strings": flags["test_size"],
        "sequence_accuracy": round(results["their_test_sequence_accuracy"], 1),
    }
    row["train_seconds"] = f"{results['train_seconds']:.0f}"
    row["eval_seconds"] = f"{results['eval_seconds']:.0f}"
    row["code"] = f"{PEER}@{commit[:7]} (torch {results['torch']})"
    return row


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value)."""
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def summary_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per language and model: mean ± std over seeds of the sequence accuracy at each test length."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["language"], r["model"]), []).append(r)
    out = []
    for (language, model), runs in groups.items():
        cells = {}
        for mode in (*MODES, "mean"):
            mean, std = mean_std([r[mode] for r in runs])
            cells[mode] = f"{mean:.1f} ± {std:.1f}" if len(runs) > 1 else f"{mean:.1f}"
        out.append({"language": language, "model": model, "seeds": len(runs), **cells})
    return out


def plot(rows: list[dict[str, Any]], out: Path) -> None:
    """Sequence accuracy against test length, one panel per language, SRNN and PANM side by side: the mean
    over seeds, a bar of ± one standard deviation (the paper's Fig. 3a)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from panm_jax.train.report import save_figure

    languages = list(dict.fromkeys(r["language"] for r in rows))
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axes = plt.subplots(1, len(languages), figsize=(4.2 * len(languages), 3.6), dpi=120, squeeze=False)
    width = 0.8 / max(len(models), 1)
    for ax, language in zip(axes[0], languages, strict=True):
        here = [r for r in rows if r["language"] == language]
        for i, model in enumerate(models):
            runs = [r for r in here if r["model"] == model]
            if not runs:
                continue
            stats = [mean_std([r[m] for r in runs]) for m in MODES]
            xs = [j + (i - (len(models) - 1) / 2) * width for j in range(len(MODES))]
            ax.bar(
                xs,
                [s[0] for s in stats],
                width,
                yerr=[s[1] for s in stats],
                capsize=3,
                label=f"{LABELS.get(model, model)} ({len(runs)} seed{'s' * (len(runs) > 1)})",
            )
        ax.set_xticks(range(len(MODES)), [f"{m}\n{here[0]['lengths'][m].removesuffix(' (even)')}" for m in MODES])
        ax.set_ylim(0, 105)
        ax.set_title(f"$D_{LANGUAGES[language][0]}$ (L = {LANGUAGES[language][1]})")
        ax.set_xlabel("test length")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize="small")
    axes[0][0].set_ylabel("sequence accuracy (%)")
    save_figure(fig, out)


COLUMNS = [
    "language",
    "model",
    "seed",
    "steps",
    "selected_epoch",
    "train_sequence_accuracy",
    "fit",
    *MODES,
    "mean",
    "code",
]


def record(args, argv, rows: list[dict[str, Any]], planned: int, sizes: dict[str, int]) -> Path:
    """Write ``dyck_<name>.{json,png}`` with the rows finished so far; return the JSON's path."""
    command = common.portable_command(argv, "benchmarks.accuracy.dyck")
    budget = f"{args.steps:,} steps per run" if args.steps else f"{args.epochs} epochs"
    reference, source = published.dyck(), published.DYCK_SOURCE
    peer = args.code == "suzgun"
    settings = {
        "languages": {lang: dict(zip(("n", "max_train_length"), LANGUAGES[lang], strict=True)) for lang in sizes},
        "code": f"{PEER}@{args.commit}" if peer else "ours",
        "models": args.model_list,
        "seeds": args.seed_list,
        "epochs": None if args.steps else args.epochs,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "optimizer": f"adam {args.lr:g}, no clipping",
        "loss": LOSSES[args.loss],
        "train_set": TRAIN_SETS[args.train_set],
        "num_train": args.num_train,
        "train_strings": sizes,
        "num_test": args.num_test,
        "selection": "none: their code keeps the last epoch's weights"
        if peer
        else "the whole training set at each epoch's end (select_mode 'train')"
        if not args.steps
        else "the training set, once, at the end",
        "planned_runs": planned,
        "finished_runs": len(rows),
        "published": {"source": str(source), "mean_sequence_accuracy": reference},
        "name": args.name,
    }
    if "panm_srnn" in args.model_list:
        settings["panm_reading"] = READINGS[args.panm_reading]
    if peer:
        settings["test_strings"] = args.peer_counts
        settings["their_test"] = f"{PEER_OWN_TEST:,} distinct strings of lengths L+2..2L drawn by their generator"
    tested = (
        "the first " + ", ".join(f"{n:,} ({m})" for m, n in args.peer_counts.items()) + " strings of this runner's "
        f"fixed test sets of {args.num_test:,} per test length"
        if peer
        else f"{args.num_test:,} test strings per test length"
    )
    if peer:
        head = (
            f"Suzgun et al.'s code ({PEER}@{args.commit[:7]}, main.py and tasks/dyck_generator.py unchanged, "
            "run by benchmarks/accuracy/dyck_peer.py under their Python): their SRNN (stack_rnn_softmax, default "
            "sizes), their loss (mean squared error of the sigmoids), Adam 0.01, one string per step, the training "
            "strings in the order their generator drew them, seeds set before main() runs; the weights after the "
            f"last of {args.epochs} epochs (their code selects no checkpoint), scored by their test_model on "
            f"{tested} (bins of even lengths, e.g. 12..14 for L+2 at L = 10). 'their_test': their own test set. "
        )
    else:
        head = (
            f"Sequence accuracy (%) of the checkpoint best on the training set, on {tested} (bins of even lengths, "
            f"e.g. 12..14 for L+2 at L = 10). Loss: {LOSSES[args.loss]}; training set: {TRAIN_SETS[args.train_set]}"
            + (f"; PANM: {READINGS[args.panm_reading]}" if "panm_srnn" in args.model_list else "")
            + ". "
        )
    notes = (
        head + "'mean': over the four test lengths; 'train_sequence_accuracy': on the training set at the selected "
        f"epoch. Budget: {budget}, batch {args.batch_size}, Adam {args.lr:g}, no clipping; training strings per "
        "language: "
        + ", ".join(f"{lang} {n:,}" for lang, n in sizes.items())
        + f". Runs finished: {len(rows)} of {planned}. Published: {source.paper}, {source.table}: mean sequence "
        f"accuracy {reference['srnn']} (SRNN) and {reference['panm_srnn']} (PANM); Fig. 3a's per-length values are "
        "drawn, not printed."
    )
    path = common.write_results(
        f"dyck_{args.name}",
        "Dyck languages: PANM on the SRNN against the SRNN",
        rows,
        COLUMNS,
        common.environment(),
        notes,
        command,
        settings=settings,
    )
    plot(rows, path.with_suffix(".png"))
    return path


def choice(value: str, option: str, choices) -> str:
    """``value`` if it is one of ``choices``, else a one-line exit naming ``--option``."""
    if value not in choices:
        raise SystemExit(f"--{option}: expected one of {','.join(choices)}, got {value!r}")
    return value


def main(argv=None) -> int:
    enable_compile_cache()  # a rerun reads the programs it compiled (panm_jax/train/compile_cache.py)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--languages", default=",".join(LANGUAGES), help=f"from {','.join(LANGUAGES)}")
    p.add_argument("--models", default=",".join(MODELS), help=f"from {','.join(MODELS)}")
    p.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated seeds (the paper: 5 runs)")
    p.add_argument("--epochs", type=int, default=5, help="passes' worth of steps over the training set")
    p.add_argument("--steps", type=int, default=None, help="steps per run instead of epochs (a quick check)")
    p.add_argument("--batch-size", type=int, default=1, help="strings per step (Suzgun et al.'s code: 1)")
    p.add_argument("--lr", type=float, default=0.01, help="Adam's learning rate (Suzgun et al.'s code: 0.01)")
    p.add_argument("--loss", default="bce", help="bce (sigmoid cross-entropy) or mse (Suzgun et al.'s code)")
    p.add_argument("--train-set", default="distinct", help="distinct (the fixed unique strings) or sampled")
    p.add_argument("--panm-reading", default="decoder", help="decoder (Le et al. §3.2) or encoder (their App. D.2)")
    p.add_argument("--num-train", type=int, default=5000, help="training strings per language")
    p.add_argument("--num-test", type=int, default=5000, help="test strings per test length")
    p.add_argument("--code", default="ours", help="ours, or suzgun: Suzgun et al.'s code, run unchanged")
    p.add_argument("--peer-python", default=None, help="--code suzgun: a Python with PyTorch and NumPy")
    p.add_argument("--peer-repo", default=None, help="--code suzgun: a copy of github.com/suzgunmirac/marnns")
    p.add_argument("--peer-commit", default=None, help="--code suzgun: its commit (default: git rev-parse HEAD)")
    p.add_argument(
        "--peer-test-strings",
        default=str(PEER_TEST_STRINGS),
        help="--code suzgun: test strings scored per test length, one count or four (L+2,2L,4L,8L)",
    )
    p.add_argument("--workdir", default="runs/dyck")
    p.add_argument("--name", default=None, help="record the table as benchmarks/results/<device>/dyck_NAME.*")
    args = p.parse_args(argv)
    languages = names(args.languages, "languages", tuple(LANGUAGES))
    args.model_list = names(args.models, "models", MODELS)
    args.seed_list = seed_list(args.seeds, "seeds")
    for what in ("epochs", "batch_size", "num_train", "num_test"):
        value = getattr(args, what)
        if value < 1:
            raise SystemExit(f"--{what.replace('_', '-')}: expected a positive integer, got {value}")
    if args.steps is not None and args.steps < 1:
        raise SystemExit(f"--steps: expected a positive integer, got {args.steps}")
    positive(args.lr, "lr")
    choice(args.loss, "loss", tuple(LOSSES))
    choice(args.train_set, "train-set", tuple(TRAIN_SETS))
    choice(args.panm_reading, "panm-reading", tuple(READINGS))
    choice(args.code, "code", CODES)
    if args.name is not None and not args.name.replace("_", "").replace("-", "").isalnum():
        raise SystemExit(f"--name: expected letters, digits, '-' or '_', got {args.name!r}")
    if args.code == "suzgun":
        return main_peer(args, argv, languages)
    from panm_jax.train.loop import train_and_evaluate

    sizes = {lang: train_size(lang, args.num_train, args.num_test, args.train_set) for lang in languages}
    budget = f"{args.steps}steps" if args.steps else f"{args.epochs}ep"
    tag = f"{budget}-b{args.batch_size}-lr{args.lr:g}-train{args.num_train}-test{args.num_test}"
    tag += "".join(f"-{v}" for v in (args.loss, args.train_set) if v not in ("bce", "distinct"))
    plan = [(s, lang, m) for s in args.seed_list for lang in languages for m in args.model_list]
    rows: list[dict[str, Any]] = []
    for seed, language, model in plan:
        config = make_config(
            language,
            model,
            seed,
            epochs=args.epochs,
            steps=args.steps,
            batch=args.batch_size,
            lr=args.lr,
            num_train=args.num_train,
            num_test=args.num_test,
            loss=args.loss,
            train_set=args.train_set,
            reading=args.panm_reading,
        )
        here = tag + (f"-{args.panm_reading}" if model == "panm_srnn" and args.panm_reading != "decoder" else "")
        workdir = Path(args.workdir) / language / f"{model}-s{seed}-{here}"
        if not finished(workdir, config):
            print(f"== {model} on {language}, seed {seed} -> {workdir}", flush=True)
            train_and_evaluate(config, workdir, progress=False)
        per_epoch = None if args.steps else math.ceil(sizes[language] / args.batch_size)
        rows.append(run_row(language, model, seed, workdir, per_epoch))
        print(f"   {language} {model} s{seed}: " + ", ".join(f"{m} {rows[-1][m]}" for m in MODES), flush=True)
        if args.name:
            written = record(args, argv, rows, len(plan), sizes)
    return finish(args, rows, written if args.name else None)


def main_peer(args, argv, languages: list[str]) -> int:
    """``--code suzgun``: Suzgun et al.'s SRNN trained and scored by their own code (``dyck_peer.py``), one run per
    language and seed, recorded as ``main`` records its own."""
    if args.model_list != ["srnn"]:
        raise SystemExit("--models: expected srnn with --code suzgun (their code's SRNN), got " + args.models)
    for option, value, default in (
        ("steps", args.steps, None),
        ("batch-size", args.batch_size, 1),
        ("lr", args.lr, 0.01),
        ("loss", args.loss, "bce"),
        ("train-set", args.train_set, "distinct"),
    ):
        if value != default:
            raise SystemExit(f"--{option}: not an option of --code suzgun (their code's own setting is used)")
    if not args.peer_python or not args.peer_repo:
        raise SystemExit("--peer-python, --peer-repo: expected both with --code suzgun")
    if not (Path(args.peer_repo) / "main.py").is_file():
        raise SystemExit(f"--peer-repo: expected a copy of {PEER} (its main.py), got {args.peer_repo!r}")
    args.loss = "mse"  # what their code trains with, for the record
    args.peer_counts = peer_counts(args.peer_test_strings)
    args.commit = peer_commit(args.peer_repo, args.peer_commit)
    sizes = {lang: train_size(lang, args.num_train, args.num_test) for lang in languages}
    counts = "-".join(str(n) for n in dict.fromkeys(args.peer_counts.values()))
    tag = f"{args.commit[:7]}-{args.epochs}ep-train{args.num_train}-test{args.num_test}-{counts}"
    plan = [(s, lang) for s in args.seed_list for lang in languages]
    rows: list[dict[str, Any]] = []
    for seed, language in plan:
        workdir = (Path(args.workdir) / language / f"suzgun-srnn-s{seed}-{tag}").absolute()
        run_peer(args, language, seed, workdir)
        rows.append(peer_row(language, seed, workdir, args.commit))
        print(f"   {language} srnn s{seed}: " + ", ".join(f"{m} {rows[-1][m]}" for m in MODES), flush=True)
        if args.name:
            written = record(args, argv, rows, len(plan), sizes)
    return finish(args, rows, written if args.name else None)


def finish(args, rows: list[dict[str, Any]], written: Path | None) -> int:
    """Print the table and its summary; say where it was recorded."""
    print(common.markdown_table(rows, COLUMNS))
    print(common.markdown_table(summary_rows(rows), ["language", "model", "seeds", *MODES, "mean"]))
    if written is None:
        print("(not recorded: give --name to write benchmarks/results/<device>/dyck_NAME.*)")
        return 0
    print("wrote", written, ".json and .png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
