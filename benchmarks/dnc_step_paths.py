"""The speed suite's DNC training steps with the link in XLA and in the CPU kernel, alternated in one process.

Run: ``python -m benchmarks.dnc_step_paths [--slots 64,256,1024] [--rounds 3] [--repeats 3]``.
Writes ``benchmarks/results/<device>/dnc_step_paths.{json,md}``.

``dnc.step`` computes the temporal link and its directional weights either in
XLA (``PANM_JAX_DNC_LINK=xla``, the hand-written VJP of
``panm_jax/kernels/_dnc_vjp.py``) or, on a CPU, in the C++ kernel of
``panm_jax/kernels/_dnc_link_cpu.py``. This compiles each DNC case of
``benchmarks/speed.py`` (the full training step: data, forward, backward,
update) once with each, checks that both give the same loss, then times them in
alternation, ``--rounds`` times ``--repeats`` steps each: a before/after
comparison that a machine whose speed drifts between runs (this project's
CPU: 10-50 %) cannot skew. ``xla_s`` and ``kernel_s`` are the medians over the
rounds of each round's median; ``speedup`` = ``xla_s / kernel_s``.
"""

from __future__ import annotations

import argparse
import os
import statistics
from unittest import mock

import jax
import numpy as np

from benchmarks import common, speed
from panm_jax.kernels import _dnc_link_cpu

PATHS = ("xla", "cpu")  # PANM_JAX_DNC_LINK: the XLA link, the CPU kernel


def compare(case: speed.Case, rounds: int, repeats: int) -> dict:
    """One row: ``case`` compiled with each link path, the loss of both checked equal, then timed alternately."""
    compiled = {}
    for path in PATHS:
        with mock.patch.dict(os.environ, {"PANM_JAX_DNC_LINK": path}):  # read when the step is traced
            fn, state, batch, _ = speed.build_case(case)
            compiled[path] = (jax.jit(fn).lower(state, batch).compile(), state, batch)
    losses = {}
    for path, (step, state, batch) in compiled.items():
        _, metrics = step(state, batch)
        losses[path] = float(metrics["loss"])
    np.testing.assert_allclose(losses["cpu"], losses["xla"], rtol=1e-4, err_msg=f"{case.label}: the two paths' loss")
    times = common.time_alternately(compiled, rounds, repeats)
    xla_s, kernel_s = (statistics.median(times[p]) for p in PATHS)
    return {
        "case": case.label,
        "xla_s": xla_s,
        "kernel_s": kernel_s,
        "speedup": xla_s / kernel_s,
        "loss": losses["cpu"],
        "rounds_xla_s": times["xla"],
        "rounds_kernel_s": times["cpu"],
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--slots", default="64,256,1024", help="the speed suite's DNC cases by N (default 64,256,1024)")
    p.add_argument("--rounds", type=int, default=3, help="alternations (default 3)")
    p.add_argument("--repeats", type=int, default=3, help="timed steps per round and path (default 3)")
    args = p.parse_args(argv)
    for name in ("rounds", "repeats"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name}: expected a positive integer, got {getattr(args, name)}")
    if not _dnc_link_cpu.available():
        raise SystemExit(f"the DNC link's CPU kernel cannot be built here: {_dnc_link_cpu._register()}")
    try:
        cases = [speed.find_case(f"DNC N={n.strip()}, W=32, R=4, T=50, B=32") for n in args.slots.split(",")]
    except ValueError as err:
        raise SystemExit(f"--slots: {err}") from None
    rows = []
    for case in cases:
        rows.append(compare(case, args.rounds, args.repeats))
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in rows[-1].items()}, flush=True)
    notes = (
        f"Each case's training step compiled with each link path and timed in alternation, {args.rounds} rounds of "
        f"{args.repeats} steps after one warm-up step; xla_s, kernel_s: the median of the rounds' medians (each "
        "round's in the JSON); speedup = xla_s / kernel_s; loss: the step's loss, equal on both paths (checked)."
    )
    paths = common.write_results(
        "dnc_step_paths",
        "DNC training steps: the link in XLA against the CPU kernel, one process",
        rows,
        ["case", "xla_s", "kernel_s", "speedup", "loss"],
        common.environment(),
        notes,
        command=f"python -m benchmarks.dnc_step_paths --slots {args.slots} --rounds {args.rounds} "
        f"--repeats {args.repeats}",
    )
    print("wrote", *paths)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
