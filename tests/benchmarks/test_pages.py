"""The results pages (benchmarks/pages/): every page renders from the recorded files, the committed README summary
is its rendering, and the arithmetic behind their cells."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

from benchmarks.pages import ablations, algorithmic, build, chomsky, options, records, tables

MODES = records.MODES


def test_every_page_renders_from_the_records_and_the_readme_summary_is_its_rendering():
    files, block = build.render()
    pages = {"index.md", "algorithmic.md", "ablations.md", "authors_code.md", "diagnosis.md", "chomsky.md"}
    assert pages | {"seq2seq.md", "transduction.md", "m10ae.md", "dyck.md"} <= set(files)
    assert any(name.startswith("img/") and name.endswith(".png") for name in files)
    assert build.readme_differences(block) == []


def test_a_hand_edit_of_the_readme_summary_fails_the_check(tmp_path):
    files, block = build.render()
    readme = tmp_path / "README.md"
    shutil.copy(records.README, readme)
    assert build.readme_differences(block, readme) == []
    readme.write_text(readme.read_text().replace("| Copy | 0 / 0 / -6.1", "| Copy | 0 / 0 / -4.1", 1))
    assert build.readme_differences(block, readme) == [f"{readme}: the results summary differs from its rendering"]
    readme.write_text("# no summary here\n")
    assert build.readme_differences(block, readme)[-1].startswith("README.md: expected the markers")


def test_out_writes_every_page_and_removes_what_is_no_longer_rendered(tmp_path):
    files, _ = build.render()
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "stale.png").write_bytes(b"")
    build.write(files, tmp_path)
    written = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert written == set(files)
    assert (tmp_path / "algorithmic.md").read_bytes() == files["algorithmic.md"]


def test_mean_std_and_ours_minus_published():
    assert tables.mean_std([80.0, 90.0]) == pytest.approx((85.0, 7.0710678))
    assert tables.mean_std([33.0]) == (33.0, 0.0)
    assert tables.mean_pm_std([80.0, 90.0]) == "85.0 ± 7.1"
    assert tables.mean_pm_std([33.0]) == "33.0"
    assert tables.leading_number("77.9 ± 2.0") == 77.9 and tables.leading_number("-6.1") == -6.1
    assert tables.leading_number("") is None and tables.leading_number(float("nan")) is None
    assert tables.difference(77.9, 84.0) == "-6.1" and tables.difference(100.0, 100.0) == "+0.0"
    assert tables.difference(None, 84.0) == ""
    assert tables.steps_range("4251,3801,3951") == "3,801-4,251" and tables.steps_range("50000,50000") == "50,000"


def _fabricated(tmp_path: Path) -> dict[str, records.Record]:
    """A results folder with one reproduce file and one ablation file, numbers chosen by hand."""
    folder = tmp_path / "results" / "cpu-2cores"
    folder.mkdir(parents=True)
    published = {"L": "100", "L+1": "100", "2L+1": "84", "4L+1": "52", "8L+1": "36"}
    reproduce = {
        "name": "reproduce_copy_quick_opt-5d5a9b_8m",
        "title": "copy",
        "command": "python -m benchmarks.accuracy.reproduce --task copy --models panm --quick --minutes 8 --name 8m",
        "settings": {
            "task": "copy",
            "models": ["panm"],
            "protocol": "quick",
            "minutes": {"panm": 8.0},
            "select": "L+1",
            "seeds": [0, 1],
            "model_options": {"panm": {"distractors": 16, "distractor_sampling": "neighbours", "score": "scaled_dot", "snap_pointers": "always"}},
            "name": "8m",
        },
        "environment": {"device": "cpu", "commit": "abc1234", "date": "2026-11-28T12:00:00+00:00"},
        "rows": [
            {"model": "panm", "row": "ours", "seeds": 2, "steps": "900,1000", "L": "100.0 ± 0.0", "L+1": "100.0 ± 0.0",
             "2L+1": "77.9 ± 2.0", "4L+1": "46.0 ± 0.4", "8L+1": "32.9 ± 0.3"},
            {"model": "panm", "row": "published (panm)", **published},
        ],
        "notes": "",
    }  # fmt: skip
    ablation = {
        "name": "ablation_panm_copy",
        "title": "PANM ablations",
        "command": "python -m benchmarks.ablation --tasks copy --seeds 0,1 --variant default",
        "environment": {"device": "cpu", "commit": "abc1234", "date": "2026-11-28T13:00:00+00:00"},
        "rows": [
            {"task": "copy", "variant": "default", "seeds": 2, "steps": "3000,3000", "best_step": "2000,3000",
             "per_seed": {"L": [100.0, 100.0], "L+1": [100.0, 100.0], "2L+1": [80.0, 90.0], "4L+1": [50.0, 50.0],
                          "8L+1": [30.0, 31.0]}},
            {"task": "copy", "variant": "published (Le et al. 2024)", **published},
        ],
        "notes": "",
    }  # fmt: skip
    (folder / "reproduce_copy_quick_opt-5d5a9b_8m.json").write_text(json.dumps(reproduce))
    (folder / "ablation_panm_copy.json").write_text(json.dumps(ablation))
    return records.load(tmp_path / "results")


def test_an_algorithmic_table_puts_the_published_row_and_each_cells_difference_beside_ours(tmp_path):
    record = _fabricated(tmp_path)["cpu-2cores/reproduce_copy_quick_opt-5d5a9b_8m"]
    text = "\n".join(algorithmic.algorithmic_table("copy", [record], "Q"))
    assert "| | **published PANM** |" in text.replace("|  |", "| |")
    ours = next(line for line in text.splitlines() if line.startswith("| Q1 "))
    assert "the options of ours" in ours and "| 8 min | 2 | 900-1,000 |" in ours
    assert "| 77.9 ± 2.0 (-6.1) | 46.0 ± 0.4 (-6.0) | 32.9 ± 0.3 (-3.1) |" in ours
    # Its file, machine, commit, date, and the command at today's module path.
    assert "`benchmarks/results/cpu-2cores/reproduce_copy_quick_opt-5d5a9b_8m.json`: CPU, 2026-11-28" in text
    assert "`python -m benchmarks.accuracy.reproduce --task copy" in text


def test_an_ablation_table_computes_mean_std_and_difference_from_the_seeds(tmp_path):
    record = _fabricated(tmp_path)["cpu-2cores/ablation_panm_copy"]
    text = "\n".join(ablations.ablation_tables(record))
    assert (
        "| none | 2 | 3,000 | 100.0 ± 0.0 (+0.0) | 100.0 ± 0.0 (+0.0) | 85.0 ± 7.1 (+1.0) | 50.0 ± 0.0 (-2.0) | 30.5 ± 0.7 (-5.5) |"
        in text
    )
    assert "|  | 1 | 3,000 | 3,000 | 100.00 | 100.00 | 90.00 | 50.00 | 31.00 |" in text  # seed 1 alone


def _label(row: dict) -> str:
    return str(row.get("row", row.get("variant", "")))


def test_the_recorded_files_agree_with_the_arithmetic():
    """The pages show a file's own aggregates and differences (computed from unrounded numbers); the arithmetic,
    used where a file records none, gives the same to the last digit's rounding on every recorded file."""
    checked = 0
    for record in records.load().values():
        rows = record.rows
        for row in rows:  # mean ± std over the per-seed numbers (recorded to two decimals)
            if isinstance(row.get("per_seed"), dict):
                for m in MODES if "2L+1" in row["per_seed"] else records.K_MODES:  # a figure's: k(L+1)
                    computed, recorded = tables.mean_std(row["per_seed"][m]), re.findall(r"[\d.]+", row[m])
                    assert abs(computed[0] - float(recorded[0])) <= 0.05 + 1e-9, (record.key, m)
                    assert abs(computed[1] - float(recorded[1])) <= 0.1 + 1e-9, (record.key, m)
                    checked += 1
        published = {(r.get("task"), r.get("model")): r for r in rows if _label(r).startswith("published")}
        for row in rows:  # every recorded ours - published
            if not _label(row).endswith(" - published"):
                continue
            base = _label(row).removesuffix(" - published")  # "mean": the authors' code's "mean ± std (3 seeds)"
            ours = next(
                r
                for r in rows
                if (_label(r).startswith(base + " ±") if base in ("mean", "final weights, mean") else _label(r) == base)
                and (r.get("task"), r.get("model")) == (row.get("task"), row.get("model"))
            )
            for m in MODES if "2L+1" in row else records.K_MODES:  # a reading's columns: test_lengths=k(L+1)
                mean = tables.ours_cell(ours, m)[1]
                computed = tables.difference(
                    mean, tables.leading_number(published[row.get("task"), row.get("model")][m])
                )
                assert abs(float(computed) - float(row[m])) <= 0.1 + 1e-9, (record.key, _label(row), m)
                checked += 1
        for row in rows:  # the Chomsky and sequence-to-sequence tables' own differences
            ours, recorded = (
                row.get("score", row.get("exact_match")),
                row.get("difference", row.get("ours - published")),
            )
            if recorded not in (None, ""):
                computed = tables.difference(tables.leading_number(ours), tables.leading_number(row["published"]))
                assert abs(float(computed) - float(recorded)) <= 0.1 + 1e-9, record.key
                checked += 1
    assert checked > 900


def test_the_chomsky_page_takes_the_published_column_from_the_code_not_the_file(tmp_path):
    """A file keeps the published cells known when it was written; the page shows the table the code holds now."""
    row = {"level": "context_free", "steps": 500, "selected_step": 500, "score": 54.7}
    record = records.Record(
        "cpu-2cores",
        "chomsky_fabricated",
        {
            "command": "python -m benchmarks.accuracy.chomsky --sampled",
            "environment": {"device": "cpu", "commit": "abc1234", "date": "2026-11-28T12:00:00+00:00"},
            "rows": [
                {**row, "task": "reverse_string", "model": "rnn", "published": "", "difference": ""},
                {**row, "task": "reverse_string", "model": "lstm", "published": 60.9, "difference": -6.2},
                {**row, "task": "reverse_string", "model": "stack_rnn", "published": 100.0, "difference": -45.26},
            ],
        },
    )
    page = chomsky.chomsky_page({record.key: record}, tmp_path, records.Findings(tmp_path / "none.md"), {})
    assert "| reverse_string | context_free | rnn | 500 | 500 | 54.7 | 62.0 | -7.3 |" in page  # known since
    assert "| reverse_string | context_free | lstm | 500 | 500 | 54.7 |  |  |" in page  # not the paper's LSTM
    assert "| reverse_string | context_free | stack_rnn | 500 | 500 | 54.7 | 100.0 | -45.3 |" in page  # recorded


def test_the_chomsky_page_puts_the_files_of_one_budget_together_as_table_2(tmp_path):
    """Files of the sampled sweep at one step budget make one Table 2: the latest file's cell where two ran it,
    no run with model options or of another sweep, per-level means only over a level the model ran whole."""

    def record(stem, date, command, rows):
        env = {"device": "cpu", "commit": "abc1234", "date": f"2026-11-{date}T12:00:00+00:00"}
        return records.Record("cpu-2cores", stem, {"environment": env, "command": command, "rows": rows})

    def row(task, level, model, score, fit=""):
        return {
            "task": task,
            "level": level,
            "model": model,
            "steps": 500,
            "selected_step": 500,
            "score": score,
            "fit_step": fit,
            "published": "",
            "difference": "",
        }

    sampled = "python -m benchmarks.accuracy.chomsky --steps 500 --sampled --name x"
    older = record(
        "chomsky_a",
        20,
        sampled,
        [
            row("parity_check", "regular", "rnn", 49.6),
            row("reverse_string", "context_free", "rnn", 54.7),
            row("reverse_string", "context_free", "panm", 30.0),
        ],
    )
    newer = record(
        "chomsky_b",
        21,
        sampled,
        [
            row("reverse_string", "context_free", "panm", 64.7, fit=250),  # replaces the older file's cell
            row("reverse_string", "context_free", "stack_rnn-stack_size=512", 99.0),  # options: not the paper's model
        ],
    )
    every_length = record(
        "chomsky_c",
        22,
        "python -m benchmarks.accuracy.chomsky --steps 500 --name y",
        [
            row("parity_check", "regular", "panm", 77.0),  # another sweep
        ],
    )
    files = [older, newer, every_length]
    findings = records.Findings(tmp_path / "none.md")
    lines = "\n".join(chomsky.chomsky_budget_tables(files, findings))
    assert "## Table 2 at 500 steps (CPU): 2 files together" in lines
    assert "| R | parity_check | 49.6 / 100.0 | - / 100.0 | - / 100.0 | - / 52.0 | - / 100.0 | - |" in lines
    assert "| DCF | reverse_string | 54.7 / 62.0 | - / 100.0 | - / 100.0 | - / 62.3 | - / 60.9 | 64.7 |" in lines
    assert "| R (1 task) | 49.6 / 100.0 | - / 100.0 | - / 100.0 | - / 52.0 | - / 100.0 | - |" in lines
    assert "| PANM | 1 of 1 | reverse_string (250) |" in lines and "| RNN | 0 of 2 | none |" in lines
    assert "77.0" not in lines and "99.0" not in lines
    assert "From `chomsky_a`, `chomsky_b`" in lines
    assert chomsky.chomsky_budget_tables([older, every_length], findings) == []  # one file alone: its own table


def test_findings_that_no_table_takes_are_refused(tmp_path):
    (tmp_path / "page.md").write_text("<!-- a comment -->\n\n## intro\n\nSome prose.\n\n## gone\n\nNo table.\n")
    findings = records.Findings(tmp_path / "page.md")
    assert findings.take("intro") == ["Some prose.", ""] and findings.take("absent") == []
    with pytest.raises(SystemExit, match=re.escape("sections that no table takes: ['gone']")):
        findings.finish()


def test_every_rendered_command_names_a_module_of_todays_layout():
    files, _ = build.render()
    modules = set()
    for name, data in files.items():
        if name.endswith(".md"):
            modules |= set(re.findall(r"python -m (benchmarks(?:\.\w+)+)", data.decode()))
    assert "benchmarks.accuracy.reproduce" in modules
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    assert not missing, f"commands on the pages name modules that do not exist: {missing}"


def _results(tmp_path: Path, record: dict) -> Path:
    folder = tmp_path / "results" / "cpu-2cores"
    folder.mkdir(parents=True)
    (folder / "reproduce_copy_quick_broken.json").write_text(json.dumps(record))
    return tmp_path / "results"


def test_a_broken_record_stops_the_rendering_naming_its_file_and_field(tmp_path, capsys):
    good = json.loads((records.RESULTS / "cpu-2cores" / "reproduce_copy_quick_8m.json").read_text())
    files, _ = build.render(_results(tmp_path / "good", good), tmp_path)  # no prose
    assert "algorithmic.md" in files

    broken = json.loads(json.dumps(good))
    del broken["rows"][0]["model"]
    with pytest.raises(records.RecordError, match=r"reproduce_copy_quick_broken\.json: .* lacks the field 'model'"):
        build.render(_results(tmp_path / "broken", broken), tmp_path)

    folder = _results(tmp_path / "nan", good)
    (folder / "cpu-2cores" / "reproduce_copy_quick_broken.json").write_text('{"rows": [{"L": NaN}]}')
    with pytest.raises(records.RecordError, match=r"reproduce_copy_quick_broken\.json: holds NaN"):
        records.load(folder)
    (folder / "cpu-2cores" / "reproduce_copy_quick_broken.json").write_text('{"rows": 3}')
    with pytest.raises(records.RecordError, match="field 'rows': expected a list of objects, got int"):
        records.load(folder)


def test_option_sets_are_named_where_the_tables_name_them():
    assert options.describe_options(dict(options.OURS)) == "the options of ours"
    assert options.describe_options({}) == "none" and options.describe_options({}, "2L+1") == "selected on 2L+1"
    without = {k: v for k, v in options.AUTHORS.items() if k != "eq3_addresses"}
    assert options.describe_options(without, "2L+1") == (
        "every choice of the authors' code that is an option here, without `eq3_addresses=authors_view`, "
        "selected on 2L+1"
    )
    assert options.describe_options({"score": "scaled_dot"}) == "`score=scaled_dot`"


def test_check_and_out_together_are_refused_in_one_line(capsys):
    with pytest.raises(SystemExit, match="--check: compares README.md's summary only; expected no --out"):
        build.main(["--check", "--out", "x"])


def test_a_file_at_other_training_or_test_lengths_gets_its_own_columns_not_the_five_modes():
    settings = {
        "task": "mix",
        "protocol": "quick",
        "steps": 300,
        "minutes": {"panm": None},
        "select": "L+1",
        "model_options": {"task": {"min_train_length": 20, "max_train_length": 30, "test_lengths": "10,61"}},
    }
    rows = [
        {
            "model": "panm",
            "row": "ours",
            "selected_on": "L+1",
            "seeds": 3,
            "10": "60.0 ± 1.0",
            "L": "99.0 ± 0.5",
            "L+1": "90.0 ± 2.0",
            "61": "30.0 ± 3.0",
            "curves": [],
        },
        {"model": "panm", "row": "PANM - Location Attention, ours", "10": "+20.0"},
    ]
    record = records.Record(
        "cpu-2cores", "reproduce_mix_quick_300steps_opt-abcdef_x", {"settings": settings, "rows": rows}
    )
    assert algorithmic.other_lengths(record)
    text = "\n".join(algorithmic.lengths_table([record]))
    assert "| run | model | training lengths | selected on | budget | seeds | 10 | L (30) | L+1 (31) | 61 |" in text
    assert "| T1 | PANM | 20..30 | L+1 | 300 steps | 3 | 60.0 ± 1.0 | 99.0 ± 0.5 | 90.0 ± 2.0 | 30.0 ± 3.0 |" in text
    assert "| T1 | PANM - Location Attention, ours |  |  |  |  | +20.0 |  |  |  |" in text
    reading = records.Record("cpu-2cores", "r", {"settings": {"model_options": {"task": {"test_lengths": "k(L+1)"}}}})
    assert not algorithmic.other_lengths(reading)


def test_a_pointer_count_figure_shows_its_k_l_plus_1_lengths_its_heads_and_its_curves(tmp_path):
    folder = tmp_path / "results" / "cpu-2cores"
    folder.mkdir(parents=True)
    per_seed = {"L": [90.0, 100.0], "L+1": [80.0, 90.0], "2(L+1)": [30.0, 50.0], "4(L+1)": [20.0, 20.0],
                "8(L+1)": [10.0, 12.0]}  # fmt: skip
    rows = [
        {"task": task, "variant": "default", "heads": "H^a=2, H^c=1", "seeds": 2, "steps": "300,300",
         "best_step": "250,300", "per_seed": per_seed, "curve": {"steps": [50], "mean": [20.0], "std": [0.0]}}
        for task in ("copy", "id_sort")
    ]  # fmt: skip
    record = {
        "name": "ablation_panm_fig9_copy_id_sort_quick",
        "title": "PANM pointer heads (Le et al. 2024, Fig. 9)",
        "command": "python -m benchmarks.accuracy.ablation --figure 9 --tasks copy,id_sort --quick --steps 300",
        "environment": {"device": "cpu", "commit": "abc1234", "date": "2026-11-29T03:00:00+00:00"},
        "rows": rows,
        "notes": "",
    }
    (folder / "ablation_panm_fig9_copy_id_sort_quick.json").write_text(json.dumps(record))
    for task in ("copy", "id_sort"):
        (folder / f"ablation_panm_fig9_copy_id_sort_quick_{task}.png").write_bytes(b"png")
    loaded = records.load(tmp_path / "results")
    text = "\n".join(ablations.ablation_tables(loaded["cpu-2cores/ablation_panm_fig9_copy_id_sort_quick"]))
    assert "| pointer heads | seeds | steps | 10 | 11 | 22 | 44 | 88 |" in text
    assert (
        "| ID Sort: H^a=2, H^c=1 | 2 | 300 | 95.0 ± 7.1 | 85.0 ± 7.1 | 40.0 ± 14.1 | 20.0 ± 0.0 | 11.0 ± 1.4 |" in text
    )
    images: dict[str, bytes] = {}
    page = ablations.ablations_page(loaded, records.Findings(tmp_path / "none.md"), tmp_path / "results", images)
    assert "## PANM pointer heads (Le et al. 2024, Fig. 9): `ablation_panm_fig9_copy_id_sort_quick`" in page
    assert set(images) == {f"img/cpu-2cores/ablation_panm_fig9_copy_id_sort_quick_{t}.png" for t in ("copy", "id_sort")}


def test_a_readings_table_puts_the_published_rows_first_by_position():
    settings = {
        "task": "mix",
        "protocol": "quick",
        "steps": 2000,
        "minutes": {"panm": None},
        "select": "L+1",
        "model_options": {"task": {"test_lengths": "k(L+1)", "max_train_length": 9}},
    }
    modes = ("L", "L+1", "2(L+1)", "4(L+1)", "8(L+1)")
    ours = {"model": "panm", "row": "ours", "selected_on": "L+1", "seeds": 3, "code": "abc"}
    ours |= dict(zip(modes, ["100.0 ± 0.0", "99.0 ± 1.0", "50.0 ± 2.0", "20.0 ± 1.0", "10.0 ± 0.5"], strict=True))
    # A file's own published rows are not read: the page takes Table 15 from benchmarks.accuracy.published.
    paper = {"model": "panm", "row": "published (panm)"} | dict(zip(modes, [1, 2, 3, 4, 5], strict=True))
    other = {"model": "lstm_attention", "row": "published (best other)"} | dict(zip(modes, [6] * 5, strict=True))
    baseline = ours | {"model": "lstm_attention"}
    record = records.Record(
        "cpu-2cores",
        "reproduce_mix_quick_2000steps_opt-abcdef",
        {
            "settings": settings,
            "rows": [other, ours, paper, baseline],
            "command": "python -m benchmarks.accuracy.reproduce",
        },
    )
    lines = [line for line in "\n".join(algorithmic.readings_table([record])).splitlines() if line.startswith("|")]
    assert lines[2] == "|  | **published PANM** |  |  |  |  | 100 | 100 | 98 | 54 | 54 |"
    assert lines[3] == "|  | **published, best other model** |  |  |  |  | 100 | 98 | 65 | 45 | 30 |"
    assert lines[4].startswith("| R1 | PANM | `test_lengths=k(L+1)`, `max_train_length=9` | 9/10/20/40/80 |")
    assert "| 50.0 ± 2.0 (-48.0) |" in lines[4]


def _reproduce(key: str, task: str, protocol: str, rows: list[dict], options=None, date="2026-11-26") -> records.Record:
    device, stem = key.split("/")
    data = {
        "command": f"python -m benchmarks.accuracy.reproduce --task {task}",
        "settings": {
            "task": task,
            "protocol": protocol,
            "select": "L+1",
            "minutes": {"panm": 8.0, "lstm": 4.0},
            "model_options": options or {},
        },
        "environment": {"date": f"{date}T00:00:00+00:00"},
        "rows": rows,
    }
    return records.Record(device, stem, data)


def _ours(model, cells, seeds=1, steps="100"):
    return {"model": model, "row": "ours", "seeds": seeds, "steps": steps, **dict(zip(MODES, cells, strict=True))}


def test_the_summaries_choose_their_runs_by_rule_from_the_records_settings():
    panm3 = _ours("panm", ["90.0 ± 1.0", "80.0 ± 2.0", "50.0 ± 0.0", "30.0 ± 1.0", "20.0 ± 1.0"], seeds=3)
    runs = [
        _reproduce("h/protocol_3", "mix", "paper", [_ours("panm", ["100.0"] * 5, seeds=3, steps="50000")]),
        _reproduce("h/protocol_5", "mix", "paper", [_ours("panm", ["99.0"] * 5, seeds=5, steps="40000")]),
        _reproduce(
            "c/quick_old", "mix", "quick", [_ours("lstm", ["10.0"] * 5), _ours("ntm", ["99.0"] * 5)], date="2026-11-01"
        ),
        _reproduce("c/quick_new", "mix", "quick", [_ours("lstm", ["100.0", "70.0", "10.0", "10.0", "10.0"]), panm3]),
        _reproduce("c/quick_2m", "mix", "quick", [_ours("ntm", ["50.0", "75.0", "40.0", "10.0", "30.0"])]),
        _reproduce("c/ours", "mix", "quick", [panm3], options={"panm": dict(options.OURS)}),
        _reproduce("c/other", "mix", "quick", [panm3], options={"panm": {"score": "scaled_dot"}}),
    ]
    found = {r.key: r for r in runs}
    assert algorithmic.protocol_run(found, "mix").key == "h/protocol_5"  # the most seeds, before the most steps
    assert algorithmic.options_run(found, "mix").key == "c/ours"  # no run under the protocol: the CPU's
    assert algorithmic.protocol_run(found, "copy") is None
    assert algorithmic.best_run(found, "mix", 0, ("quick",)).key == "c/quick_new"
    baselines = algorithmic.quick_baselines(found, "mix")
    assert {m: r.key for m, (r, _) in baselines.items()} == {"lstm": "c/quick_new", "ntm": "c/quick_2m"}
    # PANM of a baseline's file is not a baseline; each model's latest run replaces its earlier ones.
    assert algorithmic.five_length_mean(panm3) == pytest.approx(54.0)
    assert tables.spread_over(panm3, MODES) == pytest.approx(1.0)


def test_a_verdict_holds_within_the_seeds_spread_and_marks_runs_that_did_not_fit():
    from benchmarks.pages.verdicts import Cell, summary_table, verdict

    def cell(mean, std=0.0, fit=None, published=74.4, scale=1.0):
        return Cell("x", published, mean, std, 3, "", fit, scale)

    assert verdict(cell(71.4, std=0.5)) == "below (-3.0)"  # outside 2 x 0.5 and outside the 1-point floor
    assert verdict(cell(71.4, std=1.6)) == "holds"  # within 2 standard deviations
    assert verdict(cell(75.3)) == "holds" and verdict(cell(75.5)) == "above (+1.1)"  # the 1-point floor
    assert verdict(cell(30.0, fit=False)) == "not fit at this budget (-44.4)"
    assert verdict(cell(None)) == "untested" and verdict(cell(50.0, published=None)) == "no published number"
    assert verdict(cell(0.995, published=1.0, scale=100)) == "holds"  # fractions: the floor is 1 point, 0.01
    lines = summary_table([cell(71.4, std=0.5), cell(30.0, fit=False), cell(None)])
    assert "| x | 74.4 | 71.4 ± 0.5 | -3.0 | 3 |  | below (-3.0) |" in lines[0]
    assert lines[2].startswith("Verdicts: 1 below, 1 not fit, 1 untested.")


def test_a_cell_that_disagrees_with_its_per_seed_numbers_is_refused_naming_its_file():
    row = {"variant": "default", "L": "85.0 ± 7.1", "per_seed": {"L": [80.0, 90.0]}}
    assert tables.ours_cell(row, "L") == ("85.0 ± 7.1", 85.0)
    edited = row | {"L": "88.0 ± 7.1"}  # a hand-edited summary cell
    with pytest.raises(ValueError, match=r"its cell L = '88.0 ± 7.1' is not the mean ± std of its per_seed"):
        tables.ours_cell(edited, "L")
    record = records.Record("cpu-2cores", "ablation_edited", {"rows": [edited]})
    with pytest.raises(records.RecordError, match="ablation_edited.json: page.md cannot be rendered from it"):
        build.render_page(
            "page.md",
            lambda found: "".join(tables.ours_cell(r, "L")[0] for f in found.values() for r in f.rows),
            {record.key: record},
        )


def test_the_findings_quote_only_numbers_their_pages_show(tmp_path):
    """Every decimal number in the prose beside a table (``benchmarks/findings/<page>.md``; not the index's
    description of the protocol, nor section numbers such as §3.2) is on the page rendered without that prose:
    a finding cannot state a result that no table or record note shows."""
    bare, _ = build.render(records.RESULTS, tmp_path)  # no findings folder: tables and record notes only
    unshown = {}
    for path in sorted(records.FINDINGS.glob("*.md")):
        if path.stem == "index" or f"{path.stem}.md" not in bare:  # not a results page (the speed findings)
            continue
        page = bare[f"{path.stem}.md"].decode()
        for key, body in records.Findings(path).sections.items():
            numbers = set(re.findall(r"(?<![\w.§])\d+\.\d+(?![\w.])", body))
            missing = sorted(n for n in numbers if n not in page)
            if missing:
                unshown[f"{path.name} ## {key}"] = missing
    assert not unshown, f"numbers in the findings that their page does not show: {unshown}"


def test_the_decisive_cells_put_deepminds_runs_beside_every_run_of_ours_at_their_budget(tmp_path):
    """One table per budget of the comparison with DeepMind's code: per task, the architectures it ran (their
    code, then ours, then ours with an option), then PANM; seeds merged across files, the comparison's own row
    replacing the runner's of the same seed; runner rows marked as read on the validation; other budgets, other
    sweeps and other architectures left out."""

    def record(stem, command, rows):
        env = {"device": "cpu", "commit": "abc1234", "date": "2026-12-01T12:00:00+00:00"}
        return records.Record("cpu-2cores", stem, {"environment": env, "command": command, "rows": rows})

    def row(model, seed, score, fit="", steps=1000, **extra):
        return {
            "task": "reverse_string",
            "level": "context_free",
            "model": model,
            "seed": seed,
            "steps": steps,
            "selected_step": steps,
            "score": score,
            "train_accuracy": 90.0 + seed,
            "fit_step": fit,
            **extra,
        }

    peer = record(
        "chomsky_peer_x",
        "python -m benchmarks.accuracy.chomsky_peer --cells reverse_string:stack_rnn --seeds 0 --sampled",
        [row("stack_rnn", 0, 100.0, 250, code="deepmind"), row("stack_rnn", 0, 54.9, code="ours")],
    )
    runner = "python -m benchmarks.accuracy.chomsky --steps 1000 --sampled --name y"
    ours = record(
        "chomsky_y",
        runner,
        [
            row("stack_rnn", 0, 11.0, code="c1 (cpu)"),  # replaced by the comparison's seed 0
            row("stack_rnn", 1, 100.0, 250, code="c1 (cpu)"),
            row("stack_rnn-push=linear", 0, 99.0, 250, code="c1 (cpu)"),
            row("panm", 0, 62.0, 500, code="c1 (cpu)"),
            row("tape_rnn", 0, 77.0, code="c1 (cpu)"),  # an architecture the comparison did not run here
            row("panm", 1, 33.0, steps=500, code="c1 (cpu)"),  # another budget
        ],
    )
    every_length = record("chomsky_z", runner.replace(" --sampled", ""), [row("panm", 2, 44.0, code="c1 (cpu)")])
    findings = records.Findings(tmp_path / "none.md")
    lines = "\n".join(chomsky.decisive_cells([peer], [ours, every_length], findings)).splitlines()
    assert "## The decisive cells at 1,000 steps (CPU): DeepMind's code and ours" in lines
    body = [line for line in lines if line.startswith("| reverse_string")]
    assert body == [
        "| reverse_string (DCF) | DeepMind: Stack-RNN | 0 | 100.0 | 100.0 | 90.0 | 250 | 100.0 |",
        "| reverse_string (DCF) | ours: Stack-RNN | 0, 1 | 77.5 ± 31.9 | 54.9, 100.0 | 90.0, 91.0* | -, 250* | 100.0 |",
        "| reverse_string (DCF) | ours: Stack-RNN (push=linear) | 0 | 99.0 | 99.0 | 90.0* | 250* | 100.0 |",
        "| reverse_string (DCF) | ours: PANM | 0 | 62.0 | 62.0 | 90.0* | 500* |  |",
    ]
    assert chomsky.decisive_cells([], [ours], findings) == []  # no comparison, no table


def test_decisive_cells_at_shorter_test_lengths_get_a_table_of_their_own(tmp_path):
    """A comparison run to test length 80 (a smaller tape) is not merged with runs scored over 41..500: its rows,
    and the runner's rows of the same lengths (its command's --max-test-length), make a table headed with those
    lengths, after the paper's; its published column is marked as the paper's lengths."""

    def record(stem, command, rows):
        env = {"device": "cpu", "commit": "abc1234", "date": "2026-12-01T12:00:00+00:00"}
        return records.Record("cpu-2cores", stem, {"environment": env, "command": command, "rows": rows})

    def row(seed, score, code, model="tape_rnn", last=None):  # last: the comparison's last test length
        r = {"task": "odds_first", "level": "context_sensitive", "model": model, "seed": seed, "steps": 1000}
        r.update(score=score, train_accuracy=60.0, fit_step="", code=code)
        return r if last is None else {**r, "test_accuracy": [[41, score], [last, score]]}

    short = record(
        "chomsky_peer_short",
        "python -m benchmarks.accuracy.chomsky_peer --cells odds_first:tape_rnn --max-test-length 80 --sampled",
        [row(0, 70.0, "deepmind", last=80), row(0, 60.0, "ours", last=80)],
    )
    full = record(
        "chomsky_peer_full",
        "python -m benchmarks.accuracy.chomsky_peer --cells odds_first:tape_rnn --sampled",
        [row(1, 50.0, "deepmind", last=500), row(1, 51.0, "ours", last=500)],
    )
    runner = "python -m benchmarks.accuracy.chomsky --steps 1000 --sampled"
    panm_short = record("chomsky_a", runner + " --max-test-length 80", [row(2, 65.0, "c1 (cpu)", "panm")])
    panm_full = record("chomsky_b", runner, [row(2, 50.5, "c1 (cpu)", "panm")])
    findings = records.Findings(tmp_path / "none.md")
    text = "\n".join(chomsky.decisive_cells([short, full], [panm_short, panm_full], findings))
    paper, _, shorter = text.partition("## The decisive cells at 1,000 steps, test lengths 41..80 (CPU)")
    assert "## The decisive cells at 1,000 steps (CPU): DeepMind's code and ours" in paper and shorter
    assert "over the test lengths 41..500 (for reference: not these lengths)" in shorter

    def body(part):
        return [line.split(" | ")[1:4] for line in part.splitlines() if line.startswith("| odds_first")]

    assert body(paper) == [
        ["DeepMind: Tape-RNN", "1", "50.0"],
        ["ours: Tape-RNN", "1", "51.0"],
        ["ours: PANM", "2", "50.5"],
    ]
    assert body(shorter) == [
        ["DeepMind: Tape-RNN", "0", "70.0"],
        ["ours: Tape-RNN", "0", "60.0"],
        ["ours: PANM", "2", "65.0"],
    ]
