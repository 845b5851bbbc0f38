"""The speed suite's CPU training steps data-parallel over K host devices: one process per step and K, alternating.

Run: ``python -m benchmarks.host_devices [--cases 'NTM ctrl 100, 128x20, Copy n=20, B=128;PANM D=256']
[--devices 1,2] [--rounds 2] [--repeats 5]``. Writes
``benchmarks/results/<device>/host_devices.{json,md}`` (``--name`` adds a suffix).

XLA's CPU runtime splits one operation over its threads only where the
operation is large, and a recurrent step is a long chain of small ones, so a
step may leave cores idle that the floor (``benchmarks.speed``) counts.
``XLA_FLAGS=--xla_force_host_platform_device_count=K`` makes the CPU K devices,
each running its share of the computation on a thread of its own, and
``panm-jax train`` then splits every batch over them (data parallel, the
gradients summed across devices), as it does over several GPUs. The count can
only be chosen when a process starts, so each measurement here is its own process,
and the process places the state and batch on a mesh of its devices exactly as
the training loop does (``panm_jax.train.sharding``).

For each case (a label of ``benchmarks.speed.CASES``), each K is run in turn,
``--rounds`` times (``benchmarks.allocators.compare``: the row of a K has the
median over its rounds of each round's median step, and its speed-up over the
first K measured in the same rounds). Every process's first-step loss must
agree with the first's to a relative 1e-5: split over devices, the batch's sums
are taken in another order, so they need not agree bit for bit.

On one CPU device the DNC calls its link kernel (``kernels/_dnc_link_cpu.py``);
over several it takes the XLA path, which XLA can partition.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys

import numpy as np

from benchmarks import allocators, common

DEFAULT_CASES = (
    "PANM D=256, Copy n=10, B=128",
    "NTM ctrl 100, 128x20, Copy n=20, B=128",
    "DNC N=64, W=32, R=4, T=50, B=32",
    "Stack-LSTM ctrl 256, T=64, B=32",
)
FLAG = "--xla_force_host_platform_device_count"
RTOL = 1e-5


def devices_env(count: int) -> dict[str, str]:
    """This process's environment with ``count`` host devices (any device count already in XLA_FLAGS replaced)."""
    flags = re.sub(rf"{FLAG}=\S*", "", os.environ.get("XLA_FLAGS", "")).split()
    return {**os.environ, "XLA_FLAGS": " ".join([*flags, f"{FLAG}={count}"])}


def child(label: str, repeats: int) -> dict:
    """Run in the measuring process: the case's step on a mesh of every device, as the training loop places it."""
    import jax

    from benchmarks import allocator, speed
    from panm_jax.train.sharding import make_mesh, replicate, shard_batch

    fn, state, batch, _ = speed.build_case(speed.find_case(label))
    mesh = make_mesh()
    state, batch = replicate(state, mesh), shard_batch(batch, mesh)
    t = common.time_compiled(jax.jit(fn), state, batch, warmup=allocators.WARMUP, repeats=repeats, keep_first=True)
    out = t["first"]
    loss = np.asarray(out[1]["loss"]).item() if isinstance(out, tuple) and isinstance(out[1], dict) else float("nan")
    return {
        "devices": mesh.devices.size,
        "median_s": t["median_s"],
        "min_s": t["min_s"],
        "page_faults": t["page_faults"],
        "loss": loss,
        "malloc": allocator.malloc_settings() or "glibc",
    }


def measure(label: str, setting: str, repeats: int) -> dict:
    """One child process with ``setting`` (a device count) host devices on ``label``; its row."""
    env = devices_env(int(setting))
    row = allocators.run_child("benchmarks.host_devices", label, repeats, env, f"{setting} host devices")
    if row["devices"] != int(setting):
        raise RuntimeError(f"asked for {setting} host devices, the process had {row['devices']}")
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--devices", default="1,2", help="comma-separated host device counts (default 1,2)")
    allocators.process_arguments(p, DEFAULT_CASES, rounds=2)
    args = p.parse_args(argv)
    allocators.check_counts(args)
    if args.child is not None:
        print(json.dumps(child(args.child, args.repeats)), flush=True)
        return 0
    from benchmarks import speed

    counts = [c.strip() for c in args.devices.split(",") if c.strip()]
    if not counts or not all(c.isdigit() and int(c) >= 1 for c in counts):
        raise SystemExit(f"--devices: expected comma-separated positive integers, got {args.devices!r}")
    try:
        labels = [speed.find_case(c.strip()).label for c in args.cases.split(";") if c.strip()]
    except ValueError as err:
        raise SystemExit(f"--cases: {err}") from None
    batches = {c.label: c.batch for c in speed.CASES}
    for label in labels:
        for c in counts:
            if batches[label] % int(c):
                raise SystemExit(f"--devices: {c} does not divide the batch of {label!r} ({batches[label]})")
    rows = [
        row
        for label in labels
        for row in allocators.compare(label, counts, args.rounds, args.repeats, run=measure, rtol=RTOL)
    ]
    for row in rows:
        row["host_devices"] = row.pop("setting")
    speedup = f"speedup_vs_{counts[0]}"
    cols = ["case", "host_devices", "step_s", "min_s", "page_faults", speedup, "malloc"]
    notes = (
        f"One process per case and device count, the counts in turn, {args.rounds} round(s); each process makes "
        f"the CPU K devices ({FLAG}=K), places the train state and batch on a mesh of them as panm-jax train does, "
        f"compiles the step, runs it {allocators.WARMUP} times, then times {args.repeats} steps. step_s: the median "
        "over the rounds of each round's median step; min_s: the fastest step of any round; page_faults: minor "
        f"page faults per timed step; {speedup}: the step of {counts[0]} device(s) over this row's. The first "
        f"step's loss agreed between the counts to a relative {RTOL:g}."
    )
    command = (
        common.env_prefix()
        + "python -m benchmarks.host_devices "
        + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    )
    name = "host_devices" + (f"_{args.name}" if args.name else "")
    env = {k: v for k, v in common.environment().items() if k not in ("num_devices",)}
    json_path, md_path = common.write_results(
        name, "The CPU training steps data-parallel over host devices", rows, cols, env, notes, command
    )
    print(common.markdown_table(rows, cols))
    print("wrote", json_path, md_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
