from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from benchmarks.accuracy import published
from benchmarks.accuracy.criteria import fits
from benchmarks.accuracy.dyck import LOSSES, READINGS, TRAIN_SETS
from benchmarks.pages.records import GENERATED, Findings, Record
from benchmarks.pages.tables import code, difference, mean_pm_std, number, plot_lines, provenance, table
from benchmarks.pages.verdicts import Cell, summary_table

DYCK_MODES = ("L+2", "2L", "4L", "8L")
DYCK_MODELS = {"srnn": "SRNN", "panm_srnn": "PANM (on the SRNN)"}


def _option(settings: dict[str, Any], key: str, meanings: dict[str, str], default: str) -> str:
    """The short name of a setting the runner records by its meaning (``LOSSES`` etc.; absent: ``default``)."""
    recorded = settings.get(key)
    names = [name for name, meaning in meanings.items() if meaning == recorded]
    return names[0] if names else default if recorded is None else str(recorded)


def reading(record: Record, model: str) -> str:
    """How a file's runs of ``model`` were made, in words: whose code, the loss, the training set, Adam's learning
    rate and, for PANM, which of the paper's two descriptions (``benchmarks.accuracy.dyck``'s options)."""
    s = record.settings
    who = s.get("code", "ours")
    parts = ["ours" if who == "ours" else f"Suzgun et al.'s code ({who.split('/')[-1][:15]})"]
    parts.append(_option(s, "loss", LOSSES, "bce"))
    parts.append(_option(s, "train_set", TRAIN_SETS, "distinct"))
    parts.append(str(s.get("optimizer", "?")).split(",")[0].replace("adam", "Adam"))
    if model == "panm_srnn":
        parts.append({"decoder": "§3.2", "encoder": "App. D.2"}.get(_option(s, "panm_reading", READINGS, "decoder")))
    return ", ".join(str(p) for p in parts)


def _per_seed(runs: list[dict[str, Any]]) -> list[float]:
    """Each seed's mean over its languages and test lengths."""
    seeds = sorted({r["seed"] for r in runs})
    return [statistics.mean(r[m] for r in runs if r["seed"] == s for m in DYCK_MODES) for s in seeds]


def readings_table(files: list[Record]) -> list[str]:
    """One row per file and model: the reading (``reading``), the runs that fit their training strings, the mean
    sequence accuracy per test length (over languages and seeds) and per language, and the mean over both
    (each seed's mean, then their mean ± std) beside the paper's Table 2."""
    figures = published.dyck()
    header = ["model", "reading", "seeds", "fit", *DYCK_MODES, "D2", "D3", "mean", "published", "ours - published"]
    body = []
    order = sorted(files, key=lambda r: (r.settings.get("code", "ours") == "ours", r.date, r.stem))  # theirs first
    for record in order:
        for model in dict.fromkeys(r["model"] for r in record.rows):
            runs = [r for r in record.rows if r["model"] == model]
            per_seed = _per_seed(runs)
            by_language = {
                lang: statistics.mean(r[m] for r in runs if r["language"] == lang for m in DYCK_MODES)
                for lang in dict.fromkeys(r["language"] for r in runs)
            }
            fit = [r["fit"] for r in runs if "fit" in r]
            body.append(
                [
                    DYCK_MODELS.get(model, model),
                    reading(record, model),
                    str(len(per_seed)),
                    f"{sum(fit)} of {len(runs)}" if len(fit) == len(runs) else "-",
                    *(number(statistics.mean(r[m] for r in runs)) for m in DYCK_MODES),
                    *(number(by_language[lang]) if lang in by_language else "" for lang in ("D2", "D3")),
                    mean_pm_std(per_seed),
                    number(figures.get(model, "")),
                    difference(statistics.mean(per_seed), figures.get(model)),
                ]
            )
    models = list(DYCK_MODELS.values())
    body.sort(key=lambda row: models.index(row[0]) if row[0] in models else len(models))  # stable: theirs first
    return [table(header, body), ""]


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
            per_seed = _per_seed(runs)
            trained = [r["train_sequence_accuracy"] for r in runs if "train_sequence_accuracy" in r]
            cells.append(
                Cell(
                    f"{DYCK_MODELS.get(model, model)} "
                    f"({', '.join(dict.fromkeys(r['language'] for r in runs))}; {reading(record, model)})",
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
    out += ["## The readings side by side", "", *findings.take("readings"), *readings_table(files)]
    for record in files:
        out += [f"## {code(record.stem)} ({record.machine}, {record.date})", "", *findings.take(record.key)]
        planned, done = record.settings.get("planned_runs"), len(record.rows)
        if planned and done < planned:
            out += [f"**Partial: {done} of the {planned} runs of its command have finished.**", ""]
        out += [*dyck_tables(record), record.data.get("notes", ""), ""]
        out += [*plot_lines(record, results, images), *provenance("Run", record), ""]
    return "\n".join(out)
