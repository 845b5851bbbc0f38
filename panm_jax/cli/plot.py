"""``panm-jax plot``: accuracy against length, one line per results file or run folder.

    panm-jax plot runs/copy-panm runs/copy-lstm --out copy.png
    panm-jax plot --range runs/reverse_string-lstm-s0 runs/reverse_string-panm-s0 --out range.png

A missing or malformed results file raises an error that ``panm_jax.cli.main``
prints as one line, ``error: ...``, exiting with code 2.
"""

from __future__ import annotations

import sys

from rich.console import Console

from panm_jax.errors import UserError

__all__ = ["register"]


def register(subparsers) -> None:
    """Add the ``plot`` sub-command to the ``panm-jax`` parser."""
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


def _labels(args, records: list[dict]) -> list[str] | None:
    """``--labels a,b`` checked against the runs (None without it); warns when the runs are of several tasks."""
    labels = args.labels.split(",") if args.labels else None
    if labels is not None and len(labels) != len(records):
        raise UserError(f"--labels: expected {len(records)} labels, got {len(labels)}")
    tasks = list(dict.fromkeys(r["task"] for r in records))
    if len(tasks) > 1:
        print(f"warning: plotting runs of different tasks ({', '.join(tasks)}) on one axis", file=sys.stderr)
    return labels


def _plot(args) -> int:
    from panm_jax.train import report

    if args.range:
        return _plot_range(args)
    runs = [report.load_results(p) for p in args.results]
    labels = _labels(args, runs) or report.default_labels(runs, args.results)
    out = report.plot_accuracy(runs, args.out, labels)
    Console().print(f"wrote {out}")
    return 0


def _plot_range(args) -> int:
    from panm_jax.train import report

    records = [report.load_range(p) for p in args.results]
    out = report.plot_range(records, args.out, _labels(args, records))
    Console().print(f"wrote {out}")
    return 0
