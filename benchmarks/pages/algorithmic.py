from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.pages.options import OURS, describe_options, display_model, option_text, run_options
from benchmarks.pages.records import GENERATED, K_MODES, LENGTHS, MACHINES, MODES, TASKS, Findings, Record
from benchmarks.pages.tables import (
    code,
    difference,
    leading_number,
    ours_cell,
    plot_lines,
    provenance,
    steps_range,
    table,
    with_difference,
)

# The README's summary, by explicit rule: for each task, (a) the file of the paper's PANM under the paper's
# protocol (None: not run) and (b) the file of PANM with the options of ours, under the protocol where it
# ran there, else the CPU --quick runs of three seeds.
SUMMARY = {
    "copy": ("nvidia-h200/reproduce_copy_capped_5seeds", "nvidia-h200/reproduce_copy_capped_opt-5d5a9b_3seeds"),
    "reverse": (
        "nvidia-h200/reproduce_reverse_capped_5seeds",
        "cpu-2cores/reproduce_reverse_quick_opt-5d5a9b_8m_3seeds",
    ),
    "mix": ("nvidia-h100-80gb-hbm3/reproduce_mix_capped_5seeds", "cpu-2cores/reproduce_mix_quick_opt-5d5a9b_8m_3seeds"),
    "dynamic_recall": (
        "nvidia-h100-80gb-hbm3/reproduce_dynamic_recall_capped_5seeds",
        "cpu-2cores/reproduce_dynamic_recall_quick_opt-5d5a9b_8m_3seeds",
    ),
    "priority_sort": (
        "nvidia-h200/reproduce_priority_sort_capped_5seeds",
        "cpu-2cores/reproduce_priority_sort_quick_opt-5d5a9b_8m_3seeds",
    ),
    "id_sort": (
        "nvidia-h200/reproduce_id_sort_capped_5seeds",
        "cpu-2cores/reproduce_id_sort_quick_opt-5d5a9b_8m_3seeds",
    ),
}


def published_rows(record: Record) -> dict[str, dict[str, Any]]:
    """``{model: its published row}`` of a ``reproduce`` file (the paper's row for that model, or its best
    other model)."""
    return {r["model"]: r for r in record.rows if str(r.get("row", "")).startswith("published")}


def difference_rows(record: Record) -> dict[str, dict[str, Any]]:
    """``{model: its "ours - published" row}`` of a ``reproduce`` file."""
    return {r["model"]: r for r in record.rows if r.get("row") == "ours - published"}


def reference_label(row: dict[str, Any]) -> str:
    """``"published (best other)"`` -> ``"published, best other"``, ``"published (panm)"`` -> ``"published PANM"``."""
    ref = re.search(r"\((.*)\)", row["row"])
    name = ref.group(1) if ref else ""
    return "published, best other model" if name == "best other" else f"published {display_model(name)}"


def kind_of_run(record: Record) -> int:
    """0: the paper's model (no options, selected on L+1); 1: the options of ours; 2: other options."""
    options = {
        m: {k: option_text(v) for k, v in o.items()} for m, o in record.settings.get("model_options", {}).items()
    }
    if not options and record.settings.get("select", "L+1") == "L+1":
        return 0
    return 1 if options == {"panm": OURS} and record.settings.get("select") == "L+1" else 2


def budget(record: Record, model: str) -> str:
    minutes = record.settings.get("minutes", {}).get(model)
    steps = record.settings.get("steps")
    cap = ", ".join(([f"{steps:,} steps"] if steps else []) + ([f"{minutes:g} min"] if minutes is not None else []))
    if record.settings.get("protocol") == "quick":
        return cap
    return "protocol" + (f", capped at {cap}" if cap else "")


def task_options(record: Record) -> dict[str, Any]:
    """A ``reproduce`` file's task options (``--set task.X=...``: a reading of the task), ``{}`` for none."""
    return dict(record.settings.get("model_options", {}).get("task", {}))


def modes_of(record: Record) -> tuple[str, ...]:
    """The five mode names of a ``reproduce`` file's columns: ``MODES``, or ``K_MODES`` under
    ``test_lengths=k(L+1)``."""
    return K_MODES if task_options(record).get("test_lengths") == "k(L+1)" else MODES


def lengths_of(record: Record) -> str:
    """The five test lengths of a file, ``"10/11/21/41/81"``."""
    options = task_options(record)
    L = int(options.get("max_train_length", 10))
    k = options.get("test_lengths") == "k(L+1)"
    return "/".join(str(n) for n in (L, L + 1, *((f * (L + 1)) if k else (f * L + 1) for f in (2, 4, 8))))


def readings_table(records: Sequence[Record]) -> list[str]:
    """Runs of a task under other readings of its text (task options): one row per model of each file, the
    five test lengths by position (their lengths in a column), each cell ``ours (ours - published)``; the
    published rows first (Tables 13-18 by position: the paper's lengths, whatever a reading tests)."""
    header = ["run", "model", "reading (task options)", "lengths", "budget", "seeds", "L", "L+1", "2nd", "3rd", "4th"]
    body: list[list[str]] = []
    notes: list[str] = []
    published: dict[str, list[str]] = {}
    for record in records:
        for ref in published_rows(record).values():
            published.setdefault(reference_label(ref), [str(ref.get(m, "")) for m in modes_of(record)])
    for label in sorted(published, key=lambda name: "PANM" not in name):  # PANM's row, then the best other's
        body.append(["", f"**{label}**", "", "", "", "", *published[label]])
    for i, record in enumerate(records, 1):
        run, modes = f"R{i}", modes_of(record)
        reading = ", ".join(code(f"{k}={option_text(v)}") for k, v in task_options(record).items()) or "as specified"
        refs, diffs = published_rows(record), difference_rows(record)
        for row in (r for r in record.rows if r.get("row") == "ours"):
            model, ref, diff = row["model"], refs.get(row["model"], {}), diffs.get(row["model"], {})
            cells = [with_difference(*ours_cell(row, m), ref.get(m), diff.get(m, "")) for m in modes]
            changes = describe_options(run_options(record, model))
            label = display_model(model) + ("" if changes == "none" else f" ({changes})")
            body.append([run, label, reading, lengths_of(record), budget(record, model), str(row["seeds"]), *cells])
        notes += provenance(run, record)
    return [table(header, body), "", *notes, ""]


def trained_note(record: Record) -> str:
    """``"trained by a85af49 (cpu)"``: what trained a ``reproduce`` file's runs (its rows' ``code``), where that is
    not the commit that wrote the file; ``""`` otherwise."""
    parts = [p.strip() for r in record.rows if r.get("row") == "ours" for p in str(r.get("code") or "").split(";")]
    parts = list(dict.fromkeys(p for p in parts if p))
    other = any(p.split(" (")[0] != record.commit for p in parts)
    return f"trained by {'; '.join(parts)}" if other else ""


def other_lengths(record: Record) -> bool:
    """Whether a ``reproduce`` file ran at other training or test lengths than the paper's tables (task option
    ``min_train_length``, or ``test_lengths`` listing lengths): Tables 13-18 do not apply to it."""
    options = task_options(record)
    return "min_train_length" in options or options.get("test_lengths", "kL+1") not in ("kL+1", "k(L+1)")


# The keys of a ``reproduce`` row that are not test modes.
ROW_FIELDS = ("model", "row", "selected_on", "seeds", "steps", "best_step", "code", "curves")


def lengths_table(records: Sequence[Record]) -> list[str]:
    """Runs at other training or test lengths (``other_lengths``): one row per model of each file, a column per
    test mode of the file (a length, or ``L``/``L+1`` with its length), then the file's comparison rows (PANM's
    margin over Location Attention, ours and published); under it each run's file and command."""
    out: list[str] = []
    for i, record in enumerate(records, 1):
        run, options = f"T{i}", task_options(record)
        L = int(options.get("max_train_length", 10))
        named = {"L": L, "L+1": L + 1}
        modes = [k for k in next(r for r in record.rows if r.get("row") == "ours") if k not in ROW_FIELDS]
        header = ["run", "model", "training lengths", "selected on", "budget", "seeds"]
        header += [f"{m} ({named[m]})" if m in named else m for m in modes]
        train = f"{options.get('min_train_length', 1)}..{L}"
        body = []
        for row in record.rows:
            if row.get("row") == "ours":
                changes = describe_options(run_options(record, row["model"]))
                label = display_model(row["model"]) + ("" if changes == "none" else f" ({changes})")
                cells = [label, train, str(row.get("selected_on", "")), budget(record, row["model"]), str(row["seeds"])]
            else:
                cells = [str(row.get("row", "")), "", "", "", ""]
            body.append([run, *cells, *(str(row.get(m, "")) for m in modes)])
        out += [table(header, body), "", *provenance(run, record, trained_note(record)), ""]
    return out


def algorithmic_table(task: str, records: Sequence[Record], label: str) -> list[str]:
    """Every run of ``records`` on ``task``: one row per model of each file, the published rows on top, each
    cell ``ours (ours - published)``; under it each run's file, machine, commit and command."""
    header = [
        "run",
        "model",
        "changes from the paper's model",
        "budget",
        "seeds",
        "steps",
        *map(str, LENGTHS),
        "machine",
        "date",
    ]
    body: list[list[str]] = []
    notes: list[str] = []
    seen: dict[str, dict[str, Any]] = {}
    for record in records:
        for ref in published_rows(record).values():
            seen.setdefault(reference_label(ref), ref)
    for name, ref in seen.items():
        body.append(["", f"**{name}**", "", "", "", "", *(str(ref[m]) for m in MODES), "", ""])
    for i, record in enumerate(records, 1):
        run = f"{label}{i}"
        refs, diffs = published_rows(record), difference_rows(record)
        for row in (r for r in record.rows if r.get("row") == "ours"):
            model, ref, diff = row["model"], refs.get(row["model"], {}), diffs.get(row["model"], {})
            cells = [with_difference(*ours_cell(row, m), ref.get(m), diff.get(m, "")) for m in MODES]
            changes = describe_options(run_options(record, model), row.get("selected_on", "L+1"))
            body.append(
                [
                    run,
                    display_model(model),
                    changes,
                    budget(record, model),
                    str(row.get("seeds", "")),
                    steps_range(row.get("steps", "")),
                    *cells,
                    record.machine,
                    record.date,
                ]
            )
        notes += provenance(run, record, trained_note(record))
    return [table(header, body), "", *notes, ""]


def summary_section(results: Path) -> list[str]:
    """Le et al. 2024's Table 3 (mean over the five lengths per task), printed, recomputed from its Tables 13-18,
    and ours (``benchmarks.accuracy.summary_tables``)."""
    from benchmarks.accuracy import summary_tables as st

    protocol = {row["task"]: row for row in st.ours_protocol({t: SUMMARY[t][0] for t in st.TASKS}, results)}
    quick = {row["task"]: row for row in st.ours_quick(results)}
    header = [
        "task",
        "Other Max: printed / Tables 13-18",
        "PANM: printed / Tables 13-18",
        "ours, protocol: PANM (ours - Tables 13-18)",
        "ours, CPU `--quick`: PANM / best baseline (PANM - best)",
    ]
    body = []
    for row in st.recomputed_table3():
        task = row["task"]
        (po, pp), (ro, rp) = row["printed"], row["recomputed"]
        mark = {who: " (does not follow)" if who in row["slips"] else "" for who in ("Other Max", "PANM")}
        ours = protocol[task]
        protocol_steps = 100_000 if task == "id_sort" else 50_000
        steps = f"{ours['max_steps']:,}" + ("" if ours["max_steps"] >= protocol_steps else f" of {protocol_steps:,}")
        q = quick[task]
        body.append(
            [
                TASKS[task][0],
                f"{po:.1f} / {ro:.1f}{mark['Other Max']}",
                f"{pp:.1f} / {rp:.1f}{mark['PANM']}",
                f"{ours['mean']:.1f} ({ours['mean'] - rp:+.1f}), {ours['seeds']} seeds, {steps} steps, "
                f"{MACHINES.get(ours['file'].split('/')[0])}",
                f"{q['panm']:.1f} / {q['other_max']:.1f} ({q['panm'] - q['other_max']:+.1f})",
            ]
        )
    table2 = st.recomputed_table2()
    printed = st.PRINTED_TABLE2_ALGORITHMIC
    text = (
        "Mean token accuracy (%) over the five test lengths. Table 2's algorithmic row prints "
        f"{printed[0]} (Other Max) against {printed[1]} (PANM); Table 3 as printed averages to "
        f"{table2['from printed Table 3'][0]:.2f} / {table2['from printed Table 3'][1]:.2f}, Tables 13-18 to "
        f"{table2['from Tables 13-18'][0]:.2f} / {table2['from Tables 13-18'][1]:.2f}. Our best baseline at "
        "`--quick`: at each length the best of LSTM (8 minutes), LSTM + attention, Pointer Network, Transformer, "
        "NTM, DNC and Stack-LSTM (2 minutes), one seed each; PANM: three seeds of 8 minutes. Recompute: "
        "`.venv/bin/python -m benchmarks.accuracy.summary_tables`."
    )
    return [text, "", table(header, body), ""]


def algorithmic_page(records: dict[str, Record], results: Path, findings: Findings, images: dict[str, bytes]) -> str:
    """``algorithmic.md``. Findings keys: ``intro``, ``summary``, each task (``copy``, ...), ``<task>/readings``,
    ``<task>/lengths`` (other training or test lengths), ``<task>/paper``, ``<task>/quick``.
    A table file (``reproduce_algorithmic_*``) repeats its tasks' files, so only those are shown."""
    out = [GENERATED, "", "# The algorithmic tasks of Le et al. 2024", "", *findings.take("intro")]
    out += ["## Summary (Table 3)", "", *summary_section(results), *findings.take("summary")]
    for task, (title, number_) in TASKS.items():
        files = [r for r in records.values() if r.stem.startswith(f"reproduce_{task}_") and not task_options(r)]
        optioned = sorted(
            (r for r in records.values() if r.stem.startswith(f"reproduce_{task}_") and task_options(r)),
            key=lambda r: (json.dumps(task_options(r), sort_keys=True), r.stem),
        )
        readings = [r for r in optioned if not other_lengths(r)]
        lengths = [r for r in optioned if other_lengths(r)]
        out += [f"## {title} (Table {number_})", "", *findings.take(task)]
        if readings:
            out += [f"### {title}: readings of the task's text", "", *readings_table(readings)]
            out += findings.take(f"{task}/readings")
        if lengths:
            out += [f"### {title}: other training and test lengths", "", *lengths_table(lengths)]
            out += findings.take(f"{task}/lengths")
            for i, record in enumerate(lengths, 1):
                plots = plot_lines(record, results, images, ("", "_curves"))
                if plots:
                    out += [f"T{i}:", "", *plots]
        for protocol, heading, label in (("paper", "the paper's protocol", "P"), ("quick", "CPU `--quick`", "Q")):
            chosen = sorted(
                (r for r in files if r.settings.get("protocol") == protocol),
                key=lambda r: (kind_of_run(r), r.date, r.stem),
            )
            out += [f"### {title}: {heading}", ""]
            if not chosen:
                out += ["No run recorded.", "", *findings.take(f"{task}/{protocol}")]
                continue
            out += [*algorithmic_table(task, chosen, label), *findings.take(f"{task}/{protocol}")]
            for i, record in enumerate(chosen, 1):
                plots = plot_lines(record, results, images)
                if plots:
                    out += [f"{label}{i}:", "", *plots]
    return "\n".join(out)


# --- the README's summary -------------------------------------------------------------------------------------


def summary(records: dict[str, Record], link: str) -> str:
    """The algorithmic tasks at a glance, one table (``SUMMARY`` names the files): per task, ours - published at
    the five test lengths for the paper's PANM under the protocol and for the options of ours, with the budget
    and seeds of each; ``link``: the algorithmic page."""
    header = ["task", "the paper's PANM, protocol", "its runs", "the options of ours", "their runs"]
    body = []
    for task, (name, _) in TASKS.items():
        row_cells = [name]
        for which in (0, 1):
            key = SUMMARY[task][which]
            if key is None:
                row_cells += ["not run", ""]
                continue
            record = records[key]
            row = next(r for r in record.rows if r.get("row") == "ours" and r["model"] == "panm")
            ref, diff = published_rows(record)["panm"], difference_rows(record).get("panm", {})
            cells = []
            for m in MODES:
                recorded = str(diff.get(m, "")).strip()
                value = recorded or difference(leading_number(row[m]), leading_number(ref[m]))
                cells.append(value.replace("+0.0", "0").replace("-0.0", "0"))
            steps = steps_range(row["steps"])
            quick = record.settings.get("protocol") == "quick"
            protocol_steps = 100_000 if task == "id_sort" else 50_000
            if not quick and max(int(n) for n in str(row["steps"]).split(",")) < protocol_steps:
                steps += f" of {protocol_steps:,}"
            where = f"CPU `--quick` {budget(record, 'panm')}" if quick else record.machine
            row_cells += [" / ".join(cells), f"{row['seeds']} seeds, {steps} steps, {where}"]
        body.append(row_cells)
    intro = (
        "PANM on the algorithmic tasks of Le et al. 2024: ours - published (Tables 13-18, the paper's PANM, 5 runs "
        "of 50,000 steps, 100,000 for ID Sort), token accuracy in points at lengths 10 / 11 / 21 / 41 / 81 "
        "(L, L+1, 2L+1, 4L+1, 8L+1). The protocol: batch 128, the authors' RMSprop, checkpoint selected on L+1; "
        "CPU `--quick`: Adam, 8 minutes per seed. Every run, ours beside published, its spread and its command: "
        f"[{link}]({link}) (built from the recorded files by `make docs`; this summary by "
        "`.venv/bin/python -m benchmarks.pages`)."
    )
    return "\n".join([intro, "", table(header, body)]).rstrip() + "\n"


# --- ablations ------------------------------------------------------------------------------------------------
