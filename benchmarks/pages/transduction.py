from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from benchmarks.accuracy import published
from benchmarks.accuracy.criteria import fits
from benchmarks.pages.records import GENERATED, Findings, Record
from benchmarks.pages.tables import code, mean_std, number, provenance, steps_range, table
from benchmarks.pages.verdicts import Cell, summary_table

TRANSDUCTION_TASKS = {
    "transduction_copy": "Sequence Copying",
    "transduction_reversal": "Sequence Reversal",
    "bigram_flip": "Bigram Flipping",
    "svo_sov": "SVO to SOV",
    "gender_conjugation": "Gender Conjugation",
}


def fraction_cell(values: Sequence[float]) -> str:
    """Accuracies as fractions, the paper's way: ``[0.5, 0.7]`` -> ``"0.60 ± 0.14"``; one value: ``"0.50"``."""
    mean, std = mean_std(values)
    return f"{mean:.2f}" + (f" ± {std:.2f}" if len(values) > 1 else "")


def fraction_difference(values: Sequence[float], published: Any) -> str:
    """``mean(values) - published`` as a signed fraction, ``""`` where nothing is published."""
    if not isinstance(published, int | float) or isinstance(published, bool):
        return ""
    return f"{mean_std(values)[0] - published:+.2f}"


def at_paper_scale(record: Record) -> bool:
    """Whether ``record`` ran the paper's lengths and vocabulary (its ``scale`` setting; files without it did)."""
    return record.data.get("settings", {}).get("scale", "paper") == "paper"


def transduction_table(record: Record) -> list[str]:
    """One row per task and model (the mean over its seeds, ours - published), in the paper's order; under each
    task's ``lstm``, the best deep LSTM of the paper's Figure 2a, published only. A file at another scale than
    the paper's shows the published cells for reference, without a difference; a file that validated during
    training shows the step at which each seed first fit its training lengths."""
    paper_scale = at_paper_scale(record)
    fitted = any("fit_step" in r for r in record.rows)
    published_header = "published" if paper_scale else "published (paper's scale)"
    header = [
        "task",
        "model",
        "seeds",
        "steps",
        *(["fit at step (per seed)"] if fitted else []),
        "test coarse",
        published_header,
        *(["ours - published"] if paper_scale else ["per seed"]),
        "test fine",
        published_header,
        *(["ours - published"] if paper_scale else []),
        "test token",
        "train-length coarse / fine",
        published_header,
        "published in",
    ]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in record.rows:
        groups.setdefault((r["task"], r["model"]), []).append(r)
    order = {t: i for i, t in enumerate(TRANSDUCTION_TASKS)}
    body = []
    models = list(dict.fromkeys(r["model"] for r in record.rows))
    for (task, model), runs in sorted(groups.items(), key=lambda kv: order.get(kv[0][0], len(order))):
        first = published.transduction_cells(task, model, published.transduction_deep_run(task, models))
        coarse, fine = [r["coarse"] for r in runs], [r["fine"] for r in runs]
        trained = [r for r in runs if r.get("train_coarse") != ""]
        body.append(
            [
                TRANSDUCTION_TASKS.get(task, task),
                model,
                str(len(runs)),
                steps_range(",".join(str(r["steps"]) for r in runs)),
                *([", ".join(str(r.get("fit_step", "")) or "-" for r in runs)] if fitted else []),
                fraction_cell(coarse),
                number(first.get("published_coarse", ""), 2),
                (
                    fraction_difference(coarse, first.get("published_coarse"))
                    if paper_scale
                    else ", ".join(f"{c:.2f}" for c in coarse)
                ),
                fraction_cell(fine),
                number(first.get("published_fine", ""), 2),
                *([fraction_difference(fine, first.get("published_fine"))] if paper_scale else []),
                fraction_cell([r["token"] for r in runs]) if all("token" in r for r in runs) else "",
                (
                    f"{fraction_cell([r['train_coarse'] for r in trained])} / "
                    f"{fraction_cell([r['train_fine'] for r in trained])}"
                    if trained
                    else ""
                ),
                (
                    f"{first['published_train_coarse']:.2f} / {first['published_train_fine']:.2f}"
                    if "published_train_coarse" in first
                    else ""
                ),
                first.get("published_source", ""),
            ]
        )
        if "deep_lstm_layers" in first:
            body.append(
                [
                    TRANSDUCTION_TASKS.get(task, task),
                    f"{first['deep_lstm_layers']}-layer LSTM",
                    "",
                    "",
                    *([""] if fitted else []),
                    "",
                    f"{first['deep_lstm_coarse']:.2f}",
                    "",
                    "",
                    f"{first['deep_lstm_fine']:.2f}",
                    *([""] if paper_scale else []),
                    "",
                    "",
                    f"{first['deep_lstm_train_coarse']:.2f} / {first['deep_lstm_train_fine']:.2f}",
                    "Figure 2a, best deep LSTM (published only)",
                ]
            )
    return [table(header, body), ""]


def glance(files: Sequence[Record]) -> list[str]:
    """Per task and memory model of Figure 2a, the run of most steps (its seeds' mean): test coarse accuracy
    against Figure 2a's, fit read from its coarse accuracy at the training lengths (``train_coarse``)."""
    best: dict[tuple[str, str], tuple[int, list[dict[str, Any]], Record]] = {}
    for record in (f for f in files if at_paper_scale(f)):  # oldest first: a later file wins a tie
        groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
        for r in record.rows:
            groups.setdefault((r["task"], r["model"], int(r["steps"])), []).append(r)
        for (task, model, steps), runs in groups.items():
            if model in published.transduction(task) and steps >= best.get((task, model), (0,))[0]:
                best[task, model] = (steps, runs, record)
    order = list(TRANSDUCTION_TASKS)
    cells = []
    for (task, model), (steps, runs, record) in sorted(best.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1])):
        coarse = [100 * r["coarse"] for r in runs]
        trained = [100 * r["train_coarse"] for r in runs if r.get("train_coarse") not in ("", None)]
        cells.append(
            Cell(
                f"{TRANSDUCTION_TASKS[task]}: {model}",
                100 * published.transduction(task)[model][2],
                statistics.mean(coarse),
                statistics.stdev(coarse) if len(coarse) > 1 else 0.0,
                len(runs),
                f"{steps:,} steps, {record.machine}",
                fits(statistics.mean(trained), 100 * published.transduction(task)[model][0]) if trained else None,
            )
        )
    text = (
        "Grefenstette et al. 2015 (*Learning to Transduce with Unbounded Memory*, Figure 2a): the test coarse "
        "accuracy (%, whole sequences right) of the Stack-, Queue- and DeQue-LSTM on each task, against the run "
        "of ours with the most steps at the paper's scale, at a CPU budget of 150 to 3,000 steps where the paper "
        "trains to convergence (runs at a smaller scale have tables of their own below). A run fits when its "
        "coarse accuracy at the training lengths reaches 99 % (or the paper's there less 1 point)."
    )
    return [text, "", *summary_table(cells)]


def transduction_page(records: dict[str, Record], findings: Findings) -> str:
    """``transduction.md``: every ``transduction_*`` file. Findings keys: ``intro``, each file's ``device/stem``."""
    out = [GENERATED, "", "# Transduction tasks of Grefenstette et al. 2015", ""]
    files = sorted(
        (r for r in records.values() if r.runner == "benchmarks.accuracy.transduction"), key=lambda r: (r.date, r.stem)
    )
    out += ["## At a glance", "", *glance(files), *findings.take("intro")]
    for record in files:
        out += [f"## {code(record.stem)} ({record.machine}, {record.date})", "", *findings.take(record.key)]
        out += [*transduction_table(record), record.data.get("notes", ""), "", *provenance("Run", record), ""]
    return "\n".join(out)
