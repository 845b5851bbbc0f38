"""What a page's opening summary says of each headline cell: ours against published, and whether it holds.

Every page opens with one table of its experiments' headline cells (``summary_table``): the published
number, ours (the mean over seeds and its sample standard deviation), ours - published, the budget and
protocol in words, and a verdict (``verdict``):

- ``holds``: ``|ours - published| <= max(SPREAD x std, FLOOR)``: within the seeds' spread, or within
  ``FLOOR`` points where there is no spread (one seed, or seeds that agree);
- ``below`` / ``above``: outside it, by how much;
- ``not fit at this budget``: the runs did not fit their training lengths (token accuracy there below
  ``benchmarks.common.FIT``), so the cell measures the budget, not the model;
- ``untested``: no run of ours; ``no published number``: nothing to compare with.
"""

from __future__ import annotations

import dataclasses
import math

from benchmarks.pages.tables import table

SPREAD = 2.0  # a cell holds within this many sample standard deviations over the seeds ...
FLOOR = 1.0  # ... or within this many points (percentage points; fractions are scaled to them)


@dataclasses.dataclass(frozen=True)
class Cell:
    """One headline cell: ``experiment`` (what is compared, in words), the published number, ours over
    ``seeds`` (``mean``, ``std``; ``None``: not run), the ``budget`` in words, and ``fit``: whether the runs
    fit their training lengths (``None``: not recorded). ``scale``: points per unit of the numbers (1 for
    percentages, 100 for fractions), so that ``FLOOR`` is in points either way."""

    experiment: str
    published: float | None
    mean: float | None
    std: float
    seeds: int
    budget: str
    fit: bool | None = None
    scale: float = 1.0
    digits: int = 1


def verdict(cell: Cell) -> str:
    """``"holds"``, ``"below (-6.1)"``, ``"above (+2.0)"``, ``"not fit at this budget (-40.2)"``, ``"untested"`` or
    ``"no published number"`` (the module's docstring gives the rule)."""
    if cell.mean is None or (isinstance(cell.mean, float) and math.isnan(cell.mean)):
        return "untested"
    if cell.published is None:
        return "not fit at this budget" if cell.fit is False else "no published number"
    diff = cell.mean - cell.published
    if cell.fit is False:
        return f"not fit at this budget ({diff:+.{cell.digits}f})"
    if abs(diff) <= max(SPREAD * cell.std, FLOOR / cell.scale) + 1e-9:
        return "holds"
    return f"{'below' if diff < 0 else 'above'} ({diff:+.{cell.digits}f})"


def summary_table(cells: list[Cell]) -> list[str]:
    """The opening summary: one row per cell, then the counts of each verdict."""
    header = ["experiment", "published", "ours", "ours - published", "seeds", "budget", "verdict"]
    body, counts = [], {"holds": 0, "below": 0, "above": 0, "not fit": 0, "untested": 0}
    for cell in cells:
        said = verdict(cell)
        for key in counts:
            if said.startswith(key):
                counts[key] += 1
        if cell.mean is None:
            ours = diff = ""
        else:
            ours = f"{cell.mean:.{cell.digits}f}" + (f" ± {cell.std:.{cell.digits}f}" if cell.seeds > 1 else "")
            diff = "" if cell.published is None else f"{cell.mean - cell.published:+.{cell.digits}f}"
        published = "" if cell.published is None else f"{cell.published:.{cell.digits}f}"
        body.append([cell.experiment, published, ours, diff, str(cell.seeds or ""), cell.budget, said])
    tally = ", ".join(f"{n} {key}" for key, n in counts.items() if n)
    return [table(header, body), "", f"Verdicts: {tally or 'none'}. {RULE}", ""]


RULE = (
    f"A cell holds when ours is within {SPREAD:g} standard deviations over the seeds of the published number, "
    f"or within {FLOOR:g} point where the seeds do not spread; a run that did not fit its training lengths is "
    "marked so, whatever its score."
)
