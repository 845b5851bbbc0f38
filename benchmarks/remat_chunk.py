"""remat_chunk: the memory a training step keeps and its time, for each chunk size of the time loop.

Run: ``python -m benchmarks.remat_chunk [--case 'DNC N=256, W=32, R=4, T=50, B=32'] [--every 0,5,7,10]
[--rounds 3] [--repeats 3] [--name NAME]``. Writes ``benchmarks/results/<device>/remat_chunk[_NAME].{json,md}``.

A scan's backward pass keeps the carry of every step; the memory models'
``remat_chunk = k`` (``panm_jax/kernels/scan.py``) keeps it at every
``k``-th step and reruns each chunk of ``k`` steps in the backward pass. This
compiles one speed-suite case (``benchmarks/speed.py``, the full training step)
once per ``k`` (0: off), reads XLA's temporary memory for the step from the
compiled program (``memory_analysis``), checks that every ``k`` gives the same
loss, then times the steps in alternation, ``--rounds`` times ``--repeats``
steps each, so that a machine whose speed drifts between runs cannot skew the
comparison. ``step_s`` is the median over the rounds of each round's median;
``vs_off`` = ``step_s / step_s(k = 0)``.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics

import jax
import numpy as np

from benchmarks import common, speed


def compile_case(case: speed.Case, every: int):
    """``(compiled step, state, batch, temporary MiB)`` of ``case`` with ``remat_chunk = every``."""
    case = dataclasses.replace(case, model_options={**case.model_options, "remat_chunk": every})
    fn, state, batch, _ = speed.build_case(case)
    compiled = jax.jit(fn).lower(state, batch).compile()
    analysis = compiled.memory_analysis()
    temp = float("nan") if analysis is None else analysis.temp_size_in_bytes / 2**20
    return compiled, state, batch, temp


def compare(case: speed.Case, everys: list[int], rounds: int, repeats: int) -> list[dict]:
    """One row per chunk size: memory, the loss (checked equal to k = 0's) and the alternated step times."""
    built = {k: compile_case(case, k) for k in everys}
    losses = {k: float(step(state, batch)[1]["loss"]) for k, (step, state, batch, _) in built.items()}
    for k, loss in losses.items():
        np.testing.assert_allclose(loss, losses[everys[0]], rtol=1e-4, err_msg=f"{case.label}: the loss at k = {k}")
    times = common.time_alternately({k: b[:3] for k, b in built.items()}, rounds, repeats)
    base = statistics.median(times[everys[0]])
    return [
        {
            "case": case.label,
            "remat_chunk": k,
            "temp_mib": built[k][3],
            "step_s": statistics.median(times[k]),
            "vs_off": statistics.median(times[k]) / base,
            "loss": losses[k],
            "rounds_s": times[k],
        }
        for k in everys
    ]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", default="DNC N=256, W=32, R=4, T=50, B=32", help="a memory-model case of the speed suite")
    p.add_argument("--every", default="0,5,7,10", help="chunk sizes k; the first is the baseline (default 0,5,7,10)")
    p.add_argument("--rounds", type=int, default=3, help="alternations (default 3)")
    p.add_argument("--repeats", type=int, default=3, help="timed steps per round and k (default 3)")
    p.add_argument("--name", default="", help="a suffix of the result files' name (remat_chunk_NAME)")
    args = p.parse_args(argv)
    for name in ("rounds", "repeats"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name}: expected a positive integer, got {getattr(args, name)}")
    try:
        everys = [int(k) for k in args.every.split(",") if k.strip()]
    except ValueError:
        raise SystemExit(f"--every: expected comma-separated non-negative integers, got {args.every!r}") from None
    if not everys or min(everys) < 0 or len(set(everys)) != len(everys):
        raise SystemExit(f"--every: expected distinct non-negative integers, got {args.every!r}")
    try:
        case = speed.find_case(args.case)
    except ValueError as err:
        raise SystemExit(f"--case: {err}") from None
    if case.model not in ("ntm", "dnc", "stack_lstm", "queue_lstm", "deque_lstm"):
        raise SystemExit(f"--case: expected a memory-model case (NTM, DNC, Stack-LSTM), got {case.label!r}")
    rows = compare(case, everys, args.rounds, args.repeats)
    for row in rows:
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    notes = (
        "remat_chunk = k (0: off): the backward pass keeps the carry every k steps and recomputes each chunk. "
        "temp_mib: XLA's temporary buffers of the compiled training step (memory_analysis), the memory the step "
        f"needs beyond its inputs and outputs. Steps timed in alternation, {args.rounds} rounds of {args.repeats} "
        "steps after one warm-up step; step_s: the median of the rounds' medians (each round's in the JSON); "
        f"vs_off = step_s / step_s at k = {everys[0]}; loss: the step's loss, equal for every k (checked)."
    )
    paths = common.write_results(
        "remat_chunk" + (f"_{args.name}" if args.name else ""),
        "Chunked rematerialisation (remat_chunk): memory and time of a training step",
        rows,
        ["case", "remat_chunk", "temp_mib", "step_s", "vs_off", "loss"],
        common.environment(),
        notes,
        command=f"python -m benchmarks.remat_chunk --case '{args.case}' --every {args.every} "
        f"--rounds {args.rounds} --repeats {args.repeats}" + (f" --name {args.name}" if args.name else ""),
    )
    print("wrote", *paths)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
