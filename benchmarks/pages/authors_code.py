from __future__ import annotations

import statistics

from benchmarks.accuracy import published
from benchmarks.accuracy.criteria import fits
from benchmarks.pages.records import GENERATED, LENGTHS, MODES, TASKS, Findings, Record
from benchmarks.pages.tables import (
    code,
    leading_number,
    mean_over,
    ours_cell,
    provenance,
    spread_over,
    table,
    with_difference,
)
from benchmarks.pages.verdicts import Cell, summary_table


def theirs(task: str) -> tuple[int, ...]:
    """The paper's PANM on ``task`` (Tables 13-18, ``benchmarks.accuracy.published``)."""
    return published.algorithmic(task)["PANM"]


def glance(files: list[Record]) -> list[str]:
    """One cell per mean row of each rerun (the checkpoint the authors' code kept, and its final weights where
    recorded): the mean over the five test lengths against the paper's PANM's."""
    cells = []
    for record in sorted(files, key=lambda r: r.stem):
        task = record.option("task") or "copy"
        for row in (r for r in record.rows if "mean ± std" in str(r.get("row"))):
            which = "final weights" if "final" in row["row"] else "the checkpoint it kept"
            cells.append(
                Cell(
                    f"{TASKS[task][0]}: {which}",
                    statistics.mean(theirs(task)),
                    mean_over(row, MODES),
                    spread_over(row, MODES),
                    int(str(row["row"]).split("(")[1].split()[0]),
                    f"{int(row['steps']):,} steps, {record.machine}",
                    fits(leading_number(row["L"]), theirs(task)[0]),
                )
            )
    text = (
        "The authors' own PANM code, run unchanged, token accuracy (%) as the mean over the five test lengths, "
        "against the paper's PANM in Tables 13-18 (50,000 steps, 5 runs)."
    )
    return [text, "", *summary_table(cells)]


def authors_page(records: dict[str, Record], findings: Findings) -> str:
    """``authors_code.md``: the authors' PANM rerun (``authors_panm_*``), the resume check, and the one run of
    that code quoted in every Copy table. Findings keys: ``intro``, each file's ``device/stem``, ``yardstick``."""
    out = [GENERATED, "", "# The authors' PANM code, rerun", ""]
    files = [r for r in records.values() if r.runner == "benchmarks.accuracy.authors_panm"]
    out += ["## At a glance", "", *glance(files), *findings.take("intro")]
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
            task = record.option("task") or "copy"
            published = {"row": "published (Le et al. 2024, 50,000 steps)"}
            published |= dict(zip(MODES, theirs(task), strict=True))
            header = ["row", "steps", "checkpoint kept at step", *map(str, LENGTHS)]
            body = []
            diffs = {r["row"].split("mean")[0]: r for r in record.rows if r["row"].endswith(" - published")}
            for r in record.rows:
                if str(r["row"]).startswith("published") or r["row"].endswith(" - published"):
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
