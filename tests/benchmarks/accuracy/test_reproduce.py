"""The reproduction table's arithmetic (benchmarks/accuracy/reproduce.py), without training."""

from __future__ import annotations

import json
import re
import shlex
from types import SimpleNamespace

import pytest

from benchmarks.accuracy.reproduce import (
    AUTHORS_CODE_COPY_23MIN,
    MODES,
    PUBLISHED,
    code_column,
    finished_results,
    make_config,
    options_id,
    options_tag,
    parse_minutes,
    parse_model_sets,
    results_name,
    steps_trained,
    summarize,
    trained_by,
)


def _result(accs, step=500, steps_trained=900):
    return {
        "metric": "token_accuracy",
        "step": step,
        "steps_trained": steps_trained,
        "modes": [{"mode": m, "token_accuracy": a} for m, a in zip(MODES, accs)],
    }


def test_summary_puts_published_numbers_and_differences_beside_ours():
    runs = {"panm": [_result([1.0, 1.0, 0.8, 0.5, 0.3]), _result([1.0, 0.98, 0.9, 0.6, 0.4])]}
    rows = summarize("copy", runs)
    ours, published, diff, yardstick = rows
    assert ours["row"] == "ours" and ours["seeds"] == 2
    assert ours["2L+1"] == "85.0 ± 7.1"  # mean of 80 and 90; sample std 7.07
    assert published["row"] == "published (panm)" and published["2L+1"] == "84"
    assert diff["2L+1"] == "+1.0" and diff["8L+1"] == f"{35.0 - 36:+.1f}"
    assert yardstick["L+1"] == f"{AUTHORS_CODE_COPY_23MIN[1]:g}"
    assert ours["fit"] == "2 of 2"  # 100 % at L, the longest training length


def test_a_row_records_how_many_of_its_runs_fit_the_training_lengths():
    # Dynamic Recall: the paper's PANM reaches 92 % at L, so 91.5 fits (within its 1-point slack), 90.0 does not.
    runs = {"panm": [_result([0.915, 0.5, 0.3, 0.2, 0.1]), _result([0.90, 0.5, 0.3, 0.2, 0.1])]}
    (ours, *_) = summarize("dynamic_recall", runs)
    assert ours["fit"] == "1 of 2"
    (ours, *_) = summarize("copy", {"panm": [_result([0.985, 0.9, 0.8, 0.5, 0.3])]})
    assert ours["fit"] == "0 of 1"  # Copy: 99 % at L


def test_models_without_a_published_row_use_best_other_except_panm():
    rows = summarize("reverse", {"lstm": [_result([1, 1, 0.5, 0.3, 0.2])]})
    assert [r["row"] for r in rows] == ["ours", "published (best other)", "ours - published"]
    assert set(PUBLISHED) == {"copy", "reverse", "mix", "dynamic_recall", "priority_sort", "id_sort"}


def test_protocols():
    paper = make_config("id_sort", "panm", 0, quick=False, minutes=20)
    assert (paper.num_steps, paper.optimizer.name, paper.optimizer.learning_rate, paper.batch_size) == (
        100_000,
        "rmsprop",
        1e-4,
        128,
    )
    quick = make_config("copy", "panm", 1, quick=True, minutes=20)
    assert quick.max_minutes == 20 and quick.optimizer.name == "adam" and quick.select_mode == "L+1"
    # The paper protocol runs its 50,000 steps uncapped unless minutes are given; then they cap it.
    assert make_config("copy", "panm", 0, quick=False, minutes=None).max_minutes is None
    capped = make_config("copy", "panm", 0, quick=False, minutes=17)
    assert (capped.max_minutes, capped.num_steps, capped.optimizer.name) == (17, 50_000, "rmsprop")


def test_select_mode_reaches_the_config_and_the_table():
    config = make_config("copy", "panm", 0, quick=True, minutes=5, select="2L+1")
    assert config.select_mode == "2L+1"
    rows = summarize("copy", {"panm": [_result([1, 1, 0.9, 0.5, 0.3])]}, select="2L+1")
    assert rows[0]["selected_on"] == "2L+1" and rows[-1]["selected_on"] == "2L+1"  # ours, and the yardstick


def test_minutes_take_a_default_and_per_model_budgets():
    assert parse_minutes("8,panm=23", ["panm", "lstm"]) == {"panm": 23.0, "lstm": 8.0}
    assert parse_minutes("panm=23,lstm=6", ["panm", "lstm"]) == {"panm": 23.0, "lstm": 6.0}
    for bad, says in [
        ("panm=23", "no budget for ['lstm']"),
        ("x", "NUMBER or MODEL=NUMBER"),
        ("8,ntm=3", "'ntm' is not one of --models"),
        ("0", "positive"),
    ]:
        with pytest.raises(SystemExit, match=re.escape(says)):
            parse_minutes(bad, ["panm", "lstm"])


def test_a_finished_run_is_read_back_only_with_the_same_config(tmp_path):
    config = make_config("copy", "lstm", 0, quick=True, minutes=6)
    assert finished_results(tmp_path, config) is None  # nothing there yet
    (tmp_path / "results.json").write_text(json.dumps({"config": config.to_dict(), "step": 7}))
    assert finished_results(tmp_path, config)["step"] == 7
    other = make_config("copy", "lstm", 0, quick=True, minutes=7)
    assert finished_results(tmp_path, other) is None  # another budget is another run


def test_model_options_are_parsed_per_model_and_name_the_run():
    sets = parse_model_sets(["panm.score=scaled_dot", "panm.address_bits=8", "lstm.hidden=64"], ["panm", "lstm"])
    assert sets == {"panm": {"score": "scaled_dot", "address_bits": 8}, "lstm": {"hidden": 64}}
    assert options_tag(sets["panm"]) == "-address_bits=8-score=scaled_dot"
    assert options_tag({"random_base_at_eval": True}) == "-random_base_at_eval=true"
    for bad, says in [
        (["score=x"], "MODEL.OPTION=VALUE"),
        (["ntm.hidden=3"], "'ntm' is neither 'task' nor one of --models"),
    ]:
        with pytest.raises(SystemExit, match=re.escape(says)):
            parse_model_sets(bad, ["panm", "lstm"])


def test_a_results_name_abbreviates_the_model_options_to_a_hash_of_them():
    assert options_id({}) == ""
    tag = options_id({"panm": {"score": "scaled_dot", "address_bits": 8}})
    assert re.fullmatch(r"_opt-[0-9a-f]{6}", tag)
    assert options_id({"panm": {"address_bits": 8, "score": "scaled_dot"}}) == tag  # the options' order is no part
    assert options_id({"panm": {"score": "scaled_dot", "address_bits": 9}}) != tag
    assert options_id({"lstm": {"score": "scaled_dot", "address_bits": 8}}) != tag  # nor is the model


def test_every_recorded_file_is_named_as_the_writer_names_its_settings():
    """``benchmarks/results/*/reproduce_*.json``: the name is ``results_name`` of the file's ``settings``, and the
    settings' model options are the recorded command's ``--set`` items."""
    from benchmarks.common import RESULTS_DIR

    files = sorted(RESULTS_DIR.glob("*/reproduce_*.json"))
    assert len(files) > 60
    for path in files:
        record = json.loads(path.read_text())
        settings = record["settings"]
        args = SimpleNamespace(
            quick=settings["protocol"] == "quick",
            select=settings["select"],
            name=settings["name"],
            steps=settings.get("steps"),
        )
        prefix = f"reproduce_{settings.get('task') or settings['table']}"
        assert results_name(prefix, args, settings["minutes"], settings["model_options"]) == path.stem == record["name"]
        tokens = shlex.split(record["command"])
        sets = [tokens[i + 1] for i, t in enumerate(tokens) if t == "--set"]
        assert parse_model_sets(sets, settings["models"]) == settings["model_options"], path.name


def test_a_table_runs_its_tasks_in_the_papers_order_and_names_each_tasks_command():
    from benchmarks.accuracy.reproduce import TABLES, main, task_command

    assert TABLES["algorithmic"] == ("copy", "reverse", "mix", "dynamic_recall", "priority_sort", "id_sort")
    assert set(TABLES["algorithmic"]) == set(PUBLISHED)
    args = SimpleNamespace(
        models="panm,lstm",
        seeds="0,1",
        quick=True,
        minutes="8,lstm=4",
        select="L+1",
        set=[],
        steps=None,
        workdir="runs/reproduce",
        name="8m",
    )
    assert task_command(args, "mix") == (
        "python -m benchmarks.accuracy.reproduce --task mix --models panm,lstm --seeds 0,1 --quick --minutes 8,lstm=4 --name 8m"
    )
    with pytest.raises(SystemExit):  # argparse refuses an unknown table by name
        main(["--table", "chomsky"])


def test_the_summary_table_holds_every_tasks_rows_and_names_missing_models(tmp_path, monkeypatch):
    from benchmarks import common
    from benchmarks.accuracy.reproduce import write_summary

    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(common, "device_slug", lambda: "here")
    tables = {
        "copy": summarize("copy", {"panm": [_result([1.0, 1.0, 0.8, 0.5, 0.3])]}),
        "mix": summarize("mix", {"lstm": [_result([1.0, 0.9, 0.5, 0.3, 0.2])]}),
    }
    args = SimpleNamespace(table="algorithmic", quick=True, name="8m", select="L+1", seeds="0", steps=None)
    argv = ["--table", "algorithmic", "--quick", "--name", "8m"]
    write_summary(args, tables, {"device": "test"}, argv, {"panm": 8.0, "lstm": 8.0}, {})
    record = json.loads((tmp_path / "here" / "reproduce_algorithmic_quick_8m.json").read_text())
    # A variant's summary is named after its options, as its tasks' files are: it never overwrites this one.
    write_summary(args, tables, {"device": "test"}, argv, {"panm": 8.0, "lstm": 8.0}, {"panm": {"score": "x"}})
    variant = json.loads(
        (tmp_path / "here" / f"reproduce_algorithmic_quick{options_id({'panm': {'score': 'x'}})}_8m.json").read_text()
    )
    assert variant["settings"]["model_options"] == {"panm": {"score": "x"}}  # the options the name abbreviates
    assert json.loads((tmp_path / "here" / "reproduce_algorithmic_quick_8m.json").read_text()) == record
    assert record["settings"] == {
        "table": "algorithmic",
        "models": ["panm", "lstm"],
        "protocol": "quick",
        "minutes": {"panm": 8.0, "lstm": 8.0},
        "select": "L+1",
        "steps": None,
        "seeds": [0],
        "model_options": {},
        "name": "8m",
    }
    assert [r["task"] for r in record["rows"]].count("copy") == len(tables["copy"])
    assert {(r["task"], r["model"], r["row"]) for r in record["rows"]} >= {
        ("copy", "panm", "ours"),
        ("mix", "lstm", "ours"),
        ("mix", "lstm", "published (best other)"),
    }
    # Copy publishes LSTM, NTM, DNC and Stack-LSTM rows, and Mix PANM's: none has a row of ours here.
    assert "copy/lstm" in record["notes"] and "mix/panm" in record["notes"] and "copy/panm" not in record["notes"]


def _args(**kw):
    base = dict(
        quick=False, one_by_one=False, minutes=None, steps=None, select="L+1", workdir="runs/reproduce", parallel=1
    )
    return SimpleNamespace(**{**base, **kw})


def test_the_paper_protocol_trains_a_models_unfinished_seeds_together(tmp_path, monkeypatch):
    import panm_jax.train.loop as loop_module
    from benchmarks.accuracy import reproduce

    calls = []
    monkeypatch.setattr(loop_module, "train_seeds", lambda cs, ws, **kw: calls.append(("together", cs, ws)))
    monkeypatch.setattr(reproduce, "train_and_evaluate", lambda c, w: calls.append(("alone", [c], [w])))
    args = _args(workdir=str(tmp_path))
    minutes = {"panm": None}
    # Seed 1 finished earlier (its results.json holds its config): only seeds 0 and 2 train, together.
    (config1, folder1) = reproduce.run_plan(args, "copy", "panm", [1], minutes, {})[0]
    folder1.mkdir(parents=True)
    (folder1 / "results.json").write_text(json.dumps({"config": config1.to_dict()}))
    reproduce.train_model(args, "copy", "panm", [0, 1, 2], minutes, {})
    assert [(kind, [c.seed for c in cs]) for kind, cs, _ in calls] == [("together", [0, 2])]
    assert [w.name for w in calls[0][2]] == ["panm-s0-paper", "panm-s2-paper"]
    # --one-by-one, and --quick (whose budget is per seed), train each seed alone.
    calls.clear()
    reproduce.train_model(_args(workdir=str(tmp_path), one_by_one=True), "copy", "panm", [0, 2], minutes, {})
    assert [(kind, cs[0].seed) for kind, cs, _ in calls] == [("alone", 0), ("alone", 2)]
    calls.clear()
    reproduce.train_model(_args(workdir=str(tmp_path), quick=True), "copy", "panm", [0, 2], {"panm": 5.0}, {})
    assert [(kind, cs[0].max_minutes) for kind, cs, _ in calls] == [("alone", 5.0), ("alone", 5.0)]


def test_parallel_children_repeat_the_command_for_one_task_and_model(tmp_path, monkeypatch):
    from benchmarks import common
    from benchmarks.accuracy import reproduce

    jobs = []
    monkeypatch.setattr(common, "run_processes", lambda js, parallel: jobs.extend((j, parallel) for j in js))
    argv = ["--table", "algorithmic", "--models", "panm,lstm", "--seeds", "0,1", "--parallel=3", "--name", "x"]
    args = _args(workdir=str(tmp_path), parallel=3, argv=argv)
    reproduce.train_in_processes(args, ["copy", "mix"], ["panm", "lstm"], [0, 1], {"panm": None, "lstm": None}, {})
    assert [j[0][0] for j in jobs] == ["panm on copy", "lstm on copy", "panm on mix", "lstm on mix"]
    (label, cmd, log), parallel = jobs[2]
    assert parallel == 3 and log == tmp_path / "mix" / "panm.log"
    assert cmd[1:] == [
        "-m",
        "benchmarks.accuracy.reproduce",
        "--models",
        "panm,lstm",
        "--seeds",
        "0,1",
        "--name",
        "x",
        "--one",
        '["mix", "panm"]',
    ]
    with pytest.raises(SystemExit, match="--parallel: expected a positive number"):
        reproduce.main(["--parallel", "0"])


def test_steps_trained_reads_past_a_line_torn_by_a_crash(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(
        '{"step": 100, "loss": 1.0}\n{"step": 200, "validation": 0.5}\n{"step": 300, "loss": 0.5}\n{"step": 4'
    )
    assert steps_trained(tmp_path) == 300


def test_a_table_row_names_what_trained_its_runs(tmp_path):
    """Parts logged before runs recorded their code count as unrecorded; each part once per row."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "metrics.jsonl").write_text(
        '{"event": "resumed", "step": 10}\n{"step": 11, "loss": 1.0}\n'
        '{"event": "resumed", "step": 20, "code": "abc1234", "device": "cpu"}\n'
        '{"event": "time budget reached", "step": 30}\n'
    )
    (b / "metrics.jsonl").write_text(
        '{"event": "started", "step": 0, "code": "abc1234", "device": "cpu"}\n'
        '{"event": "resumed", "step": 5, "code": null, "device": "NVIDIA H200"}\n'
    )
    assert trained_by(a) == ["unrecorded", "abc1234 (cpu)"]
    assert trained_by(b) == ["abc1234 (cpu)", "not a checkout (NVIDIA H200)"]
    runs = [{"trained_by": trained_by(a)}, {"trained_by": trained_by(b)}]
    assert code_column(runs) == "unrecorded; abc1234 (cpu); not a checkout (NVIDIA H200)"


def test_task_options_and_a_step_budget_reach_the_configs_the_run_names_and_the_columns(tmp_path, monkeypatch):
    import panm_jax.train.loop as loop_module
    from benchmarks.accuracy import reproduce

    sets = parse_model_sets(["task.middle=fixed", "task.test_lengths=k(L+1)", "panm.hidden=8"], ["panm"])
    assert sets == {"task": {"middle": "fixed", "test_lengths": "k(L+1)"}, "panm": {"hidden": 8}}
    args = _args(workdir=str(tmp_path), quick=True, steps=300)
    config, folder = reproduce.run_plan(args, "mix", "panm", [0], {"panm": None}, sets)[0]
    assert config.task_options == {"middle": "fixed", "test_lengths": "k(L+1)"}
    assert config.num_steps == 300 and config.max_minutes is None and config.optimizer.name == "adam"
    assert folder.name == "panm-s0-quick300steps-task.middle=fixed-task.test_lengths=k(L+1)-hidden=8"
    assert reproduce.task_modes("mix", sets) == ("L", "L+1", "2(L+1)", "4(L+1)", "8(L+1)")
    with pytest.raises(SystemExit, match="middle"):
        reproduce.task_modes("mix", {"task": {"middle": "nowhere"}})
    # A step budget trains a model's seeds together under --quick too.
    calls = []
    monkeypatch.setattr(loop_module, "train_seeds", lambda cs, ws, **kw: calls.append([c.seed for c in cs]))
    reproduce.train_model(args, "mix", "panm", [0, 1], {"panm": None}, sets)
    assert calls == [[0, 1]]
    # Published numbers sit beside the task's own modes by position.
    results = {"metric": "token_accuracy", "step": 1, "steps_trained": 1, "modes": []}
    modes = reproduce.task_modes("mix", sets)
    results["modes"] = [{"mode": m, "token_accuracy": 0.5} for m in modes]
    rows = reproduce.summarize("mix", {"panm": [results]}, modes=modes)
    assert rows[1]["2(L+1)"] == "98" and rows[2]["8(L+1)"] == "-4.0"


def test_a_table_of_runs_trained_on_an_accelerator_goes_to_its_folder():
    from benchmarks.accuracy.reproduce import trained_elsewhere
    from benchmarks.common import accelerator_slug

    h200 = {"trained_by": ["00cd432 (NVIDIA H200)"]}
    assert trained_elsewhere([h200, h200]) == "NVIDIA H200" and accelerator_slug("NVIDIA H200") == "nvidia-h200"
    assert trained_elsewhere([h200, {"trained_by": ["00cd432 (cpu)"]}]) is None  # two machines
    assert trained_elsewhere([{"trained_by": ["00cd432 (cpu)"]}]) is None  # this CPU's runs stay in its folder
    assert trained_elsewhere([{"trained_by": ["unrecorded"]}]) is None


LONG_TO_SHORT_SETS = [
    "lstm_attention.attention=location",
    "task.min_train_length=20",
    "task.max_train_length=30",
    "task.test_lengths=10,20,61",
]


def test_a_long_to_short_run_keeps_every_checkpoint_and_evaluates_along_its_budget(tmp_path):
    from benchmarks.accuracy import reproduce

    sets = parse_model_sets(LONG_TO_SHORT_SETS, ["panm", "lstm_attention"])
    assert sets["task"] == {"min_train_length": 20, "max_train_length": 30, "test_lengths": "10,20,61"}
    assert reproduce.short_modes("mix", sets["task"]) == ["10"]  # 20 is in the training range
    assert reproduce.short_modes("mix", {}) == []
    args = _args(workdir=str(tmp_path), quick=True, steps=300)
    config, folder = reproduce.run_plan(args, "mix", "lstm_attention", [0], {"lstm_attention": None}, sets)[0]
    assert (config.eval_every, config.checkpoint_every, config.keep_checkpoints) == (30, 30, 11)
    assert config.select_mode == "L+1" and config.model_options["attention"] == "location"
    assert folder.name.endswith("-task.test_lengths=10,20,61-attention=location")
    # The paper's protocol runs are unchanged.
    plain = reproduce.run_plan(args, "mix", "panm", [0], {"panm": None}, {})[0][0]
    assert (plain.eval_every, plain.checkpoint_every, plain.keep_checkpoints) == (500, 500, 3)
    assert reproduce.task_modes("mix", sets) == ("10", "20", "L", "L+1", "61")
    assert reproduce.is_long_to_short("mix", sets["task"], sets)
    assert not reproduce.is_long_to_short("mix", sets["task"], {**sets, "lstm_attention": {}})
    assert not reproduce.tables_apply(sets["task"]) and reproduce.tables_apply({"test_lengths": "k(L+1)"})


def test_a_long_to_short_table_has_no_table_13_18_rows_and_puts_the_published_margin_beside_ours():
    from benchmarks.accuracy import reproduce

    modes = ("10", "20", "L", "L+1", "61")

    def result(accs):
        return {
            "metric": "token_accuracy",
            "step": 30,
            "steps_trained": 300,
            "modes": [{"mode": m, "token_accuracy": a} for m, a in zip(modes, accs)],
        }

    runs = {
        "panm": [result([0.5, 0.9, 0.9, 0.8, 0.3]), result([0.7, 0.9, 0.9, 0.8, 0.3])],
        "lstm_attention": [result([0.4, 0.9, 0.9, 0.8, 0.3]), result([0.4, 0.9, 0.9, 0.8, 0.3])],
    }
    rows = summarize("mix", runs, modes=modes, tables_apply=False)
    assert [r["row"] for r in rows] == ["ours", "ours"]  # no "best other" of Table 15: other lengths
    assert rows[0]["10"] == "60.0 ± 14.1"
    margin, published = reproduce.margin_rows(rows, "10")
    assert margin["10"] == "+20.0" and published["10"] == "+14"
    assert "nearly 14%" in published["row"]
    assert reproduce.margin_rows(rows[:1], "10") == []


def test_learning_curves_come_from_the_log_and_the_kept_checkpoint_scores(tmp_path):
    from benchmarks.accuracy import reproduce

    sets = parse_model_sets(LONG_TO_SHORT_SETS, ["panm", "lstm_attention"])
    config = reproduce.run_plan(_args(quick=True, steps=300), "mix", "panm", [0], {"panm": None}, sets)[0][0]
    log = [
        {"event": "started", "step": 0},
        {"step": 50, "loss": 2.0, "token_accuracy": 0.2},
        {"step": 60, "validation": {"L+1": {"token_accuracy": 0.25, "loss": 2.1}}},
        {"step": 50, "loss": 1.9, "token_accuracy": 0.3},  # logged again after a resume: the last one counts
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    kept = {"protocol": {"modes": ["10"], "examples": 512}, "step": [30, 60], "10": [0.1, 0.4]}
    (tmp_path / "checkpoint_scores.json").write_text(json.dumps(kept))
    curves = reproduce.run_curves(tmp_path, config, "token_accuracy", ["10"])
    assert curves == {
        "train": {"step": [50], "value": [30.0]},
        "validation L+1": {"step": [60], "value": [25.0]},
        "10": {"step": [30, 60], "value": [10.0, 40.0]},
    }
    rows = [{"model": "panm", "row": "ours", "curves": [curves, curves]}]
    reproduce.plot_curves("mix", rows, tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 0
