"""``panm-jax train``, ``panm-jax eval`` and ``panm-jax plot``: thin layers over ``train/``.

    panm-jax train --task copy --model panm --workdir runs/copy-panm
    panm-jax train --config configs/demo.toml --set model_options.hidden=128 --set num_steps=500
    panm-jax eval --workdir runs/copy-panm --modes L,2L+1 --with-traces
    panm-jax eval --workdir runs/reverse_string-lstm-s0 --lengths 41-500 --examples-per-length 64
    panm-jax plot runs/copy-panm runs/copy-lstm --out copy.png
    panm-jax plot --range runs/reverse_string-lstm-s0 runs/reverse_string-panm-s0 --out range.png

A user's mistake (a bad config field, a workdir in use by another run or
holding a run of other settings, a missing run) raises an error that
``panm_jax/cli.py`` prints as one line, ``error: ...``, on stderr, exiting with
code 2; a run stopped by a non-finite loss exits with code 1.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

import jax
import numpy as np
from rich.console import Console

from panm_jax.errors import UserError

__all__ = ["register"]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train",
        help="train a model on a task, evaluate it over the length modes",
        description="Train a model on a task (resuming if WORKDIR holds checkpoints), then evaluate the best "
        "checkpoint at every test length and write results.{json,csv,md} and accuracy.png in WORKDIR. "
        "Settings come from --config (TOML or JSON), then --set overrides, then the flags below.",
    )
    p.add_argument("--config", help="a TOML or JSON file of TrainConfig fields")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a config field, e.g. optimizer.learning_rate=1e-3 or model_options.hidden=128",
    )
    p.add_argument("--task", help="task name (panm-jax tasks lists them)")
    p.add_argument("--model", help="model name (panm-jax models lists them)")
    p.add_argument("--steps", type=int, dest="num_steps", help="number of training steps")
    p.add_argument("--batch-size", type=int, dest="batch_size")
    p.add_argument("--lr", type=float, help="learning rate")
    p.add_argument("--seed", type=int)
    p.add_argument(
        "--seeds",
        metavar="S1,S2,...",
        help="train several seeds of the same settings together, in one compiled program (each seed's "
        "folder is what its single run writes); with --workdir W, seed S goes to W/s<S>",
    )
    p.add_argument(
        "--on-nan",
        choices=["stop", "skip-batch"],
        dest="on_nan",
        help="on a NaN or infinite loss: stop with an error naming the step (default), or skip the batch "
        "(parameters and optimiser state unchanged)",
    )
    p.add_argument("--workdir", default=None, help="run folder (default runs/<task>-<model>-s<seed>)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs still go to metrics.jsonl)")
    p.set_defaults(func=_train)

    e = subparsers.add_parser(
        "eval",
        help="evaluate a run's checkpoint over chosen length modes",
        description="Evaluate the best (or latest) checkpoint of a run at chosen length modes.",
    )
    e.add_argument("--workdir", required=True, help="a run folder written by panm-jax train")
    e.add_argument("--modes", help="comma-separated length modes (default: all of the task's)")
    e.add_argument(
        "--checkpoint",
        choices=["best", "latest"],
        default="best",
        help="which checkpoint (default best; the latest when the best is missing or corrupt)",
    )
    e.add_argument("--examples", type=int, help="examples per mode (default: the run's eval_examples)")
    e.add_argument(
        "--with-traces",
        action="store_true",
        help="also plot per-step attention (pointer positions, read weights) for one example",
    )
    e.add_argument("--out", help="results stem (default WORKDIR/eval)")
    e.add_argument(
        "--lengths",
        metavar="LO-HI",
        help="range evaluation instead of the modes: every length LO..HI on its own (the score is the "
        "headline metric averaged over them), one compilation per power-of-two length bucket; writes "
        "range.json, range.csv and range.png in WORKDIR",
    )
    e.add_argument(
        "--examples-per-length",
        type=int,
        dest="examples_per_length",
        help=f"examples at each length with --lengths (default {DEFAULT_EXAMPLES_PER_LENGTH})",
    )
    e.set_defaults(func=_eval)

    q = subparsers.add_parser(
        "plot",
        help="plot accuracy against length from results files",
        description="One line per results file (or run folder).",
    )
    q.add_argument("results", nargs="+", help="results.json files or run folders")
    q.add_argument("--out", default="accuracy.png")
    q.add_argument("--labels", help="comma-separated line labels")
    q.add_argument(
        "--range",
        action="store_true",
        dest="range",
        help="plot range evaluations (range.json files or run folders, from panm-jax eval --lengths): "
        "accuracy at every length, the training lengths shaded",
    )
    q.set_defaults(func=_plot)


DEFAULT_EXAMPLES_PER_LENGTH = 64


# The flags that set a config field: field -> (flag, argparse dest). A message about such a field names the flag.
FLAGS = {
    "task": ("--task", "task"),
    "model": ("--model", "model"),
    "num_steps": ("--steps", "num_steps"),
    "batch_size": ("--batch-size", "batch_size"),
    "seed": ("--seed", "seed"),
    "on_nan": ("--on-nan", "on_nan"),
    "optimizer.learning_rate": ("--lr", "lr"),
}


def _config_from_args(args):
    from panm_jax.train.config import ConfigError, load_config

    overrides = list(args.set)
    for field, (_, dest) in FLAGS.items():
        value = getattr(args, dest)
        if value is not None:
            overrides.append(f"{field}={json.dumps(value)}")
    try:
        return load_config(args.config, overrides)
    except ConfigError as err:
        if err.field in FLAGS and getattr(args, FLAGS[err.field][1]) is not None:
            raise ConfigError(FLAGS[err.field][0], err.message) from err
        raise


def _error(message: str, code: int = 2) -> int:
    """One line on stderr, no traceback; returns the exit code."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    return code


def _train(args) -> int:
    from panm_jax.train import report
    from panm_jax.train.loop import NonFiniteLossError, train_and_evaluate
    from panm_jax.train.sharding import is_primary, maybe_initialize_distributed

    seeds = _parse_seeds(args)
    config = _config_from_args(args)  # the whole config is checked before anything is created
    maybe_initialize_distributed()  # before the first JAX call below (a multi-process run: docs/distributed.md)
    console = Console(quiet=not is_primary())  # with several processes, process 0 alone prints
    if seeds is not None:
        return _train_seeds(args, config, seeds, console)
    workdir = Path(args.workdir or f"runs/{config.task}-{config.model}-s{config.seed}")
    console.print(
        f"[bold]panm-jax train[/] {config.model} on {config.task} -> {workdir} "
        f"({jax.device_count()} x {jax.devices()[0].device_kind})"
    )
    try:
        results = train_and_evaluate(config, workdir, progress=not args.no_progress, console=console)
    except NonFiniteLossError as err:
        return _error(str(err), code=1)
    report.print_results(results, console)
    console.print(f"wrote {workdir / 'results.json'} (.csv, .md) and {workdir / 'accuracy.png'}")
    return 0


def _parse_seeds(args) -> list[int] | None:
    """``--seeds 0,1,2`` -> ``[0, 1, 2]`` (None without it); malformed lists and ``--seed`` beside it refused."""
    if args.seeds is None:
        return None
    if args.seed is not None:
        raise UserError("--seeds: give either --seed or --seeds, not both")
    parts = [p.strip() for p in args.seeds.split(",")]
    if not all(re.fullmatch(r"-?\d+", p) for p in parts):
        raise UserError(f"--seeds: expected comma-separated integers (e.g. 0,1,2,3,4), got {args.seeds!r}")
    seeds = [int(p) for p in parts]
    if len(set(seeds)) != len(seeds):
        raise UserError(f"--seeds: expected distinct seeds, got {args.seeds!r}")
    return seeds


def _train_seeds(args, config, seeds: list[int], console: Console) -> int:
    from panm_jax.train import report
    from panm_jax.train.loop import NonFiniteLossError
    from panm_jax.train.seeds import train_seeds

    configs = [config.replace(seed=s) for s in seeds]
    if args.workdir:
        workdirs = [Path(args.workdir) / f"s{s}" for s in seeds]
    else:
        workdirs = [Path(f"runs/{config.task}-{config.model}-s{s}") for s in seeds]
    console.print(
        f"[bold]panm-jax train[/] {config.model} on {config.task}, seeds {','.join(map(str, seeds))} "
        f"together -> {', '.join(map(str, workdirs))} ({jax.device_count()} x "
        f"{jax.devices()[0].device_kind})"
    )
    try:
        records = train_seeds(configs, workdirs, progress=not args.no_progress, console=console)
    except NonFiniteLossError as err:
        return _error(str(err), code=1)
    report.print_seed_summary(records, console)
    console.print(f"wrote results.json (.csv, .md) and accuracy.png in each of {', '.join(map(str, workdirs))}")
    return 0


def _eval(args) -> int:
    from panm_jax.train.checkpoint import Checkpointer
    from panm_jax.train.config import TrainConfig, read_config_file
    from panm_jax.train.loop import Run, note

    console = Console()
    lengths = _check_range_args(args)  # before anything is read: a mistyped range fails at once
    workdir = Path(args.workdir)
    config_path = workdir / "config.json"
    if not config_path.is_file():
        raise UserError(f"--workdir: expected a run folder with config.json, got {str(workdir)!r}")
    if args.examples is not None and args.examples < 1:
        raise UserError(f"--examples: expected a positive integer, got {args.examples}")
    config = TrainConfig.from_dict(read_config_file(config_path, what="--workdir"))
    if args.examples is not None:
        config = dataclasses.replace(config, eval_examples=args.examples)
    run = Run(config)
    # Read-only: evaluating never moves or deletes a checkpoint (a run may be training in this workdir).
    ckpt = Checkpointer(workdir, keep=config.keep_checkpoints, read_only=True, notify=note)
    try:
        if lengths is not None:
            return _evaluate_range(args, lengths, run, ckpt, workdir, console)
        return _evaluate_checkpoint(args, run, ckpt, workdir, console)
    finally:
        ckpt.close()


def parse_lengths(text: str) -> tuple[int, int]:
    """``"41-500"`` (or ``"41..500"``, or ``"41"`` alone) -> ``(41, 500)``; a malformed range raises ``UserError``
    naming ``--lengths``."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:(?:-|\.\.)\s*(\d+)\s*)?", text)
    if m is None:
        raise UserError(f"--lengths: expected LO-HI, two positive integers (e.g. 41-500), got {text!r}")
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) is not None else lo
    if lo < 1:
        raise UserError(f"--lengths: expected lengths of at least 1, got {text!r}")
    if lo > hi:
        raise UserError(f"--lengths: expected LO <= HI, got {text!r}")
    return lo, hi


def _check_range_args(args) -> tuple[int, int] | None:
    """``(lo, hi)`` of ``--lengths`` (None without it), the flags it does not combine with refused."""
    if args.lengths is None:
        if args.examples_per_length is not None:
            raise UserError(
                "--examples-per-length: only used with --lengths (the range evaluation); use --examples for the modes"
            )
        return None
    lengths = parse_lengths(args.lengths)
    clash = [
        flag
        for flag, given in (
            ("--modes", args.modes),
            ("--examples", args.examples is not None),
            ("--with-traces", args.with_traces),
            ("--out", args.out),
        )
        if given
    ]
    if clash:
        raise UserError(
            f"--lengths: a range evaluation writes range.* in WORKDIR and takes no {', '.join(clash)}; "
            "give them without --lengths"
        )
    if args.examples_per_length is not None and args.examples_per_length < 1:
        raise UserError(f"--examples-per-length: expected a positive integer, got {args.examples_per_length}")
    return lengths


def _restore_params(args, run, ckpt, workdir: Path):
    """The parameters of the checkpoint ``--checkpoint`` names (the latest when the best is missing or
    unreadable), replicated on the run's mesh, and its metadata."""
    from panm_jax.train.loop import note
    from panm_jax.train.sharding import replicate

    template = jax.device_get(run.state)
    restored = None
    if args.checkpoint == "best" and ckpt.best.latest_step() is None:
        note(f"no best checkpoint in {workdir / 'best'}; evaluating the latest checkpoint instead")
    elif args.checkpoint == "best":
        restored = ckpt.restore_best(template, then="evaluating the latest checkpoint instead")
    if restored is None:
        restored = ckpt.restore_latest(template)  # a CheckpointError is the user's: panm_jax/cli.py prints it
    if restored is None:
        raise UserError(f"--workdir: no readable checkpoint in {str(workdir)!r}")
    state, meta = restored
    return replicate(state.params, run.mesh), meta


def _evaluate_range(args, lengths: tuple[int, int], run, ckpt, workdir: Path, console: Console) -> int:
    from panm_jax.train import report
    from panm_jax.train.loop import results_record
    from panm_jax.train.range_eval import range_evaluate
    from panm_jax.train.sharding import is_primary

    lo, hi = lengths
    task = run.task
    if not (task.lengths.contains(lo) and task.lengths.contains(hi)):
        raise UserError(
            f"--lengths: expected lengths of task {task.name!r} ({task.lengths.expected()}), got {args.lengths!r}"
        )
    examples = args.examples_per_length or DEFAULT_EXAMPLES_PER_LENGTH
    batch_size = min(run.config.eval_batch_size, examples)
    devices = int(run.mesh.devices.size)
    if batch_size % devices:
        raise UserError(
            f"--examples-per-length: expected a multiple of the {devices} devices (or at least "
            f"eval_batch_size, {run.config.eval_batch_size}), got {examples}"
        )
    params, meta = _restore_params(args, run, ckpt, workdir)
    console.print(
        f"[bold]range evaluation[/] {run.config.model} on {task.name} (step {meta['step']}): lengths "
        f"{lo}..{hi}, {examples} examples each"
    )
    result = range_evaluate(run, params, range(lo, hi + 1), examples_per_length=examples, batch_size=batch_size)
    record = result.with_step(meta["step"]).to_record()
    base = results_record(run, {}, meta["step"])
    record.update(config=base["config"], environment=base["environment"])
    report.print_range(record, console)
    if is_primary():
        paths = report.write_range(record, workdir / "range")
        paths.append(report.plot_range([record], workdir / "range.png"))
        console.print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def _evaluate_checkpoint(args, run, ckpt, workdir: Path, console: Console) -> int:
    from panm_jax.train import evaluate as evaluation
    from panm_jax.train import report
    from panm_jax.train.loop import results_record

    modes = tuple(args.modes.split(",")) if args.modes else run.modes
    unknown = [m for m in modes if m not in run.task.test_modes]
    if unknown:
        raise UserError(f"--modes: unknown mode(s) {unknown}; the task has {list(run.task.test_modes)}")
    params, meta = _restore_params(args, run, ckpt, workdir)
    per_mode = run.evaluate(params, modes, evaluation.TEST_SEED)
    results = results_record(run, per_mode, meta["step"])
    stem = Path(args.out) if args.out else workdir / "eval"
    paths = report.write_results(results, stem)
    report.print_results(results, console)
    console.print("wrote " + ", ".join(str(p) for p in paths))
    if args.with_traces:
        out = _plot_traces(run, params, modes[-1], stem.with_name(stem.name + "_traces.png"))
        console.print(f"wrote {out}")
    return 0


def _trace_panels(traces, index: int) -> dict[str, np.ndarray]:
    """``{name: [T, L]}`` heat maps from a model's traces for example ``index``."""
    if hasattr(traces, "_asdict"):
        traces = traces._asdict()
    panels = {}
    for name, value in dict(traces).items():
        arr = np.asarray(jax.device_get(value))
        if arr.ndim == 4:  # [B, T, H, L]: one panel per head
            for h in range(arr.shape[2]):
                panels[f"{name}[{h}]"] = arr[index, :, h]
        elif arr.ndim == 3 and np.issubdtype(arr.dtype, np.floating):  # [B, T, L]
            panels[name] = arr[index]
    return panels


def _plot_traces(run, params, mode: str, out: Path) -> Path:
    from flax import nnx

    from panm_jax.train import report

    batch = next(iter(run.task.eval_batches(mode, 1, 1, seed=0)))
    model = nnx.merge(run.graphdef, jax.device_get(params))
    _, traces = model(batch.inputs, batch.input_mask, batch.targets.shape[1], return_traces=True)
    panels = _trace_panels(traces, 0)
    panels = {k: v for k, v in panels.items() if "weights" in k} or panels
    if not panels:
        raise UserError(f"--with-traces: model {run.config.model!r} returned no per-step attention to plot")
    return report.plot_traces(panels, out, title=f"{run.config.model} on {run.config.task}, mode {mode}")


def _plot(args) -> int:
    from panm_jax.train import report

    if args.range:
        return _plot_range(args)
    runs = [report.load_results(p) for p in args.results]
    labels = args.labels.split(",") if args.labels else report.default_labels(runs, args.results)
    if len(labels) != len(runs):
        raise UserError(f"--labels: expected {len(runs)} labels, got {len(labels)}")
    tasks = list(dict.fromkeys(r["task"] for r in runs))
    if len(tasks) > 1:
        print(f"warning: plotting runs of different tasks ({', '.join(tasks)}) on one axis", file=sys.stderr)
    out = report.plot_accuracy(runs, args.out, labels)
    Console().print(f"wrote {out}")
    return 0


def _plot_range(args) -> int:
    from panm_jax.train import report

    records = [report.load_range(p) for p in args.results]
    labels = args.labels.split(",") if args.labels else None
    if labels is not None and len(labels) != len(records):
        raise UserError(f"--labels: expected {len(records)} labels, got {len(labels)}")
    tasks = list(dict.fromkeys(r["task"] for r in records))
    if len(tasks) > 1:
        print(f"warning: plotting runs of different tasks ({', '.join(tasks)}) on one axis", file=sys.stderr)
    out = report.plot_range(records, args.out, labels)
    Console().print(f"wrote {out}")
    return 0
