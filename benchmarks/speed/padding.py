"""Padding efficiency of the length buckets: real over computed time steps, per task, for training and range
evaluation, with the buckets fitted to the lengths (the default) and with powers of two (the rule before).

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: about 40 s at the defaults, most of it building
the Mathematics task's pools (measured); nothing is compiled or timed: the figures follow from the tasks' shapes.

Run: ``python -m benchmarks.speed.padding [--tasks copy,reverse_string] [--batch-size 128] [--name NAME]``.
The full measurement writes ``benchmarks/results/<device>/padding.{json,md}``; a subset records nothing
unless ``--name`` asks.

A padded time step costs what a real one costs, so the work a run wastes on padding is
``1 - efficiency``, with efficiency = real / computed time steps (``input_steps + output_steps``) averaged
over the lengths the run draws (``panm_jax.tasks.buckets.padding_efficiency``). Rows:

* ``train``: a training batch of ``--batch-size`` examples at the task's default options; its longest
  length follows ``training_length_distribution`` (uniform over the training range for a task that draws one
  length per batch, the largest of the batch's draws for one that draws per example). ``before`` is the
  earlier default, the powers of two inside the training range then its longest length; ``after`` the
  fitted default (``train.loop.default_buckets``: the fewest buckets within 10 % of the real steps).
* ``train, 3 seeds``: three seeds trained in one program, each batch padded to the longest of the three
  (``--seeds``); ``after`` is fitted to that longest length.
* ``range 41-500``: the range evaluation of Delétang et al. 2023 (every length 41..500 scored apart, each
  weighing the same) for the Chomsky-hierarchy tasks: ``before`` powers of two (64 .. 512), ``after`` fitted
  (``train.range_eval``'s default).

``programs`` counts the buckets: the compilations of the step that the buckets can cause.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.common import environment, write_results
from panm_jax.tasks import get_task, list_tasks
from panm_jax.tasks.buckets import (
    fitted_buckets,
    padding_efficiency,
    power_of_two_buckets,
    training_length_distribution,
)

SEEDS = 3  # the seeds of the "trained together" rows
RANGE = (41, 500)  # Delétang et al. 2023's test lengths, after training on 1..40


def powers_of_two_default(task) -> tuple[int, ...]:
    """The training buckets before they were fitted: the powers of two inside the training range, then its
    longest length ((1, 2, 4, 8, 10) for 1..10)."""
    lo, top = task.train_lengths.lo, task.train_lengths.hi
    return tuple(2**k for k in range(31) if lo <= 2**k < top) + (top,)


def _row(name, kind, lengths, before, after, eff_before, eff_after) -> dict:
    return {
        "task": name,
        "rows": kind,
        "lengths": lengths,
        "programs_before": len(before),
        "efficiency_before": round(eff_before, 3),
        "programs_after": len(after),
        "efficiency_after": round(eff_after, 3),
        "buckets_before": " ".join(map(str, before)),
        "buckets_after": " ".join(map(str, after)),
    }


def run(names, batch_size: int) -> list[dict]:
    rows = []
    for name in names:
        task = get_task(name)
        values, p = training_length_distribution(task, batch_size)
        before, after = powers_of_two_default(task), fitted_buckets(task, values, p)
        described = task.train_lengths.describe()
        rows.append(
            _row(
                name,
                "train",
                described,
                before,
                after,
                padding_efficiency(task, before, values, p),
                padding_efficiency(task, after, values, p),
            )
        )
        train = rows[-1]
        print(f"{name:<28} training {train['efficiency_before']:.3f} -> {train['efficiency_after']:.3f}", flush=True)
        group = fitted_buckets(task, *training_length_distribution(task, batch_size, seeds=SEEDS))
        rows.append(
            _row(
                name,
                f"train, {SEEDS} seeds",
                described,
                before,
                group,
                padding_efficiency(task, before, values, p, seeds=SEEDS),
                padding_efficiency(task, group, values, p, seeds=SEEDS),
            )
        )
        if getattr(task, "level", None) is not None and task.lengths.hi >= RANGE[1]:  # a Chomsky-hierarchy task
            lengths = range(RANGE[0], RANGE[1] + 1)
            pow2, fitted = power_of_two_buckets(RANGE[1], RANGE[0]), fitted_buckets(task, lengths)
            rows.append(
                _row(
                    name,
                    "range 41-500",
                    "41..500",
                    pow2,
                    fitted,
                    padding_efficiency(task, pow2, lengths),
                    padding_efficiency(task, fitted, lengths),
                )
            )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default=",".join(list_tasks()), help="comma-separated subset of the registry")
    parser.add_argument("--batch-size", type=int, default=128, help="examples per training batch (default 128)")
    parser.add_argument(
        "--name",
        help="record as <name>.{json,md} (default: padding for the full measurement; a subset records nothing)",
    )
    args = parser.parse_args(argv)
    names = [s.strip() for s in args.tasks.split(",") if s.strip()]
    unknown = [s for s in names if s not in list_tasks()]
    if unknown:
        parser.error(f"--tasks: unknown task(s) {unknown}; known: {list_tasks()}")
    if args.batch_size < 1:
        parser.error(f"--batch-size: expected a positive integer, got {args.batch_size}")
    full = names == list_tasks() and args.batch_size == parser.get_default("batch_size")
    name = args.name or ("padding" if full else None)
    rows = run(names, args.batch_size)
    if name is None:
        print("recorded nothing (a partial run; --name NAME records it as <name>.{json,md})")
        return 0
    command = "python -m benchmarks.speed.padding " + " ".join(argv if argv is not None else sys.argv[1:])
    json_path, md_path = write_results(
        name=name,
        title="Padding efficiency of the length buckets (real / computed time steps), before and after fitting",
        rows=rows,
        columns=[
            "task",
            "rows",
            "lengths",
            "programs_before",
            "efficiency_before",
            "programs_after",
            "efficiency_after",
            "buckets_after",
        ],
        env=environment(),
        notes=(
            "before: powers of two inside the training range, then its longest length (training), or powers of "
            "two from 64 to 512 (range evaluation); after: the fewest buckets, placed by dynamic programming, that "
            "compute at most 10 % more time steps than the real ones (panm_jax.tasks.buckets.fitted_buckets). "
            f"Training batches of {args.batch_size} examples; '{SEEDS} seeds': {SEEDS} seeds trained in one "
            "program, their batches padded to the longest. The figures follow from the tasks' shapes and length "
            "distributions: nothing is timed."
        ),
        command=command.strip(),
        settings={"batch_size": args.batch_size, "seeds_together": SEEDS, "range": list(RANGE)},
    )
    print(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
