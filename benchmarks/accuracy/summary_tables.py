"""Le et al. 2024's summary tables, recomputed from its own per-task tables.

The paper summarises its algorithmic tasks twice: Table 3 gives, per task, the mean accuracy over the
five test lengths of PANM and of "Other Max" (at each length the best of its 11 baselines), and
Table 2's first row averages Table 3 over the six tasks. Both should follow from its Tables 13-18, which
print every model at every length (``benchmarks.accuracy.published`` holds the three tables as printed:
``algorithmic``, ``table3`` and ``table2``). This module recomputes Table 3 from Tables 13-18 and names
each printed mean that does not follow (more than 0.05 off)::

    python -m benchmarks.accuracy.summary_tables

The results page of the algorithmic tasks (``benchmarks/pages/algorithmic.py``) shows these beside the same
summary of the recorded runs of ours.

Le et al. 2024: Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural Memory, TMLR
(docs/references.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.accuracy import published
from benchmarks.accuracy.published import other_max

TASKS = published.ALGORITHMIC_TASKS
# Table 2's "Algorithmic Reasoning" row as printed (``published.table2``): (the best baseline, Other Max; PANM).
PRINTED_TABLE2_ALGORITHMIC = (
    published.table2("Algorithmic Reasoning").best,
    published.table2("Algorithmic Reasoning").panm,
)
SLIP = 0.05  # a printed one-decimal mean further than this from its recomputation does not follow


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def recomputed_table3() -> list[dict[str, Any]]:
    """Per task: the printed (Other Max, PANM) means beside the means of Tables 13-18, and which do not follow."""
    out = []
    for task in TASKS:
        recomputed = (mean(other_max(task)), mean(published.algorithmic(task)["PANM"]))
        printed = published.table3()[task]
        slips = [who for who, p, r in zip(("Other Max", "PANM"), printed, recomputed, strict=True) if abs(p - r) > SLIP]
        out.append({"task": task, "printed": printed, "recomputed": recomputed, "slips": slips})
    return out


def recomputed_table2() -> dict[str, tuple[float, float]]:
    """Table 2's algorithmic row: the mean over the six tasks of Table 3 as printed, and of Table 3 as recomputed."""
    rows = recomputed_table3()
    return {
        "from printed Table 3": tuple(mean([r["printed"][i] for r in rows]) for i in (0, 1)),  # type: ignore[dict-item]
        "from Tables 13-18": tuple(mean([r["recomputed"][i] for r in rows]) for i in (0, 1)),  # type: ignore[dict-item]
    }


def main() -> None:
    print("Le et al. 2024, Table 3 (printed) against its Tables 13-18 (recomputed): Other Max, PANM")
    for row in recomputed_table3():
        p, r = row["printed"], row["recomputed"]
        slips = f"  does not follow: {', '.join(row['slips'])}" if row["slips"] else ""
        print(f"  {row['task']:15s} printed {p[0]:5.1f} {p[1]:5.1f}   recomputed {r[0]:5.2f} {r[1]:5.2f}{slips}")
    for label, (o, p) in recomputed_table2().items():
        print(f"Table 2, algorithmic ({label}): Other Max {o:.2f}, PANM {p:.2f}")


if __name__ == "__main__":
    main()
