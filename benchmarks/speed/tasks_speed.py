"""Task generation speed: host-side NumPy batches at each task's longest test length.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: about 3 minutes at the defaults
(estimated from the per-task totals in that folder's ``tasks_speed.json``); with ``--quick`` 7 s (measured).

Run: ``python -m benchmarks.speed.tasks_speed [--quick] [--batches 1000] [--batch-size 128] [--tasks copy,dyck]
[--name NAME]``. The full measurement (the defaults) writes
``benchmarks/results/<device>/tasks_speed.json``; as with the other benchmarks,
``--quick`` records nothing, and neither does a partial run (a subset of tasks, other
batch counts or sizes) unless ``--name NAME`` asks for ``<name>.json``, so a
trial never overwrites the recorded results.

For each task (and Dyck with ``n = 3``) it times ``task.sample(rng, 128, length)``
over 1,000 batches at the upper end of the task's longest test mode (81 for the
algorithmic tasks, 153 tokens for M10AE, 96 / 192 brackets for D_2 / D_3, 128 source
words for the transduction tasks, 500 for the Chomsky-hierarchy tasks), after a few
warm-up batches. The goal:
generation is never the bottleneck, under 2 ms per batch for
the algorithmic tasks. Generation runs on the host CPU only; the JAX device is
recorded for completeness.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.common import environment, portable_command, write_results
from panm_jax.tasks import get_task, list_tasks

ALGORITHMIC = {"copy", "reverse", "mix", "dynamic_recall", "priority_sort", "id_sort"}
GOAL_MS = 2.0
WARMUP = 3
QUICK_BATCHES = 20


def _cases(names):
    for name in names:
        yield name, {}
        if name == "dyck":
            yield name, {"n": 3}


def run(batches: int, batch_size: int, names) -> list[dict]:
    rows = []
    for name, options in _cases(names):
        task = get_task(name, **options)
        mode = max(task.test_modes, key=lambda m: task.mode_range(m).hi)  # the longest test mode
        length = int(task.mode_range(mode).hi)
        rng = np.random.default_rng(0)
        for _ in range(WARMUP):
            task.sample(rng, batch_size, length)
        t0 = time.perf_counter()
        for _ in range(batches):
            task.sample(rng, batch_size, length)
        total = time.perf_counter() - t0
        ms = 1e3 * total / batches
        label = task.describe()["name"]
        row = {
            "task": label,
            "mode": mode,
            "length": length,
            "batch_size": batch_size,
            "batches": batches,
            "ms_per_batch": round(ms, 4),
            "total_s": round(total, 3),
            "goal": f"< {GOAL_MS} ms" if name in ALGORITHMIC else "",
            "meets_goal": (ms < GOAL_MS) if name in ALGORITHMIC else "",
        }
        rows.append(row)
        print(f"{label:<24} {mode:>6} length {length:>4}: {ms:9.3f} ms/batch ({total:.2f} s)", flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=1000, help="batches timed per task (default 1000)")
    parser.add_argument("--batch-size", type=int, default=128, help="examples per batch (default 128)")
    parser.add_argument("--tasks", default=",".join(list_tasks()), help="comma-separated subset of the registry")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_BATCHES} batches per task; records nothing")
    parser.add_argument(
        "--name",
        help="record the results as <name>.json (default: tasks_speed for the full "
        "measurement at the defaults; a partial run records nothing)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.batches = QUICK_BATCHES
    names = [s.strip() for s in args.tasks.split(",") if s.strip()]
    unknown = [s for s in names if s not in list_tasks()]
    if unknown:
        parser.error(f"--tasks: unknown task(s) {unknown}; known: {list_tasks()}")
    if args.batches < 1 or args.batch_size < 1:
        parser.error("--batches, --batch-size: expected positive integers")
    full = (args.batches, args.batch_size, names) == (
        parser.get_default("batches"),
        parser.get_default("batch_size"),
        list_tasks(),
    )
    name = args.name or ("tasks_speed" if full and not args.quick else None)
    rows = run(args.batches, args.batch_size, names)
    if name is None:
        print("recorded nothing (a quick or partial run; --name NAME records it as <name>.json)")
        return 0
    path = write_results(
        name=name,
        title="Task generation speed (host NumPy, ms per batch at the longest test length)",
        rows=rows,
        columns=["task", "mode", "length", "batch_size", "batches", "ms_per_batch", "total_s", "goal", "meets_goal"],
        env=environment(),
        notes=(
            "Each row times task.sample(rng, batch_size, length) over `batches` batches after "
            f"{WARMUP} warm-up batches, single-threaded NumPy on the host. The algorithmic tasks are "
            "vectorised over the batch; Dyck, M10AE and the two grammar tasks generate each example "
            "with a Python explicit-stack sampler (per-example work), so they are slower per batch."
        ),
        command=portable_command(argv, "benchmarks.speed.tasks_speed"),
    )
    print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
