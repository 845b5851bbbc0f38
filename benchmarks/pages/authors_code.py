from __future__ import annotations

from benchmarks.pages.records import GENERATED, LENGTHS, MODES, Findings, Record
from benchmarks.pages.tables import code, ours_cell, provenance, table, with_difference


def authors_page(records: dict[str, Record], findings: Findings) -> str:
    """``authors_code.md``: the authors' PANM rerun (``authors_panm_*``), the resume check, and the one run of
    that code quoted in every Copy table. Findings keys: ``intro``, each file's ``device/stem``, ``yardstick``."""
    out = [GENERATED, "", "# The authors' PANM code, rerun", "", *findings.take("intro")]
    files = [r for r in records.values() if r.stem.startswith("authors_panm_")]
    for record in sorted(files, key=lambda r: ("resume" in r.stem, r.stem)):
        out += [f"## {record.data['title']} ({code(record.stem)})", "", *findings.take(record.key)]
        if record.rows and "check" in record.rows[0]:
            out += [
                table(
                    ["check", "value"],
                    (
                        [r["check"], str(r["value"]).lower() if isinstance(r["value"], bool) else str(r["value"])]
                        for r in record.rows
                    ),
                ),
                "",
            ]
        else:
            published = next(r for r in record.rows if str(r["row"]).startswith("published"))
            header = ["row", "steps", "checkpoint kept at step", *map(str, LENGTHS)]
            body = []
            diffs = {r["row"].split("mean")[0]: r for r in record.rows if r["row"].endswith(" - published")}
            for r in record.rows:
                if r is published or r["row"].endswith(" - published"):
                    continue
                if "mean" in r["row"]:  # the seeds' mean ± std, beside its difference ("final weights, mean ...")
                    diff = diffs.get(r["row"].split("mean")[0], {})
                    cells = [with_difference(*ours_cell(r, m), published[m], diff.get(m, "")) for m in MODES]
                else:
                    cells = [str(r[m]) for m in MODES]
                kept = r.get("selected_step", "")
                body.append([r["row"], f"{int(r['steps']):,}", f"{kept:,}" if isinstance(kept, int) else "", *cells])
            body.append([f"**{published['row']}**", "", "", *(str(published[m]) for m in MODES)])
            out += [table(header, body), ""]
        out += [*provenance("Run", record), ""]
    yardstick = next(
        (
            (record, row)
            for record in sorted(records.values(), key=lambda r: r.stem)
            if record.stem.startswith("reproduce_copy_")
            for row in record.rows
            if str(row.get("row", "")).startswith("authors' code")
        ),
        None,
    )
    if yardstick:
        record, row = yardstick
        out += ["## The one run of that code quoted beside every Copy table", "", *findings.take("yardstick")]
        out += [
            table(
                ["row", "selected on", *map(str, LENGTHS)],
                [[row["row"], row["selected_on"], *(str(row[m]) for m in MODES)]],
            ),
            "",
        ]
        out += [f"Recorded in every Copy table of ours, e.g. {code(record.path)}.", ""]
    return "\n".join(out)


# --- the pointers ---------------------------------------------------------------------------------------------
