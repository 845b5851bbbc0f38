"""Evaluation reports: JSON, CSV and Markdown tables, a rich table, and plots.

A results file (``results.json``) holds one run's evaluation over length modes:

    {"task": "copy", "model": "panm", "metric": "token_accuracy", "step": 2000,
     "modes": [{"mode": "L", "length": "10", "token_accuracy": 1.0, ...}, ...],
     "config": {...}, "environment": {...}}

``write_results`` writes it with its CSV and Markdown twins, atomically;
``plot_accuracy`` draws the headline metric against length for one or more
results files (one line per run); ``plot_traces`` draws per-step attention
(PANM's pointer weights, a memory's read weights) for one example, and
``plot_run_traces`` runs a trained model on one example to draw its traces.

A range file (``range.json``, ``train/range_eval.py``) holds one run evaluated
at every length of a range: ``RangeResult.to_record()``, its rows one per
length. ``write_range`` writes it with its CSV twin, ``print_range`` prints it
with lengths grouped, ``plot_range`` draws the headline metric against length
(one line per run, the training lengths shaded).
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

__all__ = [
    "default_labels",
    "load_range",
    "load_results",
    "plot_accuracy",
    "plot_range",
    "plot_run_traces",
    "plot_title",
    "plot_traces",
    "print_range",
    "print_results",
    "save_figure",
    "trace_panels",
    "write_range",
    "write_results",
]


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
    atomic_write_text(json_path, json.dumps(results, indent=2, allow_nan=False) + "\n")  # NaN is not JSON
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
    if v is None:  # a non-finite number, written as null in a failed run's record
        return "n/a"
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v)


def recorded_config(config) -> dict[str, Any]:
    """``config`` (a ``TrainConfig``) as a results record holds it, JSON's way (lists, not tuples): what a record's
    ``"config"`` is compared with to tell whether it is this very run's."""
    return json.loads(json.dumps(config.to_dict()))


def load_results(path: str | Path) -> dict[str, Any]:
    """The record in a results file, or in ``results.json`` of a run folder; a missing, unreadable or
    malformed file raises ``UserError`` naming it."""
    from panm_jax.errors import UserError

    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    if not path.is_file():
        raise UserError(
            f"results: expected a results.json file or a run folder holding one, got {str(path)!r}, "
            "which does not exist"
        )
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise UserError(f"results: cannot parse {str(path)!r}: not UTF-8 text ({err})") from err
    except json.JSONDecodeError as err:
        raise UserError(f"results: cannot parse {str(path)!r}: {err}") from err
    missing = [
        k for k in ("task", "model", "metric", "step", "modes") if not isinstance(record, dict) or k not in record
    ]
    if missing:
        raise UserError(
            f"results: expected a results record (written by panm-jax train or eval) in {str(path)!r}, "
            f"missing {missing}"
        )
    return record


def default_labels(runs: Sequence[dict[str, Any]], paths: Sequence[str | Path]) -> list[str]:
    """``model (step N)`` per run; runs that would share a label get their file's run folder (or the
    whole path) in it instead, so every line of a plot has its own label."""
    labels = [f"{res['model']} (step {res['step']})" for res in runs]
    for where in (
        lambda p: Path(p).resolve().parent.name if Path(p).is_file() else Path(p).resolve().name,
        lambda p: str(p),
    ):
        dup = {label for label in labels if labels.count(label) > 1}
        if not dup:
            break
        labels = [
            f"{res['model']} ({where(p)}, step {res['step']})" if label in dup else label
            for res, p, label in zip(runs, paths, labels, strict=False)
        ]
    return labels


def print_results(results: dict[str, Any], console: Console | None = None) -> None:
    """Print a run's results (``results.json``'s dict) as the table ``panm-jax train`` and ``eval`` end with.

    One row per length mode: the mode, its length, the headline metric as a
    percentage, the other metrics and the number of examples, under the title
    "MODEL on TASK: METRIC by length (step S)". ``console``: where to print (a
    ``rich`` console; the terminal by default).
    """
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
            cells.append(f"{100 * v:.1f}%" if c == metric and v is not None else _fmt(v))
        table.add_row(*cells)
    console.print(table)


def print_seed_summary(records: list[dict[str, Any]], console: Console | None = None) -> None:
    """One table of several seeds' results: each seed's headline metric per mode, and mean ± standard
    deviation (sample, over the seeds)."""
    import statistics

    console = console or Console()
    first = records[0]
    metric = first["metric"]
    table = Table(title=f"{first['model']} on {first['task']}: {metric} by length, {len(records)} seeds")
    table.add_column("mode")
    table.add_column("length", justify="right")
    for r in records:
        table.add_column(f"seed {r['config']['seed']} (step {r['step']})", justify="right")
    table.add_column("mean ± std", justify="right")
    for i, row in enumerate(first["modes"]):
        cells = [r["modes"][i][metric] for r in records]
        values = [100 * v for v in cells if v is not None]  # None: a failed seed's non-finite number
        std = statistics.stdev(values) if len(values) > 1 else 0.0
        table.add_row(
            row["mode"],
            str(row["length"]),
            *(f"{100 * v:.1f}%" if v is not None else "n/a" for v in cells),
            f"{statistics.mean(values):.1f} ± {std:.1f}" if values else "n/a",
        )
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
        ys = [100 * r[res["metric"]] if r[res["metric"]] is not None else np.nan for r in rows]
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
    for ax, name in zip(axes[0], names, strict=True):
        w = np.asarray(traces[name])
        im = ax.imshow(w, aspect="auto", cmap="viridis", vmin=0.0, vmax=max(float(w.max()), 1e-6))
        ax.set_title(name)
        ax.set_xlabel("memory slot")
        ax.set_ylabel("output step")
        fig.colorbar(im, ax=ax, fraction=0.046)
    if title:
        fig.suptitle(title)
    return save_figure(fig, out)


def trace_panels(traces, index: int) -> dict[str, np.ndarray]:
    """``{name: [T, L]}`` heat maps of example ``index`` from a model's traces (a NamedTuple or mapping).

    A ``[B, T, H, L]`` trace gives one panel per head (``name[h]``), a floating
    ``[B, T, L]`` trace one panel; other traces are left out.
    """
    import jax

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


def plot_run_traces(run, params, mode: str, out: str | Path) -> Path | None:
    """Run the model of ``run`` (a ``train.loop.Run``) with ``params`` on the first example of ``mode``
    and draw its traces (``plot_traces``): the weight traces (``*weights*``) where it has any, else every
    trace ``trace_panels`` keeps. Returns the image's path, or ``None`` when the model traces no per-step
    attention."""
    import jax

    from panm_jax.train.steps import merge_model

    batch = next(iter(run.task.eval_batches(mode, 1, 1, seed=0)))
    model = merge_model(run.graphdef, jax.device_get(params))
    aligned = run.task.output_mode == "aligned"
    _, traces = model(batch.inputs, batch.input_mask, batch.targets.shape[1], aligned=aligned, return_traces=True)
    panels = trace_panels(traces, 0)
    panels = {k: v for k, v in panels.items() if "weights" in k} or panels
    if not panels:
        return None
    return plot_traces(panels, out, title=f"{run.config.model} on {run.config.task}, mode {mode}")


# ---- range evaluation: one row per length ------------------------------------------------------

_RANGE_KEYS = ("task", "model", "metric", "score", "rows", "train_lengths")


def _range_record(result) -> dict[str, Any]:
    """A range record from a ``RangeResult`` or a record already."""
    return result.to_record() if hasattr(result, "to_record") else result


def _range_columns(record: dict[str, Any]) -> list[str]:
    first = record["rows"][0] if record["rows"] else {}
    rest = [k for k in first if k not in ("length", "bucket", record["metric"], "examples")]
    return ["length", "bucket", record["metric"], *rest, "examples"]


def write_range(result, stem: str | Path) -> list[Path]:
    """Write ``<stem>.json`` (the whole record) and ``<stem>.csv`` (one row per length) atomically."""
    record = _range_record(result)
    stem = Path(stem)
    json_path, csv_path = stem.with_suffix(".json"), stem.with_suffix(".csv")
    atomic_write_text(json_path, json.dumps(record, indent=2) + "\n")
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=_range_columns(record), extrasaction="ignore")
    writer.writeheader()
    for row in record["rows"]:
        writer.writerow(row)
    atomic_write_text(csv_path, buf.getvalue())
    return [json_path, csv_path]


def load_range(path: str | Path) -> dict[str, Any]:
    """The record in a range file, or in ``range.json`` of a run folder; a missing, unreadable or malformed
    file raises ``UserError`` naming it."""
    from panm_jax.errors import UserError

    path = Path(path)
    if path.is_dir():
        path = path / "range.json"
    if not path.is_file():
        raise UserError(
            f"range: expected a range.json file or a run folder holding one (panm-jax eval --lengths "
            f"writes it), got {str(path)!r}, which does not exist"
        )
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise UserError(f"range: cannot parse {str(path)!r}: not UTF-8 text ({err})") from err
    except json.JSONDecodeError as err:
        raise UserError(f"range: cannot parse {str(path)!r}: {err}") from err
    missing = [k for k in _RANGE_KEYS if not isinstance(record, dict) or k not in record]
    if missing:
        raise UserError(
            f"range: expected a range record (written by panm-jax eval --lengths) in {str(path)!r}, missing {missing}"
        )
    return record


def _group_size(num_lengths: int, max_rows: int = 24) -> int:
    """Lengths per table row: 20 for 41..500 (23 rows), 1 up to ``max_rows`` lengths."""
    return max(1, -(-num_lengths // max_rows))


def print_range(result, console: Console | None = None, group: int | None = None) -> None:
    """The range as a table, ``group`` consecutive lengths a row (their mean; default about 24 rows), then the
    mean over all lengths (the score), the compile count and the wall time."""
    console = console or Console()
    record = _range_record(result)
    metric = record["metric"]
    rows = record["rows"]
    group = group or _group_size(len(rows))
    cols = [c for c in _range_columns(record) if c not in ("length", "bucket", "examples")]
    step = f" (step {record['step']})" if record.get("step") is not None else ""
    table = Table(title=f"{record['model']} on {record['task']}: {metric} by length{step}")
    table.add_column("lengths", justify="left")
    table.add_column("bucket" + ("s" if group > 1 else ""), justify="right")
    for c in cols:
        table.add_column(c, justify="right")

    def cells(part: list[dict[str, Any]]) -> list[str]:
        out = []
        for c in cols:
            v = float(np.mean([r[c] for r in part]))
            out.append(f"{100 * v:.1f}%" if c != "loss" else f"{v:.4f}")
        return out

    for i in range(0, len(rows), group):
        part = rows[i : i + group]
        lo, hi = part[0]["length"], part[-1]["length"]
        buckets = sorted({r["bucket"] for r in part})
        table.add_row(f"{lo}" if lo == hi else f"{lo}..{hi}", ",".join(str(b) for b in buckets), *cells(part))
    table.add_section()
    table.add_row(f"mean ({len(rows)} lengths)", "", *cells(rows), style="bold")
    console.print(table)
    buckets = record.get("buckets_used") or []
    console.print(
        f"score ({metric} averaged over lengths): {100 * record['score']:.2f}%; "
        f"{record.get('compiles', '?')} compilation(s) of the eval step for {len(buckets)} bucket(s) "
        f"{buckets}; wall time {record.get('wall_seconds', float('nan')):.1f} s "
        f"({record.get('examples_per_length', '?')} examples per length)"
    )


def _range_labels(records: Sequence[dict[str, Any]]) -> list[str]:
    labels = [r["model"] for r in records]
    if len(set(labels)) < len(labels):
        labels = [f"{r['model']} (step {r.get('step')})" for r in records]
    if len(set(labels)) < len(labels):
        labels = [f"{label} #{i + 1}" for i, label in enumerate(labels)]
    return labels


def plot_range(results: Sequence, out: str | Path, labels: Sequence[str] | None = None) -> Path:
    """The headline metric against length, one line per run (``RangeResult``s or range records), labelled by
    model with its score; the training lengths shaded. Saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = [_range_record(r) for r in results]
    labels = list(labels) if labels else _range_labels(records)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    shaded = set()
    for rec in records:
        lo, hi = (int(v) for v in rec["train_lengths"])
        if (lo, hi) not in shaded:
            ax.axvspan(
                lo - 0.5, hi + 0.5, color="grey", alpha=0.15, lw=0, label="training lengths" if not shaded else None
            )
            shaded.add((lo, hi))
    for label, rec in zip(labels, records, strict=False):
        rows = sorted(rec["rows"], key=lambda r: r["length"])
        xs = [r["length"] for r in rows]
        ys = [100 * r[rec["metric"]] for r in rows]
        ax.plot(
            xs, ys, lw=1.2, marker="." if len(xs) <= 60 else None, label=f"{label} (mean {100 * rec['score']:.1f}%)"
        )
    ax.set_xlim(left=0)
    ax.set_xlabel("test length")
    ax.set_ylabel(f"{records[0]['metric']} (%)")
    ax.set_ylim(0, 105)
    ax.set_title(f"{', '.join(dict.fromkeys(r['task'] for r in records))}: accuracy at every length")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return save_figure(fig, out)
