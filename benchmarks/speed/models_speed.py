"""Every registered model's training step at one common configuration.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: about 2 minutes at the defaults
(estimated from the compile and step times of a ``--quick`` run); with ``--quick`` 96 s (measured).

Run: ``python -m benchmarks.speed.models_speed [--quick] [--models ntm,dnc]``. Writes
``benchmarks/results/<device>/models_speed.json`` (``--quick`` records
nothing: fewer repeats, for a smoke test).

What is timed: for every model in the registry (the memory models, PANM
and the baselines, whoever registered them), one full training step (forward,
loss, backward, gradient-value clip, RMSprop update: ``paper_optimizer``, the
optimiser of the code of Le et al. 2024, Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented
Neural Memory) on Copy at length 20 with B = 32, i.e.
``T_in = 22`` input steps (20 tokens and two delimiters) and ``T_out = 20``
output steps. Compilation (lowering + XLA) and the steady-state step are timed
apart (``benchmarks.common.time_compiled``).

The common configuration: each model's width field (``hidden``, or ``d_model``
for the Transformers) is set to 256; memory sizes where they apply are
``N = 128`` (the NTM/DNC default, Le et al. 2024, App. D.1); every other field is the
model's default (``panm-jax models`` lists them).
"""

from __future__ import annotations

import argparse
import dataclasses

import jax
import numpy as np
from flax import nnx

from benchmarks import common
from panm_jax.models import build_model, get_config, list_models
from panm_jax.tasks import get_task
from panm_jax.train.optim import paper_optimizer
from panm_jax.train.steps import init_train_state, make_train_step

BATCH = 32
LENGTH = 20  # Copy length n: T_in = n + 2, T_out = n
WIDTH = 256
SLOTS = 128
WIDTH_FIELDS = ("hidden", "d_model")


def common_hparams(name: str) -> dict:
    """The overrides that put model ``name`` at the common configuration."""
    fields = {f.name for f in dataclasses.fields(get_config(name))}
    hparams = {field: WIDTH for field in WIDTH_FIELDS if field in fields}
    if "num_slots" in fields:
        hparams["num_slots"] = SLOTS
    return hparams


def run(quick: bool = False, names: list[str] | None = None) -> list[dict]:
    repeats = 3 if quick else 20
    env = common.environment()
    task = get_task("copy")
    batch = task.sample(np.random.default_rng(0), BATCH, LENGTH)
    t_in, t_out = batch.inputs.shape[1], batch.targets.shape[1]
    assert (t_in, t_out) == (LENGTH + 2, LENGTH), (t_in, t_out)
    rows = []
    for name in names or list(list_models()):
        hparams = common_hparams(name)
        model = build_model(name, input_size=task.input_size, output_size=task.output_size, **hparams)
        params = sum(int(x.size) for x in jax.tree_util.tree_leaves(nnx.state(model, nnx.Param)))
        optimizer = paper_optimizer()
        graphdef, state = init_train_state(model, optimizer)
        step = make_train_step(graphdef, optimizer, task)
        t = common.time_compiled(step, state, batch, warmup=1 if quick else 2, repeats=repeats)
        rows.append(
            {
                "model": name,
                "hparams": ", ".join(f"{k}={v}" for k, v in hparams.items()) or "-",
                "params": params,
                "B": BATCH,
                "T_in": t_in,
                "T_out": t_out,
                "compile_s": t["compile_s"],
                "median_ms": 1e3 * t["median_s"],
                "min_ms": 1e3 * t["min_s"],
                "max_ms": 1e3 * t["max_s"],
            }
        )
        print(rows[-1], flush=True)
    cols = ["model", "hparams", "params", "B", "T_in", "T_out", "compile_s", "median_ms", "min_ms", "max_ms"]
    print(common.markdown_table(rows, cols))
    if not quick:
        notes = (
            f"One training step (forward, loss, backward, clip, RMSprop) on Copy at length {LENGTH} "
            f"(T_in = {LENGTH + 2}, T_out = {LENGTH}), B = {BATCH}; width {WIDTH} (hidden or d_model), "
            f"N = {SLOTS} where it applies, other fields at their defaults. compile_s: lowering + XLA "
            f"compilation; median/min/max over {repeats} steady-state steps."
        )
        path = common.write_results(
            "models_speed",
            "Training step of every registered model (Copy, B = 32, n = 20)",
            rows,
            cols,
            env,
            notes,
            command=common.portable_command(
                ["--models", ",".join(names)] if names else [], "benchmarks.speed.models_speed"
            ),
        )
        print("wrote", path)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="few repeats; records nothing")
    parser.add_argument("--models", default="", help="comma-separated model names (default: every registered model)")
    args = parser.parse_args(argv)
    names = [n for n in args.models.split(",") if n] or None
    if names:
        known = set(list_models())
        unknown = sorted(set(names) - known)
        if unknown:
            parser.error(f"--models: unknown model(s) {unknown}; known models: {sorted(known)}")
    run(quick=args.quick, names=names)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
