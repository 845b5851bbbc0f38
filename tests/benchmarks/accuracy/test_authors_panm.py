"""The authors'-code harness: its reading of their test log, its table, and its argument checks (no torch here)."""

from __future__ import annotations

import pytest

from benchmarks.accuracy import authors_panm


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


def test_final_weights_rows_follow_with_their_own_mean_when_tested():
    rows = [
        {
            "seed": s,
            "steps": 50000,
            "selected_step": 4400 * (s + 1),
            **dict(zip(authors_panm.MODES, v)),
            **{f"last_{m}": x + 1 for m, x in zip(authors_panm.MODES, v)},
        }
        for s, v in enumerate([(100, 100, 86, 50, 33), (100, 99, 88, 54, 35)])
    ]
    table = authors_panm.summary_rows("copy", rows)
    assert [r["row"] for r in table][5:] == [
        "seed 0, final weights",
        "seed 1, final weights",
        "final weights, mean ± std (2 seeds)",
        "final weights, mean - published",
    ]
    assert table[0]["selected_step"] == 4400 and table[1]["selected_step"] == 8800
    assert table[5]["selected_step"] == 50000 and table[5]["8L+1"] == "34.00"
    assert table[7]["4L+1"] == "53.0 ± 2.8"
    assert table[8]["8L+1"] == "-1.0"  # mean 35 against 36


# The training log as the authors' script writes it: tqdm's bar (carriage returns, no newline) on the
# same lines as its prints; each validation follows the "Iteration: N" line of step N.
TRAIN_LOG = (
    "\r  0%|  | 0/600 [00:00<?, ?it/s]Iteration: 0\tLoss: 0.70\tError in bits per sequence: 5.0\nEVAL ...\n"
    "SAVE MODEL BEST TO:\n x-best.pt\n\r 33%|  | 200/600 [00:01<00:02, 9it/s]Iteration: 200\tLoss: 0.1\t"
    "Error in bits per sequence: 1.0\nEVAL ...\nSAVE MODEL BEST TO:\n x-best.pt\n"
    "\r 67%|  | 400/600 [00:02<00:01, 9it/s]Iteration: 400\tLoss: 0.05\tError in bits per sequence: 0.5\n"
    "EVAL ...\n\r100%|  | 600/600 [00:03<00:00, 9it/s]SAVE LAST MODEL TO:\n x-last.pt\n"
)


def test_the_selected_step_is_that_of_the_last_best_save():
    assert authors_panm.selected_step(TRAIN_LOG) == 200
    assert authors_panm.selected_step(TRAIN_LOG.replace("SAVE MODEL BEST", "no save")) is None
    resumed = TRAIN_LOG + "RESUME FROM STEP 400: x\n\rIteration: 400\tLoss: 0.05\tE\nEVAL ...\nSAVE MODEL BEST TO:\n"
    assert authors_panm.selected_step(resumed) == 400


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
    from benchmarks.accuracy import authors_resumable

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
    from benchmarks.accuracy import authors_resumable

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


# A stand-in for torch (the runner needs only these five functions) and a script shaped like the
# authors' run_algo_task.py: its state moves with all three random generators at every step.
_FAKE_TORCH = """
import pickle
_state = [12345]
def get_rng_state(): return list(_state)
def set_rng_state(s): _state[:] = s
def draw():
    _state[0] = (_state[0] * 1103515245 + 12345) % 2**31
    return _state[0]
def save(obj, path):
    with open(path, "wb") as f: pickle.dump(obj, f)
def load(path, map_location=None, weights_only=None):
    with open(path, "rb") as f: return pickle.load(f)
"""
_FAKE_SCRIPT = """
import os, random, sys
import numpy as np
import torch
def tqdm(x): return x
class Args: pass
args = Args(); args.mode = sys.argv[1]; args.seed = 3
num_iter = int(sys.argv[2]); save_dirlast = sys.argv[3]
class Holder:
    def __init__(self): self.w = 0
    def state_dict(self): return {"w": self.w}
    def load_state_dict(self, d): self.w = d["w"]
model, optimizer = Holder(), Holder()
best_loss = 10**9
losses, errors, rel_errors, loss_pls = [], [], [], []

np.random.seed(args.seed)
random.seed(args.seed)
for iter in tqdm(range(num_iter)):
\tif os.environ.get("CRASH_AT") == str(iter):
\t\tsys.exit(3)
\tmodel.w = (model.w * 31 + torch.draw() % 97 + int(np.random.randint(1000)) + random.randint(0, 9)) % 10**9
\toptimizer.w += 1
\tlosses.append(model.w % 13)
\tif iter % 2 == 0:
\t\tprint(f"Iteration: {iter}\\tLoss: {sum(losses)}\\tError in bits per sequence: {model.w % 7}")
\t\tbest_loss = min(best_loss, model.w % 11)
\t\tlosses = []
torch.save({"w": model.w, "opt": optimizer.w, "best": best_loss}, save_dirlast)
"""


def test_a_training_stopped_after_a_saved_state_and_run_again_ends_where_the_unbroken_one_does(tmp_path):
    import os
    import pickle
    import subprocess
    import sys

    (tmp_path / "torch.py").write_text(_FAKE_TORCH)
    (tmp_path / "run_algo_task.py").write_text(_FAKE_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def run(name, crash_at=None):
        cmd = [sys.executable, str(authors_panm.RUNNER), "4", "run_algo_task.py", "train", "11", f"{name}.pt"]
        extra = {"CRASH_AT": str(crash_at)} if crash_at is not None else {}
        return subprocess.run(cmd, cwd=tmp_path, env={**env, **extra}, capture_output=True, text=True, timeout=120)

    unbroken = run("unbroken")
    assert unbroken.returncode == 0, unbroken.stderr
    assert "RESUME STATE SAVED AT STEP 8" in unbroken.stdout and "TRAINING SECONDS" in unbroken.stdout
    crashed = run("resumed", crash_at=7)  # stops after the state of step 4 was saved
    assert crashed.returncode == 3 and "RESUME STATE SAVED AT STEP 4" in crashed.stdout
    resumed = run("resumed")
    assert resumed.returncode == 0, resumed.stderr
    assert "RESUME FROM STEP 4" in resumed.stdout
    final = [pickle.loads((tmp_path / f"{name}.pt").read_bytes()) for name in ("unbroken", "resumed")]
    assert final[0] == final[1] and final[0]["opt"] == 11
    lines = [[x for x in run_.stdout.splitlines() if x.startswith("Iteration: ")] for run_ in (unbroken, resumed)]
    assert lines[1] == [x for x in lines[0] if int(x.split()[1]) >= 4]  # the same lines from the resume point on


def test_the_runner_refuses_a_missing_or_bad_every():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(authors_panm.RUNNER), "0", "x.py"], capture_output=True, text=True)
    assert done.returncode != 0 and "EVERY a positive integer" in done.stderr
