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


def glance(files: list[Record]) -> list[str]:
    """Per file, at its shortest and longest test length: the runs, and the range over runs and heads of the
    token accuracy and of the pointer accuracy (the share of output steps whose largest weight is on the right
    slot). The paper prints no such numbers: these explain the accuracy tables, they test no claim."""
    body = []
    for record in files:
        lengths = sorted({r["length"] for r in record.rows})
        for length in (lengths[0], lengths[-1]) if len(lengths) > 1 else lengths:
            rows = [r for r in record.rows if r["length"] == length]
            token = [r["token %"] for r in rows]
            pointer = [r["pointer %"] for r in rows if isinstance(r.get("pointer %"), float | int)]
            body.append(
                [
                    code(record.stem),
                    str(len({r["run"] for r in record.rows})),
                    str(length),
                    f"{min(token):.1f}-{max(token):.1f}",
                    f"{min(pointer):.1f}-{max(pointer):.1f}" if pointer else "",
                ]
            )
    text = (
        "What the trained models' pointers do, read from their weights: per file its shortest and longest test "
        "length, the range over its runs and heads. Where the pointer accuracy falls with length, the token "
        "accuracy falls with it."
    )
    return [text, "", table(["file", "runs", "length", "token %", "pointer %"], body), ""]


def diagnosis_page(records: dict[str, Record], findings: Findings) -> str:
    """``diagnosis.md``: every ``diagnose_pointer_*`` file, with the pointer paths its notes record. Findings keys:
    ``intro``, each file's ``device/stem``."""
    out = [GENERATED, "", "# Where the pointers go", ""]
    files = sorted(
        (r for r in records.values() if r.runner == "benchmarks.accuracy.diagnose_pointer"),
        key=lambda r: (r.date, r.stem),
    )
    out += ["## At a glance", "", *glance(files), *findings.take("intro")]
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
