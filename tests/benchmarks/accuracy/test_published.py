"""benchmarks.accuracy.published: every published cell typed once, its source named, and the runners reading it."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from benchmarks.accuracy import published

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"
MODULE = BENCHMARKS / "accuracy" / "published.py"
PAPERS = (published.LE_2024, published.DELETANG_2023, published.GREFENSTETTE_2015)


def test_every_source_names_a_paper_with_its_year_and_title_and_a_table():
    assert len(published.SOURCES) == len(set(published.SOURCES)) == 15
    for source in published.SOURCES:
        assert source.paper in PAPERS, source
        assert source.table.startswith(("Table ", "Figure ", "Appendix ")), source
        assert source.row, source
        assert str(source) == f"{source.paper}, {source.table}, {source.row}"
    for paper in PAPERS:  # "authors year, title (venue)"
        assert re.fullmatch(r"[^\d]+ (20\d\d), [A-Z][^()]+ \([A-Za-z]+( 20\d\d)?\)", paper), paper
    assert [published.algorithmic_source(t).table for t in published.ALGORITHMIC_TASKS] == [
        f"Table {n}" for n in range(13, 19)
    ]
    assert published.seq2seq_source("scan-22").table == "Table 4"
    assert published.seq2seq_source("place_value").table == "Table 19"


def _is_number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool)


def _numeric_tuples(tree: ast.AST) -> list[str]:
    """The text of every literal tuple of two or more numbers (a row of a table) in ``tree``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple) and len(node.elts) >= 2 and all(map(_is_number, node.elts)):
            out.append(", ".join(ast.unparse(e) for e in node.elts))
    return out


def _keyed_cells(source: str) -> list[str]:
    """The text of every cell given by name, ``"model": 24.2``, and of every call holding numbers,
    ``Cell(97``, in ``source``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            out += [
                f"{ast.get_source_segment(source, k)}: {ast.get_source_segment(source, v)}"
                for k, v in zip(node.keys, node.values)
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and _is_number(v)
            ]
        elif isinstance(node, ast.Call) and node.args and _is_number(node.args[0]):
            out.append(f"{ast.unparse(node.func)}({ast.unparse(node.args[0])}")
    return out


def test_each_row_of_cells_is_typed_in_this_module_alone():
    # Table 4's columns and the Chomsky protocol's lengths: settings of the papers, not cells
    settings = {", ".join(map(str, published.SCAN_CUTOFFS)), ", ".join(map(str, published.CHOMSKY_LENGTHS))}
    rows = [row for row in _numeric_tuples(ast.parse(MODULE.read_text())) if row not in settings]
    assert len(rows) == 72 + 6 + 3 + 35  # Tables 13-18, Table 3, SCAN's legible rows, transduction
    cells = _keyed_cells(MODULE.read_text())
    assert len(cells) > 40  # Delétang et al.'s cells, Table 19's, Table 2's rows, ...
    for task in ("Algorithmic Reasoning", "Dyck Language Recognition"):  # Table 2's numbers, however written
        cells += [str(published.table2(task).best), str(published.table2(task).panm)]
    others = [p for p in BENCHMARKS.rglob("*.py") if p != MODULE]
    for path in others:
        text = path.read_text()
        typed = [cell for cell in rows + cells if cell in text]
        assert not typed, f"{path.relative_to(BENCHMARKS.parent)} types published cells: {typed[:3]}"
    copy_row = "100, 100, 84, 52, 36"  # Le et al. 2024, Table 13, PANM
    hits = [(p, line) for p in BENCHMARKS.rglob("*.py") for line in p.read_text().splitlines() if copy_row in line]
    assert [p for p, _ in hits] == [MODULE]


def test_the_algorithmic_tables_have_every_model_at_five_lengths():
    assert published.ALGORITHMIC_ROWS[-1] == "PANM" and len(published.ALGORITHMIC_ROWS) == 12
    for task in published.ALGORITHMIC_TASKS:
        table = published.algorithmic(task)
        assert tuple(table) == published.ALGORITHMIC_ROWS
        assert all(len(row) == len(published.ALGORITHMIC_COLUMNS) == 5 for row in table.values())
        assert all(0 <= v <= 100 for row in table.values() for v in row)
        assert published.other_max(task) == tuple(max(c) for c in zip(*list(table.values())[:-1]))
    assert published.algorithmic("copy")["PANM"] == (100, 100, 84, 52, 36)
    assert set(published.ALGORITHMIC_MODELS.values()) <= set(published.ALGORITHMIC_ROWS)
    # a caller's change to what it gets stays its own
    published.algorithmic("copy")["PANM"] = (0, 0, 0, 0, 0)
    assert published.algorithmic("copy")["PANM"] == (100, 100, 84, 52, 36)


def test_the_summaries_are_kept_as_printed_apart_from_tables_13_18():
    assert tuple(published.table3()) == published.ALGORITHMIC_TASKS
    assert published.table3()["copy"] == (60.2, 74.8)  # printed; Table 13 gives a PANM mean of 74.4
    assert sum(published.algorithmic("copy")["PANM"]) / 5 == pytest.approx(74.4)
    assert published.table2("Algorithmic Reasoning") == (56.3, "Other Max", 68.2)
    assert published.dyck() == {"srnn": 28.2, "panm_srnn": 70.0}
    assert published.table2("Dyck Language Recognition").baseline == "SRNN"
    assert published.LONG_TO_SHORT_MARGIN == 14


def test_the_chomsky_cells_name_the_papers_columns():
    models = {m for _, m in published.CHOMSKY_MODELS}
    for task in published.chomsky_tasks():
        cells = published.chomsky(task)
        assert cells and set(cells) <= models and all(0 <= v <= 100 for v in cells.values())
    assert published.chomsky("solve_equation") == {}  # no cell of it known here
    assert published.chomsky_cell("parity_check", "transformer_encoder-positional=alibi") == 52.0


def test_the_seq2seq_tables_hold_a_cell_of_every_row_at_every_column():
    scan_rows = {"U. TRM + RPE", "TRM + RPE", "U. TRM", "TRM", "PANM"}
    for cutoff in published.SCAN_CUTOFFS:
        cells = published.seq2seq(f"scan-{cutoff}")
        assert set(cells) == scan_rows
        assert all(c.std is None and (c.value is None or 0 <= c.value <= 100) for c in cells.values())
    for module in published.MATHEMATICS_MODULES:
        cells = published.seq2seq(module)
        assert set(cells) == scan_rows - {"PANM"} | {"PANM TRM base", "PANM TRM + RPE base"}
        assert all(c.value is not None and c.std is not None for c in cells.values())
    assert published.seq2seq("scan-40")["U. TRM"].text() == "—"  # not legible as printed
    assert published.seq2seq("place_value")["TRM + RPE"].text() == "0 ± 0 (rerun; crashed in Csordás et al. 2021)"


@pytest.mark.parametrize(
    "item,run,row,text",
    [
        ("add_or_sub", "panm_transformer (transformer_rpe encoder)", "PANM TRM + RPE base", "97 ± 2"),
        ("place_value", "panm_transformer (transformer encoder)", "PANM TRM base", "15 ± 2"),
        # a file recorded before the runner named PANM's encoder ran panm_transformer's default, the plain one
        ("add_or_sub", "panm_transformer", "PANM TRM base", "91 ± 1"),
        ("place_value", "panm_transformer", "PANM TRM base", "15 ± 2"),
        ("place_value", "transformer_rpe", "TRM + RPE", "0 ± 0 (rerun; crashed in Csordás et al. 2021)"),
        ("add_or_sub", "transformer_rpe", "TRM + RPE", "91 ± 3"),
        ("scan-22", "panm_transformer", "PANM", "22"),
        ("scan-22", "panm_transformer (transformer encoder)", "PANM", "22"),
        ("scan-22", "panm_transformer (transformer_rpe encoder)", None, None),  # no such row in the paper
        ("scan-25", "universal_transformer_rpe", "U. TRM + RPE", "71"),
    ],
)
def test_a_results_tables_model_label_reads_the_row_that_ran(item, run, row, text):
    model, encoder = published.seq2seq_run(run)
    assert published.seq2seq_row(item, model, encoder) == row
    cell = published.seq2seq_published(item, run)
    assert (cell.text() if cell else None) == text


def test_the_recorded_seq2seq_files_that_name_their_row_agree_with_the_module():
    checked = 0
    for path in sorted((BENCHMARKS / "results").glob("*/seq2seq_*.json")):
        for r in json.loads(path.read_text())["rows"]:
            if "paper row" not in r:
                continue
            cell = published.seq2seq_published(r["task"], r["model"])
            assert r["published"] == ("" if cell is None else cell.text()), (path.name, r["task"], r["model"])
            assert r["paper row"] == published.seq2seq_row(r["task"], *published.seq2seq_run(r["model"])) or (
                r["paper row"] == "not in the paper" and cell is None
            )
            checked += 1
    assert checked


def test_the_transduction_cells_are_fractions_of_four_columns():
    for task in ("transduction_copy", "transduction_reversal", "bigram_flip", "svo_sov", "gender_conjugation"):
        memory, lstm = published.transduction(task), published.transduction_lstm(task)
        assert set(memory) == {"stack_lstm", "queue_lstm", "deque_lstm"} and set(lstm) == {1, 2, 4, 8}
        cells = [*memory.values(), *lstm.values()]
        assert all(len(c) == len(published.TRANSDUCTION_COLUMNS) == 4 and all(0 <= v <= 1 for v in c) for c in cells)
        assert published.best_lstm_depth(task) in lstm


def test_the_runners_compare_with_the_modules_cells():
    from benchmarks.accuracy import ablation, authors_panm, chomsky, reproduce, summary_tables

    for task in published.ALGORITHMIC_TASKS:
        panm = published.algorithmic(task)["PANM"]
        assert reproduce.PUBLISHED[task]["panm"] is panm
        if task != "copy":
            assert reproduce.PUBLISHED[task]["best other"] == published.other_max(task)
    assert all(authors_panm.PUBLISHED[t] is published.algorithmic(t)["PANM"] for t in ("copy", "reverse"))
    assert reproduce.LONG_TO_SHORT["margin"] == published.LONG_TO_SHORT_MARGIN
    assert reproduce.TABLES["algorithmic"] == summary_tables.TASKS == published.ALGORITHMIC_TASKS
    assert summary_tables.PRINTED_TABLE2_ALGORITHMIC == (56.3, 68.2)
    assert chomsky.PAPER_MODELS is published.CHOMSKY_MODELS
    cells = published.transduction_cells("bigram_flip", "queue_lstm")
    assert (cells["published_coarse"], cells["published_fine"]) == published.transduction("bigram_flip")["queue_lstm"][
        2:
    ]
    rows = ablation.summarize("copy", ["default"], {"default": [_run()]})
    reference = next(r for r in rows if r["variant"].startswith("published"))
    assert [reference[m] for m in reproduce.MODES] == ["100", "100", "84", "52", "36"]


def _run() -> dict:
    modes = [{"mode": m, "token_accuracy": 1.0} for m in ("L", "L+1", "2L+1", "4L+1", "8L+1")]
    config = {"select_mode": "L+1"}
    return {"metric": "token_accuracy", "step": 1, "steps_trained": 1, "modes": modes, "config": config}
