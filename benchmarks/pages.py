"""The results pages: the recorded JSON of ``benchmarks/results/<device>/`` rendered as Markdown in ``docs/results/``.

    python -m benchmarks.pages             # write docs/results/ and the results summary in README.md
    python -m benchmarks.pages --check     # render into a temporary folder; exit 1 naming each file that differs
    python -m benchmarks.pages --out DIR   # write the pages into DIR instead (README.md untouched)

Every number on the pages is read from a results file or computed from one by the arithmetic below (mean
and sample standard deviation over seeds, ours - published), never typed in, so a page cannot drift from
its file; one exception, by design: the Chomsky page's published column is the paper's table as the code
holds it (``benchmarks.accuracy.chomsky_published``), so that older files show the cells known since.
``--check`` (run by ``tests/benchmarks/test_pages.py``) fails on a hand edit of a page or of the README's
summary. The prose beside a table (what it shows, and why) is kept in
``benchmarks/findings/<page>.md``, one ``## KEY`` section per table (the keys are given where each page
takes them); a section no table takes is an error, so prose cannot outlive its table. A plot recorded
beside a JSON (``<name>.png``; the Chomsky runner's ``<name>_<task>.png``) is copied byte for byte to
``docs/results/img/<device>/``.

Result files are named by what sets them apart (``benchmarks/accuracy/reproduce.py``, ``results_name``:
``_quick``, ``_select2Lp1``, ``_capped``, ``_opt-`` and six hex digits of a hash of the model options,
``--name``), and their JSON's ``settings`` spell that out; the pages read the settings, not the names.
Commands are shown as recorded, with the module paths of today's layout (``MOVED``).
"""

from __future__ import annotations

import argparse
import dataclasses
import filecmp
import json
import math
import re
import statistics
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.accuracy import chomsky_published

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
FINDINGS = ROOT / "benchmarks" / "findings"
DOCS = ROOT / "docs" / "results"
README = ROOT / "README.md"
START, END = "<!-- results-summary:start -->", "<!-- results-summary:end -->"
GENERATED = (
    "<!-- Rendered from benchmarks/results/ by `python -m benchmarks.pages`: edit the prose in "
    "benchmarks/findings/, not this file (the check fails on a hand edit). -->"
)

MODES = ("L", "L+1", "2L+1", "4L+1", "8L+1")
LENGTHS = (10, 11, 21, 41, 81)  # the algorithmic tasks' test lengths at L = 10
# The modes of the other test-length convention (task option test_lengths="k(L+1)"), matched to MODES by position.
K_MODES = ("L", "L+1", "2(L+1)", "4(L+1)", "8(L+1)")
K_LENGTHS = (10, 11, 22, 44, 88)  # their lengths at L = 10

# Le et al. 2024's algorithmic tasks, in the order of their Tables 13-18.
TASKS = {
    "copy": ("Copy", 13),
    "reverse": ("Reverse", 14),
    "mix": ("Mix", 15),
    "dynamic_recall": ("Dynamic Recall", 16),
    "priority_sort": ("Priority Sort", 17),
    "id_sort": ("ID Sort", 18),
}

# Recorded commands name the benchmark modules where they were; these are where they are now.
MOVED = {
    **{m: f"accuracy.{m}" for m in ("reproduce", "ablation", "chomsky", "seq2seq", "authors_panm", "diagnose_pointer")},
    **{
        m: f"speed.{m}"
        for m in (
            "peers",
            "kernels",
            "panm_step",
            "models_speed",
            "tasks_speed",
            "seeds_speed",
            "scaling",
            "precision",
            "profile",
            "cost",
            "dnc_link",
        )
    },
}

# How the tables name the machines of the results folders.
MACHINES = {"cpu-2cores": "CPU", "nvidia-h100-80gb-hbm3": "H100", "nvidia-h200": "H200"}

# Option sets the tables name instead of listing them (model options as ``benchmarks.accuracy.ablation`` writes them).
OURS = {"distractors": "16", "distractor_sampling": "neighbours", "score": "scaled_dot", "snap_pointers": "always"}
AUTHORS = {
    "encoder": "bigru",
    "hidden": "128",
    "score": "scaled_dot",
    "address_bits": "8",
    "random_base_at_eval": "true",
    "eq3_addresses": "authors_view",
    "controller_attention": "true",
    "mode2_dropout": "0.5",
    "attention_projections": "true",
    "init": "pytorch",
    "controller_start": "encoder_final",
    "controller_reads_mode2": "false",
}
NAMED_OPTIONS = {
    "the options of ours": OURS,
    "every choice of the authors' code that is an option here": AUTHORS,
}

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

# Which page shows which files (by name); the rest (the speed suite's) are listed on the index only.
FAMILIES = {
    "reproduce_": "algorithmic.md",
    "ablation_": "ablations.md",
    "authors_panm_": "authors_code.md",
    "diagnose_pointer_": "diagnosis.md",
    "chomsky_": "chomsky.md",
    "seq2seq_": "seq2seq.md",
    "transduction_": "transduction.md",
    "m10ae_": "m10ae.md",
    "dyck_": "dyck.md",
}


# --- the records ----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Record:
    """One results file: ``benchmarks/results/<device>/<stem>.json``."""

    device: str
    stem: str
    data: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.device}/{self.stem}"

    @property
    def path(self) -> str:
        return f"benchmarks/results/{self.device}/{self.stem}.json"

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.data.get("rows", [])

    @property
    def settings(self) -> dict[str, Any]:
        return self.data.get("settings", {})

    @property
    def environment(self) -> dict[str, Any]:
        return self.data.get("environment", {})

    @property
    def machine(self) -> str:
        return MACHINES.get(self.device, self.device)

    @property
    def date(self) -> str:
        return str(self.environment.get("date", ""))[:10]

    @property
    def commit(self) -> str:
        return str(self.environment.get("commit", ""))

    @property
    def command(self) -> str:
        return rerun_command(self.data.get("command", ""))


def load(results: Path = RESULTS) -> dict[str, Record]:
    """Every ``<device>/<stem>.json`` under ``results`` with a table (``rows``), by ``device/stem``."""
    records = {}
    for path in sorted(results.glob("*/*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "rows" in data:
            record = Record(path.parent.name, path.stem, data)
            records[record.key] = record
    return records


def rerun_command(command: str) -> str:
    """A recorded command at today's module paths (``benchmarks.reproduce`` -> ``benchmarks.accuracy.reproduce``)."""
    return re.sub(r"-m benchmarks\.(\w+)", lambda m: f"-m benchmarks.{MOVED.get(m.group(1), m.group(1))}", command)


# --- the arithmetic -------------------------------------------------------------------------------------------


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """The mean and the sample standard deviation (0 for one value), as the runners compute them."""
    if len(values) == 1:
        return float(values[0]), 0.0
    return statistics.mean(values), statistics.stdev(values)


def mean_pm_std(values: Sequence[float]) -> str:
    """``[80, 90]`` -> ``"85.0 ± 7.1"``; one value: ``"80.0"``."""
    mean, std = mean_std(values)
    return f"{mean:.1f}" + (f" ± {std:.1f}" if len(values) > 1 else "")


def leading_number(cell: Any) -> float | None:
    """The first number of a cell: ``"77.9 ± 2.0"`` -> 77.9, ``84`` -> 84.0, ``""`` -> None."""
    if isinstance(cell, bool):
        return None
    if isinstance(cell, int | float):
        return None if math.isnan(cell) else float(cell)
    found = re.search(r"[-+]?\d+(?:\.\d+)?", str(cell))
    return float(found.group()) if found else None


def difference(ours: float | None, published: float | None) -> str:
    """``ours - published`` in percentage points, signed, one decimal (``""`` where either is missing)."""
    if ours is None or published is None:
        return ""
    return f"{ours - published:+.1f}"


def ours_cell(row: dict[str, Any], mode: str) -> tuple[str, float | None]:
    """A row's cell at ``mode`` and the mean to take its difference from: the file's own aggregate where it
    records one (``"77.9 ± 2.0"``), else the mean ± std of the row's per-seed numbers (``per_seed``)."""
    per_seed = row.get("per_seed")
    seeds = per_seed.get(mode) if isinstance(per_seed, dict) else None
    text = str(row.get(mode, "")) or (mean_pm_std(seeds) if seeds else "")
    return text, leading_number(text) if text else None


def with_difference(ours: str, mean: float | None, published: Any, recorded: Any = "") -> str:
    """``"77.9 ± 2.0 (-6.1)"``: a cell of ours and, in brackets, ours - published: the file's own difference
    where it records one (``recorded``), else computed from ``mean``. A file computes its differences from
    unrounded means, so its own figure is the one shown; ``tests/benchmarks/test_pages.py`` checks that the
    two agree to the rounding."""
    if isinstance(recorded, float):
        recorded = f"{recorded:+.1f}"
    diff = recorded or difference(mean, leading_number(published))
    return f"{ours} ({diff})" if diff else ours


def number(value: Any, digits: int = 1) -> str:
    """A float to ``digits`` decimals (NaN: ``"—"``); anything else as it is."""
    if isinstance(value, float):
        return "—" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def steps_range(steps: Any) -> str:
    """``"4251,3801,3951"`` -> ``"3,801-4,251"``; ``"50000,50000"`` -> ``"50,000"``."""
    values = sorted({int(s) for s in str(steps).split(",") if s.strip().isdigit()})
    if not values:
        return str(steps)
    return f"{values[0]:,}" if len(values) == 1 else f"{values[0]:,}-{values[-1]:,}"


# --- Markdown -------------------------------------------------------------------------------------------------


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table (``|`` inside a cell escaped)."""

    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *(line(r) for r in rows)])


def code(text: str) -> str:
    return f"`{text}`"


class Findings:
    """The prose of one page, ``benchmarks/findings/<page>.md``: its ``## KEY`` sections (text before the first
    heading is a comment for whoever edits the file). ``take`` hands a section to the table it explains;
    ``finish`` refuses sections that no table took."""

    def __init__(self, path: Path):
        self.path = path
        self.sections: dict[str, str] = {}
        text = path.read_text() if path.exists() else ""
        for part in re.split(r"^## ", text, flags=re.M)[1:]:
            key, _, body = part.partition("\n")
            self.sections[key.strip()] = body.strip()
        self.unused = set(self.sections)

    def take(self, key: str) -> list[str]:
        self.unused.discard(key)
        body = self.sections.get(key, "")
        return [body, ""] if body else []

    def finish(self) -> None:
        if self.unused:
            raise SystemExit(f"{self.path}: sections that no table takes: {sorted(self.unused)}")


def plot_lines(record: Record, results: Path, images: dict[str, bytes], suffixes: Sequence[str] = ("",)) -> list[str]:
    """The plots recorded beside ``record`` (``<stem><suffix>.png``), copied to ``img/<device>/`` and shown."""
    lines = []
    for suffix in suffixes:
        source = results / record.device / f"{record.stem}{suffix}.png"
        if source.exists():
            target = f"img/{record.device}/{record.stem}{suffix}.png"
            images[target] = source.read_bytes()
            lines += [f"![{record.stem}{suffix}]({target})", ""]
    return lines


def provenance(label: str, record: Record, extra: str = "") -> list[str]:
    """A run's line under its table: its file, machine, commit and date, and the command that reproduces it."""
    head = f"- **{label}** {code(record.path)}: {record.machine}, {record.date}, commit {code(record.commit)}"
    return [head + (f"; {extra}" if extra else "") + ".", f"  {code(record.command)}"]


# --- option sets ----------------------------------------------------------------------------------------------


def option_text(value: Any) -> str:
    """A model option's value as a command line writes it: ``16``, ``true``, ``scaled_dot``."""
    return value if isinstance(value, str) else json.dumps(value)


def describe_options(options: dict[str, str], select: str = "L+1") -> str:
    """What a run changes from the paper's model: a named set (``NAMED_OPTIONS``, also one less one or two of
    its options) or the options themselves, and the selection when it is not L+1."""
    parts = []
    for name, named in NAMED_OPTIONS.items():
        missing = {k: v for k, v in named.items() if options.get(k) != v}
        if (
            options
            and set(options) <= set(named)
            and all(options[k] == named[k] for k in options)
            and len(missing) <= 2
        ):
            parts.append(name + "".join(f", without {code(f'{k}={v}')}" for k, v in missing.items()))
            break
    else:
        parts += [code(f"{k}={v}") for k, v in options.items()]
    if select != "L+1":
        parts.append(f"selected on {select}")
    return ", ".join(parts) if parts else "none"


def run_options(record: Record, model: str) -> dict[str, str]:
    """A ``reproduce`` file's model options for ``model``, as text (its ``settings``)."""
    options = record.settings.get("model_options", {}).get(model, {})
    return {k: option_text(v) for k, v in options.items()}


def variant_options(variant: str) -> tuple[dict[str, str], dict[str, str], str]:
    """``benchmarks.accuracy.ablation``'s variant ``"panm.score=scaled_dot,optimizer.eps_in_sqrt=true,select=2L+1"`` ->
    ``({"score": "scaled_dot"}, {"optimizer.eps_in_sqrt": "true"}, "2L+1")``: model options, other changes,
    selection."""
    options, other, select = {}, {}, "L+1"
    if variant != "default":
        for item in variant.split(","):
            key, _, value = item.partition("=")
            if key == "select":
                select = value
            elif key.startswith("panm."):
                options[key.removeprefix("panm.")] = value
            else:
                other[key] = value
    return options, other, select


# --- the algorithmic tasks ------------------------------------------------------------------------------------


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


MODEL_NAMES = {
    "panm": "PANM",
    "lstm": "LSTM",
    "ntm": "NTM",
    "dnc": "DNC",
    "stack_lstm": "Stack-LSTM",
    "lstm_attention": "LSTM + attention",
    "pointer_network": "Pointer Network",
    "transformer": "Transformer",
}


def display_model(model: str) -> str:
    return MODEL_NAMES.get(model, model)


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
        f"[{link}]({link}) (rendered from the recorded files by `.venv/bin/python -m benchmarks.pages`)."
    )
    return "\n".join([intro, "", table(header, body)]).rstrip() + "\n"


# --- ablations ------------------------------------------------------------------------------------------------


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


def authors_page(records: dict[str, Record], findings: Findings) -> str:
    """``authors_code.md``: the authors' PANM rerun (``authors_panm_*``), the resume check, and the one run of
    that code quoted in every Copy table. Findings keys: ``intro``, each file's ``device/stem``, ``yardstick``."""
    out = [GENERATED, "", "# The authors' PANM code, rerun", "", *findings.take("intro")]
    files = [r for r in records.values() if r.stem.startswith("authors_panm_")]
    for record in sorted(files, key=lambda r: ("resume" in r.stem, r.stem)):
        out += [f"## {record.data['title']} ({code(record.stem)})", "", *findings.take(record.key)]
        if record.rows and "check" in record.rows[0]:
            out += [
                table(
                    ["check", "value"],
                    (
                        [r["check"], str(r["value"]).lower() if isinstance(r["value"], bool) else str(r["value"])]
                        for r in record.rows
                    ),
                ),
                "",
            ]
        else:
            published = next(r for r in record.rows if str(r["row"]).startswith("published"))
            header = ["row", "steps", "checkpoint kept at step", *map(str, LENGTHS)]
            body = []
            diffs = {r["row"].split("mean")[0]: r for r in record.rows if r["row"].endswith(" - published")}
            for r in record.rows:
                if r is published or r["row"].endswith(" - published"):
                    continue
                if "mean" in r["row"]:  # the seeds' mean ± std, beside its difference ("final weights, mean ...")
                    diff = diffs.get(r["row"].split("mean")[0], {})
                    cells = [with_difference(*ours_cell(r, m), published[m], diff.get(m, "")) for m in MODES]
                else:
                    cells = [str(r[m]) for m in MODES]
                kept = r.get("selected_step", "")
                body.append([r["row"], f"{int(r['steps']):,}", f"{kept:,}" if isinstance(kept, int) else "", *cells])
            body.append([f"**{published['row']}**", "", "", *(str(published[m]) for m in MODES)])
            out += [table(header, body), ""]
        out += [*provenance("Run", record), ""]
    yardstick = next(
        (
            (record, row)
            for record in sorted(records.values(), key=lambda r: r.stem)
            if record.stem.startswith("reproduce_copy_")
            for row in record.rows
            if str(row.get("row", "")).startswith("authors' code")
        ),
        None,
    )
    if yardstick:
        record, row = yardstick
        out += ["## The one run of that code quoted beside every Copy table", "", *findings.take("yardstick")]
        out += [
            table(
                ["row", "selected on", *map(str, LENGTHS)],
                [[row["row"], row["selected_on"], *(str(row[m]) for m in MODES)]],
            ),
            "",
        ]
        out += [f"Recorded in every Copy table of ours, e.g. {code(record.path)}.", ""]
    return "\n".join(out)


# --- the pointers ---------------------------------------------------------------------------------------------


DIAGNOSIS_COLUMNS = (
    ("run", "run", 0),
    ("step", "step", 0),
    ("length", "length", 0),
    ("head kind", "pointer", 0),
    ("output steps", "steps", 0),
    ("head", "head", 0),
    ("token %", "token %", 1),
    ("pointer %", "pointer %", 1),
    ("token % where the pointer is right", ("token if pointer right %", "token | pointer right %"), 1),
    ("token % where it is wrong", ("token if pointer wrong %", "token | pointer wrong %"), 1),
    ("first miss", "first miss", 0),
    ("largest weight", "max weight", 2),
    ("weight on the right slot", "weight on right slot", 2),
)


def diagnosis_page(records: dict[str, Record], findings: Findings) -> str:
    """``diagnosis.md``: every ``diagnose_pointer_*`` file, with the pointer paths its notes record. Findings keys:
    ``intro``, each file's ``device/stem``."""
    out = [GENERATED, "", "# Where the pointers go", "", *findings.take("intro")]
    files = sorted(
        (r for r in records.values() if r.stem.startswith("diagnose_pointer_")), key=lambda r: (r.date, r.stem)
    )
    for record in files:
        out += [f"## {code(record.stem)}", "", *findings.take(record.key)]
        columns = [c for c in DIAGNOSIS_COLUMNS if any(any(k in r for k in _keys(c[1])) for r in record.rows)]
        body = []
        for r in record.rows:
            cells = []
            for _, keys, digits in columns:
                value = next((r[k] for k in _keys(keys) if k in r), "")
                cells.append(
                    code(value) if keys == "run" else f"{value:,}" if keys == "step" else number(value, digits)
                )
            body.append(cells)
        out += [table([c[0] for c in columns], body), ""]
        paths = [line for line in record.data.get("notes", "").splitlines() if line.startswith("- ")]
        if paths:
            out += ["Slot of the largest weight at each output step, as recorded:", "", *paths, ""]
        out += [*provenance("Run", record), ""]
    return "\n".join(out)


def _keys(keys: str | tuple[str, ...]) -> tuple[str, ...]:
    return (keys,) if isinstance(keys, str) else keys


# --- Chomsky hierarchy and sequence-to-sequence ---------------------------------------------------------------


def chomsky_page(records: dict[str, Record], results: Path, findings: Findings, images: dict[str, bytes]) -> str:
    """``chomsky.md``: every ``chomsky_*`` file and its plots. Findings keys: ``intro``, each file's ``device/stem``.

    The published column is Delétang et al. 2023's Table 2 as ``benchmarks.accuracy.chomsky_published`` holds it
    when the page is rendered, not the cells a file recorded (a file keeps the cells known when it was written):
    every file shows every cell known today. Ours - published is the file's own difference where it recorded
    the same published cell (computed from the unrounded score), else computed from the score shown."""
    out = [GENERATED, "", "# Chomsky hierarchy: range evaluation", "", *findings.take("intro")]
    files = sorted((r for r in records.values() if r.stem.startswith("chomsky_")), key=lambda r: (r.date, r.stem))
    out += chomsky_budget_tables(files, findings)
    for record in files:
        out += [f"## {code(record.stem)} ({record.machine}, {record.date})", "", *findings.take(record.key)]
        header = ["task", "level", "model", "steps", "selected step", "score", "published", "ours - published"]
        body = []
        for r in record.rows:
            theirs = chomsky_published.published(r["task"], r["model"])
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
                ]
            )
        out += [table(header, body), "", *provenance("Run", record), ""]
        tasks = list(dict.fromkeys(r["task"] for r in record.rows))
        out += plot_lines(record, results, images, [f"_{t}" for t in tasks])
    return "\n".join(out)


def chomsky_budget_tables(files: Sequence[Record], findings: Findings) -> list[str]:
    """Table 2 at one step budget, put together from every file that ran the paper's models or PANM (no model
    options) at that budget on one machine with the sampled sweep (``--sampled``), where two files or more do:
    the layout of ``chomsky_published.table_two``, each model's mean per level (ours over the level's tasks where
    the model ran all of them; published where Table 2's cells of the level are all known here), and the tasks
    on which each model fit the training lengths (the rows' ``fit_step``). ``files`` oldest first: a cell run in
    several files is the latest file's. Findings key: ``<device>/table2_<steps>steps``."""
    columns = {m: h for h, m in chomsky_published.PAPER_MODELS} | {"panm": "PANM"}
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
        order = list(chomsky_published.LEVELS)
        levels = dict(sorted(dict.fromkeys((r["task"], r["level"]) for r in rows), key=lambda tl: order.index(tl[1])))
        models = [m for m in columns if m != "panm" or any(r["model"] == m for r in rows)]
        heads = ["level", "task", *(columns[m] for m in models)]
        paper = chomsky_published.table_two(rows, levels)
        out += [f"## Table 2 at {steps:,} steps ({MACHINES.get(device, device)}): {len(sources)} files together", ""]
        out += findings.take(f"{device}/table2_{steps}steps")
        out += [table(heads, ([str(row.get(h, "-")) for h in heads] for row in paper)), ""]

        best = {cell: max(r["score"] for r in runs_of_cell) for cell, (_, runs_of_cell) in cells.items()}
        published = {row["level"]: row for row in chomsky_published.published_per_level(levels)}
        level_rows = []
        for level, short in chomsky_published.LEVELS.items():
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


def seq2seq_page(records: dict[str, Record], findings: Findings) -> str:
    """``seq2seq.md``: every ``seq2seq_*`` file. Findings keys: ``intro``, each file's ``device/stem``.

    The ``paper row`` (the row of Le et al. 2024 that a model runs) and ``chance`` columns show where a file
    records them (files from before they were recorded have neither)."""
    out = [
        GENERATED,
        "",
        "# SCAN and Mathematics: sequence-to-sequence length generalisation",
        "",
        *findings.take("intro"),
    ]
    files = sorted((r for r in records.values() if r.stem.startswith("seq2seq_")), key=lambda r: (r.date, r.stem))
    for record in files:
        out += [f"## {code(record.stem)} ({record.machine}, {record.date})", "", *findings.take(record.key)]
        extra = [c for c in ("paper row", "chance") if any(c in r for r in record.rows)]
        header = [
            "task",
            "model",
            *(["paper row"] if "paper row" in extra else []),
            "seeds",
            "steps",
            "selected step",
            "exact match %",
            "per seed",
            *(["chance %"] if "chance" in extra else []),
            "published",
            "ours - published",
        ]
        body = [
            [
                r["task"],
                r["model"],
                *([r["paper row"]] if "paper row" in extra else []),
                str(r["seeds"]),
                steps_range(r["steps"]),
                steps_range(r["best_step"]),
                r["exact_match"],
                str(r["per_seed"]),
                *([r["chance"]] if "chance" in extra else []),
                r["published"],
                with_difference(
                    "", leading_number(r["exact_match"]), r["published"], r.get("ours - published", "")
                ).strip(" ()"),
            ]
            for r in record.rows
        ]
        out += [table(header, body), "", *provenance("Run", record), ""]
    return "\n".join(out)


# --- Grefenstette et al. 2015's transduction tasks and M10AE -------------------------------------------------

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


def m10ae_page(records: dict[str, Record], findings: Findings) -> str:
    """``m10ae.md``: every ``m10ae_*`` file, accuracy by length and by depth. Findings keys: ``intro``, each file's
    ``device/stem``."""
    out = [GENERATED, "", "# M10AE: modulo-10 arithmetic expressions", "", *findings.take("intro")]
    files = sorted((r for r in records.values() if r.stem.startswith("m10ae_")), key=lambda r: (r.date, r.stem))
    for record in files:
        out += [f"## {code(record.stem)} ({record.machine}, {record.date})", "", *findings.take(record.key)]
        lengths = [c for c in record.rows[0] if "(" in c and not c.startswith("depth ")] if record.rows else []
        depths = sorted({c for r in record.rows for c in r if c.startswith("depth ")}, key=lambda c: int(c.split()[1]))
        header = ["model", "seed", "steps", *(f"length {c}" for c in lengths), *depths]
        body = [
            [
                r["model"],
                str(r["seed"]),
                f"{r['steps']:,}",
                *(number(r[c]) for c in lengths),
                *(str(r.get(d, "")) for d in depths),
            ]
            for r in record.rows
        ]
        out += [table(header, body), "", record.data.get("notes", ""), "", *provenance("Run", record), ""]
    return "\n".join(out)


# --- Dyck languages (Le et al. 2024, Fig. 3a) ---------------------------------------------------------------

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
    published = record.settings.get("published", {})
    figures = published.get("mean_sequence_accuracy", {})
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
    if published:
        out += [
            f"'ours': the mean over the languages and test lengths of each cell's mean over seeds; 'published': "
            f"{published['source']} (the only Dyck numbers the paper prints).",
            "",
        ]
    return out


def dyck_page(records: dict[str, Record], results: Path, findings: Findings, images: dict[str, bytes]) -> str:
    """``dyck.md``: every ``dyck_*`` file, its tables and its plot. Findings keys: ``intro``, each file's
    ``device/stem``."""
    out = [GENERATED, "", "# Dyck languages: PANM on the SRNN against the SRNN", "", *findings.take("intro")]
    files = sorted((r for r in records.values() if r.stem.startswith("dyck_")), key=lambda r: (r.date, r.stem))
    for record in files:
        out += [f"## {code(record.stem)} ({record.machine}, {record.date})", "", *findings.take(record.key)]
        planned, done = record.settings.get("planned_runs"), len(record.rows)
        if planned and done < planned:
            out += [f"**Partial: {done} of the {planned} runs of its command have finished.**", ""]
        out += [*dyck_tables(record), record.data.get("notes", ""), ""]
        out += [*plot_lines(record, results, images), *provenance("Run", record), ""]
    return "\n".join(out)


# --- the index ------------------------------------------------------------------------------------------------


def index_page(records: dict[str, Record], results: Path, findings: Findings) -> str:
    """``index.md``: the machines, how to read the tables, the summary, and what each page shows. Findings keys:
    ``intro``, ``reading``."""
    out = [GENERATED, "", "# Results", "", *findings.take("intro")]
    out += ["## The machines", ""]
    body = []
    for device in sorted({r.device for r in records.values()}):
        envs = [r.environment for r in records.values() if r.device == device and r.environment]
        dates = sorted(str(e.get("date", ""))[:10] for e in envs if e.get("date"))
        body.append(
            [
                MACHINES.get(device, device),
                code(f"benchmarks/results/{device}/"),
                ", ".join(sorted({str(e.get("device", "")) for e in envs})),
                ", ".join(sorted({str(e.get("cpu_count", "")) for e in envs})),
                ", ".join(sorted({str(e.get("jax", "")) for e in envs})),
                f"{dates[0]} to {dates[-1]}" if dates else "",
                str(len(list((results / device).glob("*.json")))),
            ]
        )
    out += [table(["machine", "folder", "device", "CPU cores", "jax", "dates", "files (JSON)"], body), ""]
    out += ["## How to read the tables", "", *findings.take("reading")]
    out += ["## The algorithmic tasks at a glance", "", summary(records, "algorithmic.md"), ""]
    out += ["## What each page shows", ""]
    body = []
    for device in sorted({r.device for r in records.values()}):
        stems = sorted(p.stem for p in (results / device).glob("*.json"))
        for prefix, page in FAMILIES.items():
            n = sum(s.startswith(prefix) for s in stems)
            if n:
                body.append([MACHINES.get(device, device), code(prefix + "*"), str(n), f"[{page}]({page})"])
        rest = [s for s in stems if not s.startswith(tuple(FAMILIES))]
        if rest:
            body.append(
                [
                    MACHINES.get(device, device),
                    ", ".join(code(s) for s in rest),
                    str(len(rest)),
                    "the speed suite's (not rendered here)",
                ]
            )
    out += [table(["machine", "files", "count", "page"], body), ""]
    return "\n".join(out)


# --- rendering, writing, checking -----------------------------------------------------------------------------


def render(results: Path = RESULTS, findings: Path = FINDINGS) -> tuple[dict[str, bytes], str]:
    """Every page (``{relative path: bytes}``, images included) and the README's summary, from ``results``."""
    records = load(results)
    images: dict[str, bytes] = {}
    notes = {
        name: Findings(findings / f"{name}.md")
        for name in (
            "index",
            "algorithmic",
            "ablations",
            "authors_code",
            "diagnosis",
            "chomsky",
            "seq2seq",
            "transduction",
            "m10ae",
            "dyck",
        )
    }
    pages = {
        "index.md": index_page(records, results, notes["index"]),
        "algorithmic.md": algorithmic_page(records, results, notes["algorithmic"], images),
        "ablations.md": ablations_page(records, notes["ablations"], results, images),
        "authors_code.md": authors_page(records, notes["authors_code"]),
        "diagnosis.md": diagnosis_page(records, notes["diagnosis"]),
        "chomsky.md": chomsky_page(records, results, notes["chomsky"], images),
        "seq2seq.md": seq2seq_page(records, notes["seq2seq"]),
        "transduction.md": transduction_page(records, notes["transduction"]),
        "m10ae.md": m10ae_page(records, notes["m10ae"]),
        "dyck.md": dyck_page(records, results, notes["dyck"], images),
    }
    for n in notes.values():
        n.finish()
    files = {name: (re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n").encode() for name, text in pages.items()}
    return {**files, **images}, summary(records, "docs/results/algorithmic.md")


def fill_readme(text: str, block: str) -> str:
    """``text`` with ``block`` between the results-summary markers; SystemExit naming what is missing."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"README.md: expected the markers {START} and {END} (in that order), found none")
    return text[: start + len(START)] + "\n" + block + text[end:]


def write(files: dict[str, bytes], out: Path) -> None:
    """Write the pages into ``out``, removing files there that are no longer rendered."""
    out.mkdir(parents=True, exist_ok=True)
    for old in sorted(p for p in out.rglob("*") if p.is_file()):
        if old.relative_to(out).as_posix() not in files:
            old.unlink()
    for name, data in files.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
    for folder in sorted((p for p in out.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()


def differences(files: dict[str, bytes], block: str, docs: Path = DOCS, readme: Path = README) -> list[str]:
    """The committed files that differ from a fresh rendering: each one's path and how."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp)
        write(files, fresh)
        found = []
        names = {p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file()}
        committed = {p.relative_to(docs).as_posix() for p in docs.rglob("*") if p.is_file()} if docs.exists() else set()
        for name in sorted(names | committed):
            where = docs / name
            if name not in committed:
                found.append(f"{where}: missing (not rendered yet)")
            elif name not in names:
                found.append(f"{where}: not rendered from any results file (stale)")
            elif not filecmp.cmp(fresh / name, where, shallow=False):
                found.append(f"{where}: differs from its rendering")
    text = readme.read_text()
    try:
        if fill_readme(text, block) != text:
            found.append(f"{readme}: the results summary differs from its rendering")
    except SystemExit as missing:
        found.append(str(missing))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--check", action="store_true", help="render into a temporary folder; exit 1 naming each file that differs"
    )
    p.add_argument(
        "--out", default=None, help="write the pages into this folder instead of docs/results (README.md untouched)"
    )
    args = p.parse_args(argv)
    if args.check and args.out:
        raise SystemExit("--check: compares with docs/results and README.md; expected no --out, got --out " + args.out)
    files, block = render()
    if args.check:
        found = differences(files, block)
        for line in found:
            print(line)
        if found:
            print(f"{len(found)} file(s) differ from their rendering: run python -m benchmarks.pages", file=sys.stderr)
            return 1
        print(f"docs/results ({len(files)} files) and README.md's summary match the recorded results")
        return 0
    out = Path(args.out) if args.out else DOCS
    write(files, out)
    if not args.out:
        README.write_text(fill_readme(README.read_text(), block))
    print(f"wrote {len(files)} files into {out}" + ("" if args.out else " and README.md's results summary"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
