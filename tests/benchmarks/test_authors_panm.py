"""The authors'-code harness: its reading of their test log, its table, and its argument checks (no torch here)."""

from __future__ import annotations

import pytest

from benchmarks import authors_panm


def test_token_accuracy_reads_the_fraction_of_wrong_tokens_from_the_last_result_line():
    log = (
        "===testing===\ncpu\nload weight saved/copypanm-onehot/panm-0-best.pt\n"
        "test_loss 0.93\nbit_error_per_sequence 9.5 -->0.25 over 10 samples\n"
        "bit_error_per_sequence 4.1 -->0.1 over 10 samples\n"
    )
    assert authors_panm.token_accuracy(log) == pytest.approx(90.0)
    with pytest.raises(ValueError, match="bit_error_per_sequence"):
        authors_panm.token_accuracy("Traceback (most recent call last):\n")


def test_the_five_test_lengths_are_the_papers():
    # The authors' test length is int(max_seq_len * genlen) + 1 with max_seq_len = 10.
    lengths = [int(10 * float(authors_panm.GENLEN[m])) + 1 for m in authors_panm.MODES]
    assert lengths == [10, 11, 21, 41, 81]


def test_summary_has_each_seed_the_mean_and_std_and_the_difference_from_the_paper():
    rows = [
        {"seed": 0, "steps": 10000, "L": 100.0, "L+1": 100.0, "2L+1": 86.0, "4L+1": 50.0, "8L+1": 33.0},
        {"seed": 1, "steps": 10000, "L": 100.0, "L+1": 99.0, "2L+1": 88.0, "4L+1": 54.0, "8L+1": 35.0},
    ]
    table = authors_panm.summary_rows("copy", rows)
    assert [r["row"] for r in table] == [
        "seed 0",
        "seed 1",
        "mean ± std (2 seeds)",
        "published (Le et al. 2024, 50,000 steps)",
        "mean - published",
    ]
    assert table[2]["4L+1"] == "52.0 ± 2.8"  # sample std of 50 and 54
    assert table[3]["4L+1"] == 52 and table[4]["4L+1"] == "+0.0" and table[4]["L+1"] == "-0.5"


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(SystemExit, match="--panm: expected a checkout"):
        authors_panm.main(["--peer-python", "python", "--panm", str(tmp_path)])
    (tmp_path / "baselines").mkdir()
    (tmp_path / "run_algo_task.py").write_text("")
    (tmp_path / "baselines" / "panm.py").write_text("")
    with pytest.raises(SystemExit, match="--seeds: expected comma-separated integers"):
        authors_panm.main(["--peer-python", "python", "--panm", str(tmp_path), "--seeds", "a,b"])
    with pytest.raises(SystemExit, match="--steps: expected a positive integer"):
        authors_panm.main(["--peer-python", "python", "--panm", str(tmp_path), "--steps", "0"])
