from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.accuracy.published import (
    CHOMSKY_LENGTHS,
    CHOMSKY_LEVELS,
    CHOMSKY_MODELS,
    chomsky_cell,
    chomsky_per_level,
    chomsky_table_two,
)
from benchmarks.pages.records import GENERATED, MACHINES, Findings, Record
from benchmarks.pages.tables import (
    code,
    leading_number,
    mean_pm_std,
    number,
    plot_lines,
    provenance,
    table,
    with_difference,
)
from benchmarks.pages.verdicts import Cell, summary_table

MODEL_NAMES = {model: heading for heading, model in CHOMSKY_MODELS} | {"panm": "PANM"}


def model_name(run: str) -> str:
    """``"stack_rnn-stack_size=512"`` -> ``"Stack-RNN (stack_size=512)"``: a run's model as Table 2 names it."""
    model, _, options = run.partition("-")
    return MODEL_NAMES.get(model, model) + (f" ({options})" if options else "")


def model_order(run: str) -> tuple[int, str]:
    model = run.partition("-")[0]
    return (list(MODEL_NAMES).index(model) if model in MODEL_NAMES else len(MODEL_NAMES), run)


def run_fit(rows: Sequence[dict[str, Any]]) -> bool | None:
    """Whether every run of a cell fit the training lengths: its ``fit_step`` is set (files from before the runner
    recorded it, without ``fit_step``: ``None``, not known)."""
    if not all("fit_step" in r for r in rows):
        return None
    return all(r["fit_step"] not in ("", None) for r in rows)


def glance(files: Sequence[Record]) -> list[str]:
    """Every cell of Delétang et al. 2023's Table 2 known here (``benchmarks.accuracy.published``) that ours ran:
    the run of most steps (the latest on a tie; its seeds' mean where it ran several), against the published
    cell, with whether the runs fit the training lengths (their ``fit_step``)."""
    best: dict[tuple[str, str], tuple[int, str, list[dict[str, Any]], Record]] = {}
    for record in files:  # oldest first: a later file wins a tie
        runs: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
        for r in record.rows:
            if isinstance(r.get("steps"), int):
                runs.setdefault((r["task"], r["model"], r["steps"]), []).append(r)
        for (task, model, steps), rows in runs.items():
            if chomsky_cell(task, model) is not None and steps >= best.get((task, model), (0,))[0]:
                best[task, model] = (steps, record.date, rows, record)
    order = list(CHOMSKY_LEVELS)
    cells = []
    for (task, model), (steps, _, rows, record) in sorted(
        best.items(), key=lambda kv: (order.index(kv[1][2][0]["level"]), kv[0][0], model_order(kv[0][1]))
    ):
        scores = [float(r["score"]) for r in rows]
        mean, std = statistics.mean(scores), (statistics.stdev(scores) if len(scores) > 1 else 0.0)
        level = CHOMSKY_LEVELS[rows[0]["level"]]
        cells.append(
            Cell(
                f"{task} ({level}): {model_name(model)}",
                chomsky_cell(task, model),
                mean,
                std,
                len(rows),
                f"{steps:,} steps, {record.machine}",
                run_fit(rows),
            )
        )
    text = (
        "Delétang et al. 2023 (*Neural Networks and the Chomsky Hierarchy*, Table 2): token accuracy (%) over the "
        "test lengths 41 to 500 after training on 1 to 40, the best of 10 seeds x 3 learning rates at 1,000,000 "
        "steps. Ours: the run of most steps of each cell known here, one seed unless said, at a CPU budget of a "
        "thousandth of those steps or less. A run fits when its accuracy at the training lengths reached 99 % (files "
        "recorded before that was logged say nothing of it); where a run did not, its row says what the budget "
        "reached, not how the model generalises."
    )
    return [text, "", *summary_table(cells)]


def peer_table(record: Record) -> list[str]:
    """A record of ``benchmarks.accuracy.chomsky_peer``: per cell and code (DeepMind's, ours), the seeds' scores
    over the test lengths (mean ± std), their accuracy at the training lengths and the step each first fit them
    (blank: never), at equal steps and seeds."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in record.rows:
        groups.setdefault((r["task"], r["model"], r["code"]), []).append(r)
    header = ["task", "level", "model", "code", "seeds", "steps", "score", "train %", "fit at step", "published"]
    body = []
    for (task, model, side), runs in groups.items():
        scores = [float(r["score"]) for r in runs]
        body.append(
            [
                task,
                CHOMSKY_LEVELS.get(runs[0]["level"], runs[0]["level"]),
                model_name(model),
                "DeepMind's" if side == "deepmind" else side,
                str(len(runs)),
                ", ".join(f"{r['steps']:,}" for r in runs),
                mean_pm_std(scores),
                ", ".join(number(r.get("train_accuracy", "")) for r in runs),
                ", ".join(str(r.get("fit_step", "")) or "-" for r in runs),
                number(chomsky_cell(task, model) if chomsky_cell(task, model) is not None else ""),
            ]
        )
    return [table(header, body), ""]


def chomsky_page(records: dict[str, Record], results: Path, findings: Findings, images: dict[str, bytes]) -> str:
    """``chomsky.md``: every ``chomsky_*`` file and its plots. Findings keys: ``intro``, each file's ``device/stem``.

    The published column is Delétang et al. 2023's Table 2 as ``benchmarks.accuracy.published`` holds it
    when the page is rendered, not the cells a file recorded (a file keeps the cells known when it was written):
    every file shows every cell known today. Ours - published is the file's own difference where it recorded
    the same published cell (computed from the unrounded score), else computed from the score shown."""
    out = [GENERATED, "", "# Chomsky hierarchy: range evaluation", ""]
    files = sorted(
        (r for r in records.values() if r.runner == "benchmarks.accuracy.chomsky"), key=lambda r: (r.date, r.stem)
    )
    out += ["## At a glance", "", *glance(files), *findings.take("intro")]
    peers = sorted(
        (r for r in records.values() if r.runner == "benchmarks.accuracy.chomsky_peer"), key=lambda r: (r.date, r.stem)
    )
    for record in peers:
        out += [f"## Against DeepMind's own code: {code(record.stem)} ({record.machine}, {record.date})", ""]
        out += [*findings.take(record.key), *peer_table(record), record.data.get("notes", ""), ""]
        cells = list(dict.fromkeys((r["task"], r["model"]) for r in record.rows))
        out += plot_lines(record, results, images, [f"_{task}_{model}" for task, model in cells])
        out += [*provenance("Run", record), ""]
    out += decisive_cells(peers, files, findings)
    out += chomsky_budget_tables(files, findings)
    for record in files:
        out += [f"## {code(record.stem)} ({record.machine}, {record.date})", "", *findings.take(record.key)]
        trained = any("train_accuracy" in r for r in record.rows)
        header = ["task", "level", "model", "steps", "selected step", "score", "published", "ours - published"]
        header += ["train %", "fit at step"] if trained else []
        timed = any("eval_seconds" in r for r in record.rows)
        header += ["evaluation s"] if timed else []
        body = []
        for r in record.rows:
            theirs = chomsky_cell(r["task"], r["model"])
            cell = "" if theirs is None else theirs
            recorded = r.get("difference", "") if r["published"] == cell else ""
            body.append(
                [
                    r["task"],
                    r["level"],
                    r["model"],
                    f"{r['steps']:,}",
                    f"{r['selected_step']:,}",
                    number(r["score"]),
                    number(cell),
                    with_difference("", leading_number(r["score"]), cell, recorded).strip(" ()"),
                    *([number(r.get("train_accuracy", "")), str(r.get("fit_step", ""))] if trained else []),
                    *([number(r.get("eval_seconds", ""))] if timed else []),
                ]
            )
        out += [table(header, body), "", *provenance("Run", record), ""]
        tasks = list(dict.fromkeys(r["task"] for r in record.rows))
        out += plot_lines(record, results, images, [f"_{t}" for t in tasks])
    return "\n".join(out)


def chomsky_budget_tables(files: Sequence[Record], findings: Findings) -> list[str]:
    """Table 2 at one step budget, put together from every file that ran the paper's models or PANM (no model
    options) at that budget on one machine with the sampled sweep (``--sampled``), where two files or more do:
    the layout of ``published.chomsky_table_two``, each model's mean per level (ours over the level's tasks where
    the model ran all of them; published where Table 2's cells of the level are all known here), and the tasks
    on which each model fit the training lengths (the rows' ``fit_step``). ``files`` oldest first: a cell run in
    several files is the latest file's. Findings key: ``<device>/table2_<steps>steps``."""
    columns = {m: h for h, m in CHOMSKY_MODELS} | {"panm": "PANM"}
    groups: dict[tuple[str, int], dict[tuple[str, str], tuple[Record, list[dict[str, Any]]]]] = {}
    for record in files:
        if "--sampled" not in record.command.split():
            continue
        runs: dict[tuple[int, str, str], list[dict[str, Any]]] = {}
        for r in record.rows:
            if r["model"] in columns and isinstance(r.get("steps"), int):
                runs.setdefault((r["steps"], r["task"], r["model"]), []).append(r)
        for (steps, task, model), rows in runs.items():
            groups.setdefault((record.device, steps), {})[task, model] = (record, rows)
    out = []
    for (device, steps), cells in groups.items():
        sources = {record.key: record for record, _ in cells.values()}
        if len(sources) < 2:
            continue
        rows = [r for _, runs_of_cell in cells.values() for r in runs_of_cell]
        order = list(CHOMSKY_LEVELS)
        levels = dict(sorted(dict.fromkeys((r["task"], r["level"]) for r in rows), key=lambda tl: order.index(tl[1])))
        models = [m for m in columns if m != "panm" or any(r["model"] == m for r in rows)]
        heads = ["level", "task", *(columns[m] for m in models)]
        paper = chomsky_table_two(rows, levels)
        out += [f"## Table 2 at {steps:,} steps ({MACHINES.get(device, device)}): {len(sources)} files together", ""]
        out += findings.take(f"{device}/table2_{steps}steps")
        out += [table(heads, ([str(row.get(h, "-")) for h in heads] for row in paper)), ""]

        best = {cell: max(r["score"] for r in runs_of_cell) for cell, (_, runs_of_cell) in cells.items()}
        published = {row["level"]: row for row in chomsky_per_level(levels)}
        level_rows = []
        for level, short in CHOMSKY_LEVELS.items():
            tasks = [t for t, lv in levels.items() if lv == level]
            if not tasks:
                continue
            line = [f"{short} ({len(tasks)} task{'s' * (len(tasks) > 1)})"]
            for model in models:
                scores = [best[t, model] for t in tasks if (t, model) in best]
                ours = number(round(sum(scores) / len(scores), 1)) if len(scores) == len(tasks) else "-"
                theirs = published[level].get(model) if model != "panm" else None
                line.append(ours if theirs is None else f"{ours} / {theirs if theirs != '' else '-'}")
            level_rows.append(line)
        out += [
            "Mean per level, ours / published (ours: over the level's tasks, `-` where a model did not run all of "
            "them; published: `-` where a cell of the level is not known here):",
            "",
            table(["level", *heads[2:]], level_rows),
            "",
        ]

        fits = []
        for model in models:
            ran = [t for t in levels if (t, model) in cells]
            first = {t: [r["fit_step"] for r in cells[t, model][1] if r.get("fit_step") not in ("", None)] for t in ran}
            fitted = [f"{t} ({min(first[t])})" for t in ran if first[t]]
            fits.append([columns[model], f"{len(fitted)} of {len(ran)}", ", ".join(fitted) or "none"])
        out += [
            "Fit the training lengths: the tasks on which a run's `fit_step` is set (the first validation at which "
            "its token accuracy at the training lengths reached the threshold its file's notes give), in brackets:",
            "",
            table(["model", "fit", "tasks (step)"], fits),
            "",
            "From " + ", ".join(code(r.stem) for r in sources.values()) + " (each below, with its command).",
            "",
        ]
    return out


VALIDATION_MARK = "*"  # a fit step read on the runner's validation (every 250 steps), not a training curve
PAPER_TEST_RANGE = (CHOMSKY_LENGTHS[0] + 1, CHOMSKY_LENGTHS[1])
Budget = tuple[str, int, tuple[int, int]]  # a decisive table's device, steps and first and last test length


def test_range(record: Record, row: dict[str, Any]) -> tuple[int, int]:
    """The first and last test length of a row: its per-length results where it has them, else its command's
    ``--max-train-length`` + 1 and ``--max-test-length`` (the paper's 41..500 where the command sets neither)."""
    per_length = row.get("test_accuracy")
    if per_length:
        return int(per_length[0][0]), int(per_length[-1][0])
    args = record.command.split()

    def flag(name: str, default: int) -> int:
        return int(args[args.index(name) + 1]) if name in args[:-1] else default

    return flag("--max-train-length", PAPER_TEST_RANGE[0] - 1) + 1, flag("--max-test-length", PAPER_TEST_RANGE[1])


def decisive_cells(peers: Sequence[Record], files: Sequence[Record], findings: Findings) -> list[str]:
    """The tasks that ``benchmarks.accuracy.chomsky_peer`` ran, at each of its step budgets, every run of them at
    that budget in one table: for each architecture the comparison ran on the task, DeepMind's code, ours (the
    comparison's rows and the ``benchmarks.accuracy.chomsky`` runner's rows of the sampled sweep) and ours with
    each model option tried (a row each); then PANM. Seeds are merged per row, the comparison's row replacing a
    runner's row of the same seed. One table per device, budget and test lengths. Findings key:
    ``<device>/decisive_<steps>steps``, and ``_test<last length>`` after it for test lengths other than the
    paper's."""
    compared: dict[Budget, dict[str, list[str]]] = {}  # budget -> task -> the architectures
    for record in peers:
        for r in record.rows:
            if isinstance(r.get("steps"), int):
                budget = (record.device, r["steps"], test_range(record, r))
                archs = compared.setdefault(budget, {}).setdefault(r["task"], [])
                archs += [r["model"]] if r["model"] not in archs else []
    found: dict[Budget, dict[str, dict[tuple[str, str], dict[int, dict[str, Any]]]]] = {}
    level: dict[str, str] = {}
    for record in [*files, *peers]:  # the comparison last: its rows replace a runner's row of the same seed
        if "--sampled" not in record.command.split():
            continue
        for r in record.rows:
            budget = (record.device, r.get("steps", 0), test_range(record, r))
            archs = compared.get(budget, {}).get(r["task"], [])
            if not archs or r["model"].partition("-")[0] not in [*archs, "panm"]:
                continue
            side = "deepmind" if r.get("code") == "deepmind" else "ours"
            by_seed = found.setdefault(budget, {}).setdefault(r["task"], {}).setdefault((r["model"], side), {})
            by_seed[int(r["seed"])] = {**r, "validation": record.runner == "benchmarks.accuracy.chomsky"}
            level[r["task"]] = r["level"]
    order = list(CHOMSKY_LEVELS)
    out = []
    for (device, steps, lengths), tasks in sorted(found.items(), key=lambda kv: (kv[0][1], -kv[0][2][1])):
        archs_of = compared[device, steps, lengths]
        paper_lengths = lengths == PAPER_TEST_RANGE
        span = f"{lengths[0]}..{lengths[1]}"
        body = []
        for task, rows in sorted(tasks.items(), key=lambda kv: (order.index(level[kv[0]]), kv[0])):

            def rank(key: tuple[str, str], archs: list[str] = archs_of[task]) -> tuple[int, int, str]:
                model, side = key
                base = model.partition("-")[0]
                return (archs.index(base) if base in archs else len(archs), side != "deepmind", model)

            for model, side in sorted(rows, key=rank):
                runs = [rows[model, side][seed] for seed in sorted(rows[model, side])]
                marks = [VALIDATION_MARK * r["validation"] for r in runs]
                fits = [
                    "-" if r.get("fit_step") in ("", None) else f"{r['fit_step']}{m}"
                    for r, m in zip(runs, marks, strict=True)
                ]
                published = chomsky_cell(task, model)
                body.append(
                    [
                        f"{task} ({CHOMSKY_LEVELS[level[task]]})",
                        f"{'DeepMind' if side == 'deepmind' else 'ours'}: {model_name(model)}",
                        ", ".join(str(r["seed"]) for r in runs),
                        mean_pm_std([float(r["score"]) for r in runs]),
                        ", ".join(number(float(r["score"])) for r in runs),
                        ", ".join(
                            f"{number(r.get('train_accuracy', ''))}{m}" for r, m in zip(runs, marks, strict=True)
                        ),
                        ", ".join(fits),
                        number(published if published is not None else ""),
                    ]
                )
        header = ["task", "code: model", "seeds", "score", "per seed", "train %", "fit at step", "published"]
        at = "" if paper_lengths else f", test lengths {span}"
        out += [
            f"## The decisive cells at {steps:,} steps{at} ({MACHINES.get(device, device)}): DeepMind's code and ours",
            "",
        ]
        out += findings.take(f"{device}/decisive_{steps}steps" + ("" if paper_lengths else f"_test{lengths[1]}"))
        out += [
            f"Every run at {steps:,} steps, sampled sweep, of the tasks run with DeepMind's code (their code: "
            "`DeepMind`; this library: `ours`, its model options in brackets): score, token accuracy (%) over the "
            f"test lengths {span}, mean ± std over the seeds, then each seed; train %, the best accuracy at the "
            "training lengths, and fit at step, the first step at which it reached 99 % (-: never), both on the "
            "comparison's curve of training batches (a point every `--curve-every` steps of its command) or, marked "
            f"{VALIDATION_MARK}, on the runner's validation at the training lengths (every 250 steps). Published: "
            "Delétang et al. 2023, Table 2, the best of their runs at 1,000,000 steps"
            + (
                "."
                if paper_lengths
                else f", over the test lengths {PAPER_TEST_RANGE[0]}..{PAPER_TEST_RANGE[1]} (for reference: not "
                "these lengths)."
            ),
            "",
            table(header, body),
            "",
        ]
    return out
