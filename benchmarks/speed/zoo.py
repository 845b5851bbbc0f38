"""The model zoo: every registered model's training step at its default size on its home task, against its floor.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``, one thread: 35 minutes at the
defaults (measured with other work sharing the machine at a load average of 4 to 9; the SCAN
Transformers' compilations take up to 63 s and their steps up to 5.8 s there); ``--quick`` (the RNN
and the SRNN, 3 repeats, records nothing) 15 s (measured).

Run (one thread, on one core, as the recorded table was measured)::

    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \\
        taskset -c 0 .venv/bin/python -m benchmarks.speed.zoo [--quick] [--models rnn,panm]

Writes ``benchmarks/results/<device>/zoo.json`` (``--quick`` writes nothing).
``--profile MODEL`` instead runs one model's home step under ``jax.profiler``
(``benchmarks/speed/profile.py``: time per HLO instruction, per source line, per
primitive) and prints the tables; it records nothing.

Where ``benchmarks/speed/models_speed.py`` puts every model at one common
configuration (Copy, B = 32, width 256), this times each model where it is meant
to be used: its default size (``panm-jax models``) on its *home task*, the task
of the paper it comes from, at that task's longest training length (the
bucket its longest batches run at), with that paper's batch size and the
optimiser of this library's runner for that task. ``HOMES`` is the table:

* PANM, the LSTM encoder-decoder, LSTM+attention and the Pointer Network: Copy
  n = 10, B = 128, RMSprop 1e-4 with values clipped at 10 (Le et al. 2024, the
  algorithmic protocol); the NTM and DNC as Le et al.'s baselines there (N = 128);
* the Chomsky-hierarchy models of Delétang et al. 2023 (RNN, LSTM, Stack-RNN,
  Tape-RNN, encoder-only Transformer): Reverse String at N = 40, B = 128, Adam
  1e-3 with the global norm clipped at 1 (their ``training/example.py``);
* PANM-Transformer and the four Transformer baselines: SCAN's length split at
  cut-off 22 (its longest training command, 23 output steps), B = 128, Adam 1e-3
  clipped at 1, teacher forcing (``benchmarks/accuracy/seq2seq.py``: Le et al.
  2024 §3.3 after Csordás et al. 2021);
* the Stack-, Queue- and DeQue-LSTMs: Grefenstette et al. 2015's reversal,
  copy and bigram flip at source length 64, B = 10, RMSprop 1e-3 with values
  clipped at 1 (``benchmarks/accuracy/transduction.py``);
* the SRNN and PANM on the SRNN: Dyck D_2 at length 10, B = 1, Adam 0.01
  (Suzgun et al. 2019's code, ``benchmarks/accuracy/dyck.py``).

Per model: parameters, compile time (lowering + XLA), the steady-state step
(median, min, max over ``repeats`` steps after 2 warm-up steps,
``benchmarks.common.time_compiled``), and the floor as
``benchmarks/speed/suite.py`` takes it: FLOPs and recurrent-state bytes counted
from the step's jaxpr with every ``scan`` body multiplied by its length
(``benchmarks/speed/cost.py``; XLA's ``compiled.cost_analysis()`` counts a
``while`` body once, so it is not used), against the dense-matmul rate and the
copy bandwidth measured in the same run (``common.matmul_rate``,
``common.memory_bandwidth``; the rate once per shape, after the first model of
that shape). The matmul rate is taken at the model's own
controller shape: ``[B, D] x [D, 4D]`` for a recurrent model (one step of B
rows), ``[B * T, D] x [D, 4D]`` for the attention models, which multiply every
position at once (``matmul_rows`` says which). floor = max(FLOPs / rate,
bytes / bandwidth); ``x_floor`` = median / floor.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
from flax import nnx

from benchmarks import common
from benchmarks.speed import cost
from benchmarks.speed.suite import floor_of
from panm_jax.models import build_model, list_models, model_options
from panm_jax.tasks import get_task
from panm_jax.train.config import OptimizerConfig
from panm_jax.train.optim import make_optimizer
from panm_jax.train.steps import init_train_state, make_train_step

# The optimisers of the home tasks' runners (benchmarks/accuracy/*.py), by name.
OPTIMIZERS = {
    "rmsprop-paper": OptimizerConfig(),  # Le et al. 2024's code: RMSprop 1e-4, momentum 0.9, decay 0.95, clip 10
    "adam-clip1": OptimizerConfig(name="adam", learning_rate=1e-3, clip_value=None, clip_norm=1.0),
    "rmsprop-transduction": OptimizerConfig(learning_rate=1e-3, clip_value=1.0),
    "adam-dyck": OptimizerConfig(name="adam", learning_rate=0.01, clip_value=None),
}


@dataclass(frozen=True)
class Home:
    """A model's home task: where it is timed."""

    task: str
    length: int  # the task's length n (its longest training length)
    batch: int
    optimizer: str  # a key of OPTIMIZERS
    source: str  # whose protocol this is
    task_options: dict[str, Any] = field(default_factory=dict)
    model_options: dict[str, Any] = field(default_factory=dict)


_COPY = Home("copy", 10, 128, "rmsprop-paper", "Le et al. 2024, algorithmic tasks")
_CHOMSKY = Home("reverse_string", 40, 128, "adam-clip1", "Delétang et al. 2023, training/example.py")
_SCAN = Home(
    "scan",
    22,
    128,
    "adam-clip1",
    "Le et al. 2024 §3.3, SCAN length split (benchmarks/accuracy/seq2seq.py)",
    {"cutoff": 22},
    {"teacher_forcing": True},
)
_DYCK = Home("dyck", 10, 1, "adam-dyck", "Suzgun et al. 2019 (benchmarks/accuracy/dyck.py)", {"n": 2})


def _transduction(task: str) -> Home:
    return Home(task, 64, 10, "rmsprop-transduction", "Grefenstette et al. 2015 (benchmarks/accuracy/transduction.py)")


HOMES: dict[str, Home] = {
    "panm": _COPY,
    "lstm": _COPY,
    "lstm_attention": _COPY,
    "pointer_network": _COPY,
    "ntm": _COPY,
    "dnc": _COPY,
    "rnn": _CHOMSKY,
    "single_lstm": _CHOMSKY,
    "stack_rnn": _CHOMSKY,
    "tape_rnn": _CHOMSKY,
    "transformer_encoder": _CHOMSKY,
    "panm_transformer": _SCAN,
    "transformer": _SCAN,
    "transformer_rpe": _SCAN,
    "universal_transformer": _SCAN,
    "universal_transformer_rpe": _SCAN,
    "stack_lstm": _transduction("transduction_reversal"),
    "queue_lstm": _transduction("transduction_copy"),
    "deque_lstm": _transduction("bigram_flip"),
    "srnn": _DYCK,
    "panm_srnn": _DYCK,
}

# Models that multiply every position at once (the matmul rate is taken at [B * T, D] rows).
ATTENTION_MODELS = frozenset(
    {
        "transformer",
        "transformer_rpe",
        "universal_transformer",
        "universal_transformer_rpe",
        "transformer_encoder",
        "panm_transformer",
    }
)
QUICK_MODELS = ("rnn", "srnn")


def home_of(name: str) -> Home:
    """``name``'s home task; a model registered without one is timed on Copy as Le et al.'s baselines are."""
    return HOMES.get(name, _COPY)


def width_of(model) -> int:
    """The model's width D (``hidden``, else ``d_model``) from its config."""
    config = getattr(model, "config", None)
    for name in ("hidden", "d_model"):
        if hasattr(config, name):
            return int(getattr(config, name))
    return 256


def build(name: str):
    """``(step, state, batch, params, model, home)``: ``name``'s training step on its home task."""
    home = home_of(name)
    task = get_task(home.task, **home.task_options)
    batch = task.sample(np.random.default_rng(0), home.batch, home.length)
    fields = set(model_options(name))
    options = {k: v for k, v in home.model_options.items() if k in fields}
    model = build_model(name, input_size=task.input_size, output_size=task.output_size, **options)
    params = sum(int(x.size) for x in jax.tree_util.tree_leaves(nnx.state(model, nnx.Param)))
    optimizer = make_optimizer(OPTIMIZERS[home.optimizer], 1_000_000)
    graphdef, state = init_train_state(model, optimizer)
    step = make_train_step(graphdef, optimizer, task)
    return step, state, batch, params, model, home


def run_model(name: str, repeats: int, bandwidth: float, rates: dict[tuple[int, int], float]) -> dict[str, Any]:
    """One row: ``name``'s step timed, counted and set against its floor (``rates`` collects the matmul rates)."""
    step, state, batch, params, model, home = build(name)
    t = common.time_compiled(step, state, batch, warmup=2, repeats=repeats)
    counted = cost.count(step, state, batch)
    t_in, t_out = int(batch.inputs.shape[1]), int(batch.targets.shape[1])
    d = width_of(model)
    rows = home.batch * (t_in + t_out) if name in ATTENTION_MODELS else home.batch
    if (rows, d) not in rates:
        rates[(rows, d)] = common.matmul_rate(rows, d, 4 * d, repeats)
    rate = rates[(rows, d)]
    f = floor_of(counted, rate, bandwidth)
    row = {
        "model": name,
        "task": home.task + "".join(f" {k}={v}" for k, v in home.task_options.items()),
        "n": home.length,
        "B": home.batch,
        "T_in": t_in,
        "T_out": t_out,
        "optimizer": home.optimizer,
        "params": params,
        "compile_s": t["compile_s"],
        "median_s": t["median_s"],
        "min_s": t["min_s"],
        "max_s": t["max_s"],
        "GFLOP": counted["flops"] / 1e9,
        "MB_state": counted["bytes"] / 1e6,
        "matmul_rows": rows,
        "matmul_GFLOPs": rate,
        **f,
        "x_floor": t["median_s"] / f["floor_s"],
        "home": home.source,
    }
    print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    return row


COLUMNS = [
    "model",
    "task",
    "n",
    "B",
    "T_in",
    "T_out",
    "optimizer",
    "params",
    "compile_s",
    "median_s",
    "min_s",
    "max_s",
    "GFLOP",
    "MB_state",
    "matmul_rows",
    "matmul_GFLOPs",
    "flop_floor_s",
    "byte_floor_s",
    "floor_s",
    "bound",
    "x_floor",
]


def notes_for(bandwidth: float, repeats: int) -> str:
    return (
        "One training step (forward, loss, backward, optimiser update) of each registered model at its default "
        "size on its home task (benchmarks/speed/zoo.py, HOMES: task, length n, batch B, optimiser; the home "
        f"column of the JSON names whose protocol). compile_s: lowering + XLA; median/min/max over {repeats} "
        "steady-state steps after 2 warm-up steps. GFLOP and MB_state counted from the step's jaxpr with every "
        "scan body multiplied by its length (benchmarks/speed/cost.py; XLA's cost_analysis() counts a while "
        f"body once and is not used). Copy bandwidth measured in this run: {bandwidth:.1f} GB/s "
        f"({common.bandwidth_mib()} MiB scaled in place); matmul_GFLOPs measured in this run at "
        "[matmul_rows, D] x [D, 4D] (rows = B for recurrent models, B * (T_in + T_out) for the attention models). "
        "flop_floor_s = GFLOP / rate, byte_floor_s = bytes / bandwidth, floor_s the larger, x_floor = "
        "median_s / floor_s."
    )


def run(quick: bool = False, names: list[str] | None = None) -> list[dict[str, Any]]:
    repeats = 3 if quick else 10
    env = common.environment()
    bandwidth = common.memory_bandwidth(3 if quick else 20)
    print(f"memory bandwidth ({common.bandwidth_mib()} MiB, in place): {bandwidth:.1f} GB/s", flush=True)
    selected = names or (list(QUICK_MODELS) if quick else list(list_models()))
    rates: dict[tuple[int, int], float] = {}
    rows: list[dict[str, Any]] = []
    command = common.portable_command(["--models", ",".join(names)] if names else [], "benchmarks.speed.zoo")
    path = None
    for i, name in enumerate(selected):
        rows.append(run_model(name, repeats, bandwidth, rates))
        if not quick:  # after every model: a crash later keeps what was measured
            done = i + 1 == len(selected)
            title = "The model zoo: each model's training step on its home task" + (
                "" if done else f" (partial: {i + 1} of {len(selected)} models)"
            )
            path = common.write_results("zoo", title, rows, COLUMNS, env, notes_for(bandwidth, repeats), command)
    print(common.markdown_table(rows, COLUMNS))
    if path:
        print("wrote", path)
    return rows


def profile_model(name: str, steps: int = 5, top: int = 12) -> dict[str, Any]:
    """Where ``name``'s home step spends its time (``benchmarks.speed.profile.profile``); prints the tables."""
    import tempfile
    from pathlib import Path

    from benchmarks.speed import profile

    step, state, batch, _, _, home = build(name)
    res = profile.profile(step, (state, batch), steps, Path(tempfile.mkdtemp(prefix="panm-zoo-profile-")))
    print(
        f"{name} on {home.task} n={home.length} B={home.batch}: wall {res['wall_ms']:.2f} ms per step, "
        f"ops {res['ops_ms']:.2f} ms summed over threads"
    )
    for table in ("instructions", "sources", "primitives"):
        if table in res:
            profile._print_top(table, res[table], res["ops_ms"], top)
    return res


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help=f"{', '.join(QUICK_MODELS)}, 3 repeats; records nothing")
    parser.add_argument("--models", default="", help="comma-separated model names (default: every registered model)")
    parser.add_argument("--profile", default="", metavar="MODEL", help="profile MODEL's home step; records nothing")
    args = parser.parse_args(argv)
    if args.profile:
        if args.profile not in list_models():
            parser.error(f"--profile: unknown model {args.profile!r}; known models: {sorted(list_models())}")
        profile_model(args.profile, steps=3)
        return 0
    names = [n for n in args.models.split(",") if n] or None
    if names:
        unknown = sorted(set(names) - set(list_models()))
        if unknown:
            parser.error(f"--models: unknown model(s) {unknown}; known models: {sorted(list_models())}")
    run(quick=args.quick, names=names)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
