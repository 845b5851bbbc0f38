"""``panm-jax eval``: evaluate a run's checkpoint over length modes, or at every length of a range.

    panm-jax eval --workdir runs/copy-panm                      # a finished run: its recorded table
    panm-jax eval --workdir runs/copy-panm --modes L,2L+1 --with-traces
    panm-jax eval --workdir runs/copy-panm --checkpoint 48000   # a kept checkpoint other than the best
    panm-jax eval --workdir runs/reverse_string-lstm-s0 --lengths 41-500 --examples-per-length 64

The evaluation is ``panm_jax.train.run_eval``'s (``evaluate_run``,
``evaluate_run_range``); this command prints and writes what it returns.
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

from rich.console import Console

from panm_jax.errors import UserError
from panm_jax.train.run_eval import DEFAULT_EXAMPLES_PER_LENGTH

__all__ = ["DEFAULT_EXAMPLES_PER_LENGTH", "parse_lengths", "register"]


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


# The names of run_eval's arguments as this command's flags, for its error messages.
FLAGS = {
    "workdir": "--workdir",
    "checkpoint": "--checkpoint",
    "modes": "--modes",
    "examples": "--examples",
    "lengths": "--lengths",
    "examples_per_length": "--examples-per-length",
    "ignore_config_json": "--ignore-config-json",
}


def _eval(args) -> int:
    from panm_jax.train.run_eval import evaluate_run, evaluate_run_range

    console = Console()
    lengths = _check_range_args(args)  # before anything is read: a mistyped range fails at once
    common = dict(
        checkpoint=args.checkpoint,
        ignore_config_json=args.ignore_config_json,
        allow_unverified=args.allow_unverified,
        names=FLAGS,
    )
    if lengths is not None:
        ev = evaluate_run_range(args.workdir, lengths, examples_per_length=args.examples_per_length, **common)
        return _show_range(ev, Path(args.workdir), console)
    ev = evaluate_run(
        args.workdir,
        modes=args.modes.split(",") if args.modes else None,
        examples=args.examples,
        recompute=bool(args.recompute or args.with_traces or args.out),  # they ask for what no record holds
        **common,
    )
    if ev.recorded_in is not None:
        return _reprint(ev.recorded_in, ev.record, console)
    return _show_checkpoint(args, ev, console)


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
    return lengths  # --examples-per-length is checked by evaluate_run_range


def _show_range(ev, workdir: Path, console: Console) -> int:
    """Print a range evaluation and write ``range.*`` in the run folder (process 0)."""
    from panm_jax.train import report
    from panm_jax.train.sharding import is_primary

    record, run = ev.record, ev.run
    console.print(
        f"[bold]range evaluation[/] {run.config.model} on {run.task.name} (step {record['step']}): lengths "
        f"{record['lengths'].replace('-', '..')}, {record['examples_per_length']} examples each"
    )
    report.print_range(record, console)
    if is_primary():
        paths = report.write_range(record, workdir / "range")
        paths.append(report.plot_range([record], workdir / "range.png"))
        console.print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def _show_checkpoint(args, ev, console: Console) -> int:
    """Print the results of a checkpoint's evaluation, write them (``--out``, else ``eval`` or ``eval-STEP`` in
    the run folder) and, with ``--with-traces``, plot one example's traces."""
    from panm_jax.train import report

    results, run = ev.record, ev.run
    default = "eval" if args.checkpoint in ("best", "latest") else f"eval-{int(args.checkpoint)}"
    stem = Path(args.out) if args.out else Path(args.workdir) / default
    paths = report.write_results(results, stem)
    report.print_results(results, console)
    console.print("wrote " + ", ".join(str(p) for p in paths))
    if args.with_traces:
        modes = [row["mode"] for row in results["modes"]]
        out = report.plot_run_traces(run, ev.params, modes[-1], stem.with_name(stem.name + "_traces.png"))
        if out is None:
            raise UserError(f"--with-traces: model {run.config.model!r} returned no per-step attention to plot")
        console.print(f"wrote {out}")
    return 0
