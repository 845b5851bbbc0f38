"""Seeds trained together against the same seeds trained one after another: training throughput.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: about 17 minutes at the defaults
(estimated from the step times in that folder's ``seeds_speed_panm_copy_s5.json``: three programs, 200 steps
each, timed twice); there is no ``--quick``: ``--steps`` and ``--seeds`` shorten it.

    python -m benchmarks.speed.seeds_speed [--seeds 5] [--steps 200] [--model panm] [--task copy]

The paper protocol trains 5 seeds of each model and task. This times the
training loop's steady state both ways, at the paper's batch (128) and model,
on this machine's devices:

* sequential: one seed's ``train_step`` (``train.loop.Run``), fed the loop's own
  batches (``training_batch``: host generation, padding, transfer), ``--steps``
  steps, times S seeds (the S runs take S times as long: they are the same
  program on other data);
* batched: ``train.loop.Run``'s (of S configs) ``jit(vmap(train_step))`` over the S
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

``--trace DIR`` then runs the three device-only programs under
``jax.profiler.trace`` and records, per step, what the device did (from the
trace's device timeline: busy time, summed kernel time, matrix-multiply
kernels, kernel launches, the costliest kernels) beside the wall time:
``seeds_trace_<model>_<task>_s<S>.json``. On a GPU it says whether the
batched step waits on launches or on its kernels' work.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import jax

from benchmarks import allocator, common
from panm_jax.train.config import TrainConfig
from panm_jax.train.loop import Run, training_batch


def single_stepper(config: TrainConfig, reuse: bool = False):
    """One seed's training step as ``step(i)``, warmed up (compiled) here; ``reuse``: one batch for every step."""
    run = Run(config)
    first = run.shard(training_batch(run.task, config, 0, run.buckets))
    state = run.state

    def step(i: int):
        nonlocal state
        batch = first if reuse else run.shard(training_batch(run.task, config, i, run.buckets))
        state, m = run.train_step(state, batch)
        return state, m

    jax.block_until_ready(step(0))
    return step


def batched_stepper(configs: list[TrainConfig], reuse: bool = False):
    """The S seeds' ``jit(vmap(train_step))`` as ``step(i)``, warmed up here; ``reuse``: one stacked batch."""
    group = Run(configs)
    active = [True] * len(configs)
    first = group.batch([0] * len(configs))
    state = group.state

    def step(i: int):
        nonlocal state
        batch = first if reuse else group.batch([i] * len(configs))
        state, m = group.advance(state, batch, active)
        return state, m

    jax.block_until_ready(step(0))
    return step


def time_steps(step, steps: int) -> float:
    """Seconds for ``steps`` calls of a warmed-up ``step`` (steps 1..steps), up to the last result's readiness."""
    t0 = time.perf_counter()
    for i in range(1, steps + 1):
        out = step(i)
    jax.block_until_ready(out)
    return time.perf_counter() - t0


def trace_programs(programs: dict, steps: int, logdir: Path) -> list[dict]:
    """Each warmed-up program (device only: one batch) traced for ``steps`` steps; what the device did per step."""
    from benchmarks.speed.profile import device_timeline

    rows = []
    for label, step in programs.items():
        where = logdir / re.sub(r"\W+", "_", label).strip("_")
        wall = time_steps(step, steps) / steps
        with jax.profiler.trace(str(where)):
            time_steps(step, steps)
        t = device_timeline(where, steps)
        rows.append(
            {
                "program": label,
                "wall_ms": round(1e3 * wall, 3),
                "device_busy_ms": round(t["busy_ms"], 3),
                "kernel_ms": round(t["kernel_ms"], 3),
                "matmul_kernel_ms": round(t["matmul_ms"], 3),
                "kernels_per_step": round(t["kernels_per_step"], 1),
                "top_kernels_ms": "; ".join(f"{name} {ms:.3f}" for name, ms in t["top"]),
            }
        )
    return rows


def time_host(configs: list[TrainConfig], steps: int) -> tuple[float, float]:
    """Seconds for ``steps`` of the loop's batches alone, made and transferred, no training step: one seed's
    (``training_batch`` and ``Run.shard``) and the S seeds' stacked batch (``Run.batch`` of S configs)."""
    run, group = Run(configs[0]), Run(configs)
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
    p.add_argument(
        "--trace",
        default="",
        metavar="DIR",
        help="also trace the three device-only programs (profiler traces under DIR) and record what the device "
        "did per step: seeds_trace_<model>_<task>_s<S>.json",
    )
    p.add_argument("--trace-steps", type=int, default=5, help="steps per traced program")
    args = p.parse_args(argv)
    if args.seeds < 1 or args.steps < 1 or args.trace_steps < 1:
        raise SystemExit(
            "--seeds, --steps, --trace-steps: expected positive integers, got "
            f"{args.seeds}, {args.steps}, {args.trace_steps}"
        )
    # One bucket (the longest training length): every timed step has the warm-up step's shapes, so nothing
    # compiles inside the timing (at batch 128 nearly every Copy batch holds a length-10 example anyway).
    top = TrainConfig(task=args.task, model=args.model)
    from panm_jax.tasks import get_task

    buckets = [get_task(args.task).train_lengths.hi]
    configs = [top.replace(seed=s, buckets=buckets) for s in range(args.seeds)]
    rows = []
    wide = configs[0].replace(batch_size=args.seeds * configs[0].batch_size)
    programs = {}
    for reuse in (False, True):
        single, batched, widened = (
            single_stepper(configs[0], reuse),
            batched_stepper(configs, reuse),
            single_stepper(wide, reuse),
        )
        t_single = time_steps(single, args.steps)
        t_batched = time_steps(batched, args.steps)
        t_wide = time_steps(widened, args.steps)
        programs = {
            "one seed": single,
            f"{args.seeds} seeds batched (vmap)": batched,
            f"one seed at batch {wide.batch_size}": widened,
        }
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
    command = common.portable_command(argv, "benchmarks.speed.seeds_speed")
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
    path = common.write_results(
        name, "Seeds trained together against one after another", rows, cols, common.environment(), notes, command
    )
    print(common.markdown_table(rows, cols))
    print("wrote", path)
    if args.trace:
        trace_rows = trace_programs(programs, args.trace_steps, Path(args.trace))
        trace_cols = list(trace_rows[0])
        trace_notes = (
            f"The device-only programs of the table above (one batch made before the timing), each timed for "
            f"{args.trace_steps} steps ('wall_ms', per step) and then run {args.trace_steps} more steps under "
            "jax.profiler.trace. From the trace's device timeline (the processes it names /device:...; none on "
            "a CPU, where the device columns are 0): 'device_busy_ms', the time per step at least one kernel "
            "ran; 'kernel_ms', the kernels' summed time; 'matmul_kernel_ms', that of the cuBLAS/CUTLASS "
            "matrix-multiply kernels; 'kernels_per_step', how many kernels a step launched; 'top_kernels_ms', "
            "the kernels that took the most time. Where busy is far below wall, the device waits on the "
            "launches of a chain of small kernels; traces kept in the command's --trace folder."
        )
        path = common.write_results(
            f"seeds_trace_{args.model}_{args.task}_s{args.seeds}",
            "Seeds trained together against one seed: what the device does per step",
            trace_rows,
            trace_cols,
            common.environment(),
            trace_notes,
            command,
        )
        print(common.markdown_table(trace_rows, trace_cols))
        print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
