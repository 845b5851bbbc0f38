from __future__ import annotations

from benchmarks.accuracy.criteria import fits
from benchmarks.pages.records import GENERATED, Findings, Record
from benchmarks.pages.tables import code, number, provenance, table
from benchmarks.pages.verdicts import Cell, summary_table


def glance(files: list[Record]) -> list[str]:
    """Per file and model: its accuracy at the training length and at the longest test length. No paper prints
    M10AE numbers for these models, so nothing here is held against a published cell."""
    cells = []
    for record in files:
        for r in record.rows:
            lengths = [c for c in r if "(" in c and not c.startswith("depth ")]
            cells.append(
                Cell(
                    f"{r['model']}, at {lengths[-1]}",
                    None,
                    float(r[lengths[-1]]),
                    0.0,
                    1,
                    f"{r['steps']:,} steps, {record.machine}",
                    fits(float(r[lengths[0]])),
                )
            )
    text = (
        "Token accuracy (%) at the longest test length of each run; a run fits when its accuracy at the longest "
        "training length (the first column of its table) reaches 99 %."
    )
    return [text, "", *summary_table(cells)]


def m10ae_page(records: dict[str, Record], findings: Findings) -> str:
    """``m10ae.md``: every ``m10ae_*`` file, accuracy by length and by depth. Findings keys: ``intro``, each file's
    ``device/stem``."""
    out = [GENERATED, "", "# M10AE: modulo-10 arithmetic expressions", ""]
    files = sorted(
        (r for r in records.values() if r.runner == "benchmarks.accuracy.m10ae"), key=lambda r: (r.date, r.stem)
    )
    out += ["## At a glance", "", *glance(files), *findings.take("intro")]
    for record in files:
        out += [f"## {code(record.stem)} ({record.machine}, {record.date})", "", *findings.take(record.key)]
        lengths = [c for c in record.rows[0] if "(" in c and not c.startswith("depth ")] if record.rows else []
        depths = sorted({c for r in record.rows for c in r if c.startswith("depth ")}, key=lambda c: int(c.split()[1]))
        header = ["model", "seed", "steps", *(f"length {c}" for c in lengths), *depths]
        body = [
            [
                r["model"],
                str(r["seed"]),
                f"{r['steps']:,}",
                *(number(r[c]) for c in lengths),
                *(str(r.get(d, "")) for d in depths),
            ]
            for r in record.rows
        ]
        out += [table(header, body), "", record.data.get("notes", ""), "", *provenance("Run", record), ""]
    return "\n".join(out)
