from __future__ import annotations

from benchmarks.pages.records import GENERATED, Findings, Record
from benchmarks.pages.tables import code, number, provenance, table

DIAGNOSIS_COLUMNS = (
    ("run", "run", 0),
    ("step", "step", 0),
    ("length", "length", 0),
    ("head kind", "pointer", 0),
    ("output steps", "steps", 0),
    ("head", "head", 0),
    ("token %", "token %", 1),
    ("pointer %", "pointer %", 1),
    ("token % where the pointer is right", ("token if pointer right %", "token | pointer right %"), 1),
    ("token % where it is wrong", ("token if pointer wrong %", "token | pointer wrong %"), 1),
    ("first miss", "first miss", 0),
    ("largest weight", "max weight", 2),
    ("weight on the right slot", "weight on right slot", 2),
)


def diagnosis_page(records: dict[str, Record], findings: Findings) -> str:
    """``diagnosis.md``: every ``diagnose_pointer_*`` file, with the pointer paths its notes record. Findings keys:
    ``intro``, each file's ``device/stem``."""
    out = [GENERATED, "", "# Where the pointers go", "", *findings.take("intro")]
    files = sorted(
        (r for r in records.values() if r.stem.startswith("diagnose_pointer_")), key=lambda r: (r.date, r.stem)
    )
    for record in files:
        out += [f"## {code(record.stem)}", "", *findings.take(record.key)]
        columns = [c for c in DIAGNOSIS_COLUMNS if any(any(k in r for k in _keys(c[1])) for r in record.rows)]
        body = []
        for r in record.rows:
            cells = []
            for _, keys, digits in columns:
                value = next((r[k] for k in _keys(keys) if k in r), "")
                cells.append(
                    code(value) if keys == "run" else f"{value:,}" if keys == "step" else number(value, digits)
                )
            body.append(cells)
        out += [table([c[0] for c in columns], body), ""]
        paths = [line for line in record.data.get("notes", "").splitlines() if line.startswith("- ")]
        if paths:
            out += ["Slot of the largest weight at each output step, as recorded:", "", *paths, ""]
        out += [*provenance("Run", record), ""]
    return "\n".join(out)


def _keys(keys: str | tuple[str, ...]) -> tuple[str, ...]:
    return (keys,) if isinstance(keys, str) else keys


# --- Chomsky hierarchy and sequence-to-sequence ---------------------------------------------------------------
