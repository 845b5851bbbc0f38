"""Mixed precision: the speed suite's steps in float32 and in bfloat16, timed alternately in one run.

For accelerators. Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: over 8 minutes at the
defaults (estimated: the float32 half from the step times in that folder's ``speed.json``; bfloat16, emulated on
that CPU, is slower); with ``--quick`` 22 s (measured).

Run: ``python -m benchmarks.speed.precision [--quick] [--only panm,ntm,dnc,stack]``. Writes
``benchmarks/results/<device>/precision.json``.

Each case is a ``benchmarks.speed`` case (the same model, batch and optimiser),
built twice: with ``compute_dtype="float32"`` and with ``"bfloat16"``
(``TrainConfig.compute_dtype``: float32 parameters and optimiser state, the
forward pass and the recurrent states in bfloat16, float32 logits and loss;
``panm_jax.train.steps``). Both programs are compiled, then timed step by step in
alternation (float32, bfloat16, float32, ...), so that drift of the machine's
clock or load falls on both; ``speedup`` = float32 median / bfloat16 median.

Numerics, from the first step of each on the same batch and state: ``loss_rel``
the relative difference of the losses, ``logits_max_abs`` the largest
difference of the logits (for the evaluation forward), and ``grad_cos`` the
cosine between the two updates' parameter changes (1: the same direction).

bfloat16 is the format of GPU tensor cores and TPUs; most CPUs have no bfloat16
arithmetic and emulate it (converting to float32 around each operation), so on a
CPU expect it to be slower: this benchmark is for accelerators, and ``--quick``
on a CPU only checks that it runs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import jax
import numpy as np

from benchmarks import common
from benchmarks.speed import suite

# The speed suite's cases this benchmark times (by label prefix), and a large batch of PANM where an
# accelerator is busy enough for the arithmetic's width to show.
LABELS = (
    "PANM D=256, Copy n=10, B=128",
    "PANM D=128, eval forward n=81, B=128",
    "NTM ctrl 100, 128x20, Copy n=20, B=128",
    "DNC N=256, W=32, R=4, T=50, B=32",
    "DNC N=1024, W=32, R=4, T=50, B=32",
    "Stack-LSTM ctrl 256, T=64, B=32",
)
LARGE_PANM_BATCH = 4096
QUICK_LABELS = ("PANM D=128, eval forward n=81, B=128", "NTM ctrl 100, 128x20, Copy n=20, B=128")


def cases(quick: bool, accelerator: bool) -> list[suite.Case]:
    """The cases to time: ``LABELS`` (with a batch-4,096 PANM on an accelerator), or two small ones."""
    if quick:
        return [
            replace(c, label=c.label.replace(f"B={c.batch}", "B=8"), batch=8, repeats=3)
            for c in map(suite.find_case, QUICK_LABELS)
        ]
    out = [suite.find_case(label) for label in LABELS]
    if accelerator:
        big = suite.find_case(LABELS[0])
        out.insert(1, replace(big, label=big.label.replace("B=128", f"B={LARGE_PANM_BATCH}"), batch=LARGE_PANM_BATCH))
    return out


def _loss_and_update(out, state):
    """``(loss or logits, parameter change)`` of one call: a train step's metrics and new state, or logits."""
    if isinstance(out, tuple):  # train step: (new state, metrics)
        new, metrics = out
        delta = jax.tree_util.tree_map(
            lambda a, b: np.asarray(a, np.float64) - np.asarray(b, np.float64), new.params, state.params
        )
        return np.asarray(metrics["loss"], np.float64), delta
    return np.asarray(out, np.float64), None


def _cosine(a, b) -> float:
    x = np.concatenate([np.ravel(v) for v in jax.tree_util.tree_leaves(a)])
    y = np.concatenate([np.ravel(v) for v in jax.tree_util.tree_leaves(b)])
    return float(x @ y / max(np.linalg.norm(x) * np.linalg.norm(y), 1e-300))


def run_case(case: suite.Case, repeats: int) -> dict:
    """Compile the case in both dtypes, compare their first step, time them alternately."""
    built = {dt: suite.build_case(case, compute_dtype=dt) for dt in ("float32", "bfloat16")}
    compiled, compile_s, first = {}, {}, {}
    for dt, (fn, state, batch, _) in built.items():
        t0 = time.perf_counter()
        compiled[dt] = jax.jit(fn).lower(state, batch).compile()
        compile_s[dt] = time.perf_counter() - t0
        first[dt] = _loss_and_update(common.block(compiled[dt](state, batch)), state)
    times: dict[str, list[float]] = {"float32": [], "bfloat16": []}
    for i in range(suite.warmup_of(case) + repeats):
        for dt in times:
            _, state, batch, _ = built[dt]
            t0 = time.perf_counter()
            common.block(compiled[dt](state, batch))
            if i >= suite.warmup_of(case):
                times[dt].append(time.perf_counter() - t0)
    f32, b16 = (statistics.median(times[dt]) for dt in ("float32", "bfloat16"))
    (out32, upd32), (out16, upd16) = first["float32"], first["bfloat16"]
    row = {
        "case": case.label,
        "B": case.batch,
        "compile_f32_s": compile_s["float32"],
        "compile_bf16_s": compile_s["bfloat16"],
        "f32_median_s": f32,
        "bf16_median_s": b16,
        "speedup": f32 / b16,
        "bf16_sequences_per_s": case.batch / b16,
        "loss_rel": "",
        "logits_max_abs": "",
        "grad_cos": "",
    }
    if upd32 is None:
        row["logits_max_abs"] = float(np.max(np.abs(out16 - out32)))
    else:
        row["loss_rel"] = float(abs(out16 - out32) / max(abs(out32), 1e-30))
        row["grad_cos"] = _cosine(upd32, upd16)
    print({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    return row


COLUMNS = [
    "case",
    "B",
    "compile_f32_s",
    "compile_bf16_s",
    "f32_median_s",
    "bf16_median_s",
    "speedup",
    "bf16_sequences_per_s",
    "loss_rel",
    "logits_max_abs",
    "grad_cos",
]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="two small cases, 3 repeats; records nothing")
    p.add_argument("--only", default="", help="comma-separated families: panm, ntm, dnc, stack")
    p.add_argument("--repeats", type=int, default=20, help="timed steps per dtype (default 20)")
    args = p.parse_args(argv)
    families = {f for f in args.only.split(",") if f}
    accelerator = common.on_accelerator()
    todo = [c for c in cases(args.quick, accelerator) if not families or c.family in families]
    env = common.environment()
    command = common.portable_command(argv, "benchmarks.speed.precision")
    notes = (
        "Each case built twice from benchmarks.speed (same model, batch, optimiser): compute_dtype float32 and "
        "bfloat16 (float32 parameters and optimiser state; activations and recurrent states in bfloat16; float32 "
        "logits and loss). Both compiled, then timed step by step in alternation; speedup = f32_median_s / "
        "bf16_median_s. loss_rel: relative difference of the first step's losses; grad_cos: cosine between the "
        "first step's parameter changes; logits_max_abs: largest logit difference (evaluation forward)."
    )
    rows = []
    for i, case in enumerate(todo):
        try:
            rows.append(run_case(case, 3 if args.quick else args.repeats))
        except Exception as err:  # noqa: BLE001 - an out-of-memory case becomes a row, anything else raises
            if not suite._out_of_memory(err):
                raise
            rows.append({"case": case.label, "B": case.batch, "f32_median_s": "out of memory"})
        if not args.quick:  # after every case: a crash later keeps what was measured
            partial = "" if i + 1 == len(todo) else f" (partial: {i + 1} of {len(todo)} cases)"
            path = common.write_results(
                "precision", "float32 against bfloat16 compute" + partial, rows, COLUMNS, env, notes, command
            )
    print(common.markdown_table(rows, COLUMNS))
    if not args.quick and rows:
        print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
