from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.pages.records import GENERATED, Findings, Record
from benchmarks.pages.tables import code, mean_std, number, provenance, steps_range, table

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


def transduction_table(record: Record) -> list[str]:
    """One row per task and model (the mean over its seeds, ours - published), in the paper's order; under each
    task's ``lstm``, the best deep LSTM of the paper's Figure 2a, published only."""
    header = [
        "task",
        "model",
        "seeds",
        "steps",
        "test coarse",
        "published",
        "ours - published",
        "test fine",
        "published",
        "ours - published",
        "test token",
        "train-length coarse / fine",
        "published",
        "published in",
    ]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in record.rows:
        groups.setdefault((r["task"], r["model"]), []).append(r)
    order = {t: i for i, t in enumerate(TRANSDUCTION_TASKS)}
    body = []
    for (task, model), runs in sorted(groups.items(), key=lambda kv: order.get(kv[0][0], len(order))):
        first = runs[0]
        coarse, fine = [r["coarse"] for r in runs], [r["fine"] for r in runs]
        trained = [r for r in runs if r.get("train_coarse") != ""]
        body.append(
            [
                TRANSDUCTION_TASKS.get(task, task),
                model,
                str(len(runs)),
                steps_range(",".join(str(r["steps"]) for r in runs)),
                fraction_cell(coarse),
                number(first.get("published_coarse", ""), 2),
                fraction_difference(coarse, first.get("published_coarse")),
                fraction_cell(fine),
                number(first.get("published_fine", ""), 2),
                fraction_difference(fine, first.get("published_fine")),
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
                    "",
                    f"{first['deep_lstm_coarse']:.2f}",
                    "",
                    "",
                    f"{first['deep_lstm_fine']:.2f}",
                    "",
                    "",
                    "",
                    f"{first['deep_lstm_train_coarse']:.2f} / {first['deep_lstm_train_fine']:.2f}",
                    "Figure 2a, best deep LSTM (published only)",
                ]
            )
    return [table(header, body), ""]


def transduction_page(records: dict[str, Record], findings: Findings) -> str:
    """``transduction.md``: every ``transduction_*`` file. Findings keys: ``intro``, each file's ``device/stem``."""
    out = [GENERATED, "", "# Transduction tasks of Grefenstette et al. 2015", "", *findings.take("intro")]
    files = sorted((r for r in records.values() if r.stem.startswith("transduction_")), key=lambda r: (r.date, r.stem))
    for record in files:
        out += [f"## {code(record.stem)} ({record.machine}, {record.date})", "", *findings.take(record.key)]
        out += [*transduction_table(record), record.data.get("notes", ""), "", *provenance("Run", record), ""]
    return "\n".join(out)
