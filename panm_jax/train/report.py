"""Evaluation reports: JSON, CSV and Markdown tables, a rich table, and plots.

A results file (``results.json``) holds one run's evaluation over length modes:

    {"task": "copy", "model": "panm", "metric": "token_accuracy", "step": 2000,
     "modes": [{"mode": "L", "length": "10", "token_accuracy": 1.0, ...}, ...],
     "config": {...}, "environment": {...}}

``write_results`` writes it with its CSV and Markdown twins, atomically;
``plot_accuracy`` draws the headline metric against length for one or more
results files (one line per run); ``plot_traces`` draws per-step attention
(PANM's pointer weights, a memory's read weights) for one example.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from panm_jax.train.io import atomic_write_bytes, atomic_write_text

__all__ = ["default_labels", "load_results", "plot_accuracy", "plot_title", "plot_traces", "print_results",
           "save_figure", "write_results"]


def _columns(results: dict[str, Any]) -> list[str]:
    first = results["modes"][0]
    metric = results["metric"]
    rest = [k for k in first if k not in ("mode", "length", metric, "examples")]
    return ["mode", "length", metric, *rest, "examples"]


def write_results(results: dict[str, Any], stem: str | Path) -> list[Path]:
    """Write ``<stem>.json``, ``.csv`` and ``.md`` atomically; returns the paths."""
    stem = Path(stem)
    cols = _columns(results)
    json_path, csv_path, md_path = (stem.with_suffix(s) for s in (".json", ".csv", ".md"))
    atomic_write_text(json_path, json.dumps(results, indent=2) + "\n")
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")
    writer.writeheader()
    for row in results["modes"]:
        writer.writerow(row)
    atomic_write_text(csv_path, buf.getvalue())
    lines = [
        f"# {results['model']} on {results['task']} (step {results['step']})",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for row in results["modes"]:
        lines.append("| " + " | ".join(_fmt(row.get(c, "")) for c in cols) + " |")
    env = results.get("environment")
    if env:
        lines += ["", "Measured on: " + ", ".join(f"{k}: {v}" for k, v in env.items())]
    atomic_write_text(md_path, "\n".join(lines) + "\n")
    return [json_path, csv_path, md_path]


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v)


def load_results(path: str | Path) -> dict[str, Any]:
    """The record in a results file, or in ``results.json`` of a run folder; a missing, unreadable or
    malformed file raises ``UserError`` naming it."""
    from panm_jax.errors import UserError

    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    if not path.is_file():
        raise UserError(f"results: expected a results.json file or a run folder holding one, got {str(path)!r}, "
                        "which does not exist")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise UserError(f"results: cannot parse {str(path)!r}: not UTF-8 text ({err})") from err
    except json.JSONDecodeError as err:
        raise UserError(f"results: cannot parse {str(path)!r}: {err}") from err
    missing = [k for k in ("task", "model", "metric", "step", "modes")
               if not isinstance(record, dict) or k not in record]
    if missing:
        raise UserError(f"results: expected a results record (written by panm-jax train or eval) in {str(path)!r}, "
                        f"missing {missing}")
    return record


def default_labels(runs: Sequence[dict[str, Any]], paths: Sequence[str | Path]) -> list[str]:
    """``model (step N)`` per run; runs that would share a label get their file's run folder (or the
    whole path) in it instead, so every line of a plot has its own label."""
    labels = [f"{res['model']} (step {res['step']})" for res in runs]
    for where in (lambda p: Path(p).resolve().parent.name if Path(p).is_file() else Path(p).resolve().name,
                  lambda p: str(p)):
        dup = {label for label in labels if labels.count(label) > 1}
        if not dup:
            break
        labels = [f"{res['model']} ({where(p)}, step {res['step']})" if label in dup else label
                  for res, p, label in zip(runs, paths, labels)]
    return labels


def print_results(results: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    metric = results["metric"]
    table = Table(title=f"{results['model']} on {results['task']}: {metric} by length (step {results['step']})")
    cols = _columns(results)
    for c in cols:
        table.add_column(c, justify="right" if c not in ("mode",) else "left")
    for row in results["modes"]:
        cells = []
        for c in cols:
            v = row.get(c, "")
            cells.append(f"{100 * v:.1f}%" if c == metric else _fmt(v))
        table.add_row(*cells)
    console.print(table)


def _length_value(row: dict[str, Any]) -> float:
    # "21" -> 21; "65..128" -> its midpoint; "12..14 (even)" -> 13
    text = str(row["length"]).split(" ")[0]
    if ".." in text:
        lo, hi = text.split("..")
        return (float(lo) + float(hi)) / 2
    return float(text)


def save_figure(fig, out: str | Path) -> Path:
    """Lay out, render to PNG and write atomically; closes the figure."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    out = Path(out)
    atomic_write_bytes(out, buf.getvalue())
    return out


def plot_title(runs: Sequence[dict[str, Any]]) -> str:
    """``copy: length generalisation``, naming every task plotted (in order) when runs of several are."""
    return f"{', '.join(dict.fromkeys(res['task'] for res in runs))}: length generalisation"


def plot_accuracy(runs: Sequence[dict[str, Any]], out: str | Path, labels: Sequence[str] | None = None) -> Path:
    """The headline metric against test length, one line per run; saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for i, res in enumerate(runs):
        rows = sorted(res["modes"], key=_length_value)
        xs = [_length_value(r) for r in rows]
        ys = [100 * r[res["metric"]] for r in rows]
        label = labels[i] if labels else f"{res['model']} (step {res['step']})"
        ax.plot(xs, ys, marker="o", label=label)
    first = runs[0]
    ax.set_xscale("log")
    ticks = sorted({_length_value(r) for res in runs for r in res["modes"]})
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("test length")
    ax.set_ylabel(f"{first['metric']} (%)")
    ax.set_ylim(0, 105)
    ax.set_title(plot_title(runs))
    ax.grid(True, alpha=0.3)
    ax.legend()
    return save_figure(fig, out)


def plot_traces(traces: dict[str, np.ndarray], out: str | Path, title: str = "") -> Path:
    """Heat maps of per-step attention for one example: ``{name: [T_out, L]}``, one panel each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(traces)
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.6), dpi=120, squeeze=False)
    for ax, name in zip(axes[0], names):
        w = np.asarray(traces[name])
        im = ax.imshow(w, aspect="auto", cmap="viridis", vmin=0.0, vmax=max(float(w.max()), 1e-6))
        ax.set_title(name)
        ax.set_xlabel("memory slot")
        ax.set_ylabel("output step")
        fig.colorbar(im, ax=ax, fraction=0.046)
    if title:
        fig.suptitle(title)
    return save_figure(fig, out)
