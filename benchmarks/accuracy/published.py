"""The published numbers that the accuracy suite compares with: every cell typed once, each table with its source.

A cell is a number as a paper prints it in a table (or, where a paper gives no table, in its text). This module
holds the cells of every table that a runner of ``benchmarks.accuracy`` or a results page puts beside ours; no
other module types them. It imports neither JAX nor the library, so the results pages use it as cheaply as the
runners do. The tables, by paper:

* Le, Nguyen, Do, Venkatesh & Tran 2024 (``LE_2024``): Tables 13-18, the algorithmic tasks, every model at the
  five test lengths (``algorithmic``); Table 3, their means per task as printed (``table3``); Table 2, the
  summary of every experiment, of which the algorithmic and Dyck rows (``table2``, ``dyck``); Table 4, SCAN's
  length splits, and Table 19, two Mathematics modules (``seq2seq``); Appendix D.6, the long-to-short margin
  (``LONG_TO_SHORT_MARGIN``).
* Delétang et al. 2023 (``DELETANG_2023``): Table 2, the Chomsky-hierarchy tasks, the cells known to this
  package (``chomsky``).
* Grefenstette, Hermann, Suleyman & Blunsom 2015 (``GREFENSTETTE_2015``): Figure 2a, the Stack-, Queue- and
  DeQue-LSTMs (``transduction``), and Table 3, the LSTM of every depth (``transduction_lstm``).

Each accessor returns a new container, so a caller may change what it gets. Where a number follows from others
(the best baseline at each length of Tables 13-18, ``other_max``), the function that computes it says so: what
is printed and what is recomputed stay apart. Rows and columns are named as printed, and mapped to this
package's model names where a runner needs them (``ALGORITHMIC_MODELS``, ``CHOMSKY_MODELS``,
``SEQ2SEQ_MODELS``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

LE_2024 = (
    "Le, Nguyen, Do, Venkatesh & Tran 2024, Plug, Play, and Generalize: Length Extrapolation with "
    "Pointer-Augmented Neural Memory (TMLR)"
)
DELETANG_2023 = "Delétang et al. 2023, Neural Networks and the Chomsky Hierarchy (ICLR 2023)"
GREFENSTETTE_2015 = (
    "Grefenstette, Hermann, Suleyman & Blunsom 2015, Learning to Transduce with Unbounded Memory (NeurIPS 2015)"
)


@dataclasses.dataclass(frozen=True)
class Source:
    """Where a table's cells are printed: the paper (authors, year, title, venue), its table, figure or section,
    and which rows and columns, as printed."""

    paper: str
    table: str
    row: str = ""

    def __str__(self) -> str:
        return ", ".join(part for part in (self.paper, self.table, self.row) if part)


@dataclasses.dataclass(frozen=True)
class Cell:
    """A published number (%): ``value`` (None: the cell is not legible in the table as printed), its standard
    deviation where the paper gives one, and a remark where the cell needs one (a crash, a rerun)."""

    value: float | None
    std: float | None = None
    remark: str = ""

    def text(self) -> str:
        """``"97 ± 2"``, ``"22"``, ``"0 ± 0 (remark)"``; ``"—"`` for a cell not legible as printed."""
        if self.value is None:
            return "—"
        out = f"{self.value:g}" + ("" if self.std is None else f" ± {self.std:g}")
        return f"{out} ({self.remark})" if self.remark else out


# --- Le et al. 2024, Tables 13-18: the algorithmic tasks ---------------------------------------------------

ALGORITHMIC_TASKS = ("copy", "reverse", "mix", "dynamic_recall", "priority_sort", "id_sort")  # Tables 13-18
# The five test lengths of Tables 13-18, as their columns are headed; a runner matches its test modes to them by
# position.
ALGORITHMIC_COLUMNS = ("L", "L+1", "2(L+1)", "4(L+1)", "8(L+1)")
# Each task's table and its heading as printed.
_ALGORITHMIC_TABLES = {
    "copy": ("Table 13", "Copy Task"),
    "reverse": ("Table 14", "Reverse Task"),
    "mix": ("Table 15", "Mix Task"),
    "dynamic_recall": ("Table 16", "Drecall Task"),
    "priority_sort": ("Table 17", "PSort Task"),
    "id_sort": ("Table 18", "ID Sort Task"),
}
# The rows of every table, in the paper's order: the 11 baselines, then PANM.
ALGORITHMIC_ROWS = (
    "LSTM",
    "Location Attention",
    "Content Attention",
    "Hybrid Attention",
    "Transformer",
    "NTM",
    "DNC",
    "Neural Stack",
    "PtrNet",
    "NRAM",
    "ESBN",
    "PANM",
)
# The row of Tables 13-18 that a model of this package runs.
ALGORITHMIC_MODELS = {"panm": "PANM", "lstm": "LSTM", "ntm": "NTM", "dnc": "DNC", "stack_lstm": "Neural Stack"}

# Token accuracy (%), the mean over 5 runs (the standard deviations left out), at the five test lengths.
_TABLES_13_18: dict[str, dict[str, tuple[int, int, int, int, int]]] = {
    "copy": {
        "LSTM": (100, 47, 11, 10, 10),
        "Location Attention": (100, 93, 51, 28, 20),
        "Content Attention": (100, 92, 53, 33, 22),
        "Hybrid Attention": (100, 91, 50, 23, 13),
        "Transformer": (100, 20, 16, 13, 11),
        "NTM": (100, 74, 13, 11, 11),
        "DNC": (100, 54, 11, 11, 11),
        "Neural Stack": (100, 90, 47, 29, 17),
        "PtrNet": (100, 90, 52, 32, 20),
        "NRAM": (100, 81, 15, 11, 11),
        "ESBN": (100, 92, 34, 11, 11),
        "PANM": (100, 100, 84, 52, 36),
    },
    "reverse": {
        "LSTM": (100, 96, 53, 33, 22),
        "Location Attention": (100, 26, 18, 14, 12),
        "Content Attention": (100, 81, 38, 23, 16),
        "Hybrid Attention": (100, 98, 50, 24, 15),
        "Transformer": (100, 18, 15, 13, 11),
        "NTM": (100, 95, 65, 26, 13),
        "DNC": (100, 93, 60, 23, 12),
        "Neural Stack": (100, 96, 64, 35, 19),
        "PtrNet": (100, 77, 32, 22, 12),
        "NRAM": (100, 96, 60, 33, 15),
        "ESBN": (99, 95, 14, 11, 10),
        "PANM": (100, 100, 84, 51, 33),
    },
    # Table 15 repeats four of Table 14's rows digit for digit (LSTM, Transformer, NTM, ESBN), as printed; its
    # best baseline at 2(L+1), 65, is the NTM's repeated row (58, DNC's, without them).
    "mix": {
        "LSTM": (100, 96, 53, 33, 22),
        "Location Attention": (100, 92, 56, 45, 30),
        "Content Attention": (100, 61, 57, 14, 12),
        "Hybrid Attention": (100, 98, 56, 34, 23),
        "Transformer": (100, 18, 15, 13, 11),
        "NTM": (100, 95, 65, 26, 13),
        "DNC": (100, 91, 58, 19, 11),
        "Neural Stack": (100, 87, 50, 14, 11),
        "PtrNet": (100, 59, 51, 13, 11),
        "NRAM": (99, 82, 48, 17, 10),
        "ESBN": (99, 95, 14, 11, 10),
        "PANM": (100, 100, 98, 54, 54),
    },
    "dynamic_recall": {
        "LSTM": (85, 74, 21, 12, 11),
        "Location Attention": (88, 82, 30, 19, 13),
        "Content Attention": (88, 84, 27, 17, 13),
        "Hybrid Attention": (69, 66, 28, 19, 13),
        "Transformer": (33, 32, 22, 14, 12),
        "NTM": (86, 72, 22, 15, 12),
        "DNC": (89, 83, 22, 14, 11),
        "Neural Stack": (85, 76, 23, 15, 13),
        "PtrNet": (65, 48, 25, 14, 12),
        "NRAM": (61, 59, 21, 13, 11),
        "ESBN": (90, 86, 22, 11, 10),
        "PANM": (92, 89, 45, 22, 16),
    },
    "priority_sort": {
        "LSTM": (87, 83, 28, 16, 12),
        "Location Attention": (69, 66, 45, 27, 20),
        "Content Attention": (97, 96, 57, 30, 22),
        "Hybrid Attention": (85, 81, 33, 25, 23),
        "Transformer": (71, 48, 21, 16, 14),
        "NTM": (96, 95, 34, 12, 10),
        "DNC": (95, 92, 29, 11, 10),
        "Neural Stack": (92, 79, 32, 13, 11),
        "PtrNet": (77, 71, 43, 24, 19),
        "NRAM": (82, 80, 51, 25, 13),
        "ESBN": (26, 24, 13, 11, 10),
        "PANM": (97, 97, 86, 32, 27),
    },
    "id_sort": {
        "LSTM": (48, 40, 20, 13, 11),
        "Location Attention": (34, 32, 20, 14, 12),
        "Content Attention": (98, 56, 28, 16, 12),
        "Hybrid Attention": (32, 31, 19, 14, 12),
        "Transformer": (34, 29, 19, 15, 12),
        "NTM": (40, 32, 16, 12, 11),
        "DNC": (35, 36, 23, 17, 13),
        "Neural Stack": (33, 32, 19, 13, 12),
        "PtrNet": (27, 24, 15, 12, 11),
        "NRAM": (31, 29, 14, 12, 11),
        "ESBN": (47, 42, 18, 12, 10),
        "PANM": (100, 100, 56, 25, 15),
    },
}


def algorithmic(task: str) -> dict[str, tuple[int, ...]]:
    """``task``'s table of Tables 13-18 as printed: ``{row: (L, L+1, 2(L+1), 4(L+1), 8(L+1))}``, token accuracy
    (%), the mean over 5 runs, one row per model (``ALGORITHMIC_ROWS``: the 11 baselines, then ``"PANM"``)."""
    return dict(_TABLES_13_18[task])


def algorithmic_source(task: str) -> Source:
    """The table of ``task`` among Tables 13-18."""
    table, heading = _ALGORITHMIC_TABLES[task]
    return Source(LE_2024, table, f"{heading}, every row, mean over 5 runs (the standard deviations left out)")


def other_max(task: str) -> tuple[int, ...]:
    """Recomputed, not printed: the best of the 11 baselines of ``task``'s table at each of the five lengths (the
    paper's "Other Max"; Table 3 prints only its mean)."""
    rows = [values for row, values in _TABLES_13_18[task].items() if row != "PANM"]
    return tuple(max(column) for column in zip(*rows, strict=True))


def algorithmic_references(task: str) -> dict[str, tuple[int, ...]]:
    """What a run of ours on ``task`` is compared with, by model: PANM's row of the task's table; on Copy also
    the rows of the LSTM, NTM, DNC and Neural Stack (``ALGORITHMIC_MODELS``); on the other tasks, whose tables
    ours do not all run, the best baseline at each length (``other_max``) under ``"best other"``."""
    table = _TABLES_13_18[task]
    if task == "copy":
        return {model: table[row] for model, row in ALGORITHMIC_MODELS.items()}
    return {"panm": table["PANM"], "best other": other_max(task)}


# --- Le et al. 2024, Tables 3 and 2: the summaries ---------------------------------------------------------

# Table 3 as printed: (Other Max, PANM), the mean accuracy (%) over the five test lengths of each task.
_TABLE_3: dict[str, tuple[float, float]] = {
    "copy": (60.2, 74.8),
    "reverse": (63.6, 73.6),
    "mix": (64.0, 81.2),
    "dynamic_recall": (47.6, 52.8),
    "priority_sort": (60.6, 67.8),
    "id_sort": (42.1, 59.2),
}
TABLE3_SOURCE = Source(LE_2024, "Table 3", "Other Max and PANM (Ours), columns Copy to ID Sort")


def table3() -> dict[str, tuple[float, float]]:
    """Table 3 as printed: ``{task: (Other Max, PANM)}``, the mean accuracy (%) over the five test lengths, the
    tasks in the order of ``ALGORITHMIC_TASKS``."""
    return dict(_TABLE_3)


class SummaryRow(NamedTuple):
    """A row of Table 2: the best baseline's number, which baseline it is (as printed in brackets), PANM's."""

    best: float
    baseline: str
    panm: float


# Table 2 ("Average performance summary with key metrics") as printed, the rows compared with here.
_TABLE_2 = {
    "Algorithmic Reasoning": SummaryRow(56.3, "Other Max", 68.2),  # token match (%)
    "Dyck Language Recognition": SummaryRow(28.2, "SRNN", 70.0),  # sequence match (%)
}
TABLE2_SOURCE = Source(LE_2024, "Table 2", "rows Algorithmic Reasoning and Dyck Language Recognition")


def table2(task: str) -> SummaryRow:
    """Table 2's row of ``task`` as printed: ``"Algorithmic Reasoning"`` (token match %, the best baseline being
    Other Max) or ``"Dyck Language Recognition"`` (sequence match %, SRNN)."""
    return _TABLE_2[task]


DYCK_SOURCE = Source(LE_2024, "Table 2", "Dyck Language Recognition, Best Baseline (SRNN) and PANM (Ours)")


def dyck() -> dict[str, float]:
    """Table 2's Dyck row under this package's models: ``{"srnn": best baseline, "panm_srnn": PANM}``, sequence
    match (%). The only Dyck numbers the paper prints: Fig. 3a's per-length values are drawn, not stated."""
    row = _TABLE_2["Dyck Language Recognition"]
    return {"srnn": row.best, "panm_srnn": row.panm}


# Appendix D.6 ("Generalization to Shorter Sequence", Fig. 7 left): Mix trained on lengths 20-30 and tested on
# length 10; the text gives PANM's margin over Location Attention there, "nearly 14%", and neither model's
# accuracy (Fig. 7 draws them as curves).
LONG_TO_SHORT_MARGIN = 14
LONG_TO_SHORT_SOURCE = Source(
    LE_2024, "Appendix D.6 (Fig. 7, left)", "PANM's margin over Location Attention at length 10: 'nearly 14%'"
)


# --- Delétang et al. 2023, Table 2: the Chomsky-hierarchy tasks --------------------------------------------

# Table 2's columns, in its order: (its heading, the model here).
CHOMSKY_MODELS = (
    ("RNN", "rnn"),
    ("Stack-RNN", "stack_rnn"),
    ("Tape-RNN", "tape_rnn"),
    ("Transformer", "transformer_encoder"),
    ("LSTM", "single_lstm"),
)
CHOMSKY_LEVELS = {"regular": "R", "context_free": "DCF", "context_sensitive": "CS"}  # Table 2's level names
CHOMSKY_LENGTHS = (40, 500)  # the paper's protocol: training lengths 1..40, test lengths 41..500
CHOMSKY_SOURCE = Source(
    DELETANG_2023,
    "Table 2",
    f"token accuracy (%) averaged over the test lengths {CHOMSKY_LENGTHS[0] + 1}..{CHOMSKY_LENGTHS[1]}, of the "
    "best run; columns RNN, Stack-RNN, Tape-RNN, Transformer, LSTM",
)

# Table 2's cells known to this package, in this package's task names: the paper's "Modular Arithmetic (Simple)"
# (R) is ``modular_arithmetic`` and its "Modular Arithmetic" (DCF) ``modular_arithmetic_brackets``; the other
# tasks are the paper's names in snake case. Cycle navigation's Transformer cell is also given in the paper's
# text (appendix B.3.2: "a non-trivial generalization score (61.9% with baseline 20%)").
_CHOMSKY: dict[str, dict[str, float]] = {
    "modular_arithmetic": {
        "rnn": 100.0,
        "stack_rnn": 100.0,
        "tape_rnn": 100.0,
        "transformer_encoder": 24.2,
        "single_lstm": 100.0,
    },
    "parity_check": {
        "rnn": 100.0,
        "stack_rnn": 100.0,
        "tape_rnn": 100.0,
        "transformer_encoder": 52.0,
        "single_lstm": 100.0,
    },
    "cycle_navigation": {"transformer_encoder": 61.9},
    "stack_manipulation": {
        "rnn": 56.0,
        "stack_rnn": 100.0,
        "tape_rnn": 100.0,
        "transformer_encoder": 57.5,
        "single_lstm": 59.1,
    },
    "reverse_string": {
        "rnn": 62.0,
        "stack_rnn": 100.0,
        "tape_rnn": 100.0,
        "transformer_encoder": 62.3,
        "single_lstm": 60.9,
    },
    "duplicate_string": {
        "rnn": 50.3,
        "stack_rnn": 52.8,
        "tape_rnn": 100.0,
        "transformer_encoder": 52.8,
        "single_lstm": 57.6,
    },
    "odds_first": {"rnn": 51.0, "stack_rnn": 51.9, "tape_rnn": 100.0, "transformer_encoder": 52.8, "single_lstm": 55.6},
}


def chomsky(task: str) -> dict[str, float]:
    """Table 2's cells of ``task`` known to this package: ``{model: score}``, token accuracy (%) of the best of the
    paper's runs (10 seeds and 3 learning rates, 1,000,000 steps each; for the Transformer also the best of five
    positional encodings), the models of ``CHOMSKY_MODELS``. ``{}`` for a task none of whose cells is known."""
    return dict(_CHOMSKY.get(task, {}))


def chomsky_tasks() -> tuple[str, ...]:
    """The tasks with at least one cell of Table 2 known to this package."""
    return tuple(_CHOMSKY)


def chomsky_cell(task: str, run: str) -> float | None:
    """The published cell of ``task`` for the paper model that ``run`` names; a run label with model options
    (``stack_rnn-stack_size=512``) is its model's. ``None`` where the cell is not known here or the model is not
    one of the paper's (``panm``; the encoder-decoder ``lstm`` of older files, which is not the paper's LSTM)."""
    return _CHOMSKY.get(task, {}).get(run.split("-", 1)[0])


def chomsky_per_level(levels: dict[str, str]) -> list[dict[str, Any]]:
    """Recomputed: each paper model's mean published score per level over the tasks of ``levels`` (``{task:
    level}``, in order), one row ``{"level": level, model: mean}`` per level, where every one of that level's tasks
    has a published cell for the model (``""`` otherwise: a mean over part of a level would not be the paper's)."""
    out = []
    for level in dict.fromkeys(levels.values()):
        level_tasks = [t for t, lv in levels.items() if lv == level]
        row: dict[str, Any] = {"level": level}
        for _, model in CHOMSKY_MODELS:
            known = [_CHOMSKY[t][model] for t in level_tasks if model in _CHOMSKY.get(t, {})]
            row[model] = round(sum(known) / len(known), 1) if len(known) == len(level_tasks) else ""
        out.append(row)
    return out


def chomsky_table_two(rows: list[dict[str, Any]], levels: dict[str, str]) -> list[dict[str, Any]]:
    """Table 2's layout over the tasks of ``levels`` (``{task: level}``, in order), ours beside the published
    cells: one row per task (``"level"``: Table 2's level name, ``"task"``), one column per paper model by its
    heading, ``"ours / published"`` in each cell (ours: the best seed of ``rows``, each ``{"task", "model",
    "score"}``, as the paper reports its best run; ``-``: not run here or not known), and a ``"PANM"`` column
    (ours only) where ``rows`` hold PANM runs."""
    best: dict[tuple[str, str], float] = {}
    for r in rows:
        best[r["task"], r["model"]] = max(best.get((r["task"], r["model"]), 0.0), r["score"])
    out = []
    for task, level in levels.items():
        row: dict[str, Any] = {"level": CHOMSKY_LEVELS[level], "task": task}
        for heading, model in CHOMSKY_MODELS:
            ours, theirs = best.get((task, model)), _CHOMSKY.get(task, {}).get(model)
            row[heading] = f"{'-' if ours is None else ours} / {'-' if theirs is None else theirs}"
        if any(m == "panm" for _, m in best):
            row["PANM"] = best.get((task, "panm"), "-")
        out.append(row)
    return out


# --- Le et al. 2024, Table 4 (SCAN) and Table 19 (Mathematics) ---------------------------------------------

SCAN_CUTOFFS = (22, 24, 25, 26, 27, 28, 30, 32, 33, 36, 40)  # Table 4's SCAN columns, the length cut-offs L
MATHEMATICS_MODULES = ("add_or_sub", "place_value")  # Table 19's columns (Table 4's "a.s" and "p.v")
# The rows of Tables 4 and 19 that this package's models run: the baselines by name; PANM (``panm_transformer``)
# by its encoder, ``PANM_ROWS``.
SEQ2SEQ_MODELS = {
    "universal_transformer_rpe": "U. TRM + RPE",
    "transformer_rpe": "TRM + RPE",
    "universal_transformer": "U. TRM",
    "transformer": "TRM",
}
# (task, PANM's encoder) -> its row: on SCAN the plain Transformer encoder (Table 4's PANM; the paper has no SCAN
# PANM on the relative one); on Mathematics Table 19's "PANM TRM base" and "PANM TRM + RPE base" (Table 4's PANM).
PANM_ROWS = {
    ("scan", "transformer"): "PANM",
    ("mathematics", "transformer"): "PANM TRM base",
    ("mathematics", "transformer_rpe"): "PANM TRM + RPE base",
}
PANM_DEFAULT_ENCODER = "transformer"  # panm_transformer's encoder where a run's label does not name one

ILLEGIBLE = None  # a cell of Table 4 that cannot be read reliably as printed
# Table 4, SCAN: exact match (%), the median of 5 runs, at the cut-offs of SCAN_CUTOFFS; the baselines' numbers
# are Csordás et al. 2021's. The Universal Transformer's row and three cells of the Transformer's cannot be read
# reliably in the printed table; the text says the Transformer "fails to learn in easy modes (33, 36, 40)".
_TABLE_4_SCAN: dict[str, tuple[float | None, ...]] = {
    "U. TRM + RPE": (20, 12, 71, 100, 100, 100, 100, 100, 100, 100, 100),
    "TRM + RPE": (20, 12, 31, 61, 100, 100, 100, 94, 100, 100, 100),
    "U. TRM": (ILLEGIBLE,) * 11,
    "TRM": (0, ILLEGIBLE, 19, 29, 30, 8, 24, 36, 0, ILLEGIBLE, ILLEGIBLE),
    "PANM": (22, 47, 100, 100, 100, 100, 100, 100, 100, 100, 100),
}
# Table 19, Mathematics: exact match (%; fractions in the paper), mean ± std of 5 runs. Its baseline rows are
# Csordás et al. 2021's numbers, as in Table 4; it adds PANM on the plain Transformer encoder.
_TABLE_19: dict[str, dict[str, Cell]] = {
    "U. TRM + RPE": {"add_or_sub": Cell(97, 1), "place_value": Cell(75, 10)},
    # place_value: training crashed in Csordás et al. 2021 (printed "-"); Le et al.'s rerun: 0 ± 0.
    "TRM + RPE": {"add_or_sub": Cell(91, 3), "place_value": Cell(0, 0, "rerun; crashed in Csordás et al. 2021")},
    "U. TRM": {"add_or_sub": Cell(94, 1), "place_value": Cell(20, 2)},
    "TRM": {"add_or_sub": Cell(89, 1), "place_value": Cell(12, 7)},
    "PANM TRM base": {"add_or_sub": Cell(91, 1), "place_value": Cell(15, 2)},
    "PANM TRM + RPE base": {"add_or_sub": Cell(97, 2), "place_value": Cell(86, 5)},
}
SCAN_SOURCE = Source(
    LE_2024,
    "Table 4",
    "SCAN (L cut-off) 22 to 40, exact match (%, median of 5 runs), every row; the baselines' numbers are "
    "Csordás et al. 2021's",
)
MATHEMATICS_SOURCE = Source(
    LE_2024,
    "Table 19",
    "add_or_sub and place_value, mean ± std accuracy over 5 runs (fractions, in % here), every row; the "
    "baselines' numbers are Csordás et al. 2021's, TRM + RPE on place_value Le et al.'s rerun",
)


def seq2seq_task(item: str) -> str:
    """``"scan-22"`` -> ``"scan"``; ``"add_or_sub"`` or ``"place_value"`` -> ``"mathematics"``."""
    return "scan" if item.startswith("scan-") else "mathematics"


def seq2seq(item: str) -> dict[str, Cell]:
    """Every published cell of ``item`` (a SCAN split ``"scan-<cut-off>"`` or a Mathematics module):
    ``{row: Cell}``, the rows as printed: Table 4 for SCAN (no std; ``Cell(None)`` where not legible), Table 19
    for Mathematics (mean ± std)."""
    if seq2seq_task(item) == "scan":
        column = SCAN_CUTOFFS.index(int(item.split("-", 1)[1]))
        return {row: Cell(values[column]) for row, values in _TABLE_4_SCAN.items()}
    return {row: cells[item] for row, cells in _TABLE_19.items()}


def seq2seq_source(item: str) -> Source:
    """The table of ``item``: Table 4 for a SCAN split, Table 19 for a Mathematics module."""
    return SCAN_SOURCE if seq2seq_task(item) == "scan" else MATHEMATICS_SOURCE


def seq2seq_row(item: str, model: str, encoder: str | None = None) -> str | None:
    """The row of Table 4 (SCAN) or Table 19 (Mathematics) that ``model`` runs on ``item``, PANM's by its
    ``encoder``; None where the paper has no such row (PANM on the relative encoder on SCAN, a model not in the
    tables)."""
    if model == "panm_transformer":
        return PANM_ROWS.get((seq2seq_task(item), encoder or PANM_DEFAULT_ENCODER))
    return SEQ2SEQ_MODELS.get(model)


def seq2seq_cell(item: str, model: str, encoder: str | None = None) -> Cell | None:
    """The published cell of ``model`` (PANM with ``encoder``) on ``item``; None where the paper has no such row."""
    row = seq2seq_row(item, model, encoder)
    return None if row is None else seq2seq(item)[row]


def seq2seq_run(run: str) -> tuple[str, str | None]:
    """A results table's model label -> ``(model, encoder)``: ``"panm_transformer (transformer_rpe encoder)"`` ->
    ``("panm_transformer", "transformer_rpe")``; a bare ``"panm_transformer"`` (files recorded before the runner
    named PANM's encoder, which ran its default) -> ``("panm_transformer", "transformer")``; a baseline ->
    ``(model, None)``."""
    model, _, rest = run.partition(" (")
    if model != "panm_transformer":
        return model, None
    return model, rest.removesuffix(" encoder)") if rest else PANM_DEFAULT_ENCODER


def seq2seq_published(item: str, run: str) -> Cell | None:
    """The published cell beside a results table's row of ``item`` whose model column reads ``run``
    (``seq2seq_run``); None where the paper has no such row."""
    return seq2seq_cell(item, *seq2seq_run(run))


# --- Grefenstette et al. 2015, Figure 2a and Table 3: the transduction tasks -------------------------------

# Every cell: (training coarse, training fine, testing coarse, testing fine), accuracy as a fraction.
TRANSDUCTION_COLUMNS = ("training coarse", "training fine", "testing coarse", "testing fine")
TRANSDUCTION_SOURCE = Source(GREFENSTETTE_2015, "Figure 2a", "Stack-LSTM, Queue-LSTM and DeQue-LSTM of each task")
TRANSDUCTION_LSTM_SOURCE = Source(GREFENSTETTE_2015, "Table 3 (appendix E)", "the LSTM of 1, 2, 4 and 8 layers")

# Figure 2a, the Stack-, Queue- and DeQue-LSTMs: {task: {model: cells}}.
_FIGURE_2A: dict[str, dict[str, tuple[float, float, float, float]]] = {
    "transduction_copy": {
        "stack_lstm": (0.89, 0.94, 0.00, 0.22),
        "queue_lstm": (1.00, 1.00, 1.00, 1.00),
        "deque_lstm": (1.00, 1.00, 1.00, 1.00),
    },
    "transduction_reversal": {
        "stack_lstm": (1.00, 1.00, 1.00, 1.00),
        "queue_lstm": (0.44, 0.61, 0.00, 0.01),
        "deque_lstm": (1.00, 1.00, 1.00, 1.00),
    },
    "bigram_flip": {
        "stack_lstm": (0.44, 0.90, 0.00, 0.48),
        "queue_lstm": (0.55, 0.94, 0.55, 0.98),
        "deque_lstm": (0.55, 0.94, 0.53, 0.98),
    },
    "svo_sov": {
        "stack_lstm": (1.00, 1.00, 1.00, 1.00),
        "queue_lstm": (1.00, 1.00, 1.00, 1.00),
        "deque_lstm": (1.00, 1.00, 1.00, 1.00),
    },
    "gender_conjugation": {
        "stack_lstm": (0.93, 0.97, 0.93, 0.97),
        "queue_lstm": (1.00, 1.00, 1.00, 1.00),
        "deque_lstm": (1.00, 1.00, 1.00, 1.00),
    },
}
# Table 3 (appendix E), the LSTMs of every depth: {task: {layers: cells}}.
_TABLE_3_LSTM: dict[str, dict[int, tuple[float, float, float, float]]] = {
    "transduction_copy": {
        1: (0.62, 0.87, 0.00, 0.38),
        2: (0.80, 0.95, 0.00, 0.47),
        4: (0.98, 0.98, 0.01, 0.50),
        8: (0.57, 0.83, 0.00, 0.31),
    },
    "transduction_reversal": {
        1: (0.78, 0.87, 0.01, 0.09),
        2: (0.91, 0.94, 0.02, 0.06),
        4: (0.93, 0.96, 0.03, 0.15),
        8: (0.95, 0.98, 0.04, 0.13),
    },
    "bigram_flip": {
        1: (0.53, 0.93, 0.01, 0.53),
        2: (0.54, 0.93, 0.02, 0.52),
        4: (0.52, 0.93, 0.01, 0.56),
        8: (0.52, 0.93, 0.01, 0.53),
    },
    "svo_sov": {
        1: (0.96, 0.98, 0.96, 0.99),
        2: (0.97, 0.99, 0.96, 0.99),
        4: (0.97, 0.99, 0.97, 0.99),
        8: (0.98, 0.99, 0.98, 0.99),
    },
    "gender_conjugation": {
        1: (0.97, 0.99, 0.97, 0.99),
        2: (0.98, 0.99, 0.98, 0.99),
        4: (0.98, 0.99, 0.98, 0.99),
        8: (0.98, 0.99, 0.99, 0.99),
    },
}
# Figure 2a's best deep LSTM of each task (selected by the paper on training perplexity): its depth, the row of
# Table 3 that Figure 2a repeats.
_BEST_LSTM_DEPTH = {
    "transduction_copy": 4,
    "transduction_reversal": 8,
    "bigram_flip": 2,
    "svo_sov": 8,
    "gender_conjugation": 8,
}


def transduction(task: str) -> dict[str, tuple[float, ...]]:
    """Figure 2a's memory models on ``task``: ``{model: (training coarse, training fine, testing coarse, testing
    fine)}`` (``TRANSDUCTION_COLUMNS``, fractions), for ``stack_lstm``, ``queue_lstm`` and ``deque_lstm``."""
    return dict(_FIGURE_2A[task])


def transduction_lstm(task: str) -> dict[int, tuple[float, ...]]:
    """Table 3's LSTMs on ``task``: ``{layers: (training coarse, training fine, testing coarse, testing fine)}``
    for 1, 2, 4 and 8 layers."""
    return dict(_TABLE_3_LSTM[task])


def best_lstm_depth(task: str) -> int:
    """The depth of Figure 2a's deep LSTM on ``task`` (the paper's best by training perplexity): the row of
    Table 3 that the figure shows."""
    return _BEST_LSTM_DEPTH[task]


# Every source above, for a reader looking for what this module holds.
SOURCES = (
    *(algorithmic_source(task) for task in ALGORITHMIC_TASKS),
    TABLE3_SOURCE,
    TABLE2_SOURCE,
    DYCK_SOURCE,
    LONG_TO_SHORT_SOURCE,
    CHOMSKY_SOURCE,
    SCAN_SOURCE,
    MATHEMATICS_SOURCE,
    TRANSDUCTION_SOURCE,
    TRANSDUCTION_LSTM_SOURCE,
)


# Our ``lstm`` run labels at the paper's LSTM depths (its Section 4's deep LSTM baselines: 1, 2, 4, 8 layers).
TRANSDUCTION_LSTM_DEPTHS = {"lstm": 1, "lstm2": 2, "lstm4": 4, "lstm8": 8}


def transduction_cells(task: str, model: str, deep_run: bool = False) -> dict[str, Any]:
    """The published cells beside a run of ``model`` on ``task`` (``published_*``).

    An LSTM row (``TRANSDUCTION_LSTM_DEPTHS``): Table 3's LSTM of its depth. ``lstm`` also carries, unless ``deep_run``
    (the best deep LSTM's depth is among the table's rows), Figure 2a's best deep LSTM as ``deep_lstm_*``
    (shown under it, published only). A memory model: Figure 2a.
    """
    keys = ("published_train_coarse", "published_train_fine", "published_coarse", "published_fine")
    if model in TRANSDUCTION_LSTM_DEPTHS:
        layers = TRANSDUCTION_LSTM_DEPTHS[model]
        cells = transduction_lstm(task)[layers]
        best = " (Figure 2a's best deep LSTM)" if layers == best_lstm_depth(task) else ""
        source = f"Table 3, {layers}-layer LSTM{best}"
    elif model in transduction(task):
        cells, source = transduction(task)[model], "Figure 2a"
    else:
        return {}
    out: dict[str, Any] = dict(zip(keys, cells, strict=True))
    out["published_source"] = source
    if model == "lstm" and not deep_run:
        best_layers = best_lstm_depth(task)
        out["deep_lstm_layers"] = best_layers
        keys = ("deep_lstm_train_coarse", "deep_lstm_train_fine", "deep_lstm_coarse", "deep_lstm_fine")
        out.update(zip(keys, transduction_lstm(task)[best_layers], strict=True))
    return out


def transduction_deep_run(task: str, models: list[str]) -> bool:
    """Whether ``models`` hold the LSTM of the depth Figure 2a gives as best on ``task``."""
    return any(TRANSDUCTION_LSTM_DEPTHS.get(m) == best_lstm_depth(task) for m in models)
