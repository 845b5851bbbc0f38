from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from benchmarks.accuracy.criteria import all_fit
from benchmarks.accuracy.published import seq2seq_published, seq2seq_row, seq2seq_run
from benchmarks.pages.records import GENERATED, Findings, Record
from benchmarks.pages.tables import code, leading_number, provenance, steps_range, table, with_difference
from benchmarks.pages.verdicts import Cell, summary_table


def per_seed(row: dict[str, Any]) -> list[float]:
    """A row's exact-match accuracy (%) of each seed (``per_seed``: one number, or comma-separated)."""
    return [float(v) for v in str(row["per_seed"]).split(",") if v.strip()]


def glance(files: Sequence[Record]) -> list[str]:
    """Per task and model, the run of most steps (the latest on a tie), against the published cell of the row
    that model runs (``benchmarks.accuracy.published.seq2seq_published``)."""
    best: dict[tuple[str, str, str | None], tuple[int, dict[str, Any], Record]] = {}
    for record in files:  # oldest first: a later file wins a tie
        for r in record.rows:
            steps = max(int(s) for s in str(r["steps"]).split(","))
            key = (r["task"], *seq2seq_run(r["model"]))  # a bare panm_transformer ran the plain encoder
            if steps >= best.get(key, (0,))[0]:
                best[key] = (steps, r, record)
    cells = []
    for (task, model, encoder), (_, r, record) in sorted(
        best.items(), key=lambda kv: (kv[0][0], kv[0][1], str(kv[0][2]))
    ):
        cell, seeds = seq2seq_published(task, r["model"]), per_seed(r)
        cells.append(
            Cell(
                f"{task}: {model}" + (f" ({encoder} encoder)" if encoder else ""),
                None if cell is None else cell.value,
                statistics.mean(seeds),
                statistics.stdev(seeds) if len(seeds) > 1 else 0.0,
                len(seeds),
                f"{steps_range(r['steps'])} steps, {record.machine}",
                all_fit(r["fit"]) if r.get("fit") else None,
            )
        )
    text = (
        "Exact-match accuracy (%) on the length splits of SCAN (Le et al. 2024, Table 4, the median of 5 runs) and "
        "on two Mathematics modules (Table 19, mean of 5 runs; its baselines' numbers are Csordás et al. 2021's), "
        "against the run of ours with the most steps for each task and model: a few hundred to 4,000 steps on the "
        "CPU, where the paper's runs train for tens of thousands. A run fits when its token accuracy on fresh "
        "examples of the training split reached 99 % (files recorded before that was logged say nothing of it)."
    )
    return [text, "", *summary_table(cells)]


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
    ]
    files = sorted(
        (r for r in records.values() if r.runner == "benchmarks.accuracy.seq2seq"), key=lambda r: (r.date, r.stem)
    )
    out += ["## At a glance", "", *glance(files), *findings.take("intro")]
    for record in files:
        out += [f"## {code(record.stem)} ({record.machine}, {record.date})", "", *findings.take(record.key)]
        chance = any("chance" in r for r in record.rows)
        fitted = any("fit_step" in r for r in record.rows)
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
            *(["train token % (per seed)", "fit at step"] if fitted else []),
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
                    *([str(r.get("train_accuracy", "")), str(r.get("fit_step", ""))] if fitted else []),
                    theirs,
                    with_difference("", leading_number(r["exact_match"]), theirs, recorded).strip(" ()"),
                ]
            )
        out += [table(header, body), "", *provenance("Run", record), ""]
    return "\n".join(out)
