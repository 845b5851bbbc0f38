"""``panm-jax eval``: evaluate a run's checkpoint over length modes, or at every length of a range.

    panm-jax eval --workdir runs/copy-panm                      # a finished run: its recorded table
    panm-jax eval --workdir runs/copy-panm --modes L,2L+1 --with-traces
    panm-jax eval --workdir runs/copy-panm --checkpoint 48000   # a kept checkpoint other than the best
    panm-jax eval --workdir runs/reverse_string-lstm-s0 --lengths 41-500 --examples-per-length 64

An evaluation the run has already recorded is not computed again: where
``results.json`` (written by ``panm-jax train``) or ``eval.json`` (by an
earlier ``panm-jax eval``) holds the same evaluation (the same config, the
examples per mode included; the checkpoint that ``best`` picks now; the same
modes), its table is printed from that file, with one line saying so, and
nothing is written. ``--recompute`` evaluates anyway, as do ``--with-traces``,
``--out``, ``--lengths`` and ``--checkpoint latest|STEP`` (they ask for
something the record does not hold). The evaluation sets are fixed by
``TEST_SEED``, so a recomputation on the same machine gives the same table.

Evaluating reads a run folder and never moves or deletes a checkpoint, nor
takes the run's lock: it may read a run while it trains. It reads the newest
checkpoint that is complete and verified, listing the folder afresh: one that
the run rotates away before it is read is not reported (the then newest is
read instead), and one the run is still writing is passed over for an older
one. The model is built from the configuration stored inside the checkpoints,
not from ``config.json`` (a file anyone can edit): when the two differ, the
evaluation is refused, naming the fields, unless ``--ignore-config-json`` says
to go on with the stored one. A checkpoint without its checksums is refused unless
``--allow-unverified``, and one whose parameters are not finite always is. A
missing run, an unknown mode or a malformed range raises an error that
``panm_jax.cli.main`` prints as one line, ``error: ...``, exiting with code 2.
"""

from __future__ import annotations

import re
from pathlib import Path

import jax
from rich.console import Console

from panm_jax import checks
from panm_jax.checks import did_you_mean
from panm_jax.errors import UserError

INT32_WHY = "JAX indexes arrays with int32"

__all__ = ["DEFAULT_EXAMPLES_PER_LENGTH", "parse_lengths", "register"]

DEFAULT_EXAMPLES_PER_LENGTH = 64


def register(subparsers) -> None:
    """Add the ``eval`` sub-command to the ``panm-jax`` parser."""
    e = subparsers.add_parser(
        "eval",
        help="evaluate a run's checkpoint over chosen length modes",
        description="Evaluate the best, the latest or another kept checkpoint of a run at chosen length modes.",
    )
    e.add_argument("--workdir", required=True, help="a run folder written by panm-jax train")
    e.add_argument("--modes", help="comma-separated length modes (default: all of the task's)")
    e.add_argument(
        "--checkpoint",
        default="best",
        metavar="{best,latest,STEP}",
        help="which checkpoint: best (default; the latest when the best is missing or corrupt), latest, or "
        "the step of one the run kept (checkpoints/STEP or best/STEP)",
    )
    e.add_argument("--examples", type=int, help="examples per mode (default: the run's eval_examples)")
    e.add_argument(
        "--with-traces",
        action="store_true",
        help="also plot per-step attention (pointer positions, read weights) for one example",
    )
    e.add_argument("--out", help="results stem (default WORKDIR/eval, or WORKDIR/eval-STEP with --checkpoint STEP)")
    e.add_argument(
        "--recompute",
        action="store_true",
        help="evaluate even when the run has recorded this evaluation (results.json or eval.json of the same "
        "config, checkpoint and modes), whose table is otherwise printed from the record",
    )
    e.add_argument(
        "--ignore-config-json",
        action="store_true",
        dest="ignore_config_json",
        help="evaluate with the configuration stored in the checkpoints even when WORKDIR/config.json differs "
        "from it (otherwise refused, naming the fields)",
    )
    e.add_argument(
        "--allow-unverified",
        action="store_true",
        dest="allow_unverified",
        help="read a checkpoint that has no checksums.sha256 (otherwise taken as damaged and skipped)",
    )
    e.add_argument(
        "--lengths",
        metavar="LO-HI",
        help="range evaluation instead of the modes: every length LO..HI on its own (the score is the "
        "headline metric averaged over them), one compilation per length bucket (the fewest that compute "
        "within 10 %% of the lengths' own steps); writes "
        "range.json, range.csv and range.png in WORKDIR",
    )
    e.add_argument(
        "--examples-per-length",
        type=int,
        dest="examples_per_length",
        help=f"examples at each length with --lengths (default {DEFAULT_EXAMPLES_PER_LENGTH})",
    )
    e.set_defaults(func=_eval)


def _eval(args) -> int:
    from panm_jax.train.checkpoint import Checkpointer
    from panm_jax.train.config import TrainConfig, read_config_file
    from panm_jax.train.loop import Run, check_workdir_path, note

    console = Console()
    _check_checkpoint_arg(args.checkpoint)
    lengths = _check_range_args(args)  # before anything is read: a mistyped range fails at once
    if not args.workdir.strip():
        raise UserError(f"--workdir: expected a run folder, got {args.workdir!r}")
    workdir = check_workdir_path(args.workdir, "--workdir")
    config_path = workdir / "config.json"
    if not config_path.is_file():
        raise UserError(f"--workdir: expected a run folder with config.json, got {str(workdir)!r}")
    if args.examples is not None:
        checks.integer("--examples", args.examples, 1, checks.INT32_MAX, why=INT32_WHY)
    config = TrainConfig.from_dict(read_config_file(config_path, what="--workdir"))
    # Read-only: evaluating never moves or deletes a checkpoint nor takes the lock (a run may be training here).
    ckpt = Checkpointer(
        workdir, keep=config.keep_checkpoints, read_only=True, notify=note, allow_unverified=args.allow_unverified
    )
    try:
        config = _stored_config(args, config, ckpt, config_path)
        if args.examples is not None:
            config = config.replace(eval_examples=args.examples)
        recorded = None if lengths is not None else _recorded(args, config, ckpt, workdir)
        if recorded is not None:
            return _reprint(*recorded, console)
        run = Run(config)
        if lengths is not None:
            return _evaluate_range(args, lengths, run, ckpt, workdir, console)
        return _evaluate_checkpoint(args, run, ckpt, workdir, console)
    finally:
        ckpt.close()


def _stored_config(args, given, ckpt, config_path: Path):
    """The configuration stored in the run's checkpoints (the best's, else the latest's), checked against
    ``config.json``'s (``given``): a difference is refused, naming the fields, unless ``--ignore-config-json``.
    ``given`` when no checkpoint can be read (the evaluation then says there is none)."""
    from panm_jax.train.config import TrainConfig, resume_differences

    meta = ckpt.stored_record()
    if meta is None or "config" not in meta:
        return given
    stored = TrainConfig.from_dict(meta["config"])
    diff = resume_differences(stored, given)
    if diff and not args.ignore_config_json:
        shown = "; ".join(f"{name}: {old!r} stored, {new!r} in config.json" for name, old, new in diff[:4])
        raise UserError(
            f"--workdir: {config_path} differs from the configuration stored in the checkpoints "
            f"({shown}); restore the file, or pass --ignore-config-json to evaluate with the stored one"
        )
    return stored


def _recorded(args, config, ckpt, workdir: Path) -> tuple[Path, dict] | None:
    """``(path, record)`` of the run's record of this very evaluation, or None (module docstring)."""
    from panm_jax.train import report

    if args.recompute or args.with_traces or args.out or args.checkpoint != "best":
        return None
    step = ckpt.newest_step("best")
    step = ckpt.newest_step("checkpoints") if step is None else step  # what --checkpoint best evaluates
    if args.modes:
        modes = args.modes.split(",")
    else:
        modes = list(config.eval_modes) or list(config.build_task().test_modes)
    wanted = report.recorded_config(config)
    for path in (workdir / "results.json", workdir / "eval.json"):
        try:
            record = report.load_results(path)
        except UserError:  # none, or not a record
            continue
        if (
            record.get("config") == wanted
            and record["step"] == step
            and [row.get("mode") for row in record["modes"]] == modes
        ):
            return path, record
    return None


def _reprint(path: Path, record: dict, console: Console) -> int:
    from panm_jax.train import report

    device = record.get("environment", {}).get("device", "an unrecorded device")
    console.print(
        f"[dim]table read from {path}, the record of this evaluation (step {record['step']}, on {device}); "
        "--recompute evaluates again[/dim]",
        highlight=False,
        soft_wrap=True,  # one line, whatever the width
    )
    report.print_results(record, console)
    return 0


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
    if args.examples_per_length is not None:
        checks.integer(
            "--examples-per-length", args.examples_per_length, 1, checks.INT32_MAX, why="JAX indexes arrays with int32"
        )
    return lengths


def _check_checkpoint_arg(value: str) -> None:
    if value not in ("best", "latest") and not (value.isdigit() and int(value) > 0):
        raise UserError(f"--checkpoint: expected best, latest or a step number, got {value!r}")


def _restore_params(args, run, ckpt, workdir: Path):
    """The parameters of the checkpoint ``--checkpoint`` names (the latest when the best is missing or
    unreadable), replicated on the run's mesh, and its metadata."""
    from panm_jax.train.loop import note
    from panm_jax.train.sharding import replicate

    template = jax.device_get(run.state)
    restored = None
    if args.checkpoint not in ("best", "latest"):
        step, kept = int(args.checkpoint), ckpt.kept_steps()
        if step not in kept:
            raise UserError(
                f"--checkpoint: expected best, latest or the step of a checkpoint kept in {str(workdir)!r} "
                f"({kept}), got {step}"
            )
        restored = ckpt.restore_step(step, template)  # no fallback: a corrupt one is the CheckpointError
    elif args.checkpoint == "best" and ckpt.newest_step("best") is None:
        note(f"no best checkpoint in {workdir / 'best'}; evaluating the latest checkpoint instead")
    elif args.checkpoint == "best":
        restored = ckpt.restore_best(template, then="evaluating the latest checkpoint instead")
    if restored is None:
        restored = ckpt.restore_latest(template)  # a CheckpointError is the user's: panm_jax.cli.main prints it
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
        known = list(run.task.test_modes)
        raise UserError(f"--modes: unknown mode(s) {unknown}; the task has {known}{did_you_mean(unknown, known)}")
    params, meta = _restore_params(args, run, ckpt, workdir)
    per_mode = run.evaluate(params, modes, evaluation.TEST_SEED)
    results = results_record(run, per_mode, meta["step"])
    default = "eval" if args.checkpoint in ("best", "latest") else f"eval-{int(args.checkpoint)}"
    stem = Path(args.out) if args.out else workdir / default
    paths = report.write_results(results, stem)
    report.print_results(results, console)
    console.print("wrote " + ", ".join(str(p) for p in paths))
    if args.with_traces:
        out = report.plot_run_traces(run, params, modes[-1], stem.with_name(stem.name + "_traces.png"))
        if out is None:
            raise UserError(f"--with-traces: model {run.config.model!r} returned no per-step attention to plot")
        console.print(f"wrote {out}")
    return 0
