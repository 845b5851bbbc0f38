from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.pages.records import Record

# --- the arithmetic -------------------------------------------------------------------------------------------


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """The mean and the sample standard deviation (0 for one value), as the runners compute them."""
    if len(values) == 1:
        return float(values[0]), 0.0
    return statistics.mean(values), statistics.stdev(values)


def mean_pm_std(values: Sequence[float]) -> str:
    """``[80, 90]`` -> ``"85.0 ± 7.1"``; one value: ``"80.0"``."""
    mean, std = mean_std(values)
    return f"{mean:.1f}" + (f" ± {std:.1f}" if len(values) > 1 else "")


def leading_number(cell: Any) -> float | None:
    """The first number of a cell: ``"77.9 ± 2.0"`` -> 77.9, ``84`` -> 84.0, ``""`` -> None."""
    if isinstance(cell, bool):
        return None
    if isinstance(cell, int | float):
        return None if math.isnan(cell) else float(cell)
    found = re.search(r"[-+]?\d+(?:\.\d+)?", str(cell))
    return float(found.group()) if found else None


def difference(ours: float | None, published: float | None) -> str:
    """``ours - published`` in percentage points, signed, one decimal (``""`` where either is missing)."""
    if ours is None or published is None:
        return ""
    return f"{ours - published:+.1f}"


def ours_cell(row: dict[str, Any], mode: str) -> tuple[str, float | None]:
    """A row's cell at ``mode`` and the mean to take its difference from: the file's own aggregate where it
    records one (``"77.9 ± 2.0"``), else the mean ± std of the row's per-seed numbers (``per_seed``)."""
    per_seed = row.get("per_seed")
    seeds = per_seed.get(mode) if isinstance(per_seed, dict) else None
    text = str(row.get(mode, "")) or (mean_pm_std(seeds) if seeds else "")
    if seeds and text and not agrees(text, seeds):
        raise ValueError(f"its cell {mode} = {text!r} is not the mean ± std of its per_seed numbers {seeds}")
    return text, leading_number(text) if text else None


def agrees(cell: str, seeds: Sequence[float]) -> bool:
    """Whether a recorded ``"m ± s"`` cell is the mean and sample standard deviation of ``seeds`` to its one
    decimal (the per-seed numbers are themselves rounded to two decimals, hence the 0.06 of slack)."""
    mean, std = mean_std(seeds)
    parts = [leading_number(part) for part in cell.split("±")]
    if parts[0] is None or abs(parts[0] - mean) > 0.06:
        return False
    return len(parts) == 1 or parts[1] is None or abs(parts[1] - std) <= 0.06


def with_difference(ours: str, mean: float | None, published: Any, recorded: Any = "") -> str:
    """``"77.9 ± 2.0 (-6.1)"``: a cell of ours and, in brackets, ours - published: the file's own difference
    where it records one (``recorded``), else computed from ``mean``. A file computes its differences from
    unrounded means, so its own figure is the one shown; ``tests/benchmarks/test_pages.py`` checks that the
    two agree to the rounding."""
    if isinstance(recorded, float):
        recorded = f"{recorded:+.1f}"
    diff = recorded or difference(mean, leading_number(published))
    return f"{ours} ({diff})" if diff else ours


def number(value: Any, digits: int = 1) -> str:
    """A float to ``digits`` decimals (NaN: ``"—"``); anything else as it is."""
    if isinstance(value, float):
        return "—" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def steps_range(steps: Any) -> str:
    """``"4251,3801,3951"`` -> ``"3,801-4,251"``; ``"50000,50000"`` -> ``"50,000"``."""
    values = sorted({int(s) for s in str(steps).split(",") if s.strip().isdigit()})
    if not values:
        return str(steps)
    return f"{values[0]:,}" if len(values) == 1 else f"{values[0]:,}-{values[-1]:,}"


# --- Markdown -------------------------------------------------------------------------------------------------


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table (``|`` inside a cell escaped)."""

    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *(line(r) for r in rows)])


def code(text: str) -> str:
    return f"`{text}`"


def plot_lines(record: Record, results: Path, images: dict[str, bytes], suffixes: Sequence[str] = ("",)) -> list[str]:
    """The plots recorded beside ``record`` (``<stem><suffix>.png``), copied to ``img/<device>/`` and shown."""
    lines = []
    for suffix in suffixes:
        source = results / record.device / f"{record.stem}{suffix}.png"
        if source.exists():
            target = f"img/{record.device}/{record.stem}{suffix}.png"
            images[target] = source.read_bytes()
            lines += [f"![{record.stem}{suffix}]({target})", ""]
    return lines


def provenance(label: str, record: Record, extra: str = "") -> list[str]:
    """A run's line under its table: its file, machine, commit and date, and the command that reproduces it."""
    head = f"- **{label}** {code(record.path)}: {record.machine}, {record.date}, commit {code(record.commit)}"
    return [head + (f"; {extra}" if extra else "") + ".", f"  {code(record.command)}"]


# --- option sets ----------------------------------------------------------------------------------------------


def mean_over(row: dict[str, Any], modes: Sequence[str]) -> float | None:
    """The mean over ``modes`` of a row's per-mode means (``"77.9 ± 2.0"`` -> 77.9); None where one is missing.
    Over the five test lengths of a task, Le et al. 2024's Table 3 measure."""
    means = [leading_number(row.get(m, "")) for m in modes]
    return None if None in means else statistics.mean(means)  # type: ignore[arg-type]


def spread_over(row: dict[str, Any], modes: Sequence[str]) -> float:
    """The mean over ``modes`` of a row's standard deviations over seeds (the ``± s`` of its cells; 0 where it has
    none): an upper bound of the standard deviation of ``mean_over`` (the rows keep per-mode spreads only)."""
    stds = [float(s.split("±")[1]) for s in (str(row.get(m, "")) for m in modes) if "±" in s]
    return statistics.mean(stds) if stds else 0.0
