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

The table (``ablation_panm_<tasks>.{md,json,csv}``, with ``_NAME`` appended by ``--name NAME``, under
``benchmarks/results/<device>/``) has, per task, one row per variant (mean ±
sample standard deviation over the seeds, token accuracy in %), the published
row (Le et al. 2024, Tables 13 and 14; the same figures as ``benchmarks.accuracy.reproduce``)
and each variant's difference from it. The JSON keeps every seed's numbers.
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
from benchmarks.accuracy.reproduce import (
    MODES,
    PUBLISHED,
    code_column,
    finished_results,
    make_config,
    steps_trained,
    trained_by,
)
from panm_jax.train.config import TrainConfig, parse_overrides
from panm_jax.train.io import atomic_write_text

MODEL = "panm"
PROTOCOL_STEPS = 50_000  # Le et al. 2024, Section 3.1, for Copy and Reverse


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


def variant_config(task: str, variant: str, seed: int, minutes: float | None, steps: int | None = None) -> TrainConfig:
    parts = parse_variant(variant)
    config = make_config(task, MODEL, seed, quick=False, minutes=minutes, select=parts["run"].get("select_mode", "L+1"))
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


def train_group(
    task: str, variant: str, seeds: list[int], minutes: float | None, steps: int | None, workdir: Path
) -> None:
    """Train the unfinished seeds of (task, variant) together (``train_seeds``)."""
    from panm_jax.train.seeds import train_seeds

    todo = [s for s in seeds if read_run(task, variant, s, minutes, steps, workdir) is None]
    if todo:
        train_seeds(
            [variant_config(task, variant, s, minutes, steps) for s in todo],
            [run_folder(workdir, task, variant, s) for s in todo],
            progress=False,
        )


def read_run(
    task: str, variant: str, seed: int, minutes: float | None, steps: int | None, workdir: Path
) -> dict[str, Any] | None:
    folder = run_folder(workdir, task, variant, seed)
    results = finished_results(folder, variant_config(task, variant, seed, minutes, steps))
    if results is None:
        return None
    results["steps_trained"] = steps_trained(folder)
    results["trained_by"] = trained_by(folder)
    return results


def run_all(groups: list[tuple[str, str]], seeds: list[int], args, workdir: Path) -> None:
    """Train the unfinished (task, variant) groups, at most ``args.parallel`` child processes at once."""
    todo = [g for g in groups if any(read_run(*g, s, args.minutes, args.steps, workdir) is None for s in seeds)]
    print(
        f"{len(groups) - len(todo)} of {len(groups)} groups of seeds {seeds} finished earlier; training "
        f"{len(todo)}, {args.parallel} at a time",
        flush=True,
    )
    common_args = ["--seeds", ",".join(map(str, seeds)), "--workdir", str(workdir)]
    common_args += (["--minutes", str(args.minutes)] if args.minutes else []) + (
        ["--steps", str(args.steps)] if args.steps else []
    )
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


def summarize(task: str, variants: list[str], runs: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    published = PUBLISHED[task][MODEL]
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
        }
        per_seed = {}
        for m in MODES:
            vals = [100 * {x["mode"]: x for x in r["modes"]}[m][r["metric"]] for r in results]
            per_seed[m] = [round(v, 2) for v in vals]
            mean, std = _mean_std(vals)
            row[m] = f"{mean:.1f} ± {std:.1f}"
            row[f"_{m}"] = mean
        row["_per_seed"] = per_seed
        rows.append(row)
    rows.append(
        {
            "task": task,
            "variant": "published (Le et al. 2024)",
            "selected_on": "L+1",
            **{m: f"{v:g}" for m, v in zip(MODES, published, strict=True)},
        }
    )
    for row in rows[:-1]:
        rows.append(
            {
                "task": task,
                "variant": f"{row['variant']} - published",
                **{m: f"{row[f'_{m}'] - v:+.1f}" for m, v in zip(MODES, published, strict=True)},
            }
        )
    return rows


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
    allocator.configure_from_environment()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", default="copy,reverse")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        help="'default' or KEY=VALUE[,KEY=VALUE...] (optimizer.FIELD, panm.OPTION, select=MODE, compute_dtype=DTYPE); "
        "repeatable, one table row each",
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
        train_group(task, variant, seeds, args.minutes, args.steps, workdir)
        return 0
    if args.name and not re.fullmatch(r"[\w\-.]+", args.name):
        raise SystemExit(f"--name: expected letters, digits, '_', '-' or '.', got {args.name!r}")
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    for task in tasks:
        if task not in PUBLISHED or MODEL not in PUBLISHED[task]:
            raise SystemExit(f"--tasks: expected tasks among {sorted(PUBLISHED)}, got {task!r}")
    variants = args.variant or ["default"]
    for v in variants:  # every variant parses and builds a valid config before anything trains
        variant_config(tasks[0], v, seeds[0], args.minutes, args.steps)
    if args.parallel < 1:
        raise SystemExit(f"--parallel: expected a positive number of processes, got {args.parallel}")
    run_all([(t, v) for t in tasks for v in variants], seeds, args, workdir)
    rows = []
    for task in tasks:
        runs = {v: [read_run(task, v, s, args.minutes, args.steps, workdir) for s in seeds] for v in variants}
        rows += summarize(task, variants, runs)
    cols = ["task", "variant", "selected_on", "seeds", "steps", "best_step", *MODES, "code"]
    name = "ablation_panm_" + "_".join(tasks) + (f"_{args.name}" if args.name else "")
    command = "python -m benchmarks.accuracy.ablation " + " ".join(argv if argv is not None else sys.argv[1:])
    notes = table_notes(seeds, args.minutes, args.steps)
    public = [
        {
            **{k: v for k, v in r.items() if not k.startswith("_")},
            **({"per_seed": r["_per_seed"]} if "_per_seed" in r else {}),
        }
        for r in rows
    ]
    common.write_results(
        name, "PANM ablations under the paper protocol", public, cols, common.environment(), notes, command
    )
    out_dir = common.RESULTS_DIR / common.device_slug()
    lines = [",".join(cols)] + [",".join(str(r.get(c, "")).replace(",", ";") for c in cols) for r in public]
    atomic_write_text(out_dir / f"{name}.csv", "\n".join(lines) + "\n")
    print(common.markdown_table(public, cols))
    print("wrote", out_dir / f"{name}.md", ".json", ".csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
