from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.pages.options import describe_options, variant_options
from benchmarks.pages.records import GENERATED, K_LENGTHS, K_MODES, LENGTHS, MODES, TASKS, Findings, Record
from benchmarks.pages.tables import code, ours_cell, plot_lines, provenance, steps_range, table, with_difference


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
    published = next((r for r in record.rows if str(r["variant"]).startswith("published")), {})
    diffs = {r["variant"].removesuffix(" - published"): r for r in record.rows if r["variant"].endswith(" - published")}
    runs = [r for r in record.rows if "per_seed" in r]
    figure = any("heads" in r for r in runs)
    modes, lengths = (K_MODES, K_LENGTHS) if figure else (MODES, LENGTHS)
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
    for r in runs:
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
    return [table(header, body), "", "Per seed:", "", table(seeds_header, seed_rows), ""]


def ablations_page(records: dict[str, Record], findings: Findings, results: Path, images: dict[str, bytes]) -> str:
    """``ablations.md``: every ``ablation_*`` file, Copy first, a ``--figure`` file with its plots (one per
    task). Findings keys: ``intro``, each ``device/stem``."""
    out = [GENERATED, "", "# Ablations of PANM under the paper's protocol", "", *findings.take("intro")]
    files = sorted(
        (r for r in records.values() if r.stem.startswith("ablation_")),
        key=lambda r: (list(TASKS).index(r.rows[0]["task"]), r.date, r.stem),
    )
    for record in files:
        title = TASKS[record.rows[0]["task"]][0]
        tasks = list(dict.fromkeys(r["task"] for r in record.rows))
        if any("heads" in r for r in record.rows):
            title = record.data["title"]
        out += [f"## {title}: {code(record.stem)} ({record.machine}, {record.date})", "", *findings.take(record.key)]
        out += [*ablation_tables(record), *plot_lines(record, results, images, [f"_{t}" for t in tasks])]
        out += provenance("Run", record)
        out.append("")
    return "\n".join(out)


# --- the authors' code ----------------------------------------------------------------------------------------
