"""What length buckets save in a range evaluation: compilations and wall time of a full 41..500 sweep.

    .venv/bin/python -m benchmarks.range_eval_speed [--examples-per-length 64] [--hidden 64] [--name NAME]

An untrained LSTM (``--hidden`` wide) on ``reverse_string`` is range-evaluated
at every length 41..500 (``panm_jax.train.range_eval.range_evaluate``), once
with power-of-two buckets (the default of ``panm-jax eval --lengths``) and once
with one shape per length (no padding, what evaluating each length on its own
compiles). Each runs in a fresh process with no persistent compilation cache,
so both count every compilation they need. The two must give the same
per-length accuracies (padding is inert); the table says whether they did.
Nothing is recorded without ``--name`` (``benchmarks/results/<device>/range_eval_speed_NAME.*``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from benchmarks import common

MODES = ("powers-of-two", "per-length")


def measure(mode: str, examples: int, hidden: int) -> dict:
    """One range evaluation in this process: ``{"compiles", "compile_seconds", "wall_seconds", "rows", ...}``."""
    from panm_jax.train.config import load_config
    from panm_jax.train.loop import Run
    from panm_jax.train.range_eval import range_evaluate

    config = load_config(
        None,
        [
            'task="reverse_string"',
            'model="lstm"',
            f"model_options.hidden={hidden}",
            f"eval_examples={examples}",
            f"eval_batch_size={examples}",
        ],
    )
    run = Run(config)
    result = range_evaluate(
        run, run.state.params, range(41, 501), examples_per_length=examples, batch_size=examples, buckets=mode
    )
    return {
        "mode": mode,
        "compiles": result.compiles,
        "compile_seconds": result.compile_seconds,
        "wall_seconds": result.wall_seconds,
        "score": result.score,
        "accuracies": [r["token_accuracy"] for r in result.rows],
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--examples-per-length", type=int, default=64)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--name", default=None)
    p.add_argument("--one", choices=MODES, help=argparse.SUPPRESS)  # the child process of one mode
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one, args.examples_per_length, args.hidden)))
        return 0
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    out = {}
    for mode in MODES:
        cmd = [
            sys.executable,
            "-m",
            "benchmarks.range_eval_speed",
            "--one",
            mode,
            "--examples-per-length",
            str(args.examples_per_length),
            "--hidden",
            str(args.hidden),
        ]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        out[mode] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{mode}: {out[mode]['compiles']} compilations, {out[mode]['wall_seconds']:.1f} s", flush=True)
    same = out[MODES[0]]["accuracies"] == out[MODES[1]]["accuracies"]
    rows = [
        {
            "buckets": m,
            "compiles": out[m]["compiles"],
            "compile_s": round(out[m]["compile_seconds"], 1),
            "wall_s": round(out[m]["wall_seconds"], 1),
            "score": round(100 * out[m]["score"], 4),
        }
        for m in MODES
    ]
    cols = ["buckets", "compiles", "compile_s", "wall_s", "score"]
    print(common.markdown_table(rows, cols))
    print(f"per-length accuracies identical: {same}")
    if args.name:
        notes = (
            f"Untrained LSTM (width {args.hidden}) on reverse_string, every length 41..500, "
            f"{args.examples_per_length} examples per length, batch {args.examples_per_length}; each mode in a "
            f"fresh process without a persistent compilation cache. Per-length token accuracies identical "
            f"in both modes: {same}."
        )
        command = ".venv/bin/python -m benchmarks.range_eval_speed " + " ".join(
            argv if argv is not None else sys.argv[1:]
        )
        common.write_results(
            f"range_eval_speed_{args.name}",
            "Range evaluation 41..500: buckets against one shape per length",
            rows,
            cols,
            common.environment(),
            notes,
            command,
        )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
