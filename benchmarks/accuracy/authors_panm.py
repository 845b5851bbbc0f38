"""The PANM authors' own code trained and tested on Copy or Reverse, several seeds: the yardstick, rerunnable.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: 10,000 steps (the default) took about
50 minutes of training per seed, three seeds at once with one thread each (``authors_panm_copy_10000.json``;
the defaults train seeds 0-2 one after another), then the tests run one at a time; 50,000 steps took
160 to 282 minutes per seed (``authors_panm_copy_50000.json``). There is no ``--quick``.

Run (torch is an optional extra of the benchmarks, in a virtual environment of
its own, never the library's)::

    python3 -m venv /tmp/peers-venv && /tmp/peers-venv/bin/pip install torch numpy tqdm
    python -m benchmarks.accuracy.authors_panm --peer-python /tmp/peers-venv/bin/python --panm PATH/TO/PANM \\
        [--task copy] [--seeds 0,1,2] [--steps 10000] [--parallel 3] [--threads 1] [--save-every 1000] [--test-last]

``--panm`` is a checkout of thaihungle/PANM (the code of Le et al. 2024). Each
seed runs that checkout's own pipeline, unchanged, as its README gives it:

* training: ``run_algo_task.py -task_json=J -model_name=panm -mode=train
  -seed=S`` with the repository's ``tasks/<task>.json`` (controller 256, so
  128-wide GRUs; lengths 1-10) and its ``iter`` set to ``--steps``; batch 128,
  RMSprop (lr 1e-4, alpha 0.95, momentum 0.9), gradient values clipped at 10;
  every 200 steps it validates on 10 batches at length 21 (2L+1) and keeps the
  checkpoint with the lowest error there;
* testing (one process at a time: the script keeps the autograd graph in its
  test mode too, about 9 GB at length 81): the same script with ``-mode=test -genlen=G`` for G = 0.9, 1, 2, 4,
  8, i.e. lengths int(10 G) + 1 = 10, 11, 21, 41, 81, on that best checkpoint,
  10 batches of 128 each. Its printed ``bit_error_per_sequence E --> R`` has
  ``R`` the mean fraction of wrong output tokens (argmax against the one-hot
  target, ``mode_toy = onehot``), so token accuracy is ``100 (1 - R)``.

The only thing added around it: ``tensorboard_logger`` (its logging of curves,
which needs TensorFlow's protobufs) is replaced by a module whose two functions
do nothing, put first on ``PYTHONPATH``. ``--threads`` sets ``OMP_NUM_THREADS``
for each process (torch's CPU results depend on the thread count through the
order of its sums, so it is recorded: a training's in its ``train.done``).

Each seed has a folder ``<workdir>/<task>-<steps>/s<seed>`` (the task file, the
logs, the checkpoints, ``train.log``, ``test_<G>.log``); a finished training
(``train.done``) and a finished test (its log holds the result line) are not run
again, so an interrupted command continues where it stopped.

A training of 50,000 steps takes hours on a CPU, and the authors' script cannot
resume one. ``--save-every K`` runs it under ``benchmarks/accuracy/authors_resumable.py``,
which adds only this: the training state (weights, optimiser, random states,
best validation error, step) is saved every ``K`` steps and restored when the
same command runs again. ``--check-resume`` (with ``--steps`` and
``--save-every``) checks that a resumed training is the unbroken one. It trains
the first seed unbroken, then again from the last state that run saved, and
compares the final weights bit for bit and the validation lines logged after that
step; a third run trains the seed from the start again, which shows whether
``-seed`` repeats a run (the script seeds torch after building the model, so its
initial weights are drawn afresh). It writes ``authors_panm_resume_check_<task>.json`` and exits 1 if
they differ. Writes
``benchmarks/results/<device>/authors_panm_<task>_<steps>.json``: per seed,
and mean ± sample std over the seeds, beside Le et al. 2024's published row,
with the step each seed's kept checkpoint was saved at (read from its training
log). ``--test-last`` also tests each seed's final weights the same way: the
script keeps only its best checkpoint for testing, so this shows what the
selection on 2L+1 changes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks import common
from benchmarks.accuracy import published
from panm_jax import enable_compile_cache

MODES = ("L", "L+1", "2L+1", "4L+1", "8L+1")
GENLEN = {"L": "0.9", "L+1": "1", "2L+1": "2", "4L+1": "4", "8L+1": "8"}  # int(10 G) + 1 = 10, 11, 21, 41, 81
# The published row beside ours: PANM's of Le et al. 2024, Tables 13 (Copy) and 14 (Reverse).
PUBLISHED = {task: published.algorithmic(task)["PANM"] for task in ("copy", "reverse")}
RESULT = re.compile(r"bit_error_per_sequence (\S+) -->(\S+) over (\d+) samples")
STUB = "def configure(*args, **kwargs):\n    pass\n\n\ndef log_value(*args, **kwargs):\n    pass\n"


def token_accuracy(log_text: str) -> float:
    """100 (1 - R) from the test log's ``bit_error_per_sequence E -->R over N samples`` line."""
    found = RESULT.findall(log_text)
    if not found:
        raise ValueError("no 'bit_error_per_sequence E -->R over N samples' line in the test log")
    return 100.0 * (1.0 - float(found[-1][1]))


def _run(cmd: list[str], cwd: Path, env: dict[str, str], log: Path, append: bool = False) -> None:
    with open(log, "a" if append else "w") as f:
        f.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
        f.flush()
        done = subprocess.run(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT, check=False)
    if done.returncode:
        raise RuntimeError(f"{cmd[1]} exited with {done.returncode}; its output is in {log}")


def pipeline_command(args, folder: Path, seed: int, run_dir: Path | None = None) -> list[str]:
    """The authors' ``run_algo_task.py`` for one seed's folder, without its ``-mode``: train and test share it.
    ``run_dir``: the folder of its ``logs/`` and ``saved/`` checkpoints, ``folder`` unless given
    (``--test-last`` tests a copy of the final weights in ``<folder>/last``)."""
    run_dir = run_dir or folder
    return [
        args.peer_python,
        "run_algo_task.py",
        f"-task_json={folder / f'{args.task}.json'}",
        "-model_name=panm",
        f"-seed={seed}",
        f"-log_dir={run_dir / 'logs'}",
        f"-save_dir={run_dir / 'saved'}",
    ]


RUNNER = Path(__file__).with_name("authors_resumable.py")
TRAINED = re.compile(r"TRAINING SECONDS (\d+)")


def train_command(args, folder: Path, seed: int) -> list[str]:
    """The training command: the authors' script as it is, or under the resumable runner with ``--save-every``."""
    cmd = pipeline_command(args, folder, seed) + ["-mode=train"]
    if args.save_every:
        cmd[1:2] = [str(RUNNER), str(args.save_every), "run_algo_task.py"]
    return cmd


def train_seed(seed: int, args, root: Path, env: dict[str, str]) -> dict:
    """Train one seed with the authors' pipeline unless its ``train.done`` says it was; its row so far
    (steps, and the training's minutes, threads and processes at once, kept in ``train.done``).

    With ``--save-every`` an interrupted training resumes from its last saved state when the command is
    run again (``benchmarks/accuracy/authors_resumable.py``); its log is appended to, and its minutes are the sum
    over the runs that made it up."""
    folder = root / f"s{seed}"
    for sub in ("logs", "saved"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    task = json.loads((args.panm / "tasks" / f"{args.task}.json").read_text())
    task["iter"] = args.steps
    (folder / f"{args.task}.json").write_text(json.dumps(task, indent=1) + "\n")
    t0 = time.time()
    done = folder / "train.done"
    if not done.exists():
        log = folder / "train.log"
        _run(train_command(args, folder, seed), args.panm, env, log, append=bool(args.save_every))
        found = TRAINED.findall(log.read_text()) if args.save_every else []
        seconds = int(found[-1]) if found else round(time.time() - t0)
        record = {"seconds": seconds, "threads": args.threads, "processes": args.parallel}
        done.write_text(json.dumps(record) + "\n")
    record = json.loads(done.read_text())
    return {
        "seed": seed,
        "steps": args.steps,
        "train_minutes": round(record["seconds"] / 60, 1),
        "train_threads": record["threads"],
        "train_processes": record["processes"],
    }


EVAL_STEP = re.compile(r"Iteration: (\d+)\t|SAVE MODEL BEST")


def selected_step(log_text: str) -> int | None:
    """The step whose weights the authors' script kept as its best: that of the last ``SAVE MODEL BEST`` in
    its training log, each validation following the ``Iteration: N`` line it prints at step N (every 200
    steps; tqdm's bar shares those lines, so the patterns are found anywhere in them). None if never saved."""
    step, best = None, None
    for found in EVAL_STEP.finditer(log_text):
        if found.group(1) is not None:
            step = int(found.group(1))
        else:
            best = step
    return best


def _test_lengths(base: list[str], folder: Path, prefix: str, args, env: dict[str, str]) -> dict[str, float]:
    accuracies = {}
    for mode in MODES:
        log = folder / f"{prefix}{GENLEN[mode]}.log"
        if not (log.exists() and RESULT.search(log.read_text())):
            _run(base + ["-mode=test", f"-genlen={GENLEN[mode]}"], args.panm, env, log)
        accuracies[mode] = round(token_accuracy(log.read_text()), 2)
    return accuracies


def test_seed(row: dict, args, root: Path, env: dict[str, str]) -> dict:
    """Test one trained seed at the five lengths (one process at a time: the authors' test keeps its
    autograd graph, about 9 GB at length 81); its row with the accuracies and the selected checkpoint's step.

    With ``--test-last`` the training's final weights are tested too (``last_<mode>``): the script's test
    mode loads ``<save_dir>/<task>panm-onehot/panm-<seed>-best.pt``, so a copy of the final weights under
    that name in ``<folder>/last/`` is what it tests."""
    folder = root / f"s{row['seed']}"
    row.update(_test_lengths(pipeline_command(args, folder, row["seed"]), folder, "test_", args, env))
    row["selected_step"] = selected_step((folder / "train.log").read_text())
    print(f"seed {row['seed']}: " + " / ".join(f"{row[m]:g}" for m in MODES), flush=True)
    if args.test_last:
        kept = f"{args.task}panm-onehot"
        last = folder / "last" / "saved" / kept
        last.mkdir(parents=True, exist_ok=True)
        (folder / "last" / "logs").mkdir(exist_ok=True)
        shutil.copyfile(folder / "saved" / kept / f"panm-{row['seed']}-last.pt", last / f"panm-{row['seed']}-best.pt")
        base = pipeline_command(args, folder, row["seed"], run_dir=folder / "last")
        found = _test_lengths(base, folder, "test_last_", args, env)
        row.update({f"last_{m}": v for m, v in found.items()})
        print(f"seed {row['seed']}, final weights: " + " / ".join(f"{v:g}" for v in found.values()), flush=True)
    return row


def _mean_std(rows: list[dict], keys: list[str]) -> tuple[dict, dict]:
    mean = {m: statistics.fmean(r[k] for r in rows) for m, k in zip(MODES, keys, strict=True)}
    std = {
        m: statistics.stdev([r[k] for r in rows]) if len(rows) > 1 else 0.0 for m, k in zip(MODES, keys, strict=True)
    }
    return mean, std


def summary_rows(task: str, rows: list[dict]) -> list[dict]:
    """The per-seed rows (the step of the checkpoint each kept), then mean ± sample std over them, the
    published row and ours - published; where the final weights were tested too (``last_<mode>``), their
    rows and their mean ± std follow."""
    out = [
        {
            "row": f"seed {r['seed']}",
            "steps": r["steps"],
            "selected_step": r.get("selected_step", ""),
            **{m: f"{r[m]:.2f}" for m in MODES},
        }
        for r in rows
    ]
    mean, std = _mean_std(rows, list(MODES))
    n = len(rows)
    out.append(
        {
            "row": f"mean ± std ({n} seeds)",
            "steps": rows[0]["steps"],
            **{m: f"{mean[m]:.1f} ± {std[m]:.1f}" for m in MODES},
        }
    )
    reference = PUBLISHED[task]
    out.append(
        {"row": "published (Le et al. 2024, 50,000 steps)", "steps": 50000, **dict(zip(MODES, reference, strict=True))}
    )
    out.append(
        {
            "row": "mean - published",
            "steps": "",
            **{m: f"{mean[m] - p:+.1f}" for m, p in zip(MODES, reference, strict=True)},
        }
    )
    if all(f"last_{MODES[0]}" in r for r in rows):
        keys = [f"last_{m}" for m in MODES]
        out += [
            {
                "row": f"seed {r['seed']}, final weights",
                "steps": r["steps"],
                "selected_step": r["steps"],
                **{m: f"{r[k]:.2f}" for m, k in zip(MODES, keys, strict=True)},
            }
            for r in rows
        ]
        last_mean, last_std = _mean_std(rows, keys)
        out.append(
            {
                "row": f"final weights, mean ± std ({n} seeds)",
                "steps": rows[0]["steps"],
                **{m: f"{last_mean[m]:.1f} ± {last_std[m]:.1f}" for m in MODES},
            }
        )
        out.append(
            {
                "row": "final weights, mean - published",
                "steps": "",
                **{m: f"{last_mean[m] - p:+.1f}" for m, p in zip(MODES, reference, strict=True)},
            }
        )
    return out


ITERATION = re.compile(r"Iteration: (\d+)\tLoss: (\S+)\tError in bits per sequence: (\S+)")
COMPARE_WEIGHTS = """
import json, sys, torch
a, b = (torch.load(path, map_location="cpu") for path in sys.argv[1:3])
same = sorted(a) == sorted(b)
print(json.dumps({"bitwise_equal": same and all(torch.equal(a[k], b[k]) for k in a),
                  "max_abs_diff": max(float((a[k] - b[k]).abs().max()) for k in a) if same else None}))
"""


def check_resume(args, root: Path, env: dict[str, str]) -> tuple[list[dict], bool]:
    """Train one seed unbroken, then train it again from the state the unbroken run saved last; compare.

    The unbroken run (``unbroken/``) saves its state every ``--save-every`` steps and goes on. Its last
    saved state is copied into a fresh folder (``resumed/``), where the same command resumes from it. Rows:
    the final weights (bit for bit, and the largest difference) and the validation lines each run logged
    after that step (``Iteration: S  Loss: ...  Error ...``); and whether both agree.

    A third run (``again/``) trains the same seed unbroken from the start once more, and its final weights
    are compared with the first's. That row says whether the script's ``-seed`` makes a run repeatable: it
    seeds torch after it builds the model, so the initial weights are not seeded. It is not part of the
    agreement, which is about resuming."""
    seed = args.seed_list[0]
    unbroken, resumed, again = root / "unbroken", root / "resumed", root / "again"
    train_seed(seed, args, unbroken, env)
    states = sorted((unbroken / f"s{seed}" / "saved").rglob("*.resume"))
    if not states:
        raise SystemExit("--check-resume: the unbroken run saved no state; expected --steps above --save-every")
    state = states[0]
    copy = resumed / f"s{seed}" / state.relative_to(unbroken / f"s{seed}")
    if not (resumed / f"s{seed}" / "train.done").exists():
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(state, copy)
    train_seed(seed, args, resumed, env)
    texts = [(run / f"s{seed}" / "train.log").read_text() for run in (unbroken, resumed)]
    resumed_from = re.findall(r"RESUME FROM STEP (\d+)", texts[1])
    if not resumed_from:
        raise SystemExit(
            f"--check-resume: the second run did not resume; its log is {resumed / f's{seed}' / 'train.log'}"
        )
    step = int(resumed_from[0])
    logged = [[m for m in ITERATION.findall(t) if int(m[0]) >= step] for t in texts]
    compared = _compare_weights(args, seed, unbroken, resumed)
    train_seed(seed, args, again, env)
    repeated = _compare_weights(args, seed, unbroken, again)
    same_lines = bool(logged[0]) and logged[0] == logged[1]
    rows = [
        {"check": "resumed from step", "value": step},
        {"check": "final weights bit for bit equal", "value": compared["bitwise_equal"]},
        {"check": "largest weight difference", "value": compared["max_abs_diff"]},
        {
            "check": "validation lines logged from that step (unbroken, resumed)",
            "value": f"{len(logged[0])}, {len(logged[1])}",
        },
        {"check": "those lines equal", "value": same_lines},
        {
            "check": "a second unbroken run of the seed: final weights bit for bit equal to the first's",
            "value": repeated["bitwise_equal"],
        },
        {"check": "its largest weight difference from the first", "value": repeated["max_abs_diff"]},
    ]
    return rows, compared["bitwise_equal"] and same_lines


def _compare_weights(args, seed: int, a: Path, b: Path) -> dict:
    """``{"bitwise_equal": ..., "max_abs_diff": ...}`` of the final weights (``*-last.pt``) of two runs' folders."""
    last = [next((run / f"s{seed}" / "saved").rglob("*-last.pt")) for run in (a, b)]
    done = subprocess.run(
        [args.peer_python, "-c", COMPARE_WEIGHTS, *map(str, last)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def main(argv=None) -> int:
    enable_compile_cache()  # a rerun reads the programs it compiled (panm_jax/train/compile_cache.py)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peer-python", required=True, help="a Python with torch, numpy and tqdm")
    p.add_argument("--panm", required=True, type=Path, help="a checkout of thaihungle/PANM")
    p.add_argument("--task", default="copy", choices=sorted(PUBLISHED))
    p.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    p.add_argument("--steps", type=int, default=10000, help="training steps (the task file's 'iter')")
    p.add_argument("--parallel", type=int, default=1, help="seeds run at once, each its own process")
    p.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of each process")
    p.add_argument(
        "--save-every",
        type=int,
        default=0,
        help="train under benchmarks/accuracy/authors_resumable.py, saving the training state every this many steps, "
        "so that running the command again resumes an interrupted training (0: their script as it is)",
    )
    p.add_argument(
        "--check-resume",
        action="store_true",
        help="instead of the table: train the first seed --steps steps unbroken and again from its last "
        "saved state (--save-every), and compare the two",
    )
    p.add_argument(
        "--test-last",
        action="store_true",
        help="also test each seed's final weights, beside the checkpoint the script kept (its lowest error at 2L+1)",
    )
    p.add_argument("--workdir", type=Path, default=Path("runs/authors_panm"))
    args = p.parse_args(argv)
    args.panm = args.panm.resolve()
    if not (args.panm / "run_algo_task.py").is_file() or not (args.panm / "baselines" / "panm.py").is_file():
        raise SystemExit(f"--panm: expected a checkout of thaihungle/PANM (run_algo_task.py), got {args.panm}")
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        raise SystemExit(f"--seeds: expected comma-separated integers, got {args.seeds!r}") from None
    for name in ("steps", "parallel", "threads"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name}: expected a positive integer, got {getattr(args, name)}")
    if args.save_every < 0:
        raise SystemExit(f"--save-every: expected 0 or a positive integer, got {args.save_every}")
    if args.check_resume and not 0 < args.save_every < args.steps:
        raise SystemExit(
            f"--check-resume: expected --save-every between 1 and --steps - 1 ({args.steps - 1}), got {args.save_every}"
        )
    if not seeds:
        raise SystemExit("--seeds: expected at least one seed")
    args.seed_list = seeds
    root = (args.workdir / f"{args.task}-{args.steps}").resolve()
    if args.check_resume:
        root = (args.workdir / f"check-resume-{args.task}-{args.steps}-every{args.save_every}").resolve()
    stub = root / "stub"
    stub.mkdir(parents=True, exist_ok=True)
    (stub / "tensorboard_logger.py").write_text(STUB)
    # PYTHONUNBUFFERED: the script's prints and tqdm's bar share one log, so each line is written whole.
    env = {**os.environ, "PYTHONPATH": str(stub), "OMP_NUM_THREADS": str(args.threads), "PYTHONUNBUFFERED": "1"}
    torch_version = subprocess.run(
        [args.peer_python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True, check=True
    ).stdout.strip()
    commit = subprocess.run(["git", "-C", str(args.panm), "rev-parse", "HEAD"], capture_output=True, text=True)
    command = common.portable_command(argv, "benchmarks.accuracy.authors_panm")
    measured_on = {
        **common.environment(),
        "torch": torch_version,
        "authors_code": commit.stdout.strip() or "(not a git checkout)",
    }
    if args.check_resume:
        rows, agree = check_resume(args, root, env)
        env_record = {**measured_on, "OMP_NUM_THREADS": args.threads}
        notes = (
            f"The authors' run_algo_task.py (thaihungle/PANM) on {args.task}, seed {seeds[0]}, {args.steps:,} "
            f"steps, run twice under benchmarks/accuracy/authors_resumable.py: once unbroken, saving its state every "
            f"{args.save_every:,} steps, and once from the last state the first run saved. The resumed run "
            "must give the unbroken run's weights and validation lines. A third run trains the seed unbroken "
            "once more, which says whether the script's seed makes a run repeatable (it seeds torch after "
            "building the model)."
        )
        name = f"authors_panm_resume_check_{args.task}"
        json_path = common.write_results(
            name,
            "Resuming the authors' training: the same as not stopping",
            rows,
            ["check", "value"],
            env_record,
            notes,
            command,
        )
        print(common.markdown_table(rows, ["check", "value"]))
        print("wrote", json_path)
        return 0 if agree else 1
    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        trained = list(pool.map(lambda s: train_seed(s, args, root, env), seeds))
    rows = [test_seed(row, args, root, env) for row in trained]
    cols = ["row", "steps", "selected_step", *MODES]
    table = summary_rows(args.task, rows)
    env_record = {**measured_on, "OMP_NUM_THREADS (tests)": args.threads}
    script = (
        "their run_algo_task.py unchanged"
        if not args.save_every
        else "their run_algo_task.py, trained under benchmarks/accuracy/authors_resumable.py, which saves the "
        f"training state every {args.save_every:,} steps and resumes from it and changes nothing else "
        f"(authors_panm_resume_check_{args.task}.json)"
    )
    notes = (
        f"Token accuracy (%) of the authors' PANM (thaihungle/PANM, {script}) on "
        f"{args.task} at lengths 10 / 11 / 21 / 41 / 81, trained {args.steps:,} steps with their pipeline "
        "(batch 128, RMSprop lr 1e-4, alpha 0.95, momentum 0.9, gradient values clipped at 10; 128-wide GRUs, "
        "their tasks file), the checkpoint with the lowest error at length 21 (2L+1, validated every 200 steps "
        "on 10 batches; selected_step: the step it was saved at, read from the training log) tested on 10 "
        "batches of 128 per length"
        + (
            "; the rows 'final weights' test the weights at the last step the same way (--test-last)"
            if args.test_last
            else ""
        )
        + ". Training minutes per seed: "
        + ", ".join(
            f"seed {r['seed']} {r['train_minutes']} ({r['train_processes']} process(es) at once, "
            f"{r['train_threads']} thread(s) each)"
            for r in rows
        )
        + f"; tests one at a time with {args.threads} thread(s). Published: Le et al. 2024, "
        "Pointer-Augmented Neural Memory, Tables 13-14, mean of 5 runs of 50,000 steps."
    )
    name = f"authors_panm_{args.task}_{args.steps}"
    json_path = common.write_results(
        name, f"The PANM authors' code on {args.task}, {len(rows)} seeds", table, cols, env_record, notes, command
    )
    print(common.markdown_table(table, cols))
    print("wrote", json_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
