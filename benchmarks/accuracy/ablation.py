"""Ablations of the paper's PANM under the paper's protocol: one change at a time, several seeds, one table.

Time: it wants a GPU. Each (task, variant) group of seeds trains the paper's 50,000 steps; on an
NVIDIA H100 three groups sharing the GPU made 30,486 to 32,240 steps in 7.45 minutes
(``nvidia-h100-80gb-hbm3/ablation_panm_copy.json``). The 2-core CPU of ``cpu-2cores/`` makes about
4,000 PANM steps in 8 minutes, so a group takes hours there. There is no ``--quick``:
``--minutes`` or ``--steps`` caps each group.

    python -m benchmarks.accuracy.ablation --tasks copy,reverse --seeds 0,1,2 \\
        --variant default --variant optimizer.eps_in_sqrt=true --variant panm.controller_start=mean \\
        [--parallel 6] [--minutes 20] [--workdir runs/ablation]

Every run is ``benchmarks.accuracy.reproduce``'s paper protocol for PANM (batch 128, 50,000
steps, the authors' RMSprop, checkpoint selected on L+1, tested at L, L+1, 2L+1,
4L+1 and 8L+1) with the changes its variant names:

* ``default``: no change (the library's defaults, Le et al. 2024's model);
* ``KEY=VALUE[,KEY=VALUE...]``: ``optimizer.FIELD`` changes the optimiser
  (``OptimizerConfig``), ``panm.OPTION`` a model option, ``select=MODE`` the
  validation length that picks the checkpoint, ``compute_dtype=bfloat16`` mixed
  precision (``TrainConfig.compute_dtype``); values parse as JSON when they
  can (``true``, ``8``), else stay strings.

Each (task, variant, seed) trains in its own folder,
``<workdir>/<task>/<variant>-s<seed>`` (a variant over 120 characters: its
first 100 and a hash), resumable like any run: rerunning the
command continues unfinished runs and reads finished ones back (a folder whose
``results.json`` holds the same config). The seeds of one (task, variant) train
together in one compiled program (``panm_jax.train.seeds``: the same numbers as
single runs up to rounding); ``--parallel P`` trains P such groups at once as
separate processes (on a GPU, share it with NVIDIA MPS); each group's output goes
to ``<workdir>/<task>/<variant>.log``. ``--minutes`` caps each group's training
(the ``steps`` column then says how far it got).

The table (``ablation_panm_<tasks>.json``, with ``_NAME`` appended by ``--name NAME``, under
``benchmarks/results/<device>/``) has, per task, one row per variant (mean ±
sample standard deviation over the seeds, token accuracy in %), the published
row (PANM's row of the task's table among Le et al. 2024's Tables 13-18, ``benchmarks.accuracy.published``)
and each variant's difference from it. The JSON keeps every seed's numbers.

The pointer-count ablations of Le et al. 2024, App. D.6 (``--figure 8`` or ``--figure 9``)::

    python -m benchmarks.accuracy.ablation --figure 8 [--tasks copy] --seeds 0,1,2 [--quick --steps 400 --eval-every 50]
    python -m benchmarks.accuracy.ablation --figure 9 [--tasks copy,id_sort] --seeds 0,1,2 [--quick ...]

* Fig. 8: Mode-1 heads ``H^a = 0, 1, 2, 3`` with no Mode-2 head (``H^c = 0``), on Copy and Reverse;
* Fig. 9: ``H^a = 2`` and Mode-2 heads ``H^c = 0, 1, 2``, on Copy, Priority Sort and ID Sort.

The figures plot the testing accuracy at length ``2(L+1)`` over training steps (mean ± std of 5 runs).
Here every run is tested on the lengths ``L, L+1, 2(L+1), 4(L+1), 8(L+1)`` (the task option
``test_lengths="k(L+1)"``) and is evaluated on ``2(L+1)`` every ``--eval-every`` steps (its
validation set; the checkpoint kept is the best there): those evaluations, read back from each
run's ``metrics.jsonl``, are the curve, one per (task, variant), mean ± std over the seeds,
plotted beside the table (``<name>_<task>.png``; the JSON keeps each seed's curve). The variants
are named by the options they change (``panm.mode2_heads=0`` is ``H^a = 2, H^c = 0`` in both
figures, trained once). The published numbers of Tables 13-18 are at other lengths and not shown.
``--quick`` trains under ``benchmarks.accuracy.reproduce``'s CPU budget (Adam 1e-3, global-norm
clipping at 1, 512 examples per evaluation) for ``--steps`` steps; a figure's files are
``ablation_panm_fig<N>_<tasks>[_quick][_NAME]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks import allocator, common
from benchmarks.accuracy import published
from benchmarks.accuracy.criteria import fit_count
from benchmarks.accuracy.reproduce import (
    MODES,
    code_column,
    finished_results,
    make_config,
    steps_trained,
    trained_by,
)
from panm_jax import enable_compile_cache
from panm_jax.errors import UserError
from panm_jax.train.config import TrainConfig, parse_overrides
from panm_jax.train.io import read_jsonl
from panm_jax.train.report import save_figure

MODEL = "panm"
PROTOCOL_STEPS = 50_000  # Le et al. 2024, Section 3.1, for Copy and Reverse


def _heads(ha: int, hc: int) -> str:
    """The variant of ``H^a = ha`` Mode-1 and ``H^c = hc`` Mode-2 heads, naming only what differs from the
    defaults (2 and 1), so that one configuration has one name (and one run folder) in both figures."""
    items = ([f"panm.pointer_heads={ha}"] if ha != 2 else []) + ([f"panm.mode2_heads={hc}"] if hc != 1 else [])
    return ",".join(items) or "default"


# Le et al. 2024, App. D.6: each figure's tasks and its pointer counts (H^a, H^c), in its order.
FIGURES: dict[int, dict[str, Any]] = {
    8: {"tasks": ("copy", "reverse"), "heads": [(0, 0), (1, 0), (2, 0), (3, 0)]},
    9: {"tasks": ("copy", "priority_sort", "id_sort"), "heads": [(2, 0), (2, 1), (2, 2)]},
}
FIGURE_TASK_OPTIONS = {"test_lengths": "k(L+1)"}  # the figures' length 2(L+1) is one of these modes
FIGURE_MODE = "2(L+1)"  # what the figures plot over training steps
FIGURE_MODES = ("L", "L+1", "2(L+1)", "4(L+1)", "8(L+1)")


def heads_label(variant: str) -> str:
    """``"panm.pointer_heads=0,panm.mode2_heads=0"`` -> ``"H^a=0, H^c=0"``."""
    options = parse_variant(variant)[MODEL]
    return f"H^a={options.get('pointer_heads', 2)}, H^c={options.get('mode2_heads', 1)}"


def parse_variant(text: str) -> dict[str, dict[str, Any]]:
    """``"optimizer.eps_in_sqrt=true,panm.controller_start=mean"`` -> ``{"optimizer": {...}, "panm": {...}}``."""
    out: dict[str, dict[str, Any]] = {"optimizer": {}, MODEL: {}, "run": {}}
    if text == "default":
        return out
    items = [p.strip() for p in text.split(",") if p.strip()]
    for key, value in parse_overrides(items):
        if key == "select":
            if value not in MODES:
                raise SystemExit(f"--variant {text!r}: select expects one of {list(MODES)}, got {value!r}")
            out["run"]["select_mode"] = value
            continue
        if key == "compute_dtype":
            out["run"]["compute_dtype"] = value
            continue
        group, sep, field = key.partition(".")
        if not sep or group not in ("optimizer", MODEL) or not field:
            raise SystemExit(
                f"--variant {text!r}: expected 'default' or optimizer.FIELD=VALUE, {MODEL}.OPTION=VALUE, "
                f"select=MODE or compute_dtype=DTYPE items, got {key!r}"
            )
        out[group][field] = value
    return out


def variant_config(
    task: str,
    variant: str,
    seed: int,
    minutes: float | None,
    steps: int | None = None,
    *,
    quick: bool = False,
    figure: int | None = None,
    eval_every: int | None = None,
    eval_examples: int | None = None,
) -> TrainConfig:
    """The run of (``task``, ``variant``, ``seed``): the paper protocol (or ``quick``'s CPU budget) with the
    variant's changes; a ``figure``'s runs are tested at the ``k(L+1)`` lengths and select on ``2(L+1)``."""
    parts = parse_variant(variant)
    select = FIGURE_MODE if figure else parts["run"].get("select_mode", "L+1")
    task_options = FIGURE_TASK_OPTIONS if figure else None
    config = make_config(
        task, MODEL, seed, quick=quick, minutes=minutes, select=select, steps=steps, task_options=task_options
    )
    if eval_every:
        config = config.replace(eval_every=eval_every, checkpoint_every=eval_every)
    if eval_examples:
        config = config.replace(eval_examples=eval_examples, eval_batch_size=min(eval_examples, config.eval_batch_size))
    try:
        if parts["optimizer"]:
            config = config.replace(optimizer=dataclasses.replace(config.optimizer, **parts["optimizer"]))
        if parts[MODEL]:
            config = config.replace(model_options={**config.model_options, **parts[MODEL]})
        if "compute_dtype" in parts["run"]:
            config = config.replace(compute_dtype=parts["run"]["compute_dtype"])
    except (TypeError, ValueError) as err:
        raise SystemExit(f"--variant {variant!r}: {err}") from None
    return config if steps is None else config.replace(num_steps=steps)


SLUG_MAX = 120  # characters of a variant's folder name (with "-s<seed>" and ".log" under the OS's 255)


def slug(variant: str) -> str:
    """The variant's folder name: the variant itself, or, past ``SLUG_MAX`` characters, its first 100
    and a hash of the whole (a long list of changes would exceed the file system's 255 per name)."""
    name = variant.replace("/", "_").replace(" ", "")
    if len(name) <= SLUG_MAX:
        return name
    return f"{name[:100]}-{hashlib.sha256(variant.encode()).hexdigest()[:16]}"


def run_folder(workdir: Path, task: str, variant: str, seed: int) -> Path:
    return workdir / task / f"{slug(variant)}-s{seed}"


def run_config(task: str, variant: str, seed: int, args) -> TrainConfig:
    """``variant_config`` under the command line's budget and protocol (``args``)."""
    return variant_config(
        task,
        variant,
        seed,
        args.minutes,
        args.steps,
        quick=args.quick,
        figure=args.figure,
        eval_every=args.eval_every,
        eval_examples=args.eval_examples,
    )


def train_group(task: str, variant: str, seeds: list[int], args, workdir: Path) -> None:
    """Train the unfinished seeds of (task, variant) together (``train_seeds``)."""
    from panm_jax.train.loop import train_seeds

    todo = [s for s in seeds if read_run(task, variant, s, args, workdir) is None]
    if todo:
        train_seeds(
            [run_config(task, variant, s, args) for s in todo],
            [run_folder(workdir, task, variant, s) for s in todo],
            progress=False,
        )


def read_run(task: str, variant: str, seed: int, args, workdir: Path) -> dict[str, Any] | None:
    """A finished run's results (with the steps it trained, what trained it and its validation curve), or
    None."""
    folder = run_folder(workdir, task, variant, seed)
    results = finished_results(folder, run_config(task, variant, seed, args))
    if results is None:
        return None
    results["steps_trained"] = steps_trained(folder)
    results["trained_by"] = trained_by(folder)
    results["curve"] = validation_curve(folder, results["config"]["select_mode"], results["metric"])
    return results


def validation_curve(folder: Path, mode: str, metric: str) -> list[tuple[int, float]]:
    """``[(step, accuracy in %)]``: the run's evaluations on ``mode`` during training (``metrics.jsonl``), the
    last one of a step that was evaluated twice (a resumed run)."""
    points = {}
    for record in read_jsonl(folder / "metrics.jsonl"):
        if "validation" in record and mode in record["validation"]:
            points[int(record["step"])] = round(100 * record["validation"][mode][metric], 2)
    return sorted(points.items())


def run_all(groups: list[tuple[str, str]], seeds: list[int], args, workdir: Path) -> None:
    """Train the unfinished (task, variant) groups, at most ``args.parallel`` child processes at once."""
    todo = [g for g in groups if any(read_run(*g, s, args, workdir) is None for s in seeds)]
    print(
        f"{len(groups) - len(todo)} of {len(groups)} groups of seeds {seeds} finished earlier; training "
        f"{len(todo)}, {args.parallel} at a time",
        flush=True,
    )
    common_args = ["--seeds", ",".join(map(str, seeds)), "--workdir", str(workdir)]
    common_args += (["--minutes", str(args.minutes)] if args.minutes else []) + (
        ["--steps", str(args.steps)] if args.steps else []
    )
    common_args += (["--quick"] if args.quick else []) + (["--figure", str(args.figure)] if args.figure else [])
    common_args += ["--eval-every", str(args.eval_every)] if args.eval_every else []
    common_args += ["--eval-examples", str(args.eval_examples)] if args.eval_examples else []
    jobs = [
        (
            f"{task} {variant} seeds {seeds}",
            [sys.executable, "-m", "benchmarks.accuracy.ablation", "--one", json.dumps([task, variant]), *common_args],
            workdir / task / f"{slug(variant)}.log",
        )
        for task, variant in todo
    ]
    common.run_processes(jobs, args.parallel)


def _mean_std(values: list[float]) -> tuple[float, float]:
    return (values[0], 0.0) if len(values) == 1 else (statistics.mean(values), statistics.stdev(values))


def curve_summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The seeds' validation curves: the steps every seed was evaluated at, each seed's accuracies there
    and their mean and sample standard deviation (%)."""
    steps = sorted(set.intersection(*(set(dict(r["curve"])) for r in results)))
    per_seed = [[dict(r["curve"])[s] for s in steps] for r in results]
    stats = [_mean_std(list(column)) for column in zip(*per_seed, strict=True)]
    return {
        "steps": steps,
        "per_seed": per_seed,
        "mean": [round(m, 2) for m, _ in stats],
        "std": [round(d, 2) for _, d in stats],
    }


def summarize(
    task: str, variants: list[str], runs: dict[str, list[dict[str, Any]]], figure: int | None = None
) -> list[dict[str, Any]]:
    """One row per variant (mean ± std over seeds per test mode; ``per_seed``), then, for the paper-protocol
    tables, the published row and each variant's difference from it; a figure's rows carry their curve
    (``curve_summary``) and no published row (its tables are at other lengths)."""
    modes = FIGURE_MODES if figure else MODES
    rows = []
    for variant in variants:
        results = runs[variant]
        row: dict[str, Any] = {
            "task": task,
            "variant": variant,
            "seeds": len(results),
            "selected_on": results[0]["config"]["select_mode"] or "L+1",
            "steps": ",".join(str(r["steps_trained"]) for r in results),
            "best_step": ",".join(str(r["step"]) for r in results),
            "code": code_column(results),
            **common.cost_cells(results),
        }
        if figure:
            row["heads"] = heads_label(variant)
        per_seed = {}
        for m in modes:
            vals = [100 * {x["mode"]: x for x in r["modes"]}[m][r["metric"]] for r in results]
            per_seed[m] = [round(v, 2) for v in vals]
            mean, std = _mean_std(vals)
            row[m] = f"{mean:.1f} ± {std:.1f}"
            row[f"_{m}"] = mean
        row["_per_seed"] = per_seed
        # fit: the runs whose accuracy at L, the longest training length, reaches FIT (or the paper's PANM's there)
        row["fit"] = fit_count(per_seed[modes[0]], published.algorithmic(task)["PANM"][0])
        if figure:
            row["curve"] = curve_summary(results)
        rows.append(row)
    if figure:
        return rows
    reference = published.algorithmic(task)["PANM"]
    rows.append(
        {
            "task": task,
            "variant": "published (Le et al. 2024)",
            "selected_on": "L+1",
            **{m: f"{v:g}" for m, v in zip(MODES, reference, strict=True)},
        }
    )
    for row in rows[:-1]:
        rows.append(
            {
                "task": task,
                "variant": f"{row['variant']} - published",
                **{m: f"{row[f'_{m}'] - v:+.1f}" for m, v in zip(MODES, reference, strict=True)},
            }
        )
    return rows


def plot_figure(figure: int, task: str, rows: list[dict[str, Any]], out: Path) -> None:
    """Accuracy at ``2(L+1)`` against training steps, one line per pointer configuration (mean ± std over
    the seeds as a band), as Le et al. 2024 plot their Fig. 8 and 9."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for row in rows:
        curve = row["curve"]
        mean, std = curve["mean"], curve["std"]
        ax.plot(curve["steps"], mean, marker=".", label=row["heads"])
        lo = [m - d for m, d in zip(mean, std, strict=True)]
        hi = [m + d for m, d in zip(mean, std, strict=True)]
        ax.fill_between(curve["steps"], lo, hi, alpha=0.2)
    ax.set_ylim(0, 105)
    ax.set_xlabel("training steps")
    ax.set_ylabel(f"accuracy at {FIGURE_MODE} (%)")
    ax.set_title(f"{task}: pointer heads (cf. Le et al. 2024, Fig. {figure})")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, out)


def figure_notes(figure: int, seeds: list[int], args) -> str:
    """The protocol, the curves and the budget of a figure's table, in words."""
    protocol = (
        "the CPU budget of benchmarks.accuracy.reproduce --quick (Adam 1e-3, global-norm clipping at 1, batch 128)"
        if args.quick
        else "the paper protocol (batch 128, RMSprop 1e-4 with momentum 0.9 and decay 0.95, gradient values "
        "clipped at 10, 1,000 examples per evaluation)"
    )
    notes = (
        f"Le et al. 2024, App. D.6, Fig. {figure}: PANM with H^a Mode-1 and H^c Mode-2 pointer heads ('heads'), "
        f"trained under {protocol}; token accuracy (%), mean ± sample standard deviation over seeds {seeds}, "
        f"at the test lengths L, L+1, 2(L+1), 4(L+1), 8(L+1) (task option test_lengths=k(L+1)) of the "
        f"checkpoint selected on {FIGURE_MODE}. 'curve' is the accuracy on the {FIGURE_MODE} validation set "
        f"at each evaluation during training (what the figure plots): 'per_seed' per seed, 'mean' and 'std' "
        "over them. Per-seed test numbers are in 'per_seed'."
    )
    if args.steps:
        notes += f" Each run trained {args.steps:,} steps"
        notes += f", evaluated every {args.eval_every:,}." if args.eval_every else "."
    if args.eval_examples:
        notes += f" Each evaluation and test: {args.eval_examples:,} examples per length."
    if args.minutes:
        notes += f" Each run capped at {args.minutes:g} minutes of training: 'steps' says how far it got."
    return notes


def table_notes(seeds: list[int], minutes: float | None, steps: int | None) -> str:
    """The protocol, the statistics and the budget of an ablation table, in words."""
    notes = (
        "Token accuracy (%) of PANM under the paper protocol (batch 128, 50,000 steps, RMSprop 1e-4 with "
        "momentum 0.9 and decay 0.95, gradient values clipped at 10, evaluation every 1,000 steps on 1,000 "
        "examples), the checkpoint selected on 'selected_on', tested on 1,000 examples per length; mean ± "
        f"sample standard deviation over seeds {seeds}. Each variant changes only what its name says from the "
        "library's defaults. 'published' is Le et al. 2024 (Pointer-Augmented Neural Memory), Tables 13 "
        "(Copy) and 14 (Reverse), means of 5 runs. Per-seed numbers are in the JSON file ('per_seed'). "
        "'code' is the commit and device of each part of the runs ('unrecorded' for parts logged before runs "
        "recorded them)."
    )
    if minutes:
        notes += f" Each run capped at {minutes:g} minutes of training: 'steps' says how far it got."
    if steps and steps != PROTOCOL_STEPS:
        notes += f" Each run trained at most {steps:,} steps, not the protocol's {PROTOCOL_STEPS:,}."
    return notes


def main(argv=None) -> int:
    enable_compile_cache()  # a rerun reads the programs it compiled (panm_jax/train/compile_cache.py)
    allocator.configure_from_environment()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", default=None, help="comma-separated (default: copy,reverse, or the figure's tasks)")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        help="'default' or KEY=VALUE[,KEY=VALUE...] (optimizer.FIELD, panm.OPTION, select=MODE, compute_dtype=DTYPE); "
        "repeatable, one table row each",
    )
    p.add_argument(
        "--figure",
        type=int,
        default=None,
        help=f"one of {sorted(FIGURES)}: the pointer-count ablation of Le et al. 2024's Fig. 8 (H^a) or 9 (H^c), "
        "its variants and tasks (--tasks: a subset)",
    )
    p.add_argument("--quick", action="store_true", help="benchmarks.accuracy.reproduce's CPU budget (with --steps)")
    p.add_argument("--eval-every", type=int, default=None, help="evaluate (and checkpoint) every N steps")
    p.add_argument(
        "--eval-examples", type=int, default=None, help="examples per length in each evaluation and in the test"
    )
    p.add_argument(
        "--parallel",
        type=int,
        default=1,
        help="(task, variant) groups trained at once, as separate processes (each trains its seeds together)",
    )
    p.add_argument("--minutes", type=float, default=None, help="cap on each run's training minutes (off by default)")
    p.add_argument(
        "--steps",
        type=int,
        default=None,
        help="training steps per run instead of the protocol's 50,000 (a smoke test; not the protocol)",
    )
    p.add_argument("--workdir", default="runs/ablation")
    p.add_argument(
        "--name", default="", help="suffix of the result files' names (ablation_panm_<tasks>_NAME): keeps other tables"
    )
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a child: train the seeds of [task, variant]
    args = p.parse_args(argv)
    workdir = Path(args.workdir)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    if args.one is not None:
        task, variant = json.loads(args.one)
        train_group(task, variant, seeds, args, workdir)
        return 0
    if args.name and not re.fullmatch(r"[\w\-.]+", args.name):
        raise SystemExit(f"--name: expected letters, digits, '_', '-' or '.', got {args.name!r}")
    if args.figure is not None and args.figure not in FIGURES:
        raise SystemExit(f"--figure: expected one of {sorted(FIGURES)}, got {args.figure}")
    if args.figure and args.variant:
        raise SystemExit(
            f"--variant: a figure's variants are its pointer counts; got --figure {args.figure} and --variant"
        )
    if args.quick and not (args.steps or args.minutes):
        raise SystemExit("--quick: expected a budget, --steps N (or --minutes M), got neither")
    for flag, value in (("--eval-every", args.eval_every), ("--eval-examples", args.eval_examples)):
        if value is not None and value < 1:
            raise SystemExit(f"{flag}: expected a positive integer, got {value}")
    known = FIGURES[args.figure]["tasks"] if args.figure else published.ALGORITHMIC_TASKS
    tasks = [t.strip() for t in (args.tasks or ",".join(known[:2] if not args.figure else known)).split(",")]
    for task in tasks:
        if task not in known:
            raise SystemExit(f"--tasks: expected tasks among {sorted(known)}, got {task!r}")
    if args.figure:
        variants = [_heads(ha, hc) for ha, hc in FIGURES[args.figure]["heads"]]
    else:
        variants = args.variant or ["default"]
    for v in variants:  # every variant parses and builds a valid config before anything trains
        try:
            run_config(tasks[0], v, seeds[0], args)
        except UserError as err:
            raise SystemExit(f"--variant {v!r}: {err}") from None
    if args.parallel < 1:
        raise SystemExit(f"--parallel: expected a positive number of processes, got {args.parallel}")
    run_all([(t, v) for t in tasks for v in variants], seeds, args, workdir)
    rows = []
    for task in tasks:
        runs = {v: [read_run(task, v, s, args, workdir) for s in seeds] for v in variants}
        rows += summarize(task, variants, runs, args.figure)
    modes = FIGURE_MODES if args.figure else MODES
    cols = ["task", "variant", *(["heads"] if args.figure else []), "selected_on", "seeds", "steps", "best_step"]
    cols += [*modes, "code"]
    name = "ablation_panm_" + (f"fig{args.figure}_" if args.figure else "") + "_".join(tasks)
    name += ("_quick" if args.quick else "") + (f"_{args.name}" if args.name else "")
    command = common.portable_command(argv, "benchmarks.accuracy.ablation")
    notes = figure_notes(args.figure, seeds, args) if args.figure else table_notes(seeds, args.minutes, args.steps)
    public = [
        {
            **{k: v for k, v in r.items() if not k.startswith("_")},
            **({"per_seed": r["_per_seed"]} if "_per_seed" in r else {}),
        }
        for r in rows
    ]
    title = (
        f"PANM pointer heads (Le et al. 2024, Fig. {args.figure})"
        if args.figure
        else "PANM ablations under the paper protocol"
    )
    path = common.write_results(name, title, public, cols, common.environment(), notes, command)
    out_dir = path.parent
    if args.figure:
        for task in tasks:
            plot_figure(args.figure, task, [r for r in public if r["task"] == task], out_dir / f"{name}_{task}.png")
    print(common.markdown_table(public, cols))
    print("wrote", path, *([f"{name}_<task>.png"] if args.figure else []))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
