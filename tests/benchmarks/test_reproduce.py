"""The reproduction table's arithmetic (benchmarks/reproduce.py), without training."""

from __future__ import annotations

from benchmarks.reproduce import AUTHORS_CODE_COPY_23MIN, MODES, PUBLISHED, make_config, summarize


def _result(accs, step=500, steps_trained=900):
    return {"metric": "token_accuracy", "step": step, "steps_trained": steps_trained,
            "modes": [{"mode": m, "token_accuracy": a} for m, a in zip(MODES, accs)]}


def test_summary_puts_published_numbers_and_differences_beside_ours():
    runs = {"panm": [_result([1.0, 1.0, 0.8, 0.5, 0.3]), _result([1.0, 0.98, 0.9, 0.6, 0.4])]}
    rows = summarize("copy", runs)
    ours, published, diff, yardstick = rows
    assert ours["row"] == "ours" and ours["seeds"] == 2
    assert ours["2L+1"] == "85.0 ± 7.1"  # mean of 80 and 90; sample std 7.07
    assert published["row"] == "published (panm)" and published["2L+1"] == "84"
    assert diff["2L+1"] == "+1.0" and diff["8L+1"] == f"{35.0 - 36:+.1f}"
    assert yardstick["L+1"] == f"{AUTHORS_CODE_COPY_23MIN[1]:g}"


def test_models_without_a_published_row_use_best_other_except_panm():
    rows = summarize("reverse", {"lstm": [_result([1, 1, 0.5, 0.3, 0.2])]})
    assert [r["row"] for r in rows] == ["ours", "published (best other)", "ours - published"]
    assert set(PUBLISHED) == {"copy", "reverse", "mix", "dynamic_recall", "priority_sort", "id_sort"}


def test_protocols():
    paper = make_config("id_sort", "panm", 0, quick=False, minutes=20)
    assert (paper.num_steps, paper.optimizer.name, paper.optimizer.learning_rate, paper.batch_size) == (
        100_000, "rmsprop", 1e-4, 128)
    quick = make_config("copy", "panm", 1, quick=True, minutes=20)
    assert quick.max_minutes == 20 and quick.optimizer.name == "adam" and quick.select_mode == "L+1"
