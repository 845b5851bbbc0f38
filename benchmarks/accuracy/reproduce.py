"""Reproduce the algorithmic-task tables of Le et al. 2024: train, select on L+1, test at five lengths.

Time: the paper's protocol (the default) wants a GPU: 50,000 steps per run. Five seeds of
PANM on Copy, trained together, took under 8.5 minutes of an NVIDIA H200
(``nvidia-h200/reproduce_copy_capped_5seeds.json``); the 2-core CPU of ``cpu-2cores/`` makes
about 4,000 PANM steps in 8 minutes (``reproduce_copy_quick_8m3s.json``), about 100 minutes a run.
``--quick`` trains ``--minutes`` (default 20) per model and seed, then tests: at the defaults
(five models, seed 0) 100 minutes of training on that CPU.

Le et al. 2024: Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural Memory, TMLR
(docs/references.md).

    python -m benchmarks.accuracy.reproduce --task copy --models panm,lstm,ntm,dnc,stack_lstm [--quick] [--seeds 0,1,2]
    python -m benchmarks.accuracy.reproduce --table algorithmic --models panm,lstm [--quick] [--seeds 0,1,2,3,4]

``--table algorithmic`` runs the six tasks of Tables 13-18 in the paper's order
(Copy, Reverse, Mix, Dynamic Recall, Priority Sort, ID Sort), each exactly as
``--task`` would (same folders, same per-task files), then writes one summary,
``reproduce_algorithmic[_quick].json``, whose notes name the published
models without a row of ours. ``--name NAME`` suffixes every file name
(``reproduce_copy_quick_NAME``), so that a run at another budget or with other
models does not overwrite a recorded table.

For each model this trains one run per seed (resumable: rerunning the command
continues unfinished runs), selects each run's checkpoint on the L+1 validation
set, evaluates it on the test sets at L, L+1, 2L+1, 4L+1 and 8L+1, and writes a table with the published numbers of
Le et al. 2024 (Tables 13-18, listed in docs/tasks.md) beside ours, ``ours - published``
per cell, as Markdown, CSV, JSON and a plot, under ``benchmarks/results/<device>/``.

Protocols:

* default: the paper's (docs/tasks.md): batch 128, 50,000 steps (100,000 for ID
  Sort), RMSprop 1e-4 with momentum 0.9 and decay 0.95, gradient values clipped
  at 10, evaluation every 1,000 steps on 1,000 examples per length;
  ``--minutes`` caps it (the run folder's tag becomes ``paper<minutes>m``, and
  the table's ``steps`` column says how many steps each run got);
* ``--quick``: a CPU budget: Adam 1e-3 with global-norm clipping at 1, at most
  ``--minutes`` (default 20) of training per model and seed, evaluation every
  500 steps on 512 examples. Model sizes stay the papers'. ``--minutes`` takes a
  default and per-model budgets, e.g. ``--minutes 8,panm=23,ntm=12``.

Each run has its own folder, ``<workdir>/<task>/<model>-s<seed>-<protocol>``
(``quick<minutes>m`` or ``paper``, plus ``-select<mode>`` when not L+1). A run whose
folder already holds ``results.json`` written with the same config is finished:
its results are read back, not trained again, so a table can be rebuilt (or
extended with more models) without repeating the runs in it.

``--set MODEL.OPTION=VALUE`` (repeatable) changes one model option of one model,
e.g. ``--set panm.score=scaled_dot``; the options join the run folder's name
(``-score=scaled_dot``) and, as a short hash, the table's (``_opt-`` and 6 hex digits,
``options_id``; the JSON's ``settings`` spell them out), so a variant never
overwrites the default runs or their record. ``--set task.OPTION=VALUE``
changes a task option for every model (a reading of the task, e.g.
``--set task.middle=fixed`` on Mix; ``panm_jax.tasks.algorithmic``), likewise
named (``task`` is a key of ``settings["model_options"]``); the table's columns are
then the task's own test modes (``2(L+1)`` ... under ``task.test_lengths=k(L+1)``),
the published numbers beside them by position.

Long-to-short (Le et al. 2024, App. D.6, Fig. 7 left: Mix trained on lengths 20-30, tested on 10, PANM
against Location Attention)::

    python -m benchmarks.accuracy.reproduce --task mix --models panm,lstm_attention \\
        --set lstm_attention.attention=location --set task.min_train_length=20 --set task.max_train_length=30 \\
        --set task.test_lengths=10,20,61 --seeds 0,1,2 --quick --steps 120 --name long_to_short

Task options that put a test length below the training range keep every checkpoint of a run, evaluate
``CURVE_POINTS`` times along a ``--steps`` budget and score each checkpoint on the short lengths afterwards
(selection stays on L+1). The table's columns are then the task's own modes, without the rows of Tables 13-18
(other lengths), with PANM's margin over Location Attention at length 10 beside the published one; each run's
learning curves go into the JSON and into ``<name>_curves.png``.

``--steps N`` sets a step budget instead of the protocol's (under ``--quick``, instead
of the minutes, unless ``--minutes`` is given too); a model's seeds then train
together under ``--quick`` as well, their budget being the same steps.

The paper reports the mean of 5 runs (the best checkpoint of each); ``--seeds``
runs several and reports mean and standard deviation. Under the paper protocol
a model's seeds train together, in one compiled program
(``panm_jax.train.train_seeds``: each seed's folder, checkpoints and
numbers are those of the seed trained alone, up to floating-point rounding),
and a ``--minutes`` cap is then one budget for the group; ``--one-by-one``
trains them one after another with ``panm_jax.train.train_and_evaluate``, as
``--quick`` always does (its budget is per seed). ``--parallel P`` trains P
(task, model) groups at once as separate processes, each writing
``<workdir>/<task>/<model>.log``; on a GPU, let them share it with NVIDIA MPS
(``nvidia-cuda-mps-control -d``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks import allocator, common
from benchmarks.accuracy import published
from benchmarks.accuracy.criteria import fit_count
from panm_jax import enable_compile_cache
from panm_jax.train.config import OptimizerConfig, TrainConfig, parse_overrides
from panm_jax.train.io import atomic_write_text, read_jsonl
from panm_jax.train.loop import train_and_evaluate
from panm_jax.train.report import save_figure

MODES = ("L", "L+1", "2L+1", "4L+1", "8L+1")

# The published row beside each model's runs (Le et al. 2024, Tables 13-18, ``published.algorithmic``), at the
# five test modes by position: on Copy the rows of the models run here, on the other tasks PANM's and "best
# other", the best of the 11 baselines at each length (``published.other_max``), for every model but PANM.
PUBLISHED: dict[str, dict[str, tuple[int, ...]]] = {
    task: published.algorithmic_references(task) for task in published.ALGORITHMIC_TASKS
}

# A yardstick measured on this CPU class: the authors' PANM code, its default config, one run
# (outside this repository; its seed not recorded), 10,000 steps (23 minutes) on this 2-core CPU
# class. Rerun here on seeds 0-2 by benchmarks/accuracy/authors_panm.py, the same code scores 100 / 99.5 / 69.0
# / 34.4 / 21.2 (benchmarks/results/cpu-2cores/authors_panm_copy_10000.json): this run was a good one.
# Its default pipeline (run_algo_task.py, -genlen 2) evaluates every 200 steps on length int(10 * 2) + 1
# = 21 and keeps the best checkpoint there, which its test mode loads: its
# checkpoint is picked on 2L+1, ours on L+1 unless --select says otherwise.
AUTHORS_CODE_COPY_23MIN = (100, 99.99, 87.2, 50.2, 32.9)

# Le et al. 2024, App. D.6 ("Generalization to Shorter Sequence", Fig. 7 left): Mix trained on lengths 20-30 and
# tested on length 10, PANM against Location Attention (LSTM + attention, attention=location here). The text
# gives one number, PANM's margin over Location Attention at length 10 (``published.LONG_TO_SHORT_MARGIN``); it
# gives neither model's accuracy (Fig. 7 draws them as curves, mean and std over 5 runs).
LONG_TO_SHORT = {
    "task": "mix",
    "min_train_length": 20,
    "max_train_length": 30,
    "test_length": 10,
    "margin": published.LONG_TO_SHORT_MARGIN,
}
CURVE_POINTS = 10  # evaluations and kept checkpoints along a run with a test length below its training range

# The paper's tables that ``--table`` runs task by task (Le et al. 2024, Tables 13-18, in order).
TABLES = {"algorithmic": published.ALGORITHMIC_TASKS}


def make_config(
    task: str,
    model: str,
    seed: int,
    quick: bool,
    minutes: float | None,
    select: str = "L+1",
    steps: int | None = None,
    task_options: dict[str, Any] | None = None,
) -> TrainConfig:
    task_options = dict(task_options or {})
    if quick:
        return TrainConfig(
            task=task,
            task_options=task_options,
            model=model,
            seed=seed,
            num_steps=steps or 1_000_000,
            max_minutes=minutes,
            optimizer=OptimizerConfig(name="adam", learning_rate=1e-3, clip_value=None, clip_norm=1.0),
            eval_every=500,
            eval_examples=512,
            checkpoint_every=500,
            log_every=50,
            select_mode=select,
        )
    steps = steps or (100_000 if task == "id_sort" else 50_000)
    return TrainConfig(
        task=task,
        task_options=task_options,
        model=model,
        seed=seed,
        num_steps=steps,
        select_mode=select,
        max_minutes=minutes,
    )


TASK = "task"  # the pseudo-model of ``--set task.OPTION=VALUE``


def task_modes(task: str, model_sets: dict[str, dict[str, Any]]) -> tuple[str, ...]:
    """The test modes of ``task`` with the task options of ``--set task.X=...``, in order (five for the six
    algorithmic tasks: ``MODES`` unless ``test_lengths`` says otherwise)."""
    from panm_jax.tasks import get_task

    try:
        return tuple(get_task(task, **model_sets.get(TASK, {})).test_modes)
    except (TypeError, ValueError) as err:
        raise SystemExit(f"--set task.OPTION: {err}") from None


def parse_minutes(text: str, models: list[str]) -> dict[str, float]:
    """``"8,panm=23"`` -> ``{model: minutes}`` for every model (the bare number is the default)."""
    default, per_model = None, {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, value = part.rpartition("=")
        try:
            minutes = float(value)
        except ValueError:
            raise SystemExit(f"--minutes: expected NUMBER or MODEL=NUMBER items, got {part!r}") from None
        if minutes <= 0:
            raise SystemExit(f"--minutes: expected a positive number of minutes, got {part!r}")
        if sep:
            if name not in models:
                raise SystemExit(f"--minutes: {name!r} is not one of --models {models}")
            per_model[name] = minutes
        else:
            default = minutes
    missing = [m for m in models if m not in per_model and default is None]
    if missing:
        raise SystemExit(
            f"--minutes: no budget for {missing}; give a default number first, e.g. '--minutes 20,panm=23'"
        )
    return {m: per_model.get(m, default) for m in models}


def parse_model_sets(items: list[str], models: list[str]) -> dict[str, dict[str, Any]]:
    """``["panm.score=scaled_dot"]`` -> ``{"panm": {"score": "scaled_dot"}}`` (values parsed as JSON when they
    parse)."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in parse_overrides(items):
        model, sep, option = key.partition(".")
        if not sep or not option:
            raise SystemExit(f"--set: expected MODEL.OPTION=VALUE or task.OPTION=VALUE, got {key!r}")
        if model not in models and model != TASK:
            raise SystemExit(f"--set: {model!r} is neither 'task' nor one of --models {models}")
        out.setdefault(model, {})[option] = value
    return out


def options_tag(options: dict[str, Any]) -> str:
    """``{"score": "scaled_dot"}`` -> ``"-score=scaled_dot"``: the part of a run's name that its options add."""
    return "".join(f"-{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in sorted(options.items()))


def options_id(model_sets: dict[str, dict[str, Any]]) -> str:
    """``{"panm": {"score": "scaled_dot"}}`` -> ``"_opt-"`` and the first 6 hex digits of the SHA-256 of the
    options as canonical JSON (``""`` without options): the part of a results file's name that the model
    options add, short whatever their number; the file's ``settings`` (``run_settings``) spell them out."""
    if not model_sets:
        return ""
    canonical = json.dumps(model_sets, sort_keys=True, separators=(",", ":"))
    return "_opt-" + hashlib.sha256(canonical.encode()).hexdigest()[:6]


def run_settings(args, minutes, model_sets) -> dict[str, Any]:
    """What a results file's name stands for, recorded in its JSON as ``settings``: the protocol (``quick`` or
    ``paper``), the minutes per model (a cap under the paper protocol, ``None`` for none), the selection mode,
    the seeds, each model's options and ``--name``."""
    return {
        "models": list(minutes),
        "protocol": "quick" if args.quick else "paper",
        "minutes": dict(minutes),
        "select": args.select,
        "seeds": [int(s) for s in args.seeds.split(",")],
        "steps": args.steps,
        "model_options": model_sets,
        "name": args.name,
    }


def steps_trained(workdir: Path) -> int:
    """The last training step a run logged (its ``metrics.jsonl``): how far a capped run got."""
    logged = read_jsonl(workdir / "metrics.jsonl")  # a line torn by a crash is skipped
    return max((r.get("step", 0) for r in logged if "loss" in r), default=0)


def trained_by(workdir: Path) -> list[str]:
    """What trained each part of a run (its log's "started" and "resumed" records), in order: the code's
    commit and the device, ``"fe33993 (cpu)"``; ``"unrecorded"`` for a part logged before runs recorded it."""
    parts = []
    for r in read_jsonl(workdir / "metrics.jsonl"):
        if r.get("event") not in ("started", "resumed"):
            continue
        if "device" not in r:
            parts.append("unrecorded")
        else:
            parts.append(f"{r.get('code') or 'not a checkout'} ({r['device']})")
    return parts


def trained_elsewhere(runs: list[dict[str, Any]]) -> str | None:
    """The accelerator that trained every part of every run (``trained_by``), when it is not this machine's
    device: a table rebuilt from finished runs belongs in that accelerator's results folder. None otherwise
    (runs of this machine, of a CPU, of several devices, or unrecorded)."""
    import jax

    devices = {part.rpartition(" (")[2].rstrip(")") for r in runs for part in r.get("trained_by", [])}
    if len(devices) != 1:
        return None
    (device,) = devices
    here = jax.devices()[0]
    if device in ("cpu", "unrecorded", "") or (here.platform != "cpu" and device == here.device_kind):
        return None
    return device


def code_column(runs: list[dict[str, Any]]) -> str:
    """The ``code`` cell of a table row: what trained any part of its runs (``trained_by``), each once."""
    return "; ".join(dict.fromkeys(part for r in runs for part in r.get("trained_by", [])))


def finished_results(workdir: Path, config: TrainConfig) -> dict[str, Any] | None:
    """The results of a run that already ended in ``workdir`` with this exact config, else None."""
    path = workdir / "results.json"
    if not path.exists():
        return None
    results = json.loads(path.read_text())
    return results if results.get("config") == config.to_dict() else None


def _mean_std(values):
    if len(values) == 1:
        return values[0], 0.0
    return statistics.mean(values), statistics.stdev(values)


def summarize(
    task: str,
    runs: dict[str, list[dict[str, Any]]],
    select: str = "L+1",
    modes: tuple[str, ...] = MODES,
    tables_apply: bool = True,
) -> list[dict[str, Any]]:
    """Rows of ours (mean ± std over seeds per mode), the published row and ``ours - published`` per model;
    ``modes`` are the task's five test modes, matched to the published numbers by position. ``tables_apply``
    false (other training or test lengths than the paper's tables, ``tables_apply``): ours only."""
    rows = []
    references = PUBLISHED.get(task, {}) if tables_apply else {}
    for model, results in runs.items():
        per_mode: dict[str, list[float]] = {m: [] for m in modes}
        for res in results:
            by_mode = {r["mode"]: r for r in res["modes"]}
            for m in modes:
                per_mode[m].append(100 * by_mode[m][res["metric"]])
        row = {
            "model": model,
            "row": "ours",
            "selected_on": select,
            "seeds": len(results),
            "steps": ",".join(str(r["steps_trained"]) for r in results),
            "best_step": ",".join(str(r["step"]) for r in results),
            "code": code_column(results),
            **common.cost_cells(results),
        }
        reference = references.get(model, references.get("best other")) if model != "panm" else references.get(model)
        # fit: the runs whose accuracy at L, the longest training length, reaches FIT (or the paper's there)
        row["fit"] = fit_count(per_mode[modes[0]], reference[0] if reference else None)
        for m in modes:
            mean, std = _mean_std(per_mode[m])
            row[m] = f"{mean:.1f}" + (f" ± {std:.1f}" if len(results) > 1 else "")
            row[f"_{m}"] = mean
        rows.append(row)
        ref_name = (
            model if model in references else ("best other" if model != "panm" and "best other" in references else None)
        )
        if ref_name:
            ref = references[ref_name]
            rows.append(
                {
                    "model": model,
                    "row": f"published ({ref_name})",
                    "selected_on": "L+1",
                    **{m: f"{v:g}" for m, v in zip(modes, ref, strict=True)},
                }
            )
            rows.append(
                {
                    "model": model,
                    "row": "ours - published",
                    **{m: f"{row[f'_{m}'] - v:+.1f}" for m, v in zip(modes, ref, strict=True)},
                }
            )
    if task == "copy" and modes == MODES:
        rows.append(
            {
                "model": "panm",
                "row": "authors' code, 10K steps (23 min, this CPU)",
                "selected_on": "2L+1",
                **{m: f"{v:g}" for m, v in zip(MODES, AUTHORS_CODE_COPY_23MIN, strict=True)},
            }
        )
    return rows


def tables_apply(task_options: dict[str, Any]) -> bool:
    """Whether the paper's Tables 13-18 compare with runs under these task options: not when the training
    lengths start above the shortest (``min_train_length``) or the test lengths are listed (``test_lengths``
    other than a convention of ``panm_jax.tasks.algorithmic``)."""
    return "min_train_length" not in task_options and task_options.get("test_lengths", "kL+1") in ("kL+1", "k(L+1)")


def is_long_to_short(task: str, task_options: dict[str, Any], model_sets: dict[str, dict[str, Any]]) -> bool:
    """Whether these runs are the long-to-short experiment of Le et al. 2024 (App. D.6, ``LONG_TO_SHORT``):
    Mix trained on 20..30, a test mode at 10, PANM and Location Attention (``lstm_attention`` with
    ``attention=location``)."""
    ref = LONG_TO_SHORT
    return (
        task == ref["task"]
        and task_options.get("min_train_length") == ref["min_train_length"]
        and task_options.get("max_train_length") == ref["max_train_length"]
        and str(ref["test_length"]) in short_modes(task, task_options)
        and model_sets.get("lstm_attention", {}).get("attention") == "location"
    )


def margin_rows(rows: list[dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    """The long-to-short comparison of Le et al. 2024 (App. D.6): PANM's margin over Location Attention at
    ``mode``, ours (from the two models' means) beside the published one; ``[]`` unless both models have a
    row of ours."""
    ours = {r["model"]: r[f"_{mode}"] for r in rows if r["row"] == "ours"}
    if not {"panm", "lstm_attention"} <= set(ours):
        return []
    return [
        {
            "model": "panm",
            "row": "PANM - Location Attention, ours",
            mode: f"{ours['panm'] - ours['lstm_attention']:+.1f}",
        },
        {
            "model": "panm",
            "row": f"PANM - Location Attention, Le et al. 2024 (App. D.6: 'nearly {LONG_TO_SHORT['margin']}%')",
            mode: f"{LONG_TO_SHORT['margin']:+g}",
        },
    ]


def run_curves(workdir: Path, config: TrainConfig, metric: str, short: list[str]) -> dict[str, dict[str, list]]:
    """A run's learning curves: ``{"train": ..., "validation <mode>": ..., <short mode>: ...}``, each
    ``{"step": [...], "value": [...]}`` (the metric in %): the training batches' metric (its log), the
    validation that selects the checkpoint (its log) and each kept checkpoint on the short test modes
    (``checkpoint_scores``)."""
    train: dict[int, float] = {}
    validation: dict[int, float] = {}
    for r in read_jsonl(workdir / "metrics.jsonl"):  # a resumed run logs a step again: the last one counts
        if "loss" in r and metric in r:
            train[r["step"]] = 100 * r[metric]
        elif "validation" in r:
            validation[r["step"]] = 100 * r["validation"][config.selection_mode][metric]
    curves = {
        "train": {"step": sorted(train), "value": [train[k] for k in sorted(train)]},
        f"validation {config.selection_mode}": {
            "step": sorted(validation),
            "value": [validation[k] for k in sorted(validation)],
        },
    }
    tested = checkpoint_scores(workdir, config, short)
    for mode in short:
        curves[mode] = {"step": tested["step"], "value": [100 * v for v in tested[mode]]}
    return curves


def checkpoint_scores(workdir: Path, config: TrainConfig, modes: list[str]) -> dict[str, Any]:
    """Every kept checkpoint of a run scored on ``modes`` (on the test examples; selection never sees them):
    ``{"step": [...], <mode>: [metric, ...]}``, computed once and kept in the run's ``checkpoint_scores.json``."""
    import jax

    from panm_jax.train import evaluate as evaluation
    from panm_jax.train.checkpoint import Checkpointer
    from panm_jax.train.engine import config_check
    from panm_jax.train.loop import Run
    from panm_jax.train.sharding import replicate

    path = workdir / "checkpoint_scores.json"
    protocol = {"modes": list(modes), "examples": config.eval_examples}
    if path.exists():
        kept = json.loads(path.read_text())
        if kept.get("protocol") == protocol:
            return kept
    run = Run(config)
    ckpt = Checkpointer(workdir, read_only=True)
    template, check = jax.device_get(run.state), config_check(config, workdir)
    metric = run.task.metric_names[0]
    record: dict[str, Any] = {"protocol": protocol, "step": [], **{m: [] for m in modes}}
    for step in ckpt.kept_steps():
        state, _ = ckpt.restore_step(step, template, check)
        scores = run.evaluate(replicate(state.params, run.mesh), modes, evaluation.TEST_SEED)
        record["step"].append(step)
        for m in modes:
            record[m].append(scores[m][metric])
    ckpt.close()
    atomic_write_text(path, json.dumps(record, indent=1) + "\n")
    return record


def plot_curves(task: str, rows: list[dict[str, Any]], out: Path) -> None:
    """The learning curves of each model (mean and std over seeds), one panel per curve: what Le et al. 2024
    draw for the long-to-short experiment (Fig. 7 left)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    ours = [r for r in rows if r["row"] == "ours" and r.get("curves")]
    names = list(ours[0]["curves"][0]) if ours else []
    fig, axes = plt.subplots(1, max(1, len(names)), figsize=(4 * max(1, len(names)), 3.4), dpi=120, squeeze=False)
    for ax, name in zip(axes[0], names, strict=False):
        for r in ours:
            per_seed = [c[name] for c in r["curves"]]
            steps = per_seed[0]["step"]
            if not steps or any(c["step"] != steps for c in per_seed):
                continue  # seeds logged at other steps: no mean to draw
            values = np.array([c["value"] for c in per_seed])
            mean, std = values.mean(axis=0), values.std(axis=0)
            ax.plot(steps, mean, label=r["model"])
            ax.fill_between(steps, mean - std, mean + std, alpha=0.2)
        ax.set_title(name if name in ("train",) or name.startswith("validation") else f"test, length mode {name}")
        ax.set_xlabel("training step")
        ax.set_ylim(0, 105)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("token accuracy (%)")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"{task}: learning curves, mean ± std over seeds", fontsize=9)
    save_figure(fig, out)


def plot(task: str, rows: list[dict[str, Any]], out: Path, modes: tuple[str, ...] = MODES) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4), dpi=120)
    xs = range(len(modes))
    for r in rows:
        if r["row"] == "ours":
            ax.plot(xs, [r[f"_{m}"] for m in modes], marker="o", label=f"{r['model']} (ours)")
        elif r["row"].startswith("published"):
            ax.plot(
                xs,
                [float(r[m]) for m in modes],
                linestyle="--",
                marker="x",
                alpha=0.7,
                label=f"{r['model']} {r['row']}",
            )
    ax.set_xticks(list(xs), modes)
    ax.set_ylim(0, 105)
    ax.set_xlabel("test length mode")
    ax.set_ylabel("token accuracy (%)")
    ax.set_title(f"{task}: ours against Le et al. 2024")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    save_figure(fig, out)


def main(argv=None) -> int:
    enable_compile_cache()  # a rerun reads the programs it compiled (panm_jax/train/compile_cache.py)
    allocator.configure_from_environment()  # PANM_JAX_MALLOC=keep: benchmarks/allocator.py
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="copy", choices=sorted(PUBLISHED))
    p.add_argument(
        "--table",
        choices=sorted(TABLES),
        default=None,
        help="every task of a table of the paper in turn (algorithmic: Tables 13-18), then one summary table",
    )
    p.add_argument("--models", default="panm,lstm,ntm,dnc,stack_lstm")
    p.add_argument("--seeds", default="0", help="comma-separated seeds")
    p.add_argument("--quick", action="store_true", help="the CPU budget protocol (see the module docstring)")
    p.add_argument(
        "--steps",
        type=int,
        default=None,
        help="a step budget instead of the protocol's 50,000 (100,000 for ID Sort) or --quick's minutes; "
        "the seeds of a model then train together",
    )
    p.add_argument(
        "--minutes",
        default=None,
        help="training minutes per model and seed: a default and/or MODEL=MINUTES items, e.g. "
        "'8,panm=23'. --quick: the budget (default 20). Paper protocol: a cap, off by default; a "
        "capped run stops early, and the table's 'steps' column says how many of the 50,000 it ran",
    )
    p.add_argument(
        "--select",
        default="L+1",
        choices=MODES,
        help="the validation length that picks each run's checkpoint: L+1 is the protocol of Le et al. 2024; "
        "the authors' public code picks on 2L+1 (length 21 for Copy)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="MODEL.OPTION=VALUE",
        help="change one model option of one model, e.g. panm.score=scaled_dot, or one task option for every "
        "model, e.g. task.middle=fixed (repeatable)",
    )
    p.add_argument("--workdir", default="runs/reproduce")
    p.add_argument(
        "--name",
        default="",
        help="a suffix for the results' file names (reproduce_<task>[_quick]..._<name>), so that runs at "
        "another budget or with other models do not overwrite a recorded table",
    )
    p.add_argument(
        "--one-by-one",
        action="store_true",
        help="train each seed alone, one after another (the paper protocol trains a model's seeds together in "
        "one compiled program; --quick always trains them one by one, its budget being per seed)",
    )
    p.add_argument(
        "--parallel",
        type=int,
        default=1,
        help="(task, model) groups trained at once, as separate processes (on a GPU, share it with NVIDIA MPS)",
    )
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a child: train [task, model], write nothing else
    args = p.parse_args(argv)
    args.argv = list(argv) if argv is not None else sys.argv[1:]
    if args.parallel < 1:
        raise SystemExit(f"--parallel: expected a positive number of processes, got {args.parallel}")
    if args.steps is not None and args.steps < 1:
        raise SystemExit(f"--steps: expected a positive number of steps, got {args.steps}")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.minutes is not None:
        minutes: dict[str, float | None] = parse_minutes(args.minutes, models)
    else:
        minutes = {m: 20.0 if args.quick and args.steps is None else None for m in models}
    model_sets = parse_model_sets(args.set, models)
    if args.one is not None:
        task, model = json.loads(args.one)
        train_model(args, task, model, seeds, minutes, model_sets)
        return 0
    if args.parallel > 1:
        tasks = [args.task] if args.table is None else list(TABLES[args.table])
        train_in_processes(args, tasks, models, seeds, minutes, model_sets)
    env = common.environment()
    if args.table is None:
        reproduce_task(args, args.task, models, seeds, minutes, model_sets, env)
        return 0
    tables = {task: reproduce_task(args, task, models, seeds, minutes, model_sets, env) for task in TABLES[args.table]}
    write_summary(args, tables, env, argv, minutes, model_sets)
    return 0


def run_plan(args, task: str, model: str, seeds, minutes, model_sets) -> list[tuple[TrainConfig, Path]]:
    """Each seed's config and run folder for ``model`` on ``task`` under ``args``' protocol."""
    plan = []
    for seed in seeds:
        task_options = model_sets.get(TASK, {})
        config = make_config(task, model, seed, args.quick, minutes[model], args.select, args.steps, task_options)
        options = model_sets.get(model, {})
        if options:
            config = config.replace(model_options={**config.model_options, **options})
        if short_modes(task, task_options):
            config = curve_config(config, args.steps)
        # One folder per protocol, budget, selection and option set: a variant is a new run, not a clash.
        tag = (
            ("quick" if args.quick else "paper")
            + (f"{minutes[model]:g}m" if minutes[model] is not None else "")
            + (f"{args.steps}steps" if args.steps is not None else "")
            + ("" if args.select == "L+1" else f"-select{args.select}")
            + options_tag({f"{TASK}.{k}": v for k, v in task_options.items()})
            + options_tag(options)
        )
        plan.append((config, Path(args.workdir) / task / f"{model}-s{seed}-{tag}"))
    return plan


def short_modes(task: str, task_options: dict[str, Any]) -> list[str]:
    """The test modes of ``task`` whose lengths are all below its training range (long-to-short: a mode
    ``"10"`` of Mix trained on 20..30); ``[]`` for the paper's tables."""
    from panm_jax.tasks import get_task

    try:
        built = get_task(task, **task_options)
    except (TypeError, ValueError) as err:
        raise SystemExit(f"--set task.OPTION: {err}") from None
    return [m for m, r in built.test_modes.items() if r.hi < built.train_lengths.lo]


def curve_config(config: TrainConfig, steps: int | None) -> TrainConfig:
    """A long-to-short run's config: every checkpoint kept, so that each is scored on the short test lengths
    afterwards (``checkpoint_scores``), and, under a step budget, ``CURVE_POINTS`` evaluations and checkpoints along
    it (the learning curves of Le et al. 2024, Fig. 7 left)."""
    if steps is not None:
        every = max(1, steps // CURVE_POINTS)
        config = config.replace(eval_every=every, checkpoint_every=every)
    return config.replace(keep_checkpoints=-(-config.num_steps // config.checkpoint_every) + 1)


def together(args) -> bool:
    """Whether the seeds of one model train together (``train_seeds``) or one after another: together under
    the paper protocol or a ``--steps`` budget, unless ``--one-by-one``."""
    return not (args.one_by_one or (args.quick and args.steps is None))


def train_model(args, task: str, model: str, seeds, minutes, model_sets) -> None:
    """Train the unfinished seeds of ``model`` on ``task``: together in one compiled program under the paper
    protocol (``panm_jax.train.seeds``), one after another under ``--quick`` or ``--one-by-one``."""
    todo = [
        (c, w) for c, w in run_plan(args, task, model, seeds, minutes, model_sets) if finished_results(w, c) is None
    ]
    if not todo:
        return
    if together(args) and len(todo) > 1:
        from panm_jax.train.loop import train_seeds

        print(f"== {model} on {task}, seeds {[c.seed for c, _ in todo]} together -> {todo[0][1].parent}", flush=True)
        train_seeds([c for c, _ in todo], [w for _, w in todo], progress=False)
        return
    for config, workdir in todo:
        print(f"== {model} on {task}, seed {config.seed} -> {workdir}", flush=True)
        train_and_evaluate(config, workdir)


def train_in_processes(args, tasks, models, seeds, minutes, model_sets) -> None:
    """Train the unfinished (task, model) groups as child processes, ``args.parallel`` at once (on a GPU,
    share it with NVIDIA MPS); each child's output goes to ``<workdir>/<task>/<model>.log``."""
    groups = [
        (t, m)
        for t in tasks
        for m in models
        if any(finished_results(w, c) is None for c, w in run_plan(args, t, m, seeds, minutes, model_sets))
    ]
    jobs = []
    for task, model in groups:
        cmd = [
            sys.executable,
            "-m",
            "benchmarks.accuracy.reproduce",
            *strip_table(args.argv),
            "--one",
            json.dumps([task, model]),
        ]
        jobs.append((f"{model} on {task}", cmd, Path(args.workdir) / task / f"{model}.log"))
    print(f"training {len(jobs)} (task, model) groups, {args.parallel} at a time", flush=True)
    common.run_processes(jobs, args.parallel)


def strip_table(argv: list[str]) -> list[str]:
    """``argv`` without ``--table``/``--task``/``--parallel`` and their values: what a child process repeats."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        key = a.split("=", 1)[0]
        if key in ("--table", "--task", "--parallel"):
            skip = "=" not in a
            continue
        out.append(a)
    return out


def reproduce_task(args, task: str, models, seeds, minutes, model_sets, env) -> list[dict[str, Any]]:
    """Train (or read back) every model and seed of ``task``; write its table, CSV and plot; return its rows."""
    runs: dict[str, list[dict[str, Any]]] = {}
    task_options = model_sets.get(TASK, {})
    short = short_modes(task, task_options)
    for model in models:
        train_model(args, task, model, seeds, minutes, model_sets)
        for config, workdir in run_plan(args, task, model, seeds, minutes, model_sets):
            results = finished_results(workdir, config)
            if results is None:
                raise SystemExit(f"{workdir}: the run ended without its results.json (see its metrics.jsonl)")
            print(f"== {model} on {task}, seed {config.seed}: results in {workdir}", flush=True)
            results["steps_trained"] = steps_trained(workdir)
            results["trained_by"] = trained_by(workdir)
            if short:
                results["curves"] = run_curves(workdir, config, results["metric"], short)
            runs.setdefault(model, []).append(results)
    modes = task_modes(task, model_sets)
    rows = summarize(task, runs, args.select, modes, tables_apply(task_options))
    if short:
        for row in rows:
            if row["row"] == "ours":
                row["curves"] = [r["curves"] for r in runs[row["model"]]]
    if is_long_to_short(task, task_options, model_sets):
        rows += margin_rows(rows, str(LONG_TO_SHORT["test_length"]))
    cols = ["model", "row", "selected_on", "seeds", "steps", "best_step", *modes, "code"]
    name = results_name(f"reproduce_{task}", args, minutes, model_sets)
    command = common.portable_command(shlex.split(task_command(args, task))[3:], "benchmarks.accuracy.reproduce")
    notes = (
        "Token accuracy (%) of the checkpoint selected on the validation set of length mode 'selected_on' "
        "(L+1 in the protocol of Le et al. 2024, Plug, Play, and Generalize: Length Extrapolation with "
        "Pointer-Augmented Neural Memory), on fixed test sets at each "
        "length mode. "
        + (
            "'published' rows are Le et al. 2024, Tables 13-18 (listed in docs/tasks.md); "
            if tables_apply(task_options)
            else ""
        )
        + "'steps' is the number of training steps run, 'best_step' the selected "
        "checkpoint, 'code' the commit and device of each part of the runs ('unrecorded' for parts logged "
        "before runs recorded them)."
    )
    if task == "copy":
        notes += (
            " The authors' code row is its default pipeline, which picks its checkpoint on length 21 (2L+1) "
            "(measured with the authors' code on this CPU class)."
        )
    if model_sets.get(TASK) and tables_apply(task_options):
        notes += (
            " Task options changed from their defaults (a reading of the task; panm_jax.tasks.algorithmic): "
            + ", ".join(f"{k}={v}" for k, v in model_sets[TASK].items())
            + "; published numbers are matched to the test modes by position."
        )
    elif model_sets.get(TASK):
        notes += (
            " Task options changed from their defaults (other training or test lengths; "
            "panm_jax.tasks.algorithmic): "
            + ", ".join(f"{k}={v}" for k, v in model_sets[TASK].items())
            + "; Tables 13-18 of Le et al. 2024 do not apply."
        )
    if short:
        notes += (
            f" Test modes below the training range ({', '.join(short)}): every checkpoint kept and scored on "
            "them afterwards; the checkpoint is still selected on "
            f"{args.select}. Each 'ours' row of the JSON holds its seeds' learning curves ('curves': training "
            "batches, validation, and each checkpoint on those modes; the plot <name>_curves.png)."
        )
    if is_long_to_short(task, task_options, model_sets):
        notes += (
            " Le et al. 2024, App. D.6 (Fig. 7 left), train Mix on lengths 20-30 and test on 10; their text gives "
            f"PANM's margin over Location Attention at length 10, 'nearly {LONG_TO_SHORT['margin']}%', and no "
            "accuracy of either model."
        )
    if any(m != TASK for m in model_sets):
        notes += (
            " Model options changed from their defaults: "
            + "; ".join(
                f"{m}: {', '.join(f'{k}={v}' for k, v in o.items())}" for m, o in model_sets.items() if m != TASK
            )
            + "."
        )
    if args.steps is not None:
        notes += f" Step budget: {args.steps} steps per run."
    if args.quick:
        every = run_plan(args, task, models[0], seeds[:1], minutes, model_sets)[0][0].eval_every
        notes += f" --quick: Adam 1e-3, global-norm clip 1, evaluation every {every} steps on 512 examples per length"
        if any(v is not None for v in minutes.values()):
            budgets = ", ".join(f"{m} {v:g}" for m, v in minutes.items() if v is not None)
            notes += f"; minutes of training per model and seed: {budgets}"
        notes += "."
    elif any(v is not None for v in minutes.values()):
        budgets = ", ".join(f"{m} {v:g}" for m, v in minutes.items() if v is not None)
        notes += (
            f" Paper protocol capped at these minutes of training per model and seed: {budgets}; "
            "'steps' says how far each run got of its 50,000."
        )
    device = trained_elsewhere([r for results in runs.values() for r in results])
    if device is not None:
        notes += (
            f" Tabulated from finished runs that were all trained on {device} (each run's results.json and "
            "metrics.jsonl); the environment recorded here is the tabulating machine's."
        )
    public_rows = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
    folder = common.accelerator_slug(device) if device is not None else common.device_slug()
    common.write_results(
        name,
        f"{task}: reproduction of Le et al. 2024 (PANM)",
        public_rows,
        cols,
        env,
        notes,
        command,
        settings={"task": task, **run_settings(args, minutes, model_sets)},
        device=folder,
    )
    out_dir = common.RESULTS_DIR / folder
    plot(task, rows, out_dir / f"{name}.png", modes)
    if short:
        plot_curves(task, rows, out_dir / f"{name}_curves.png")
    print(common.markdown_table(public_rows, cols))
    print("wrote", out_dir / f"{name}.json", ".png")
    return public_rows


def results_name(prefix: str, args, minutes, model_sets) -> str:
    """``prefix`` plus what sets these results apart: ``_quick``, ``_select<mode>``, ``_capped``, the model
    options' ``options_id`` and ``--name``, e.g. ``reproduce_copy_quick_opt-1a2b3c_8m_3seeds``; a task's files
    and a table's summary are named alike."""
    return (
        prefix
        + ("_quick" if args.quick else "")
        + ("" if args.select == "L+1" else f"_select{args.select.replace('+', 'p')}")
        + ("" if args.quick or all(v is None for v in minutes.values()) else "_capped")
        + (f"_{args.steps}steps" if args.steps is not None else "")
        + options_id(model_sets)
        + (f"_{args.name}" if args.name else "")
    )


def task_command(args, task: str) -> str:
    """The command that makes ``task``'s table alone with these settings (what a ``--table`` run did for it)."""
    parts = ["python -m benchmarks.accuracy.reproduce", f"--task {task}", f"--models {args.models}"]
    if args.seeds != "0":
        parts.append(f"--seeds {args.seeds}")
    if args.quick:
        parts.append("--quick")
    if args.steps is not None:
        parts.append(f"--steps {args.steps}")
    if args.minutes is not None:
        parts.append(f"--minutes {args.minutes}")
    if args.select != "L+1":
        parts.append(f"--select {args.select}")
    parts += [f"--set {item}" for item in args.set]
    if args.workdir != "runs/reproduce":
        parts.append(f"--workdir {args.workdir}")
    if args.name:
        parts.append(f"--name {args.name}")
    return " ".join(parts)


def write_summary(args, tables: dict[str, list[dict[str, Any]]], env, argv, minutes, model_sets) -> None:
    """One table of every task's rows (``reproduce_<table>[_quick]...json``, named as each task's files
    are): ours, published, the difference."""
    cols = ["task", "model", "row", "selected_on", "seeds", "steps", "best_step", *MODES, "code"]
    rows = [{"task": task, **row} for task, task_rows in tables.items() for row in task_rows]
    name = results_name(f"reproduce_{args.table}", args, minutes, model_sets)
    command = common.portable_command(argv, "benchmarks.accuracy.reproduce")
    missing = [
        f"{task}/{model}"
        for task, task_rows in tables.items()
        for model in PUBLISHED.get(task, {})
        if model != "best other" and not any(r["model"] == model and r["row"] == "ours" for r in task_rows)
    ]
    notes = (
        f"The {args.table} tables of Le et al. 2024 (Tables 13-18), one block per task, from the same runs as "
        "each task's own reproduce_<task> file (its notes give the protocol). Token accuracy (%) at L, L+1, "
        "2L+1, 4L+1 and 8L+1; mean ± sample std over the seeds."
        + (f" Published models without a row of ours here: {', '.join(missing)}." if missing else "")
    )
    title = f"{args.table} tasks: reproduction of Le et al. 2024 (PANM)"
    common.write_results(
        name,
        title,
        rows,
        cols,
        env,
        notes,
        command,
        settings={"table": args.table, **run_settings(args, minutes, model_sets)},
    )
    print("wrote", common.RESULTS_DIR / common.device_slug() / f"{name}.json")


if __name__ == "__main__":
    raise SystemExit(main())
