from __future__ import annotations

from benchmarks.accuracy.published import seq2seq_published, seq2seq_row, seq2seq_run
from benchmarks.pages.records import GENERATED, Findings, Record
from benchmarks.pages.tables import code, leading_number, provenance, steps_range, table, with_difference


def seq2seq_page(records: dict[str, Record], findings: Findings) -> str:
    """``seq2seq.md``: every ``seq2seq_*`` file. Findings keys: ``intro``, each file's ``device/stem``.

    The ``paper row`` (the row of Le et al. 2024's Table 4 or 19 that a model runs) and its published cell are
    ``benchmarks.accuracy.published``'s when the page is rendered, not what a file recorded (older files
    recorded PANM's cells whatever its encoder); the ``chance`` column shows where a file records it.
    Ours - published is the file's own difference where it recorded the same published cell."""
    out = [
        GENERATED,
        "",
        "# SCAN and Mathematics: sequence-to-sequence length generalisation",
        "",
        *findings.take("intro"),
    ]
    files = sorted((r for r in records.values() if r.stem.startswith("seq2seq_")), key=lambda r: (r.date, r.stem))
    for record in files:
        out += [f"## {code(record.stem)} ({record.machine}, {record.date})", "", *findings.take(record.key)]
        chance = any("chance" in r for r in record.rows)
        header = [
            "task",
            "model",
            "paper row",
            "seeds",
            "steps",
            "selected step",
            "exact match %",
            "per seed",
            *(["chance %"] if chance else []),
            "published",
            "ours - published",
        ]
        body = []
        for r in record.rows:
            cell = seq2seq_published(r["task"], r["model"])
            theirs = "" if cell is None else cell.text()
            recorded = r.get("ours - published", "") if r["published"] == theirs else ""
            body.append(
                [
                    r["task"],
                    r["model"],
                    seq2seq_row(r["task"], *seq2seq_run(r["model"])) or "",
                    str(r["seeds"]),
                    steps_range(r["steps"]),
                    steps_range(r["best_step"]),
                    r["exact_match"],
                    str(r["per_seed"]),
                    *([r.get("chance", "")] if chance else []),
                    theirs,
                    with_difference("", leading_number(r["exact_match"]), theirs, recorded).strip(" ()"),
                ]
            )
        out += [table(header, body), "", *provenance("Run", record), ""]
    return "\n".join(out)
