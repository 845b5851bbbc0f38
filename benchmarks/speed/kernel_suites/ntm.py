"""NTM kernel: a jitted ``scan`` rollout against a Python loop over a jitted step.

Configuration: T = 100 steps, N = 128 slots, W = 20, one read and one
write head, B = 32 examples (``vmap``), random raw interface vectors split by
``controls_from_interface``; B = 1 is measured beside it. Both variants run the
same step function; the loop variant dispatches one compiled step per time step
from Python (what per-step PyTorch/TF loops do), the scan variant compiles the
whole rollout. The ratio is (loop time) / (scan time), measured in one run.

Why the ratio falls with B: the loop pays a fixed dispatch cost per step, the
scan pays none, and both pay the step's arithmetic, which grows with B. At
B = 32 one step reads and writes the [B, N, W] memory several times (content
addressing of the write and read heads over M_{t-1} and M_t, the erase/add
write, the read), so the arithmetic, not the dispatch, sets the time.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import common
from panm_jax.kernels import ntm
from panm_jax.kernels.scan import scan

T, N, W, R, H, S = 100, 128, 20, 1, 1, 3
BATCHES = (1, 32)


def _step(state, raw):
    return ntm.step(state, ntm.controls_from_interface(raw, W, R, H, S))


def _measure(batch: int, repeats: int) -> list[dict]:
    B = batch
    p = ntm.interface_size(W, R, H, S)
    raws = jnp.asarray(np.random.default_rng(0).normal(size=(B, T, p)), jnp.float32)
    state = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (B,) + x.shape), ntm.init_state(N, W, R, H))

    def rollout(state, raws):
        return jax.vmap(lambda s, r: scan(_step, s, r))(state, raws)

    scan_t = common.time_compiled(rollout, state, raws, repeats=repeats)

    batched_step = jax.jit(jax.vmap(_step))
    import time

    t0 = time.perf_counter()
    common.block(batched_step(state, raws[:, 0]))
    loop_compile = time.perf_counter() - t0
    time_major = jnp.swapaxes(raws, 0, 1)  # [T, B, P]: a slice per step, outside the timed loop

    def python_loop():
        s = state
        outs = []
        for t in range(T):  # the per-step loop that panm_jax avoids; this is the baseline
            s, r = batched_step(s, time_major[t])
            outs.append(r)
        return s, outs

    loop_t = common.time_calls(python_loop, warmup=1, repeats=max(3, repeats // 4))
    ratio = loop_t["median_s"] / scan_t["median_s"]
    return [
        {
            "B": B,
            "variant": "scan (one compiled rollout)",
            "compile_s": scan_t["compile_s"],
            "median_s": scan_t["median_s"],
            "min_s": scan_t["min_s"],
            "max_s": scan_t["max_s"],
            "ms_per_step": 1e3 * scan_t["median_s"] / T,
        },
        {
            "B": B,
            "variant": "python loop over jitted step",
            "compile_s": loop_compile,
            "median_s": loop_t["median_s"],
            "min_s": loop_t["min_s"],
            "max_s": loop_t["max_s"],
            "ms_per_step": 1e3 * loop_t["median_s"] / T,
            "speedup_of_scan": ratio,
        },
    ]


def run(quick: bool = False) -> list[dict]:
    env = common.environment()
    repeats = 5 if quick else 20
    rows = []
    for batch in BATCHES:
        rows += _measure(batch, repeats)
    speedups = ", ".join(f"B = {r['B']}: {r['speedup_of_scan']:.1f}x" for r in rows if "speedup_of_scan" in r)
    notes = (
        f"Configuration: T = {T}, N = {N}, W = {W}, R = {R}, H = {H}, S = {S}; B examples by vmap.\n\n"
        f"**scan speed-up over the per-step Python loop (loop median / scan median, this run): {speedups}.**"
    )
    cols = ["B", "variant", "compile_s", "median_s", "min_s", "max_s", "ms_per_step", "speedup_of_scan"]
    print(common.markdown_table(rows, cols))
    print(f"scan / python-loop speed-up: {speedups}")
    if not quick:
        path = common.write_results(
            "kernels_ntm",
            "NTM kernel: scan rollout vs per-step Python loop",
            rows,
            cols,
            env,
            notes,
            command=common.portable_command(["--suite", "ntm"], "benchmarks.speed.kernels"),
        )
        print("wrote", path)
    return rows
