from __future__ import annotations

import json
import re
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.accuracy import published
from benchmarks.accuracy.criteria import all_fit, fits
from benchmarks.pages.options import OURS, describe_options, display_model, option_text, run_options
from benchmarks.pages.records import GENERATED, K_MODES, LENGTHS, MODES, TASKS, Findings, Record
from benchmarks.pages.tables import (
    code,
    difference,
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

# --- which runs the summaries take, by rule (a record's own settings select it) ------------------------


def reproduce_runs(records: dict[str, Record], task: str) -> list[Record]:
    """The ``reproduce`` runs of ``task`` at the paper's lengths (no task options), oldest first."""
    runs = [
        r
        for r in records.values()
        if r.runner == "benchmarks.accuracy.reproduce" and r.settings.get("task") == task and not task_options(r)
    ]
    return sorted(runs, key=lambda r: (r.date, r.stem))


def ours_row(record: Record, model: str) -> dict[str, Any] | None:
    return next((r for r in record.rows if r.get("row") == "ours" and r.get("model") == model), None)


def max_steps(row: dict[str, Any]) -> int:
    return max((int(s) for s in str(row.get("steps", "")).split(",") if s.strip().isdigit()), default=0)


def best_run(records: dict[str, Record], task: str, kind: int, protocols: Sequence[str]) -> Record | None:
    """The run of PANM on ``task`` of ``kind_of_run`` ``kind`` under the first of ``protocols`` that has one: the
    one with the most seeds, then the most steps, then the latest."""
    for protocol in protocols:
        runs = [
            r
            for r in reproduce_runs(records, task)
            if r.settings.get("protocol") == protocol and kind_of_run(r) == kind and ours_row(r, "panm")
        ]
        if runs:
            return max(runs, key=lambda r: (ours_row(r, "panm")["seeds"], max_steps(ours_row(r, "panm")), r.date))
    return None


def protocol_run(records: dict[str, Record], task: str) -> Record | None:
    """The paper's PANM under the paper's protocol (``best_run``), or None where it has not run."""
    return best_run(records, task, 0, ("paper",))


def options_run(records: dict[str, Record], task: str) -> Record | None:
    """PANM with the options of ours: under the paper's protocol where it ran there, else at the CPU budget."""
    return best_run(records, task, 1, ("paper", "quick"))


def quick_baselines(records: dict[str, Record], task: str) -> dict[str, tuple[Record, dict[str, Any]]]:
    """Every baseline (any model but PANM) of ``task`` at the CPU ``--quick`` budget, the paper's model: each
    model's latest run, ``{model: (record, row)}``."""
    out: dict[str, tuple[Record, dict[str, Any]]] = {}
    for record in reproduce_runs(records, task):  # oldest first: a later run replaces an earlier one
        if record.settings.get("protocol") == "quick" and kind_of_run(record) == 0:
            for row in record.rows:
                if row.get("row") == "ours" and row["model"] != "panm":
                    out[row["model"]] = (record, row)
    return out


def fit_at_l(row: dict[str, Any], task: str) -> bool | None:
    """Whether a ``reproduce`` row's runs fit their training lengths: its recorded ``fit`` (every seed), or, for
    files from before it was recorded, its mean token accuracy at ``L``, the longest of them, against the
    paper's PANM there (``benchmarks.accuracy.criteria.fits``)."""
    if "fit" in row:
        return all_fit(row["fit"])
    return fits(leading_number(row.get("L", "")), published.algorithmic(task)["PANM"][0])


def published_rows(record: Record) -> dict[str, dict[str, Any]]:
    """``{model: its published row}`` for the models of a ``reproduce`` file: the row of Tables 13-18 that
    ``benchmarks.accuracy.published.algorithmic_references`` compares it with (its own, or the best other model
    at each length), at the file's five modes by position; none where the tables do not apply
    (``other_lengths``)."""
    task = record.settings.get("task")
    if task not in published.ALGORITHMIC_TASKS or other_lengths(record):
        return {}
    references, out = published.algorithmic_references(task), {}
    for model in dict.fromkeys(r["model"] for r in record.rows if r.get("row") == "ours"):
        name = model if model in references else ("best other" if model != "panm" else None)
        if name in references:
            values = zip(modes_of(record), references[name], strict=True)
            out[model] = {"model": model, "row": f"published ({name})", **{m: f"{v:g}" for m, v in values}}
    return out


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
ROW_FIELDS = (
    *("model", "row", "selected_on", "seeds", "steps", "best_step", "code", "curves", "fit"),
    *("train_seconds", "compile_seconds", "steps_per_second", "buckets", "padding_efficiency"),
)


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


def five_length_mean(row: dict[str, Any]) -> float:
    """The mean over the five test lengths of a ``reproduce`` row's per-length means (Table 3's measure)."""
    return mean_over(row, MODES)  # type: ignore[return-value]


def summary_section(records: dict[str, Record]) -> list[str]:
    """Le et al. 2024's Table 3 (mean over the five lengths per task), printed, recomputed from its Tables 13-18,
    and ours: the paper's PANM under the protocol (``protocol_run``), and at the CPU ``--quick`` budget PANM
    (``best_run``, the paper's model) against the best of our baselines at each length (``quick_baselines``)."""
    from benchmarks.accuracy import summary_tables as st

    header = [
        "task",
        "Other Max: printed / Tables 13-18",
        "PANM: printed / Tables 13-18",
        "ours, protocol: PANM (ours - Tables 13-18)",
        "ours, CPU `--quick`: PANM / best baseline (PANM - best)",
    ]
    body, budgets, panm_quick = [], [], []
    for row in st.recomputed_table3():
        task = row["task"]
        (po, pp), (ro, rp) = row["printed"], row["recomputed"]
        mark = {who: " (does not follow)" if who in row["slips"] else "" for who in ("Other Max", "PANM")}
        record = protocol_run(records, task)
        if record is None:
            ours_text = "not run"
        else:
            panm = ours_row(record, "panm")
            steps, protocol_steps = max_steps(panm), 100_000 if task == "id_sort" else 50_000
            steps_text = f"{steps:,}" + ("" if steps >= protocol_steps else f" of {protocol_steps:,}")
            mean = five_length_mean(panm)
            ours_text = f"{mean:.1f} ({mean - rp:+.1f}), {panm['seeds']} seeds, {steps_text} steps, {record.machine}"
        quick_panm = best_run(records, task, 0, ("quick",))
        baselines = quick_baselines(records, task)
        if quick_panm is None or not baselines:
            quick_text = "not run"
        else:
            panm = ours_row(quick_panm, "panm")
            best = [max(leading_number(r[m]) for _, r in baselines.values()) for m in MODES]
            q_panm, q_best = five_length_mean(panm), statistics.mean(best)  # type: ignore[arg-type]
            quick_text = f"{q_panm:.1f} / {q_best:.1f} ({q_panm - q_best:+.1f})"
            budgets += [(record_, model) for model, (record_, _) in baselines.items()]
            panm_quick.append((quick_panm, panm))
        body.append(
            [
                TASKS[task][0],
                f"{po:.1f} / {ro:.1f}{mark['Other Max']}",
                f"{pp:.1f} / {rp:.1f}{mark['PANM']}",
                ours_text,
                quick_text,
            ]
        )
    table2 = st.recomputed_table2()
    printed = st.PRINTED_TABLE2_ALGORITHMIC
    panm_budgets = sorted(set(_model_budgets([(record, "panm") for record, _ in panm_quick])))
    seeds = sorted({int(row["seeds"]) for _, row in panm_quick})
    text = (
        "Mean token accuracy (%) over the five test lengths. Table 2's algorithmic row prints "
        f"{printed[0]} (Other Max) against {printed[1]} (PANM); Table 3 as printed averages to "
        f"{table2['from printed Table 3'][0]:.2f} / {table2['from printed Table 3'][1]:.2f}, Tables 13-18 to "
        f"{table2['from Tables 13-18'][0]:.2f} / {table2['from Tables 13-18'][1]:.2f}. Ours under the protocol: "
        "per task the run of the paper's PANM with the most seeds (then steps). At `--quick`, our best baseline: "
        "at each length the best of each baseline's latest run, one seed each ("
        + ", ".join(sorted(set(_model_budgets(budgets))))
        + f"); PANM: its run with the most seeds ({' or '.join(map(str, seeds))} seeds; "
        + ", ".join(panm_budgets)
        + " per seed). Recompute Table 3: `.venv/bin/python -m benchmarks.accuracy.summary_tables`."
    )
    return [text, "", table(header, body), ""]


def _model_budgets(pairs: Sequence[tuple[Record, str]]) -> list[str]:
    """``["LSTM 4 min", "NTM 2 min", ...]``: each baseline's budget as its files record it (the same on every task
    here; a model with several appears once per budget)."""
    out = []
    for record, model in pairs:
        minutes = record.settings.get("minutes", {}).get(model)
        out.append(f"{display_model(model)} {'no time cap' if minutes is None else f'{minutes:g} minutes'}")
    return out


def run_budget(record: Record, row: dict[str, Any]) -> str:
    """A run's budget in words: ``"the paper's protocol, 50,000 steps, H200"``, ``"CPU --quick, 8 min per seed
    (2,283-2,551 steps)"``."""
    if record.settings.get("protocol") == "quick":
        return f"CPU `--quick`, {budget(record, row['model'])} per seed ({steps_range(row['steps'])} steps)"
    task = record.settings.get("task")
    protocol_steps, steps = 100_000 if task == "id_sort" else 50_000, max_steps(row)
    of = "" if steps >= protocol_steps else f" of {protocol_steps:,}"
    return f"the paper's protocol, {steps:,}{of} steps, {record.machine}"


def glance(records: dict[str, Record]) -> list[str]:
    """The page's opening summary (``benchmarks.pages.verdicts``): per task, PANM's mean over the five test
    lengths against Table 3's measure recomputed from Tables 13-18, for the paper's PANM under the protocol
    (``protocol_run``) and for the options of ours (``options_run``)."""
    cells = []
    for task, (title, _) in TASKS.items():
        published_mean = statistics.mean(published.algorithmic(task)["PANM"])
        for label, record in (
            ("the paper's PANM", protocol_run(records, task)),
            ("the options of ours", options_run(records, task)),
        ):
            row = ours_row(record, "panm") if record else None
            cells.append(
                Cell(
                    f"{title}: {label}",
                    published_mean,
                    five_length_mean(row) if row else None,
                    spread_over(row, MODES) if row else 0.0,
                    int(row["seeds"]) if row else 0,
                    run_budget(record, row) if record and row else "",
                    fit_at_l(row, task) if row else None,
                )
            )
    text = (
        "PANM's token accuracy (%), the mean over the five test lengths (Table 3's measure), against the paper's "
        "PANM in its Tables 13-18 (5 runs of 50,000 steps, 100,000 for ID Sort). Ours: the run with the most "
        "seeds of the paper's PANM under its protocol (batch 128, the authors' RMSprop, the checkpoint selected on "
        "L+1), and of PANM with the options of ours; a run fits its training lengths when its accuracy at L, the "
        "longest of them, reaches 99 % or the paper's "
        "PANM's there less 1 point. "
        "The spread is the mean of the five lengths' standard deviations over seeds."
    )
    return [text, "", *summary_table(cells)]


def algorithmic_page(records: dict[str, Record], results: Path, findings: Findings, images: dict[str, bytes]) -> str:
    """``algorithmic.md``. Findings keys: ``intro``, ``summary``, each task (``copy``, ...), ``<task>/readings``,
    ``<task>/lengths`` (other training or test lengths), ``<task>/paper``, ``<task>/quick``.
    A table file (``reproduce_algorithmic_*``) repeats its tasks' files, so only those are shown."""
    out = [GENERATED, "", "# The algorithmic tasks of Le et al. 2024", ""]
    out += ["## At a glance", "", *glance(records), *findings.take("glance")]
    out += findings.take("intro")
    out += ["## Summary (Table 3)", "", *summary_section(records), *findings.take("summary")]
    for task, (title, number_) in TASKS.items():
        files = reproduce_runs(records, task)
        optioned = sorted(
            (
                r
                for r in records.values()
                if r.runner == "benchmarks.accuracy.reproduce" and r.settings.get("task") == task and task_options(r)
            ),
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
    """The algorithmic tasks at a glance, one table: per task, ours - published at the five test lengths for the
    paper's PANM under the protocol (``protocol_run``) and for the options of ours (``options_run``), with the
    budget and seeds of each; ``link``: the algorithmic page."""
    header = ["task", "the paper's PANM, protocol", "its runs", "the options of ours", "their runs"]
    body = []
    for task, (name, _) in TASKS.items():
        row_cells = [name]
        for record in (protocol_run(records, task), options_run(records, task)):
            if record is None:
                row_cells += ["not run", ""]
                continue
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
