"""The Chomsky-hierarchy architectures against DeepMind's own code, measured in one run on one machine.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``, one thread per process, with other work
sharing the machine (load average 4 to 9; measured): 3 to 15 minutes per process, one round of an
architecture 11 minutes (the RNN) to 21 (the Tape-RNN), the Transformer encoder's peer process alone
over 25; most of it the peer's 40 compilations and the 500 steps. There is no ``--quick``:
``--archs``, ``--rounds`` and ``--steps`` shorten it.

Run (the peer in a virtual environment of its own, never the library's; one thread per process,
both sides on the same core, as the recorded table was measured)::

    git clone https://github.com/google-deepmind/neural_networks_chomsky_hierarchy /tmp/dm_chomsky
    python3 -m venv /tmp/dm-venv && /tmp/dm-venv/bin/pip install "jax[cpu]==0.4.30" dm-haiku==0.0.12 \\
        optax numpy tqdm absl-py dm-tree einshape typing-extensions
    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" taskset -c 1 \\
        .venv/bin/python -m benchmarks.speed.chomsky_peer --peer-python /tmp/dm-venv/bin/python \\
        --peer-repo /tmp/dm_chomsky [--peer-commit SHA] [--archs rnn,tape_rnn] [--rounds 1] [--steps 500]

jax is pinned at 0.4.30 (and dm-haiku at 0.0.12, its release of that time) because the peer's code,
last changed in April 2024, runs on the jax of then; the rest is whatever pip resolves (the record
lists the versions). Writes ``benchmarks/results/<device>/peers_chomsky.json`` (beside the PyTorch
peers' ``peers.json``; a ``chomsky_*`` name would be read as a Chomsky accuracy table). ``--combine
A.json,B.json`` writes the rows of several runs as one record (each row names its run's command).

The peer is google-deepmind/neural_networks_chomsky_hierarchy (Delétang et al. 2023, JAX + Haiku),
run unchanged: its models are built by its ``experiments.constants.MODEL_BUILDERS`` and wrapped by
its ``experiments.utils.make_model_with_empty_targets`` as its ``experiments/example.py`` does
(non-autoregressive, blank output tokens after the input), and trained by its own
``experiments.training.TrainingWorker`` (``_update_parameters``: Adam 1e-3 after global-norm
clipping at 1, one program compiled per sequence length, no padding) with the loss and accuracy of
``example.py`` (the two three-line closures of its ``main``, written out the same here because they
cannot be imported). Settings are the peer's defaults: Reverse String, the uniform curriculum over
lengths 1..40, batch 128, hidden width 256, the Stack-RNN's stack and the Tape-RNN's tape 40 cells
of 8 (``example.py``'s ``memory_size`` and ``memory_cell_size``; the Stack-RNN's as
``stack_size`` / ``stack_cell_size``), the Transformer encoder at its constructor's defaults
(embedding 64, 5 layers, 8 heads, dropout 0.1, sin/cos positions). Ours: the same architectures
from the registry (``ARCHS``: ``rnn``, ``single_lstm``, ``stack_rnn`` with ``stack_size=40``,
``tape_rnn``, ``transformer_encoder``, all at those sizes), trained by the library's ``Run``
(``panm_jax.train.loop``: its training step, its batches padded to the library's default buckets
for the task, ``default_buckets``, whatever they are when this runs: the record lists them) with
the same optimiser.

Each measurement is one fresh process per (architecture, side) that does, in order:

(c) ``steps`` (500) training steps of the uniform curriculum, timed from building the model to the
    last step's result, compilation included (the peer: ``TrainingWorker.run``, which also draws
    its batches on the device; ours: ``Run`` and its batch / step loop, the loss read every 100 steps
    as the peer's log does);
(b) the mean step over the curriculum: every length 1..40 at its own compiled program (ours: the
    bucket it is padded to), one untimed step, then ``--curriculum-repeats`` timed steps (median), on
    the state the 500 steps left; the mean over the 40 lengths, each weighing the same as in the
    uniform curriculum;
(a) the steady state at the fixed length 40: one untimed step, then ``--repeats`` timed steps (median).

Every step is blocked on (``block_until_ready``) in (a) and (b); (c) only where the loop itself
waits. The sides alternate, peer then ours, architecture by architecture, for ``--rounds`` rounds;
each figure is the median over rounds, ratio = peer / ours (above 1: ours is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RESULT_PREFIX = "CHOMSKY_PEER_RESULT "
SIDES = ("peer", "ours")
PEER_REPO = "google-deepmind/neural_networks_chomsky_hierarchy"
PEER_PACKAGE = "neural_networks_chomsky_hierarchy"
PEER_MARKER = "experiments/training.py"
TASK = "reverse_string"
MAX_LENGTH = 40  # the curriculum's lengths are 1..MAX_LENGTH
BATCH = 128
LOG_EVERY = 100  # the peer's example.py log_frequency: its loop reads the loss every 100 steps


@dataclass(frozen=True)
class Arch:
    peer: str  # a key of the peer's experiments.constants.MODEL_BUILDERS
    peer_kwargs: dict[str, Any]
    ours: str  # a registered model
    ours_options: dict[str, Any] = field(default_factory=dict)


ARCHS: dict[str, Arch] = {
    "rnn": Arch("rnn", {"hidden_size": 256}, "rnn"),
    "lstm": Arch("lstm", {"hidden_size": 256}, "single_lstm"),
    "stack_rnn": Arch(
        "stack_rnn", {"hidden_size": 256, "stack_cell_size": 8, "stack_size": 40}, "stack_rnn", {"stack_size": 40}
    ),
    "tape_rnn": Arch(
        "tape_rnn", {"hidden_size": 256, "memory_cell_size": 8, "memory_size": 40}, "tape_rnn", {"tape_size": 40}
    ),
    "transformer_encoder": Arch("transformer_encoder", {}, "transformer_encoder"),
}


# ----------------------------------------------------------------------------- both sides (no jax here)


def _load() -> float:
    """The 1-minute load average (0.0 where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return 0.0


def step_statistics(per_length: dict[int, list[float]], fixed: list[float]) -> dict[str, Any]:
    """(b) and (a) from the timed steps: per length and at length 40, the median and the minimum.

    ``curriculum_s`` is the mean over the lengths of each length's median (``curriculum_min_s``: of its
    minimum), every length of the uniform curriculum weighing the same; ``fixed_s`` / ``fixed_min_s`` the
    median / minimum at the fixed length. On a machine other work shares, the minimum is the step with the
    least interference.
    """
    return {
        "per_length_s": {n: statistics.median(t) for n, t in per_length.items()},
        "per_length_min_s": {n: min(t) for n, t in per_length.items()},
        "curriculum_s": statistics.fmean(statistics.median(t) for t in per_length.values()),
        "curriculum_min_s": statistics.fmean(min(t) for t in per_length.values()),
        "fixed_s": statistics.median(fixed),
        "fixed_min_s": min(fixed),
    }


# ----------------------------------------------------------------------------- the peer's side (its venv: no flax)


def _peer_import_root(repo: str) -> str:
    """A folder from which ``import neural_networks_chomsky_hierarchy`` finds the checkout at ``repo``."""
    path = Path(repo).resolve()
    if path.name == PEER_PACKAGE:
        return str(path.parent)
    root = tempfile.mkdtemp(prefix="dm_chomsky_")
    os.symlink(path, Path(root) / PEER_PACKAGE)
    return root


def _versions(names: Sequence[str]) -> dict[str, str]:
    from importlib import metadata

    out = {"python": sys.version.split()[0]}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def example_pieces(task, peer_model: str, peer_kwargs: dict[str, Any]):
    """``(model, loss_fn, accuracy_fn)`` for one of their tasks, as ``experiments/example.py``'s ``main`` builds
    them (non-autoregressive, ``computation_steps_mult`` 0): the model of ``constants.MODEL_BUILDERS`` wrapped by
    ``utils.make_model_with_empty_targets`` and transformed, and the two closures of that ``main`` (they cannot
    be imported, so they are written out the same here). Runs under the peer's Python, its repository on the path."""
    import haiku as hk
    import jax.numpy as jnp
    from neural_networks_chomsky_hierarchy.experiments import constants, utils

    single_output = task.output_length(10) == 1
    model = constants.MODEL_BUILDERS[peer_model](output_size=task.output_size, return_all_outputs=True, **peer_kwargs)
    model = hk.transform(utils.make_model_with_empty_targets(model, task, 0, single_output))

    def loss_fn(output, target):
        loss = jnp.mean(jnp.sum(task.pointwise_loss_fn(output, target), axis=-1))
        return loss, {}

    def accuracy_fn(output, target):
        mask = task.accuracy_mask(target)
        return jnp.sum(mask * task.accuracy_fn(output, target)) / jnp.sum(mask)

    return model, loss_fn, accuracy_fn


def peer_worker(arch_key: str, repo: str, steps: int, repeats: int, curriculum_repeats: int) -> dict[str, Any]:
    """(c), (b), (a) of the module docstring with the peer's code (runs under ``--peer-python``)."""
    sys.path.insert(0, _peer_import_root(repo))
    t_import = time.perf_counter()
    import jax
    from neural_networks_chomsky_hierarchy.experiments import constants, training
    from neural_networks_chomsky_hierarchy.experiments import curriculum as curriculum_lib

    import_s = time.perf_counter() - t_import
    load_at_start = _load()
    arch = ARCHS[arch_key]
    captured: dict[str, Any] = {}
    update = training._update_parameters

    def spy(**kwargs):  # keeps the loop's optimizer, its state and functions for (b) and (a); computes nothing
        captured.update(kwargs)
        return update(**kwargs)

    training._update_parameters = spy

    t0 = time.perf_counter()
    task = constants.TASK_BUILDERS[TASK]()
    model, loss_fn, accuracy_fn = example_pieces(task, arch.peer, arch.peer_kwargs)
    params = training.ClassicTrainingParams(
        seed=0,
        model_init_seed=0,
        training_steps=steps - 1,  # the loop runs training_steps + 1 steps
        log_frequency=LOG_EVERY,
        length_curriculum=curriculum_lib.UniformCurriculum(values=list(range(1, MAX_LENGTH + 1))),
        batch_size=BATCH,
        task=task,
        model=model,
        loss_fn=loss_fn,
        learning_rate=1e-3,
        accuracy_fn=accuracy_fn,
        compute_full_range_test=False,
        is_autoregressive=False,
    )
    worker = training.TrainingWorker(params, use_tqdm=False)
    _, _, trained = worker.run()
    jax.block_until_ready(trained)
    wall_s = time.perf_counter() - t0
    programs = update._cache_size()  # training steps compiled by the loop: one per length it drew
    training._update_parameters = update

    state = {"params": captured["params"], "opt_state": captured["opt_state"]}
    fixed = {k: captured[k] for k in ("model_apply_fn", "loss_fn", "accuracy_fn", "optimizer", "is_autoregressive")}
    key = jax.random.PRNGKey(1)

    def step(batch):
        new_params, new_opt, metrics = update(
            params=state["params"], rng_key=key, batch=batch, opt_state=state["opt_state"], **fixed
        )
        jax.block_until_ready((new_params, new_opt, metrics))
        state["params"], state["opt_state"] = new_params, new_opt

    def timed(batch, n: int) -> list[float]:
        step(batch)  # compiles a length the 500 steps did not draw
        times = []
        for _ in range(n):
            t = time.perf_counter()
            step(batch)
            times.append(time.perf_counter() - t)
        return times

    per_length = {}
    for length in range(1, MAX_LENGTH + 1):
        batch = task.sample_batch(jax.random.PRNGKey(length), length=length, batch_size=BATCH)
        per_length[length] = timed(batch, curriculum_repeats)
    fixed = timed(task.sample_batch(jax.random.PRNGKey(0), length=MAX_LENGTH, batch_size=BATCH), repeats)
    return {
        "wall_s": wall_s,
        "steps": steps,
        "import_s": import_s,
        "programs": programs,
        **step_statistics(per_length, fixed),
        "load_average": [load_at_start, _load()],
        "params": sum(int(x.size) for x in jax.tree_util.tree_leaves(state["params"])),
        "versions": {
            **_versions(("jax", "jaxlib", "dm-haiku", "optax", "chex", "numpy")),
            "jax_backend": jax.default_backend(),
        },
    }


# ----------------------------------------------------------------------------- our side


def ours_worker(arch_key: str, steps: int, repeats: int, curriculum_repeats: int) -> dict[str, Any]:
    """(c), (b), (a) of the module docstring with the library's ``Run``."""
    t_import = time.perf_counter()
    import jax
    import numpy as np

    from panm_jax.tasks.buckets import pad_to_bucket
    from panm_jax.train.config import OptimizerConfig, TrainConfig
    from panm_jax.train.loop import Run

    import_s = time.perf_counter() - t_import
    load_at_start = _load()
    arch = ARCHS[arch_key]
    config = TrainConfig(
        task=TASK,
        model=arch.ours,
        model_options=dict(arch.ours_options),
        seed=0,
        num_steps=steps,
        batch_size=BATCH,
        task_options={"max_train_length": MAX_LENGTH},
        optimizer=OptimizerConfig(name="adam", learning_rate=1e-3, clip_value=None, clip_norm=1.0),
    )
    t0 = time.perf_counter()
    run = Run(config)
    state = run.state
    for i in range(steps):
        state, metrics = run.advance(state, run.batch([i]), None)
        if i % LOG_EVERY == 0:
            float(metrics["loss"])
    jax.block_until_ready(state)
    wall_s = time.perf_counter() - t0
    programs = run.train_step._cache_size()  # training steps compiled by the loop: one per bucket it drew

    holder = {"state": state}

    def timed(batch, n: int) -> list[float]:
        times = []
        for i in range(n + 1):  # the first untimed
            t = time.perf_counter()
            holder["state"], metrics = run.train_step(holder["state"], batch)
            jax.block_until_ready((holder["state"], metrics))
            if i:
                times.append(time.perf_counter() - t)
        return times

    rng = np.random.default_rng(1)
    per_shape: dict[int, list[float]] = {}
    per_length = {}
    bucket_of = {}
    for length in range(1, MAX_LENGTH + 1):
        batch = pad_to_bucket(run.task.sample(rng, BATCH, length), run.task, run.buckets)
        shape = int(batch.inputs.shape[1])
        if shape not in per_shape:
            per_shape[shape] = timed(run.shard(batch), curriculum_repeats)
        per_length[length] = per_shape[shape]
        bucket_of[length] = shape
    fixed = pad_to_bucket(run.task.sample(rng, BATCH, MAX_LENGTH), run.task, run.buckets)
    fixed_times = timed(run.shard(fixed), repeats)
    return {
        "wall_s": wall_s,
        "steps": steps,
        "import_s": import_s,
        "programs": programs,
        "buckets": list(run.buckets),
        "bucket_of": bucket_of,
        **step_statistics(per_length, fixed_times),
        "load_average": [load_at_start, _load()],
        "params": sum(int(x.size) for x in jax.tree_util.tree_leaves(holder["state"].params)),
        "versions": _versions(("jax", "jaxlib", "flax", "optax", "numpy")),
    }


# ----------------------------------------------------------------------------- the comparison


def parse_result(stdout: str) -> dict[str, Any] | None:
    """The worker's result: its last ``CHOMSKY_PEER_RESULT`` line, decoded; None where there is none."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith(RESULT_PREFIX)]
    return json.loads(lines[-1][len(RESULT_PREFIX) :]) if lines else None


def schedule(keys: Sequence[str], rounds: int) -> list[tuple[str, str, int]]:
    """``(arch, side, round)`` in run order: per architecture, peer then ours, ``rounds`` times."""
    return [(k, side, r) for k in keys for r in range(rounds) for side in SIDES]


MEASURES = (
    ("fixed_s", "fixed40"),
    ("fixed_min_s", "fixed40_min"),
    ("curriculum_s", "curriculum"),
    ("curriculum_min_s", "curriculum_min"),
    ("wall_s", "wall500"),
)


def summarise(key: str, results: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """One table row from both sides' per-round results: medians over rounds and peer / ours ratios."""
    arch = ARCHS[key]
    row: dict[str, Any] = {"arch": key, "peer_model": arch.peer, "ours_model": arch.ours}
    for field_name, short in MEASURES:
        peer = statistics.median(r[field_name] for r in results["peer"])
        ours = statistics.median(r[field_name] for r in results["ours"])
        row[f"peer_{short}_s"] = peer
        row[f"ours_{short}_s"] = ours
        row[f"ratio_{short}"] = peer / ours
    last = {side: results[side][-1] for side in SIDES}
    row.update(
        rounds=len(results["peer"]),
        steps=last["ours"]["steps"],
        peer_programs=last["peer"]["programs"],
        ours_programs=last["ours"]["programs"],
        peer_params=last["peer"]["params"],
        ours_params=last["ours"]["params"],
        ours_buckets=" ".join(str(b) for b in last["ours"].get("buckets", [])),
        round_results={side: results[side] for side in SIDES},
    )
    return row


def compare(
    keys: Sequence[str],
    rounds: int,
    measure: Callable[[str, str, int], dict[str, Any]],
    on_row: Callable[[list[dict[str, Any]]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run ``measure(arch, side, round)`` in ``schedule`` order; one row per architecture (``on_row`` after each)."""
    rows: list[dict[str, Any]] = []
    results: dict[str, dict[str, list]] = {k: {side: [] for side in SIDES} for k in keys}
    for key, side, r in schedule(keys, rounds):
        results[key][side].append(measure(key, side, r))
        if side == SIDES[-1] and r == rounds - 1:
            rows.append(summarise(key, results[key]))
            if on_row is not None:
                on_row(rows)
    return rows


def run_worker(cmd: Sequence[str]) -> dict[str, Any]:
    """Run one measurement process from the repository root; raises SystemExit with its output's tail on failure."""
    proc = subprocess.run(list(cmd), cwd=REPO, capture_output=True, text=True)
    result = parse_result(proc.stdout)
    if proc.returncode or result is None:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise SystemExit(f"measurement failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    return result


COLUMNS = [
    "arch",
    "ours_model",
    "peer_fixed40_s",
    "ours_fixed40_s",
    "ratio_fixed40",
    "peer_curriculum_s",
    "ours_curriculum_s",
    "ratio_curriculum",
    "peer_wall500_s",
    "ours_wall500_s",
    "ratio_wall500",
    "ratio_fixed40_min",
    "ratio_curriculum_min",
    "peer_programs",
    "ours_programs",
    "peer_params",
    "ours_params",
    "rounds",
]


def notes_for(steps: int, repeats: int, curriculum_repeats: int, buckets: str) -> str:
    return (
        "Reverse String, batch 128, the uniform curriculum over lengths 1..40, Adam 1e-3 after global-norm "
        "clipping at 1, each side's own training step. fixed40: median of "
        f"{repeats} steps at length 40 (steady state). curriculum: the mean over lengths 1..40 of each length's "
        f"median of {curriculum_repeats} steps, each length at its own program on the peer's side (no padding) and at "
        f"its bucket on ours (the library's default buckets for the task: {buckets}). wall500: {steps} training "
        "steps of the curriculum in a fresh process, from building the model to the last result, compilation "
        "included (import time excluded). programs: training steps compiled in that process. ratio = peer / "
        "ours (above 1: ours is faster); each figure the median over rounds, the per-round results in the JSON. "
        "Peer and ours alternate architecture by architecture in one run, every measurement its own process. "
        "*_min: the same from each length's (and length 40's) fastest step instead of its median, the step with "
        "the least interference where other work shares the machine; each process's load average at its start "
        "and end is in the JSON (round_results)."
    )


def combine(paths: Sequence[str], name: str) -> Path:
    """Write ``<name>.json`` from the records of runs at ``paths`` (each written by this module): their rows
    in order, each row naming its run's command, date and load average, the first run's environment."""
    from benchmarks import common

    records = [json.loads(Path(p).read_text()) for p in paths]
    rows = []
    for record in records:
        env = record["environment"]
        run = f"{record['command']} ({env.get('date', '?')}, load {env.get('load_average_before', '?')})"
        rows.extend(
            {**row, "run": row.get("run", run)} for row in record["rows"]
        )  # a combined record's rows keep theirs
    env = {**records[0]["environment"], "combined_from": [str(p) for p in paths]}
    notes = records[0]["notes"] + (
        f" Rows combined from {len(records)} runs of this module (the run column names each one's command; "
        "within a row, peer and ours alternated in that run). An architecture named in a run's --archs "
        "without a row here was not measured to the end."
    )
    command = common.portable_command(["--combine", ",".join(str(p) for p in paths)], "benchmarks.speed.chomsky_peer")
    title = records[0]["title"].replace("measured in one run", f"measured in {len(records)} runs on one machine")
    return common.write_results(name, title, rows, [*COLUMNS, "run"], env, notes, command=command)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peer-python", default="", help="a Python interpreter with jax, dm-haiku, optax installed")
    p.add_argument("--peer-repo", default="", help=f"a checkout of github.com/{PEER_REPO}")
    p.add_argument("--peer-commit", default="", help="the checkout's commit, where it is not a git work tree")
    p.add_argument("--archs", default=",".join(ARCHS), help=f"comma-separated, of {', '.join(ARCHS)}")
    p.add_argument("--rounds", type=int, default=1, help="peer/ours alternations per architecture (default 1)")
    p.add_argument("--steps", type=int, default=500, help="training steps of the wall-time measurement (default 500)")
    p.add_argument("--repeats", type=int, default=10, help="timed steps at length 40 (default 10)")
    p.add_argument("--curriculum-repeats", type=int, default=3, help="timed steps per length (default 3)")
    # Not chomsky_*: benchmarks/pages.py reads those as the Chomsky accuracy tables.
    p.add_argument("--name", default="peers_chomsky", help="results file name (default peers_chomsky)")
    p.add_argument("--worker", choices=SIDES, help=argparse.SUPPRESS)
    p.add_argument("--arch", default="", help=argparse.SUPPRESS)
    p.add_argument("--combine", default="", help="comma-separated records of earlier runs: write them as one (--name)")
    args = p.parse_args(argv)

    if args.combine:
        print("wrote", combine([c for c in args.combine.split(",") if c], args.name))
        return 0
    if args.worker == "peer":  # under --peer-python: no flax, no benchmarks.common
        out = peer_worker(args.arch, args.peer_repo, args.steps, args.repeats, args.curriculum_repeats)
        print(RESULT_PREFIX + json.dumps(out), flush=True)
        return 0
    if args.worker == "ours":
        out = ours_worker(args.arch, args.steps, args.repeats, args.curriculum_repeats)
        print(RESULT_PREFIX + json.dumps(out), flush=True)
        return 0

    keys = [k for k in args.archs.split(",") if k]
    unknown = [k for k in keys if k not in ARCHS]
    if unknown or not keys:
        raise SystemExit(
            f"--archs: unknown {', '.join(unknown) or '(none given)'}; expected some of {', '.join(ARCHS)}"
        )
    for name in ("rounds", "steps", "repeats", "curriculum_repeats"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')}: expected a positive integer, got {getattr(args, name)}")
    if not args.peer_python or not os.access(args.peer_python, os.X_OK):
        raise SystemExit(f"--peer-python: not an executable file: {args.peer_python!r}")
    if not (Path(args.peer_repo) / PEER_MARKER).is_file():
        raise SystemExit(f"--peer-repo: {args.peer_repo!r} has no {PEER_MARKER}; expected a checkout of {PEER_REPO}")

    from benchmarks import common
    from benchmarks.speed.peers import checkout_commit, load_average, this_cpu

    common_args = ["--steps", str(args.steps), "--repeats", str(args.repeats)]
    common_args += ["--curriculum-repeats", str(args.curriculum_repeats)]
    peer_info: dict[str, Any] = {}

    def measure(key: str, side: str, r: int) -> dict[str, Any]:
        python = args.peer_python if side == "peer" else sys.executable
        cmd = [python, "-m", "benchmarks.speed.chomsky_peer", "--worker", side, "--arch", key, *common_args]
        if side == "peer":
            cmd += ["--peer-repo", str(Path(args.peer_repo).resolve())]
        t0 = time.perf_counter()
        out = run_worker(cmd)
        print(
            f"{key} round {r + 1}/{args.rounds} {side}: fixed40 {out['fixed_s']:.4g} s, curriculum "
            f"{out['curriculum_s']:.4g} s, {args.steps} steps {out['wall_s']:.4g} s "
            f"({time.perf_counter() - t0:.0f} s in all)",
            flush=True,
        )
        if side == "peer":
            peer_info["peer_versions"] = out["versions"]
        return out

    env = {**common.environment(), **this_cpu(), "load_average_before": load_average()}
    env["affinity"] = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "unknown"
    commit = args.peer_commit or checkout_commit(args.peer_repo)
    env["peer_checkout"] = f"{PEER_REPO} @ {commit}"
    command = common.portable_command(argv, "benchmarks.speed.chomsky_peer")
    path = None

    def on_row(rows):
        nonlocal path
        env.update(peer_info, load_average_after=load_average())
        buckets = rows[-1]["ours_buckets"]
        title = "Chomsky-hierarchy architectures: DeepMind's code against ours, measured in one run"
        notes = notes_for(args.steps, args.repeats, args.curriculum_repeats, buckets)
        path = common.write_results(args.name, title, rows, COLUMNS, env, notes, command=command)

    rows = compare(keys, args.rounds, measure, on_row)
    print(common.markdown_table(rows, COLUMNS))
    print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
