from __future__ import annotations

from benchmarks.pages.records import GENERATED, Findings, Record
from benchmarks.pages.tables import code, number, provenance, table


def m10ae_page(records: dict[str, Record], findings: Findings) -> str:
    """``m10ae.md``: every ``m10ae_*`` file, accuracy by length and by depth. Findings keys: ``intro``, each file's
    ``device/stem``."""
    out = [GENERATED, "", "# M10AE: modulo-10 arithmetic expressions", "", *findings.take("intro")]
    files = sorted((r for r in records.values() if r.stem.startswith("m10ae_")), key=lambda r: (r.date, r.stem))
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
