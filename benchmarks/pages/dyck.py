from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from benchmarks.accuracy import published
from benchmarks.accuracy.criteria import fits
from benchmarks.pages.records import GENERATED, Findings, Record
from benchmarks.pages.tables import code, difference, mean_pm_std, number, plot_lines, provenance, table
from benchmarks.pages.verdicts import Cell, summary_table

DYCK_MODES = ("L+2", "2L", "4L", "8L")
DYCK_MODELS = {"srnn": "SRNN", "panm_srnn": "PANM (on the SRNN)"}


def dyck_tables(record: Record) -> list[str]:
    """Two tables of a ``dyck_*`` file: sequence accuracy per language, model and test length (mean ± std over
    seeds; in brackets the test strings' lengths, all even), then each model's mean over every language and test
    length beside the paper's Table 2."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in record.rows:
        groups.setdefault((r["language"], r["model"]), []).append(r)
    header = ["language", "model", "seeds", "selected epoch", *DYCK_MODES, "mean over lengths"]
    body = []
    for (language, model), runs in groups.items():
        lengths = runs[0].get("lengths", {})
        body.append(
            [
                language,
                DYCK_MODELS.get(model, model),
                str(len(runs)),
                ", ".join(str(r["selected_epoch"]) for r in runs),
                *(
                    f"{mean_pm_std([r[m] for r in runs])} ({lengths.get(m, '').removesuffix(' (even)')})"
                    for m in DYCK_MODES
                ),
                mean_pm_std([r["mean"] for r in runs]),
            ]
        )
    out = [table(header, body), ""]
    per_run = [
        [
            r["language"],
            DYCK_MODELS.get(r["model"], r["model"]),
            str(r["seed"]),
            str(r["selected_epoch"]),
            number(r.get("train_sequence_accuracy", "")),
            *(number(r[m]) for m in DYCK_MODES),
        ]
        for r in record.rows
    ]
    out += ["Per run (train %: the sequence accuracy on the training strings at the selected epoch):", ""]
    out += [table(["language", "model", "seed", "selected epoch", "train %", *DYCK_MODES], per_run), ""]
    figures = published.dyck()
    header = ["model", "languages", "runs", "ours: mean sequence accuracy %", "published", "ours - published"]
    body = []
    for model in dict.fromkeys(r["model"] for r in record.rows):
        cells = [
            statistics.mean(r[m] for r in runs) for (_, mdl), runs in groups.items() if mdl == model for m in DYCK_MODES
        ]
        ours = statistics.mean(cells)
        languages = ", ".join(lang for lang, mdl in groups if mdl == model)
        runs = sum(len(v) for (_, mdl), v in groups.items() if mdl == model)
        body.append(
            [
                DYCK_MODELS.get(model, model),
                languages,
                str(runs),
                f"{ours:.1f}",
                number(figures.get(model, "")),
                difference(ours, figures.get(model)),
            ]
        )
    out += [table(header, body), ""]
    out += [
        "'ours': the mean over the languages and test lengths of each cell's mean over seeds; 'published': "
        f"{published.DYCK_SOURCE} (the only Dyck numbers the paper prints).",
        "",
    ]
    return out


def glance(files: list[Record]) -> list[str]:
    """Per file and model, the mean sequence accuracy over its languages and test lengths (each seed's mean,
    then their mean and spread) against Le et al. 2024's Table 2; fit read from the runs' sequence accuracy
    on the training strings (``train_sequence_accuracy``)."""
    cells = []
    for record in files:
        for model in dict.fromkeys(r["model"] for r in record.rows):
            runs = [r for r in record.rows if r["model"] == model]
            seeds = sorted({r["seed"] for r in runs})
            per_seed = [statistics.mean(r[m] for r in runs if r["seed"] == s for m in DYCK_MODES) for s in seeds]
            trained = [r["train_sequence_accuracy"] for r in runs if "train_sequence_accuracy" in r]
            cells.append(
                Cell(
                    f"{DYCK_MODELS.get(model, model)} ({', '.join(dict.fromkeys(r['language'] for r in runs))})",
                    published.dyck().get(model),
                    statistics.mean(per_seed),
                    statistics.stdev(per_seed) if len(per_seed) > 1 else 0.0,
                    len(seeds),
                    f"{record.settings.get('epochs', '?')} epochs, {record.machine}",
                    all(r["fit"] for r in runs)
                    if all("fit" in r for r in runs)
                    else fits(statistics.mean(trained))
                    if trained
                    else None,
                )
            )
    text = (
        "Le et al. 2024 (Table 2, Dyck Language Recognition): the mean sequence accuracy (%) over the Dyck "
        "languages and test lengths, PANM on the SRNN against the SRNN (Suzgun et al. 2019). Ours: each file's "
        "runs under the protocol as read (its notes say how). A run fits when its sequence accuracy on the "
        "training strings reaches 99 %."
    )
    return [text, "", *summary_table(cells)]


def dyck_page(records: dict[str, Record], results: Path, findings: Findings, images: dict[str, bytes]) -> str:
    """``dyck.md``: every ``dyck_*`` file, its tables and its plot. Findings keys: ``intro``, each file's
    ``device/stem``."""
    out = [GENERATED, "", "# Dyck languages: PANM on the SRNN against the SRNN", ""]
    files = sorted(
        (r for r in records.values() if r.runner == "benchmarks.accuracy.dyck"), key=lambda r: (r.date, r.stem)
    )
    out += ["## At a glance", "", *glance(files), *findings.take("intro")]
    for record in files:
        out += [f"## {code(record.stem)} ({record.machine}, {record.date})", "", *findings.take(record.key)]
        planned, done = record.settings.get("planned_runs"), len(record.rows)
        if planned and done < planned:
            out += [f"**Partial: {done} of the {planned} runs of its command have finished.**", ""]
        out += [*dyck_tables(record), record.data.get("notes", ""), ""]
        out += [*plot_lines(record, results, images), *provenance("Run", record), ""]
    return "\n".join(out)
