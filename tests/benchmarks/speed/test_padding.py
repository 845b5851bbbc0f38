"""benchmarks/speed/padding.py: the efficiency rows it computes, and what it records."""

from __future__ import annotations

import pytest

from benchmarks.speed import padding


def test_rows_of_a_regular_and_a_chomsky_task():
    rows = {(r["task"], r["rows"]): r for r in padding.run(["copy", "parity_check"], 128)}
    copy = rows["copy", "train"]
    # Copy, lengths 1..10, one length per batch: real 2n + 2 steps sum to 130; (1, 2, 4, 8, 10) compute 146,
    # the fitted (2, 4, 6, 8, 10) 140.
    assert (copy["buckets_before"], copy["buckets_after"]) == ("1 2 4 8 10", "2 4 6 8 10")
    assert copy["efficiency_before"] == round(130 / 146, 3) and copy["efficiency_after"] == round(130 / 140, 3)
    assert rows["copy", "train, 3 seeds"]["efficiency_after"] < copy["efficiency_after"]  # padded to the longest
    assert ("copy", "range 41-500") not in rows  # not a Chomsky task
    chomsky = rows["parity_check", "range 41-500"]
    assert chomsky["programs_before"] == 4 and chomsky["efficiency_before"] < 0.75
    assert chomsky["efficiency_after"] >= round(1 / 1.10, 3) and chomsky["buckets_after"].endswith("500")
    assert rows["parity_check", "train"]["efficiency_after"] >= round(1 / 1.10, 3)


@pytest.mark.parametrize(
    "argv, names", [([], ["padding"]), (["--tasks", "copy"], []), (["--tasks", "copy", "--name", "t"], ["t"])]
)
def test_only_the_full_run_or_a_named_one_is_recorded(monkeypatch, argv, names, capsys):
    recorded = []
    monkeypatch.setattr(padding, "run", lambda names_, batch_size: [])
    monkeypatch.setattr(padding, "write_results", lambda name, **kw: recorded.append(name) or "a.json")
    assert padding.main(argv) == 0
    assert recorded == names


def test_bad_arguments_are_named(capsys):
    with pytest.raises(SystemExit):
        padding.main(["--tasks", "nope"])
    assert "--tasks: unknown task(s) ['nope']" in capsys.readouterr().err


def test_time_gives_the_expected_step_of_both_sets(tmp_path, monkeypatch):
    config = tmp_path / "tiny.toml"
    config.write_text(
        'task = "copy"\nmodel = "lstm"\nbatch_size = 4\nnum_steps = 10\n'
        "[task_options]\nmax_train_length = 3\n[model_options]\nhidden = 4\n"
    )
    rows, summary = padding.time_buckets(str(config), rounds=1, repeats=1)
    seconds = {r["bucket"]: r["s_per_step"] for r in rows}
    before, after = summary["before"], summary["after"]
    assert before["buckets"] == [1, 2, 3] and set(after["buckets"]) <= {1, 2, 3} and after["buckets"][-1] == 3
    assert set(seconds) == set(before["buckets"]) | set(after["buckets"])
    # Lengths 1..3 drawn uniformly: the expected step is the mean of the steps of the lengths' buckets.
    want = sum(seconds[min(b for b in before["buckets"] if b >= n)] for n in (1, 2, 3)) / 3
    assert before["expected_s_per_step"] == pytest.approx(want, abs=1e-5)
    assert before["training_s"] == pytest.approx(10 * before["expected_s_per_step"], abs=0.1)
    recorded = []
    monkeypatch.setattr(padding, "write_results", lambda name, **kw: recorded.append(name) or "a.json")
    assert padding.main(["--time", str(config), "--rounds", "1", "--repeats", "1"]) == 0
    assert recorded == ["padding_time_tiny"]
