"""benchmarks.accuracy.transduction: the published cells, the recorded JSON, resuming, and bad options."""

from __future__ import annotations

import json

import pytest

from benchmarks import common
from benchmarks.accuracy import published as paper
from benchmarks.accuracy import transduction
from benchmarks.pages.records import Record
from benchmarks.pages.transduction import transduction_table

# Grefenstette et al. 2015, Learning to Transduce with Unbounded Memory (NeurIPS), typed once from the paper:
# Figure 2a (testing coarse, testing fine) of every model it shows (its best deep LSTM under our name for
# that depth), and Table 3's 1-layer LSTM.
FIGURE_2A = {
    "transduction_copy": {
        "lstm4": (0.01, 0.50),
        "stack_lstm": (0.00, 0.22),
        "queue_lstm": (1.00, 1.00),
        "deque_lstm": (1.00, 1.00),
    },
    "transduction_reversal": {
        "lstm8": (0.04, 0.13),
        "stack_lstm": (1.00, 1.00),
        "queue_lstm": (0.00, 0.01),
        "deque_lstm": (1.00, 1.00),
    },
    "bigram_flip": {
        "lstm2": (0.02, 0.52),
        "stack_lstm": (0.00, 0.48),
        "queue_lstm": (0.55, 0.98),
        "deque_lstm": (0.53, 0.98),
    },
    "svo_sov": {
        "lstm8": (0.98, 0.99),
        "stack_lstm": (1.00, 1.00),
        "queue_lstm": (1.00, 1.00),
        "deque_lstm": (1.00, 1.00),
    },
    "gender_conjugation": {
        "lstm8": (0.99, 0.99),
        "stack_lstm": (0.93, 0.97),
        "queue_lstm": (1.00, 1.00),
        "deque_lstm": (1.00, 1.00),
    },
}
TABLE_3_ONE_LAYER = {
    "transduction_copy": (0.00, 0.38),
    "transduction_reversal": (0.01, 0.09),
    "bigram_flip": (0.01, 0.53),
    "svo_sov": (0.96, 0.99),
    "gender_conjugation": (0.97, 0.99),
}


def _fake_row(task, model, seed=0, models=transduction.MODELS):
    return {
        "task": task,
        "model": model,
        "seed": seed,
        "steps": 5,
        "coarse": 0.25,
        "fine": 0.5,
        "token": 0.5,
        "train_coarse": 0.5,
        "train_fine": 0.75,
        **paper.transduction_cells(task, model, paper.transduction_deep_run(task, list(models))),
    }


def _rendered_rows(rows):
    record = Record("cpu-2cores", "transduction_test", {"rows": rows})
    text = "\n".join(transduction_table(record))
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()[2:] if line.strip()]


def test_the_rendered_table_carries_every_published_cell():
    rows = [_fake_row(t, m) for t in transduction.TASKS for m in transduction.MODELS]
    rendered = _rendered_rows(rows)
    cells = {(r[0], r[1]): (r[5], r[8]) for r in rendered}
    for task, published in FIGURE_2A.items():
        title = transduction.TITLES[task]
        for model, (coarse, fine) in published.items():
            assert cells[(title, model)] == (f"{coarse:.2f}", f"{fine:.2f}"), (task, model)
        assert cells[(title, "lstm")] == tuple(f"{v:.2f}" for v in TABLE_3_ONE_LAYER[task])
    assert cells[("Sequence Copying", "lstm2")] == ("0.00", "0.47")  # Table 3's other depths
    assert cells[("Bigram Flipping", "lstm4")] == ("0.01", "0.56")
    assert cells[("Gender Conjugation", "lstm4")] == ("0.98", "0.99")
    assert len(rendered) == 35  # 5 tasks x 7 models, every best deep LSTM in a row of its own


def test_without_the_deep_rows_the_best_deep_lstm_is_shown_under_the_one_layer_lstm():
    models = ("lstm", "stack_lstm", "queue_lstm", "deque_lstm")
    rendered = _rendered_rows([_fake_row(t, m, models=models) for t in transduction.TASKS for m in models])
    cells = {(r[0], r[1]): (r[5], r[8]) for r in rendered}
    for task, published in FIGURE_2A.items():
        ((model, (coarse, fine)),) = [(m, c) for m, c in published.items() if m.startswith("lstm")]
        layers = transduction.LSTM_DEPTHS[model]
        assert cells[(transduction.TITLES[task], f"{layers}-layer LSTM")] == (f"{coarse:.2f}", f"{fine:.2f}")
    assert len(rendered) == 25  # 20 cells of ours, 5 deep LSTMs published only


def test_a_deep_lstm_row_trains_the_lstm_with_its_depth_and_the_one_layer_config_is_unchanged():
    deep = transduction.make_config("transduction_copy", "lstm4", 0, 10, 16, 1e-3, 5)
    assert deep.model == "lstm" and dict(deep.model_options) == {"hidden": 16, "layers": 4}
    one = transduction.make_config("transduction_copy", "lstm", 0, 10, 16, 1e-3, 5)
    assert one.model == "lstm" and dict(one.model_options) == {"hidden": 16}  # earlier runs still resume


def test_the_rendered_table_means_seeds_and_takes_differences():
    rows = [_fake_row("transduction_copy", "queue_lstm", s) | {"coarse": c} for s, c in ((0, 0.2), (1, 0.4))]
    (row,) = _rendered_rows(rows)
    assert row[2] == "2" and row[4] == "0.30 ± 0.14" and row[5] == "1.00" and row[6] == "-0.70"


def test_the_command_records_its_json_and_a_rerun_reads_the_runs_back(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path / "results")
    argv = [
        "--tasks",
        "bigram_flip",
        "--models",
        "lstm2",
        "--steps",
        "1",
        "--hidden",
        "4",
        "--test-examples",
        "2",
        "--workdir",
        str(tmp_path / "runs"),
        "--name",
        "t",
    ]
    assert transduction.main(argv) == 0
    (path,) = (tmp_path / "results").glob("*/transduction_t.json")
    data = json.loads(path.read_text())
    assert data["environment"]["device"] and data["environment"]["commit"]
    assert data["command"].endswith("benchmarks.accuracy.transduction " + " ".join(argv).replace(argv[-3], "runs/runs"))
    assert data["settings"]["steps"] == 1 and data["settings"]["extra_seeds"] == []
    assert [(r["model"], r["seed"], r["steps"]) for r in data["rows"]] == [("lstm2", 0, 1)]
    (row,) = data["rows"]
    assert row["published_coarse"] == 0.02
    assert row["published_source"] == "Table 3, 2-layer LSTM (Figure 2a's best deep LSTM)"
    (config,) = (tmp_path / "runs" / "bigram_flip").glob("lstm2-*/config.json")
    assert json.loads(config.read_text())["model_options"] == {"hidden": 4, "layers": 2}

    def refuse(*args, **kwargs):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr("panm_jax.train.loop.train_and_evaluate", refuse)
    assert transduction.main(argv) == 0
    assert json.loads(path.read_text())["rows"] == data["rows"]


def test_extra_seeds_go_to_the_decisive_cells_after_every_cells_first_seeds():
    plan = transduction.run_plan(["transduction_copy", "bigram_flip"], ["lstm", "queue_lstm"], [0], [1, 2])
    assert plan[:4] == [(t, m, 0) for t in ("transduction_copy", "bigram_flip") for m in ("lstm", "queue_lstm")]
    assert plan[4:] == [
        ("transduction_copy", "queue_lstm", 1),
        ("bigram_flip", "lstm", 1),
        ("bigram_flip", "queue_lstm", 1),
        ("transduction_copy", "queue_lstm", 2),
        ("bigram_flip", "lstm", 2),
        ("bigram_flip", "queue_lstm", 2),
    ]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--steps", "0"], "--steps: expected a positive integer, got 0"),
        (["--tasks", "copy"], "--tasks: expected names from transduction_copy,"),
        (
            ["--models", "ntm"],
            "--models: expected names from lstm,lstm2,lstm4,lstm8,stack_lstm,queue_lstm,deque_lstm, got 'ntm'",
        ),
        (["--seeds", "a"], "--seeds: expected comma-separated non-negative integers, got 'a'"),
        (["--lr", "0"], "--lr: expected a positive number, got 0.0"),
        (["--name", "a/b"], "--name: expected letters, digits, '-' or '_', got 'a/b'"),
        (["--eval-every", "0"], "--eval-every: expected a positive integer, got 0"),
        (
            ["--tasks", "transduction_copy,svo_sov", "--vocab-size", "8"],
            "--vocab-size: sets the random-string tasks' vocabulary (transduction_copy,transduction_reversal,"
            "bigram_flip), got it with svo_sov",
        ),
        (["--tasks", "transduction_copy", "--vocab-size", "1"], "--vocab-size: expected an integer of at least 2"),
        (["--max-train-length", "7"], "--max-train-length: expected at least 8 (training sources are 8..N), got 7"),
        (
            ["--max-train-length", "16", "--max-test-length", "17"],
            "--max-test-length: expected more than --max-train-length + 1 (17), got 17",
        ),
    ],
)
def test_bad_options_give_one_line(argv, message):
    with pytest.raises(SystemExit) as err:
        transduction.main(argv)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_decisive_only_trains_the_decisive_cells_alone():
    tasks, models = ["transduction_copy", "transduction_reversal"], ["stack_lstm", "queue_lstm"]
    plan = transduction.run_plan(tasks, models, [0], [1], decisive_only=True)
    assert plan == [
        ("transduction_copy", "queue_lstm", 0),
        ("transduction_reversal", "stack_lstm", 0),
        ("transduction_copy", "queue_lstm", 1),
        ("transduction_reversal", "stack_lstm", 1),
    ]
    with pytest.raises(SystemExit, match="--decisive-only: expected a decisive cell"):
        transduction.main(["--tasks", "svo_sov", "--models", "lstm", "--decisive-only"])


def test_a_smaller_scale_sets_the_random_string_tasks_options_and_leaves_the_grammars_vocabulary():
    scale = {"vocab_size": 8, "max_train_length": 16, "max_test_length": 32}
    copy = transduction.make_config("transduction_copy", "queue_lstm", 0, 10, 16, 1e-3, 5, scale, eval_every=4)
    assert dict(copy.task_options) == scale and copy.eval_every == 4 and copy.checkpoint_every == 4
    task = copy.build_task()
    assert (task.train_lengths.lo, task.train_lengths.hi) == (8, 16)
    assert (task.test_modes["test"].lo, task.test_modes["test"].hi) == (17, 32)
    assert task.input_size == 8 + 3  # eight symbols and <s>, |||, </s>
    grammar = transduction.make_config("svo_sov", "queue_lstm", 0, 10, 16, 1e-3, 5, scale)
    assert dict(grammar.task_options) == {"max_train_length": 16, "max_test_length": 32}
    paper_scale = transduction.make_config("transduction_copy", "queue_lstm", 0, 10, 16, 1e-3, 5)
    assert dict(paper_scale.task_options) == {} and paper_scale.eval_every == 10  # earlier runs still resume
    assert transduction.scale_text(scale) == "8 symbols, train 8..16, test 17..32"
    assert transduction.scale_text(transduction.PAPER_SCALE) == "paper"


def test_the_fit_step_is_the_first_validation_whose_training_length_coarse_accuracy_fits(tmp_path):
    lines = [
        {"step": 50, "loss": 1.0},
        {"step": 100, "validation": {"train": {"coarse_accuracy": 0.985}}},
        {"step": 200, "validation": {"train": {"coarse_accuracy": 0.99}}},
        {"step": 300, "validation": {"train": {"coarse_accuracy": 0.2}}},
        {"step": 400, "validation": {"train": {"coarse_accuracy": 1.0}}},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert transduction.fit_step(tmp_path, "transduction_copy", "queue_lstm") == 200
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines[:2]))
    assert transduction.fit_step(tmp_path, "transduction_copy", "queue_lstm") == ""


def test_a_smaller_scale_table_shows_the_papers_cells_without_a_difference_and_each_seeds_fit_step():
    rows = [
        _fake_row("transduction_copy", "queue_lstm", s) | {"coarse": c, "fit_step": f}
        for s, c, f in ((0, 0.25, 750), (1, 0.75, ""))
    ]
    data = {"rows": rows, "settings": {"scale": "8 symbols, train 8..16, test 17..32"}}
    text = "\n".join(transduction_table(Record("cpu-2cores", "transduction_small", data)))
    header, _, row = ([c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()[:3])
    assert "ours - published" not in header and "published (paper's scale)" in header
    assert row[4] == "750, -" and row[5] == "0.50 ± 0.35" and row[6] == "1.00" and row[7] == "0.25, 0.75"
