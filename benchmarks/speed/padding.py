"""Padding efficiency of the length buckets: real over computed time steps, per task, for training and range
evaluation, with the buckets fitted to the lengths (the default) and with powers of two (the rule before).

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: about 40 s at the defaults, most of it building
the Mathematics task's pools (measured); nothing is compiled or timed: the figures follow from the tasks' shapes.

Run: ``python -m benchmarks.speed.padding [--tasks copy,reverse_string] [--batch-size 128] [--name NAME]``.
The full measurement writes ``benchmarks/results/<device>/padding.json``; a subset records nothing
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

``--time CONFIG`` turns the efficiency into time for one run configuration (``configs/demo.toml``: PANM on
Copy, batch 128): the config's training step is compiled at every bucket of both sets and timed at each in
turn (``benchmarks.common.time_alternately``: ``--rounds`` rounds of ``--repeats`` calls, so the machine's
drift falls on all of them), and the expected step over the training distribution,
``sum_n p(n) t(bucket(n))``, is given for both sets, with the training time of the config's ``num_steps``.
Writes ``padding_time_<config>.json``; about 2 minutes for the demo on the 2-core CPU (measured).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from benchmarks.common import block, environment, portable_command, time_alternately, write_results
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


def time_buckets(config_path: str, rounds: int, repeats: int) -> tuple[list[dict], dict]:
    """Per bucket of the earlier and the fitted default, the config's training step in seconds (the median of
    the rounds' medians); and the expected step and training time under each set."""
    import jax
    import numpy as np

    from panm_jax.tasks.buckets import bucket_length, pad_batch
    from panm_jax.train.config import load_config
    from panm_jax.train.loop import Run, default_buckets
    from panm_jax.train.steps import make_train_step

    config = load_config(config_path)
    run = Run(config)
    task, size = run.task, config.batch_size
    values, p = training_length_distribution(task, size)
    sets = {"before": powers_of_two_default(task), "after": default_buckets(task, size)}
    # The run's own step without donating its state, so that one state serves every call.
    step = jax.jit(make_train_step(run.graphdef, run.optimizer, task, compute_dtype=config.compute_dtype))
    rng = np.random.default_rng(0)
    compiled = {}
    for b in sorted(set(sets["before"]) | set(sets["after"])):
        batch = run.shard(pad_batch(task.sample(rng, size, int(b)), task.input_steps(b), task.output_steps(b)))
        block(step(run.state, batch))  # compile
        compiled[b] = (step, run.state, batch)
    seconds = {b: statistics.median(t) for b, t in time_alternately(compiled, rounds, repeats).items()}
    rows = [
        {"bucket": b, "s_per_step": round(t, 5), "in": " ".join(k for k in sets if b in sets[k])}
        for b, t in seconds.items()
    ]
    summary = {"config": config_path, "num_steps": config.num_steps, "rounds": rounds, "repeats": repeats}
    for kind, buckets in sets.items():
        per_length = [
            seconds[bucket_length(task, task.input_steps(int(n)), task.output_steps(int(n)), buckets)] for n in values
        ]
        expected = float(np.dot(p, per_length))
        summary[kind] = {
            "buckets": list(buckets),
            "padding_efficiency": round(padding_efficiency(task, buckets, values, p), 4),
            "expected_s_per_step": round(expected, 5),
            "training_s": round(expected * config.num_steps, 1),
        }
    summary["speedup"] = round(summary["before"]["expected_s_per_step"] / summary["after"]["expected_s_per_step"], 3)
    return rows, summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default=",".join(list_tasks()), help="comma-separated subset of the registry")
    parser.add_argument("--batch-size", type=int, default=128, help="examples per training batch (default 128)")
    parser.add_argument("--time", metavar="CONFIG", help="time a run config's step at both sets of buckets (below)")
    parser.add_argument("--rounds", type=int, default=5, help="with --time: alternating rounds (default 5)")
    parser.add_argument("--repeats", type=int, default=5, help="with --time: calls per bucket and round (default 5)")
    parser.add_argument(
        "--name",
        help="record as <name>.json (default: padding for the full measurement; a subset records nothing)",
    )
    args = parser.parse_args(argv)
    command = portable_command(argv, "benchmarks.speed.padding")
    if args.time:
        if not Path(args.time).is_file():
            parser.error(f"--time: expected a run config file, got {args.time!r}")
        if args.rounds < 1 or args.repeats < 1:
            parser.error("--rounds, --repeats: expected positive integers")
        rows, summary = time_buckets(args.time, args.rounds, args.repeats)
        for kind in ("before", "after"):
            print(f"{kind}: {summary[kind]}", flush=True)
        print(f"speedup {summary['speedup']}")
        path = write_results(
            name=args.name or f"padding_time_{Path(args.time).stem}",
            title=f"Training step per bucket of {args.time}, and the expected step before and after fitting",
            rows=rows,
            columns=["bucket", "s_per_step", "in"],
            env=environment(),
            notes=(
                f"Expected step over the training lengths (sum_n p(n) t(bucket(n))): before "
                f"{summary['before']['expected_s_per_step']} s with buckets {summary['before']['buckets']} "
                f"(padding efficiency {summary['before']['padding_efficiency']}), after "
                f"{summary['after']['expected_s_per_step']} s with {summary['after']['buckets']} "
                f"({summary['after']['padding_efficiency']}): {summary['speedup']}x; "
                f"{summary['num_steps']} steps take {summary['before']['training_s']} s and "
                f"{summary['after']['training_s']} s. Each bucket's step timed in {args.rounds} alternating rounds "
                f"of {args.repeats} calls (the median of the rounds' medians)."
            ),
            command=command,
            settings=summary,
        )
        print("wrote", path)
        return 0
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
        print("recorded nothing (a partial run; --name NAME records it as <name>.json)")
        return 0
    path = write_results(
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
        command=command,
        settings={"batch_size": args.batch_size, "seeds_together": SEEDS, "range": list(RANGE)},
    )
    print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
