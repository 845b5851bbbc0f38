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
        [--num-train 5000] [--num-test 5000] [--name NAME]

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
  differ: the loss is the task's sigmoid cross-entropy (their code: mean squared error of the sigmoids),
  the initialisation is this library's (theirs: PyTorch's), and PANM's own sizes (``panm_srnn``'s
  defaults) are ours: the paper gives none.

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
import statistics
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


def task_options(language: str, num_train: int, num_test: int) -> dict[str, Any]:
    n, L = LANGUAGES[language]
    return {"n": n, "max_train_length": L, "num_train": num_train, "num_test": num_test}


def train_size(language: str, num_train: int, num_test: int) -> int:
    """How many training strings the language's fixed set holds (fewer than ``num_train`` where the
    lengths 2..L hold fewer strings: all 1,618 of ``D_2``)."""
    return get_task("dyck", **task_options(language, num_train, num_test)).dataset_size("train")


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
) -> TrainConfig:
    """One run: Adam ``lr``, no clipping, ``epochs`` epochs of ``ceil(training strings / batch)`` steps, the
    checkpoint selected on the whole training set at each epoch's end (``steps``: that many steps and one
    selection at the end instead)."""
    size = train_size(language, num_train, num_test)
    per_epoch = math.ceil(size / batch)
    total = steps if steps is not None else epochs * per_epoch
    every = steps if steps is not None else per_epoch
    examples = max(size, num_test)  # each evaluation set is walked whole: eval_batches stops at its end
    return TrainConfig(
        task="dyck",
        task_options=task_options(language, num_train, num_test),
        model=model,
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
    settings = {
        "languages": {lang: dict(zip(("n", "max_train_length"), LANGUAGES[lang], strict=True)) for lang in sizes},
        "models": args.model_list,
        "seeds": args.seed_list,
        "epochs": None if args.steps else args.epochs,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "optimizer": f"adam {args.lr:g}, no clipping",
        "num_train": args.num_train,
        "train_strings": sizes,
        "num_test": args.num_test,
        "selection": "the whole training set at each epoch's end (select_mode 'train')"
        if not args.steps
        else "the training set, once, at the end",
        "planned_runs": planned,
        "finished_runs": len(rows),
        "published": {"source": str(source), "mean_sequence_accuracy": reference},
        "name": args.name,
    }
    notes = (
        f"Sequence accuracy (%) of the checkpoint best on the training set, on {args.num_test:,} test strings per "
        f"test length (bins of even lengths, e.g. 12..14 for L+2 at L = 10); 'mean': over the four test lengths; "
        f"'train_sequence_accuracy': on the training set at the selected epoch. Budget: {budget}, batch "
        f"{args.batch_size}, Adam {args.lr:g}, no clipping; training strings per language: "
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
    p.add_argument("--num-train", type=int, default=5000, help="training strings per language")
    p.add_argument("--num-test", type=int, default=5000, help="test strings per test length")
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
    if args.name is not None and not args.name.replace("_", "").replace("-", "").isalnum():
        raise SystemExit(f"--name: expected letters, digits, '-' or '_', got {args.name!r}")
    from panm_jax.train.loop import train_and_evaluate

    sizes = {lang: train_size(lang, args.num_train, args.num_test) for lang in languages}
    budget = f"{args.steps}steps" if args.steps else f"{args.epochs}ep"
    tag = f"{budget}-b{args.batch_size}-lr{args.lr:g}-train{args.num_train}-test{args.num_test}"
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
        )
        workdir = Path(args.workdir) / language / f"{model}-s{seed}-{tag}"
        if not finished(workdir, config):
            print(f"== {model} on {language}, seed {seed} -> {workdir}", flush=True)
            train_and_evaluate(config, workdir, progress=False)
        per_epoch = None if args.steps else math.ceil(sizes[language] / args.batch_size)
        rows.append(run_row(language, model, seed, workdir, per_epoch))
        print(f"   {language} {model} s{seed}: " + ", ".join(f"{m} {rows[-1][m]}" for m in MODES), flush=True)
        if args.name:
            written = record(args, argv, rows, len(plan), sizes)
    print(common.markdown_table(rows, COLUMNS))
    print(common.markdown_table(summary_rows(rows), ["language", "model", "seeds", *MODES, "mean"]))
    if not args.name:
        print("(not recorded: give --name to write benchmarks/results/<device>/dyck_NAME.*)")
        return 0
    print("wrote", written, ".json and .png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
