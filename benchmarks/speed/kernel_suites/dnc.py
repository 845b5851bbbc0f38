"""DNC kernel speed: ``dnc.step`` rolled out with the scan wrapper, vmapped over a batch.

Sizes: N in {16, 64, 256, 1024} slots, W = 64, R = 4 read heads, B = 16
examples (``jax.vmap``), T = 50 steps; random activated controls. Compilation and
steady state are timed apart (``benchmarks.common.time_compiled``). The temporal link
update is O(N^2) per step (an [N, N] outer sum and product, and two [N, N] x [N]
products for the forward/backward weights), so at large N the step time should grow
about 16x per 4x in N; at small N fixed per-step costs (the [N, W] content addressing,
the sort, dispatch) dominate and the growth is slower. ``exponent`` is the measured
log(time ratio) / log(N ratio): 2 means quadratic.

Run: ``python -m benchmarks.speed.kernels --suite dnc [--quick]``. ``--quick`` (N in {16, 64},
few repeats) is a smoke run, not a measurement.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.common import environment, markdown_table, portable_command, time_compiled, write_results
from panm_jax.kernels import dnc
from panm_jax.kernels import scan as scan_lib

WORD_SIZE = 64  # W
NUM_READS = 4  # R
BATCH = 16  # B
STEPS = 50  # T
SIZES = (16, 64, 256, 1024)  # N
QUICK_SIZES = (16, 64)

COLUMNS = ("N", "compile_s", "median_s", "min_s", "max_s", "ms_per_step", "growth", "n2_ratio", "exponent")


def _rollout(state: dnc.DNCState, controls: dnc.DNCControls):
    """``[B]`` states, ``[T, B]`` controls -> final states and reads ``[T, B, R, W]``."""
    return scan_lib.scan(jax.vmap(dnc.step), state, controls)


def _inputs(num_slots: int, seed: int = 0) -> tuple[dnc.DNCState, dnc.DNCControls]:
    state = jax.tree_util.tree_map(
        lambda x: jnp.broadcast_to(x, (BATCH, *x.shape)), dnc.init_state(num_slots, WORD_SIZE, NUM_READS)
    )
    rng = np.random.default_rng(seed)
    raw = rng.normal(size=(STEPS, BATCH, dnc.interface_size(WORD_SIZE, NUM_READS))).astype(np.float32)
    controls = dnc.controls_from_interface(jnp.asarray(raw), WORD_SIZE, NUM_READS)  # activated once, outside the timing
    return state, jax.block_until_ready(controls)


def run(quick: bool = False) -> list[dict]:
    sizes = QUICK_SIZES if quick else SIZES
    warmup, repeats = (1, 3) if quick else (2, 20)
    rows: list[dict] = []
    for n in sizes:
        state, controls = _inputs(n)
        timing = time_compiled(_rollout, state, controls, warmup=warmup, repeats=repeats)
        row = {"N": n, **timing, "ms_per_step": 1e3 * timing["median_s"] / STEPS}
        if rows:
            prev = rows[-1]
            growth = timing["median_s"] / prev["median_s"]
            row["growth"] = growth
            row["n2_ratio"] = float((n / prev["N"]) ** 2)
            row["exponent"] = math.log(growth) / math.log(n / prev["N"])
        rows.append(row)
        print(f"[dnc] N={n}: compile {timing['compile_s']:.3f} s, {row['ms_per_step']:.4f} ms/step", flush=True)

    title = f"DNC kernel step (scan over T = {STEPS}, vmap over B = {BATCH}, W = {WORD_SIZE}, R = {NUM_READS})" + (
        " [QUICK SMOKE RUN, not a measurement]" if quick else ""
    )
    notes = (
        "median_s/min_s/max_s: one call = the whole T-step rollout of the batch (steady state, compiled once). "
        "ms_per_step = median_s / T * 1000. growth = median_s(N) / median_s(previous N); "
        "n2_ratio = (N / previous N)^2, "
        "what an O(N^2) step (the temporal link update) would give; exponent = log(growth) / log(N ratio), 2 for "
        "quadratic, lower where per-step costs linear in N or fixed still dominate."
    )
    command = portable_command(["--suite", "dnc"], "benchmarks.speed.kernels")
    print(markdown_table(rows, COLUMNS))
    if not quick:  # a smoke run is not a measurement: nothing is recorded
        path = write_results(
            name="kernels_dnc", title=title, rows=rows, columns=COLUMNS, env=environment(), notes=notes, command=command
        )
        print(f"[dnc] wrote {path}")
    return rows
