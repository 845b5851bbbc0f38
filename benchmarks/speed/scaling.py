"""Scaling curves: training-step time and peak memory against sequence length and memory size.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: about 5 minutes at the defaults
(estimated from the compile and step times in that folder's ``scaling.json``); with ``--quick`` 139 s
(measured).

Run: ``python -m benchmarks.speed.scaling [--quick]``. Writes
``benchmarks/results/<device>/scaling.json`` and one PNG per curve:
``scaling_length_time.png``, ``scaling_length_memory.png``,
``scaling_slots_time.png``.

* Sequence length: Copy batches with T = T_in + T_out = 10, 30, 100, 300, 1000
  steps (n = (T - 2) / 2), B = 16, for PANM, NTM, DNC and Stack-LSTM at their
  default sizes. PANM's memory and the Stack's capacity grow with T by
  construction, so their "memory size" curve is this one.
* Memory size: NTM and DNC with N = 16, 64, 256, 1024 slots at T = 42 (n = 20), B = 16.

Every point is measured without and with ``remat`` (each step recomputed in
the backward pass). Time: median of ``repeats`` steps after one warm-up. Peak
memory: XLA's ``memory_analysis()`` of the compiled step (arguments + outputs +
temporaries), which JAX reports on CPU and GPU alike.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import numpy as np
import optax

from benchmarks import common
from panm_jax.models import build_model
from panm_jax.tasks import get_task
from panm_jax.train.report import save_figure
from panm_jax.train.steps import init_train_state, make_train_step

BATCH = 16
LENGTHS = (10, 30, 100, 300, 1000)
SLOTS = (16, 64, 256, 1024)
MODELS = ("panm", "ntm", "dnc", "stack_lstm")


def measure(model_name: str, n: int, remat: bool, repeats: int, **options) -> dict:
    task = get_task("copy")
    batch = task.sample(np.random.default_rng(0), BATCH, n)
    model = build_model(model_name, input_size=task.input_size, output_size=task.output_size, remat=remat, **options)
    optimizer = optax.adam(1e-3)
    graphdef, state = init_train_state(model, optimizer)
    step = make_train_step(graphdef, optimizer, task)
    t0 = time.perf_counter()
    compiled = jax.jit(step).lower(state, batch).compile()
    compile_s = time.perf_counter() - t0
    mem = compiled.memory_analysis()
    peak = None
    if mem is not None:
        peak = int(mem.argument_size_in_bytes + mem.output_size_in_bytes + mem.temp_size_in_bytes)
    common.block(compiled(state, batch))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        common.block(compiled(state, batch))
        times.append(time.perf_counter() - t0)
    return {"compile_s": compile_s, "median_s": statistics.median(times), "peak_MB": peak / 1e6 if peak else ""}


def _plot(rows, x_key, y_key, title, xlabel, ylabel, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for model in dict.fromkeys(r["model"] for r in rows):
        for remat in (False, True):
            pts = sorted(
                (r[x_key], r[y_key]) for r in rows if r["model"] == model and r["remat"] == remat and r[y_key] != ""
            )
            if pts:
                ax.plot(
                    *zip(*pts, strict=True),
                    marker="o",
                    linestyle="--" if remat else "-",
                    label=f"{model}" + (" (remat)" if remat else ""),
                )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=7)
    save_figure(fig, out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="T in (10, 30), N in (16, 64), 1 repeat; records nothing")
    args = p.parse_args(argv)
    lengths, slots, repeats = ((10, 30), (16, 64), 1) if args.quick else (LENGTHS, SLOTS, 3)
    env = common.environment()
    rows = []
    for model in MODELS:
        for total in lengths:
            for remat in (False, True):
                r = measure(model, (total - 2) // 2, remat, repeats)
                rows.append({"curve": "length", "model": model, "T": total, "N": "", "remat": remat, **r})
                print(rows[-1], flush=True)
    for model in ("ntm", "dnc"):
        for n_slots in slots:
            for remat in (False, True):
                r = measure(model, 20, remat, repeats, num_slots=n_slots)
                rows.append({"curve": "slots", "model": model, "T": 42, "N": n_slots, "remat": remat, **r})
                print(rows[-1], flush=True)
    cols = ["curve", "model", "T", "N", "remat", "compile_s", "median_s", "peak_MB"]
    print(common.markdown_table(rows, cols))
    if args.quick:
        return 0
    out = common.RESULTS_DIR / common.device_slug()
    length_rows = [r for r in rows if r["curve"] == "length"]
    slot_rows = [r for r in rows if r["curve"] == "slots"]
    _plot(
        length_rows,
        "T",
        "median_s",
        f"training step vs sequence length (B = {BATCH})",
        "steps T = T_in + T_out",
        "seconds per step",
        out / "scaling_length_time.png",
    )
    _plot(
        length_rows,
        "T",
        "peak_MB",
        f"peak memory vs sequence length (B = {BATCH})",
        "steps T = T_in + T_out",
        "MB (XLA memory analysis)",
        out / "scaling_length_memory.png",
    )
    _plot(
        slot_rows,
        "N",
        "median_s",
        f"training step vs memory slots (T = 42, B = {BATCH})",
        "memory slots N",
        "seconds per step",
        out / "scaling_slots_time.png",
    )
    notes = (
        "Copy batches, B = 16, Adam; models at their default sizes (panm D = 256; ntm 128 x 20 with an LSTM 256; "
        "dnc 128 x 20, R = 4, LSTM 256; stack_lstm LSTM 256, values 64). median_s: median of 3 steps after one "
        "warm-up. peak_MB: arguments + outputs + temporaries of the compiled step (XLA memory_analysis). "
        "Plots: scaling_length_time.png, scaling_length_memory.png, scaling_slots_time.png."
    )
    path = common.write_results(
        "scaling",
        "Scaling: step time and peak memory",
        rows,
        cols,
        env,
        notes,
        command=common.portable_command(argv, "benchmarks.speed.scaling"),
    )
    print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
