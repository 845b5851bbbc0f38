from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.accuracy import published
from benchmarks.accuracy.criteria import all_fit, fits
from benchmarks.pages.algorithmic import max_steps
from benchmarks.pages.options import describe_options, variant_options
from benchmarks.pages.records import GENERATED, K_LENGTHS, K_MODES, LENGTHS, MODES, TASKS, Findings, Record
from benchmarks.pages.tables import (
    code,
    leading_number,
    mean_over,
    ours_cell,
    plot_lines,
    provenance,
    spread_over,
    steps_range,
    table,
    with_difference,
)
from benchmarks.pages.verdicts import Cell, summary_table


def ablation_label(variant: str) -> str:
    options, other, select = variant_options(variant)
    parts = [code(f"{k}={v}") for k, v in other.items()]
    if options or select != "L+1" or not parts:
        described = describe_options(options, select)
        parts.insert(0, described)
    return ", ".join(parts)


def figure_label(row: dict[str, Any], record: Record) -> str:
    """A pointer-count row (``--figure``): its heads, after its task where the file has several."""
    several = len({r["task"] for r in record.rows}) > 1
    return (f"{TASKS[row['task']][0]}: " if several else "") + str(row["heads"])


def ablation_tables(record: Record) -> list[str]:
    """An ablation file: per variant mean ± std over seeds and ours - published, then every seed. A file of
    ``--figure`` (rows with ``heads``) is tested at the ``k(L+1)`` lengths and names its rows by their heads."""
    diffs = {r["variant"].removesuffix(" - published"): r for r in record.rows if r["variant"].endswith(" - published")}
    runs = runs_of(record)
    figure = any("heads" in r for r in runs)
    modes, lengths = (K_MODES, K_LENGTHS) if figure else (MODES, LENGTHS)
    published = published_panm(record, modes)
    first = "pointer heads" if figure else "changes from the paper's model"

    def label(r):
        return figure_label(r, record) if figure else ablation_label(r["variant"])

    header = [first, "seeds", "steps", *map(str, lengths)]
    body = []
    for r in runs:
        diff = diffs.get(r["variant"], {})
        cells = [with_difference(*ours_cell(r, m), published.get(m), diff.get(m, "")) for m in modes]
        body.append([label(r), str(r["seeds"]), steps_range(r["steps"]), *cells])
    if published:
        body.append(["**published** (Le et al. 2024)", "", "", *(str(published[m]) for m in modes)])
    seeds_header = [first, "seed", "steps", "selected step", *map(str, lengths)]
    seed_rows = []
    for r in (r for r in runs if "per_seed" in r):
        steps, best = str(r["steps"]).split(","), str(r["best_step"]).split(",")
        for i in range(len(r["per_seed"]["L"])):
            seed_rows.append(
                [
                    label(r) if i == 0 else "",
                    str(i),
                    f"{int(steps[i]):,}",
                    f"{int(best[i]):,}",
                    *(f"{r['per_seed'][m][i]:.2f}" for m in modes),
                ]
            )
    if not seed_rows:
        return [table(header, body), "", "Per seed: not recorded (the file holds the table as printed).", ""]
    return [table(header, body), "", "Per seed:", "", table(seeds_header, seed_rows), ""]


def runs_of(record: Record) -> list[dict[str, Any]]:
    """An ablation file's rows of runs (not its published or difference rows)."""
    return [
        r
        for r in record.rows
        if r.get("seeds") not in ("", None)
        and not str(r.get("variant", "")).startswith("published")
        and not str(r.get("variant", "")).endswith(" - published")
    ]


def published_panm(record: Record, modes: Sequence[str]) -> dict[str, Any]:
    """The paper's PANM on the file's task (Tables 13-18, ``benchmarks.accuracy.published``) at ``modes`` by
    position; ``{}`` for a file of several tasks (each heads file's task is named in its rows)."""
    tasks = {r["task"] for r in runs_of(record)}
    if len(tasks) != 1:
        return {}
    (task,) = tasks
    return dict(zip(modes, published.algorithmic(task)["PANM"], strict=True))


def budget_group(record: Record) -> str:
    """``"the paper's protocol (H100)"``-like headings: runs on a GPU follow the protocol's settings (their steps
    may be capped), runs on the CPU are at a CPU budget of a few hundred to 50,000 steps."""
    steps = max(max_steps(r) for r in runs_of(record))
    if record.device.startswith("nvidia"):
        return f"the paper's protocol on a GPU, up to {steps:,} steps"
    return f"the 2-core CPU, up to {steps:,} steps"


def glance(files: Sequence[Record]) -> list[str]:
    """One cell per variant of every file: the mean over the five test lengths against the paper's PANM's (Tables
    13-18), fit read at L (``benchmarks.accuracy.criteria.fits``)."""
    cells = []
    for record in files:
        runs = runs_of(record)
        figure = any("heads" in r for r in runs)
        modes = K_MODES if figure else MODES
        for r in runs:
            theirs = published.algorithmic(r["task"])["PANM"]
            at_l = leading_number(r.get(modes[0]))
            if figure:
                label = f"pointer heads {r['heads']}"
            else:
                label = "the paper's model" if r["variant"] == "default" else ablation_label(r["variant"])
            cells.append(
                Cell(
                    f"{TASKS[r['task']][0]}, {record.machine}: {label}",
                    statistics.mean(theirs),
                    mean_over(r, modes),
                    spread_over(r, modes),
                    int(r["seeds"]),
                    f"{steps_range(r['steps'])} steps",
                    all_fit(r["fit"]) if "fit" in r else fits(at_l, theirs[0]),
                )
            )
    text = (
        "Each variant's token accuracy (%), the mean over the five test lengths, against the paper's PANM in "
        "Tables 13-18 (50,000 steps). On a GPU the runs follow the paper's protocol (batch 128, the authors' "
        "RMSprop, selection on L+1 unless said), often capped below its steps; on the CPU they ran a few hundred "
        "to 50,000 steps, so most of these rows measure what a short budget reaches, not the change itself. The "
        "heads rows (Fig. 8 and 9) are tested at L, L+1, 2(L+1), 4(L+1), 8(L+1)."
    )
    return [text, "", *summary_table(cells)]


def ablations_page(records: dict[str, Record], findings: Findings, results: Path, images: dict[str, bytes]) -> str:
    """``ablations.md``: every file of the ablation runner, grouped by budget (GPU under the protocol, then the
    CPU), Copy first, a ``--figure`` file with its plots (one per task). Findings keys: ``intro``, each
    ``device/stem``."""
    out = [GENERATED, "", "# Ablations of PANM", ""]
    files = sorted(
        (r for r in records.values() if r.runner == "benchmarks.accuracy.ablation"),
        key=lambda r: (not r.device.startswith("nvidia"), list(TASKS).index(r.rows[0]["task"]), r.date, r.stem),
    )
    out += ["## At a glance", "", *glance(files), *findings.take("intro")]
    group = None
    for record in files:
        if budget_group(record).split(",")[0] != group:
            group = budget_group(record).split(",")[0]
            out += [f"## {group[0].upper()}{group[1:]}", ""]
        title = TASKS[record.rows[0]["task"]][0]
        tasks = list(dict.fromkeys(r["task"] for r in record.rows))
        if any("heads" in r for r in record.rows):
            title = record.data["title"]
        out += [f"### {title}: {code(record.stem)} ({record.machine}, {record.date})", "", *findings.take(record.key)]
        out += [*ablation_tables(record), *plot_lines(record, results, images, [f"_{t}" for t in tasks])]
        out += provenance("Run", record)
        out.append("")
    return "\n".join(out)
