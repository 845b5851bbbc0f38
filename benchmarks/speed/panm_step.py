"""PANM training-step speed at the paper's configuration, against this machine's floor.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: about a minute at the defaults
(estimated from that folder's ``panm_step.json``); with ``--quick`` 36 s (measured).

Run: ``python -m benchmarks.speed.panm_step [--quick]``. Writes
``benchmarks/results/<device>/panm_step.json``.

What is timed: one full training step (forward, loss, backward,
gradient-value clip, RMSprop update; the optimiser of the code of Le et al. 2024,
Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural Memory)
of PANM on Copy with B = 128 and the defaults of Le et al. 2024, §3 (H^a = 2, H^c = 1,
b = 10 address bits, LSTM encoder, 128-wide MLPs), with the GRU width D = 256
(the paper) and D = 128 (what the authors' public code builds); and a forward
pass at the test length 81 (8L+1). Compilation and steady state are timed apart.

Training draws n ~ U{1..10} per batch, padded to buckets (1, 2, 4, 8, 10): the
table gives the step at each bucket and the expected step time over the length
distribution (the mean over n of the time of n's bucket), the figure that sets
training throughput.

The floor: XLA's cost analysis counts a ``while`` loop's body once, so the step's
FLOPs are counted here from the shapes (``panm_flops``), and the machine's dense
matmul rate is measured in the same run at the step's largest matmul shapes;
floor = FLOPs / matmul rate.
"""

from __future__ import annotations

import argparse

import jax
import numpy as np

from benchmarks import common
from panm_jax.models import build_model
from panm_jax.tasks import get_task
from panm_jax.tasks.buckets import pad_to_bucket
from panm_jax.train.optim import paper_optimizer
from panm_jax.train.steps import init_train_state, make_train_step

BATCH = 128
BUCKETS = (1, 2, 4, 8, 10)
TRAIN_LENGTHS = range(1, 11)


def panm_flops(
    hidden: int,
    t_in: int,
    t_out: int,
    *,
    d_in: int = 12,
    classes: int = 10,
    bits: int = 10,
    heads: int = 2,
    mode2: int = 1,
    mlp: int = 128,
) -> float:
    """Forward FLOPs of one PANM example (2 per multiply-add), from the shapes.

    encoder LSTM:   T_in * 2 (d_in * 4D + D * 4D)
    g^a:            L * 2 (b * m + m * D)                      (L = T_in slots)
    per decoder step (T_out of them):
      Pointer Units H^a * 2 (b * 3D + D * 3D)
      attention     H^a * 2 L D (scores) + H^a * 2 L (D + b) (dereference, pointer value)
      g^c           2 (H^a D * m + m * H^c D)
      Mode 2        H^c * 2 L D * 2 (scores, read)
      Controller    2 ((H^a + H^c) D * 3D + D * 3D)
      g^o           2 ((H^a + H^c + 1) D * m + m * K)
    Elementwise gate arithmetic is left out (a few percent at these widths).
    """
    d, length = hidden, t_in
    enc = t_in * 2 * (d_in * 4 * d + d * 4 * d)
    ga = length * 2 * (bits * mlp + mlp * d)
    step = (
        heads * 2 * (bits * 3 * d + d * 3 * d)
        + heads * 2 * length * d
        + heads * 2 * length * (d + bits)
        + 2 * (heads * d * mlp + mlp * mode2 * d)
        + mode2 * 2 * length * d * 2
        + 2 * ((heads + mode2) * d * 3 * d + d * 3 * d)
        + 2 * ((heads + mode2 + 1) * d * mlp + mlp * classes)
    )
    return float(enc + ga + t_out * step)


def train_step_flops(hidden: int, t_in: int, t_out: int, batch: int = BATCH) -> float:
    """Forward + backward of a batch: the usual 3x the forward FLOPs."""
    return 3.0 * batch * panm_flops(hidden, t_in, t_out)


def run(quick: bool = False) -> list[dict]:
    repeats = 5 if quick else 20
    env = common.environment()
    task = get_task("copy")
    rng = np.random.default_rng(0)
    rows = []
    summary = []
    for hidden in (256, 128):
        model = build_model("panm", input_size=task.input_size, output_size=task.output_size, hidden=hidden)
        n_params = sum(x.size for x in jax.tree_util.tree_leaves(__import__("flax").nnx.state(model)))
        optimizer = paper_optimizer()
        graphdef, state = init_train_state(model, optimizer)
        step = make_train_step(graphdef, optimizer, task)
        per_bucket = {}
        for bucket in BUCKETS if not quick else (10,):
            batch = pad_to_bucket(task.sample(rng, BATCH, bucket), task, BUCKETS)
            t = common.time_compiled(step, state, batch, repeats=repeats)
            t_in, t_out = batch.inputs.shape[1], batch.targets.shape[1]
            flops = train_step_flops(hidden, t_in, t_out)
            per_bucket[bucket] = t["median_s"]
            rows.append(
                {
                    "D": hidden,
                    "what": f"train step, bucket n={bucket}",
                    "T_in": t_in,
                    "T_out": t_out,
                    "params": n_params,
                    "compile_s": t["compile_s"],
                    "median_ms": 1e3 * t["median_s"],
                    "min_ms": 1e3 * t["min_s"],
                    "max_ms": 1e3 * t["max_s"],
                    "GFLOP": flops / 1e9,
                    "GFLOP/s": flops / t["median_s"] / 1e9,
                }
            )
            print(rows[-1], flush=True)
        if not quick:
            expected = float(np.mean([per_bucket[min(b for b in BUCKETS if b >= n)] for n in TRAIN_LENGTHS]))
            summary.append((hidden, expected))
        # Evaluation forward at 8L+1 = 81 (T_in = 83), a_B = 0.
        eval_batch = task.sample(rng, BATCH, 81)
        params = state.params

        def forward(params, batch):
            m = __import__("flax").nnx.merge(graphdef, params)  # noqa: B023 - timed within this iteration
            return m(batch.inputs, batch.input_mask, batch.targets.shape[1])

        t = common.time_compiled(forward, params, eval_batch, repeats=max(3, repeats // 2))
        flops = BATCH * panm_flops(hidden, 83, 81)
        rows.append(
            {
                "D": hidden,
                "what": "eval forward, n=81",
                "T_in": 83,
                "T_out": 81,
                "params": n_params,
                "compile_s": t["compile_s"],
                "median_ms": 1e3 * t["median_s"],
                "min_ms": 1e3 * t["min_s"],
                "max_ms": 1e3 * t["max_s"],
                "GFLOP": flops / 1e9,
                "GFLOP/s": flops / t["median_s"] / 1e9,
            }
        )
        print(rows[-1], flush=True)

    # Dense matmul rate at the step's largest shapes (controller and Pointer Unit projections).
    rate = max(common.matmul_rate(BATCH, k, n, repeats) for k, n in ((768, 768), (256, 768), (256, 1024)))
    bandwidth = common.memory_bandwidth(repeats)
    for r in rows:
        r["floor_ms"] = 1e3 * r["GFLOP"] / rate
        r["x_floor"] = r["median_ms"] / r["floor_ms"]
    lines = [
        f"Dense matmul rate measured in this run at the step's shapes: **{rate:.1f} GFLOP/s**; "
        f"memory bandwidth (256 MiB copy): **{bandwidth:.1f} GB/s**. floor_ms = GFLOP / matmul rate; "
        "x_floor = measured / floor. GFLOP counted from the shapes (benchmarks/speed/panm_step.py, panm_flops; "
        "training = 3x forward).",
    ]
    for hidden, expected in summary:
        lines.append(
            f"D = {hidden}: expected training step over n ~ U{{1..10}} with buckets {BUCKETS}: "
            f"**{1e3 * expected:.1f} ms** ({1 / expected:.1f} steps/s, {BATCH / expected:.0f} sequences/s)."
        )
    lines.append(
        "Reference (same CPU class): the authors' PyTorch code takes 0.68 s (D = 256) and "
        "0.30 s (D = 128) per training step at L = 10, and 2.7 s for an evaluation batch at length 81."
    )
    notes = "\n\n".join(lines)
    print(notes)
    cols = [
        "D",
        "what",
        "T_in",
        "T_out",
        "params",
        "compile_s",
        "median_ms",
        "min_ms",
        "max_ms",
        "GFLOP",
        "GFLOP/s",
        "floor_ms",
        "x_floor",
    ]
    print(common.markdown_table(rows, cols))
    if not quick:
        path = common.write_results(
            "panm_step",
            "PANM training step on Copy (B = 128), Le et al. 2024 configuration",
            rows,
            cols,
            env,
            notes,
            command=common.portable_command([], "benchmarks.speed.panm_step"),
        )
        print("wrote", path)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one bucket, few repeats; records nothing")
    run(quick=parser.parse_args(argv).quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
