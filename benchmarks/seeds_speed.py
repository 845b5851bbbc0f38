"""Seeds trained together against the same seeds trained one after another: training throughput.

    python -m benchmarks.seeds_speed [--seeds 5] [--steps 200] [--model panm] [--task copy]

The paper protocol trains 5 seeds of each model and task. This times the
training loop's steady state both ways, at the paper's batch (128) and model,
on this machine's devices:

* sequential: one seed's ``train_step`` (``train.loop.Run``), fed the loop's own
  batches (``training_batch``: host generation, padding, transfer), ``--steps``
  steps, times S seeds (the S runs take S times as long: they are the same
  program on other data);
* batched: ``train.seeds.SeedGroup``'s ``jit(vmap(train_step))`` over the S
  seeds, fed the stacked batches of all S, ``--steps`` steps.

* one seed at S times the batch: ``train_step`` of one seed at batch ``S*B``,
  the batched step's sequences with one set of parameters. Its time against
  the batched step's says what training S parameter sets rather than one
  costs; its time against the single step's, how the device's time grows
  with the work of a step (where the S-fold work takes nearly S times as
  long, no way of batching makes S seeds much cheaper than S runs).

Compilation is left out of all three (a warm-up step first; each run compiles once
per bucket either way). The ratio is ``S * t_single / t_batched``, measured in one
run; the goal on a GPU is at least 3x for 5 seeds. Both are also timed on one
batch made before the timing and fed again at every step ("device only"): the
difference from the loop's own batches is the host's share (generation,
stacking, transfer) that the device's work does not hide. The batches alone,
made and transferred without a training step ("host only"), show how near the
host comes to setting the pace.
"""

from __future__ import annotations

import argparse
import sys
import time

import jax

from benchmarks import allocator, common
from panm_jax.train.config import TrainConfig
from panm_jax.train.loop import Run, training_batch
from panm_jax.train.seeds import SeedGroup


def time_single(config: TrainConfig, steps: int, reuse: bool = False) -> float:
    """Seconds for ``steps`` training steps of one seed; ``reuse``: one batch, made before the timing."""
    run = Run(config)
    state = run.state
    first = run.shard(training_batch(run.task, config, 0, run.buckets))
    state, m = run.train_step(state, first)
    jax.block_until_ready(m)
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        batch = first if reuse else run.shard(training_batch(run.task, config, step, run.buckets))
        state, m = run.train_step(state, batch)
    jax.block_until_ready((state, m))
    return time.perf_counter() - t0


def time_batched(configs: list[TrainConfig], steps: int, reuse: bool = False) -> float:
    """Seconds for ``steps`` steps of the S seeds together; ``reuse``: one stacked batch, made before the timing."""
    group = SeedGroup(configs)
    active = [True] * len(configs)
    first = group.batch([0] * len(configs))
    state, m = group.train_step(group.state, first, active)
    jax.block_until_ready(m)
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        batch = first if reuse else group.batch([step] * len(configs))
        state, m = group.train_step(state, batch, active)
    jax.block_until_ready((state, m))
    return time.perf_counter() - t0


def time_host(configs: list[TrainConfig], steps: int) -> tuple[float, float]:
    """Seconds for ``steps`` of the loop's batches alone, made and transferred, no training step: one seed's
    (``training_batch`` and ``Run.shard``) and the S seeds' stacked batch (``SeedGroup.batch``)."""
    run, group = Run(configs[0]), SeedGroup(configs)
    times = []
    for make in (
        lambda step: run.shard(training_batch(run.task, configs[0], step, run.buckets)),
        lambda step: group.batch([step] * len(configs)),
    ):
        jax.block_until_ready(make(0))
        t0 = time.perf_counter()
        for step in range(1, steps + 1):
            batch = make(step)
        jax.block_until_ready(batch)
        times.append(time.perf_counter() - t0)
    return times[0], times[1]


def main(argv=None) -> int:
    allocator.configure_from_environment()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=5, help="number of seeds S")
    p.add_argument("--steps", type=int, default=200, help="timed steps per run")
    p.add_argument("--model", default="panm")
    p.add_argument("--task", default="copy")
    args = p.parse_args(argv)
    if args.seeds < 1 or args.steps < 1:
        raise SystemExit(f"--seeds, --steps: expected positive integers, got {args.seeds}, {args.steps}")
    # One bucket (the longest training length): every timed step has the warm-up step's shapes, so nothing
    # compiles inside the timing (at batch 128 nearly every Copy batch holds a length-10 example anyway).
    top = TrainConfig(task=args.task, model=args.model)
    from panm_jax.tasks import get_task

    buckets = [get_task(args.task).train_lengths.hi]
    configs = [top.replace(seed=s, buckets=buckets) for s in range(args.seeds)]
    rows = []
    wide = configs[0].replace(batch_size=args.seeds * configs[0].batch_size)
    for reuse in (False, True):
        t_single = time_single(configs[0], args.steps, reuse)
        t_batched = time_batched(configs, args.steps, reuse)
        t_wide = time_single(wide, args.steps, reuse)
        seq_rate = args.steps / t_single  # steps/s of one seed alone; S seeds one after another: the same per seed
        bat_rate = args.seeds * args.steps / t_batched  # seed-steps/s
        how = ", one batch reused (device only)" if reuse else ""
        rows += [
            {
                "case": f"{args.seeds} seeds one after another{how}",
                "seconds_per_step": f"{t_single / args.steps:.4g}",
                "seed_steps_per_s": f"{seq_rate:.1f}",
                "sequences_per_s": f"{seq_rate * configs[0].batch_size:.4g}",
                "ratio": "1",
            },
            {
                "case": f"{args.seeds} seeds batched (vmap){how}",
                "seconds_per_step": f"{t_batched / args.steps:.4g}",
                "seed_steps_per_s": f"{bat_rate:.1f}",
                "sequences_per_s": f"{bat_rate * configs[0].batch_size:.4g}",
                "ratio": f"{bat_rate / seq_rate:.2f}",
            },
            {
                "case": f"one seed at batch {wide.batch_size} (the batched step's sequences){how}",
                "seconds_per_step": f"{t_wide / args.steps:.4g}",
                "seed_steps_per_s": "",
                "sequences_per_s": f"{args.steps * wide.batch_size / t_wide:.4g}",
                "ratio": f"{t_single * args.seeds / t_wide:.2f}",
            },
        ]
    h_single, h_batched = time_host(configs, args.steps)
    for case, t in (("one seed's batch", h_single), (f"the {args.seeds} seeds' stacked batch", h_batched)):
        rows.append(
            {
                "case": f"host only: {case} (generation, padding, transfer)",
                "seconds_per_step": f"{t / args.steps:.4g}",
                "seed_steps_per_s": "",
                "sequences_per_s": "",
                "ratio": "",
            }
        )
    cols = ["case", "seconds_per_step", "seed_steps_per_s", "sequences_per_s", "ratio"]
    command = "python -m benchmarks.seeds_speed " + " ".join(argv if argv is not None else sys.argv[1:])
    notes = (
        f"{args.model} on {args.task} at the paper protocol's settings (batch {configs[0].batch_size}, the "
        f"model's defaults, one length bucket), {args.steps} timed training steps after one warm-up step, the "
        "loop's own batches "
        "(host generation, padding and transfer included). 'seconds_per_step' is one step of one seed "
        "(sequential) or of all seeds at once (batched); 'ratio' is the batched throughput over the "
        "sequential (the row above), in seed-steps per second, both measured in this run; for the row of one "
        f"seed at batch {wide.batch_size}, its sequences per second over the sequential's. The 'device only' "
        "rows feed one batch, made before the timing, at every step: what the host adds is the difference. "
        "The 'host only' rows make the batches without training on them: where one is near its step's time, "
        "the host, not the device, sets the pace."
    )
    name = f"seeds_speed_{args.model}_{args.task}_s{args.seeds}"
    common.write_results(
        name, "Seeds trained together against one after another", rows, cols, common.environment(), notes, command
    )
    print(common.markdown_table(rows, cols))
    print("wrote", common.RESULTS_DIR / common.device_slug() / f"{name}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
