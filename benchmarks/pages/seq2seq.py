from __future__ import annotations

from benchmarks.pages.records import GENERATED, Findings, Record
from benchmarks.pages.tables import code, leading_number, provenance, steps_range, table, with_difference


def seq2seq_page(records: dict[str, Record], findings: Findings) -> str:
    """``seq2seq.md``: every ``seq2seq_*`` file. Findings keys: ``intro``, each file's ``device/stem``.

    The ``paper row`` (the row of Le et al. 2024 that a model runs) and ``chance`` columns show where a file
    records them (files from before they were recorded have neither)."""
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
        extra = [c for c in ("paper row", "chance") if any(c in r for r in record.rows)]
        header = [
            "task",
            "model",
            *(["paper row"] if "paper row" in extra else []),
            "seeds",
            "steps",
            "selected step",
            "exact match %",
            "per seed",
            *(["chance %"] if "chance" in extra else []),
            "published",
            "ours - published",
        ]
        body = [
            [
                r["task"],
                r["model"],
                *([r["paper row"]] if "paper row" in extra else []),
                str(r["seeds"]),
                steps_range(r["steps"]),
                steps_range(r["best_step"]),
                r["exact_match"],
                str(r["per_seed"]),
                *([r["chance"]] if "chance" in extra else []),
                r["published"],
                with_difference(
                    "", leading_number(r["exact_match"]), r["published"], r.get("ours - published", "")
                ).strip(" ()"),
            ]
            for r in record.rows
        ]
        out += [table(header, body), "", *provenance("Run", record), ""]
    return "\n".join(out)
