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


def test_resumable_runner_inserts_the_restore_after_the_seeding_and_the_save_at_the_top_of_each_step():
    from benchmarks import authors_resumable

    source = (
        "np.random.seed(args.seed)\nrandom.seed(args.seed)\n\nfor iter in tqdm(range(num_iter)):\n\tannelr = iter\n"
    )
    patched = authors_resumable.patch(source).splitlines()
    assert patched == [
        "np.random.seed(args.seed)",
        "random.seed(args.seed)",
        "_resume_from = _resume_load(globals())",
        "",
        "for iter in tqdm(range(_resume_from, num_iter)):",
        "\t_resume_save(globals(), iter)",
        "\tannelr = iter",
    ]


@pytest.mark.parametrize(
    "source, name, count",
    [
        ("random.seed(args.seed)\nfor iter in tqdm(range(num_iter)):\n", "the seeding", 0),  # no newline before
        ("\nrandom.seed(args.seed)\nfor i in range(9):\n", "the training loop", 0),
        ("\nrandom.seed(args.seed)\n" * 2 + "for iter in tqdm(range(num_iter)):\n", "the seeding", 2),
    ],
)
def test_resumable_runner_refuses_a_script_whose_anchors_are_not_there_exactly_once(source, name, count):
    from benchmarks import authors_resumable

    with pytest.raises(SystemExit, match=f"expected {name} .* exactly once, found it {count} times"):
        authors_resumable.patch(source)


def test_save_every_runs_the_training_under_the_resumable_runner(tmp_path):
    import argparse

    args = argparse.Namespace(peer_python="py", task="copy", save_every=0)
    plain = authors_panm.train_command(args, tmp_path, 3)
    assert plain[:2] == ["py", "run_algo_task.py"] and plain[-1] == "-mode=train" and "-seed=3" in plain
    args.save_every = 500
    resumable = authors_panm.train_command(args, tmp_path, 3)
    assert resumable[:4] == ["py", str(authors_panm.RUNNER), "500", "run_algo_task.py"]
    assert resumable[4:] == plain[2:]
    assert authors_panm.RUNNER.is_file()


def test_resume_arguments_are_checked(tmp_path):
    (tmp_path / "baselines").mkdir()
    (tmp_path / "run_algo_task.py").write_text("")
    (tmp_path / "baselines" / "panm.py").write_text("")
    base = ["--peer-python", "python", "--panm", str(tmp_path)]
    with pytest.raises(SystemExit, match="--save-every: expected 0 or a positive integer, got -1"):
        authors_panm.main(base + ["--save-every", "-1"])
    with pytest.raises(SystemExit, match=r"--check-resume: expected --save-every between 1 and --steps - 1 \(399\)"):
        authors_panm.main(base + ["--check-resume", "--steps", "400", "--save-every", "400"])
