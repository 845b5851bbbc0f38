"""Speed suite: training steps at the configurations the peers run, against the peers and our floor.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: about 5 minutes at the defaults
(estimated from the compile and step times in that folder's ``speed.json``); with ``--quick``
27 s (measured).

Run: ``python -m benchmarks.speed [--quick] [--only panm,ntm,dnc,stack]``. Writes
``benchmarks/results/<device>/speed.json``.

Each row is one full training step (forward, loss, backward, optimiser update)
of a model built by name, on Copy batches of the stated shape:

* PANM on Copy, B = 128, n = 10 (T_in 12, T_out 10), 10 address bits, GRU width
  256 (the paper) and 128 (the authors' public code), RMSprop as their code; and
  the evaluation forward at n = 81 at width 128;
* NTM on Copy: LSTM controller 100, memory 128 x 20, 1 read + 1 write head,
  n = 20, B = 1 and B = 128 (pytorch-ntm's copy setting; our inputs are 10
  one-hot symbols plus 2 delimiter channels where pytorch-ntm uses 8 bits);
* DNC: N = 64, 256, 1024 slots of W = 32, R = 4, B = 32, T = 50 steps (Copy
  n = 24: 26 input + 24 output steps), Adam; our controller is a one-layer
  256-wide LSTM (ixaxaar/pytorch-dnc's default is two layers);
* Stack-LSTM: B = 32, T = 64 steps (Copy n = 31), controller 256.

Per row: parameters, compile time, steady-state time per step (median, min, max
over ``repeats`` steps after warm-up, ``block_until_ready``), steps/s, the peer's
step time and our speed-up over it (from ``peers.json``, below), and the floor: FLOPs and recurrent-state bytes
counted from the step's jaxpr (``benchmarks/speed/cost.py``, loops multiplied out),
against the dense-matmul rate at the step's controller shape and the memory
bandwidth (a 256 MiB array scaled in place; 2 GiB on an accelerator), both measured in the same run; floor = max(FLOPs /
rate, bytes / bandwidth), and ``x_floor`` = measured / floor. Both floors are
columns (``flop_floor_s``, ``byte_floor_s``) and ``bound`` names the larger: an
elementwise step such as the NTM's is not bound by its FLOPs at matmul speed
unless its bytes say so too. The bandwidth is
DRAM's; a working set that stays in the caches (this CPU has 2 MiB of L2 and 32
MiB of L3) can beat the bytes term, so ``x_floor`` below 1 means the floor was
set by a bytes estimate that the caches beat, not an error in the timing.

``PANM_JAX_MALLOC=keep`` runs the suite with glibc's malloc told to keep freed
memory mapped (``benchmarks/allocator.py``; every result records the
setting under ``malloc``): XLA's per-call temporary buffer is then not mapped
and zeroed afresh by the kernel on every step. It helps the NTM step and slows
the DNC's, so it is not the default. On a CPU every row also says what those
faults cost: ``page_faults`` per step, counted by the OS over the timed steps;
``fault_s``, that count times the wall time one fault took in this run
(``common.page_fault_cost``); and ``x_floor_less_faults``, the step's distance
from its floor once that estimate is taken off. The faults are the runtime's and
the OS's, not the step's arithmetic: what is left is the part the kernels own.

With several devices (on a CPU, ``XLA_FLAGS=--xla_force_host_platform_device_count=K``)
every step is data parallel over them, placed as ``panm-jax train`` places it
where they divide its batch (``devices`` says how many; ``docs/performance.md``
has the counts compared).

``peer_s`` and ``speedup_vs_peer`` come only from ``peers.json`` in the same
results folder, written by ``benchmarks/speed/peers.py``, which times the peers' own
PyTorch models and ours alternately on one machine in one run; the table's
notes name that run (date, commit, command). Without that file both columns are
empty and the notes say how to fill them.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import jax
import numpy as np
import optax
from flax import nnx

from benchmarks import allocator, common
from benchmarks.speed import cost
from panm_jax.models import build_model
from panm_jax.tasks import get_task
from panm_jax.train.optim import paper_optimizer
from panm_jax.train.sharding import make_mesh, replicate, shard_batch
from panm_jax.train.steps import cast_floating, init_train_state, make_train_step, merge_model


@dataclass(frozen=True)
class Case:
    family: str  # --only selects by family
    label: str
    model: str
    model_options: dict = field(default_factory=dict)
    task_length: int = 10  # Copy n: T_in = n + 2, T_out = n
    batch: int = 128
    optimizer: str = "paper"  # "paper" (RMSprop 1e-4, clip 10) or "adam"
    peer: str = ""  # the peer implementation timed at this configuration by benchmarks/speed/peers.py
    goal_s: float | None = None
    eval_only: bool = False
    repeats: int = 20
    gpu_goal_s: float | None = None  # the goal on an accelerator, where it differs from the CPU goal
    goal_x_floor: float | None = None  # a goal stated as a multiple of the floor (measured / floor)
    goal_vs_peer: float | None = None  # a goal on speedup_vs_peer (the peers run's ratio, peers.json)
    accelerator_only: bool = False  # too large for the CPU suite; run where jax's platform is not "cpu"
    throughput_sweep: bool = False  # also time larger batches (x4 each) until one does not fit (accelerators only)


CASES = (
    Case(
        "panm",
        "PANM D=256, Copy n=10, B=128",
        "panm",
        {"hidden": 256},
        10,
        128,
        peer="PANM authors' code",
        goal_s=0.200,
        gpu_goal_s=0.010,
        throughput_sweep=True,
    ),
    Case(
        "panm",
        "PANM D=128, Copy n=10, B=128",
        "panm",
        {"hidden": 128},
        10,
        128,
        peer="PANM authors' code",
        goal_s=0.070,
    ),
    Case(
        "panm",
        "PANM D=128, eval forward n=81, B=128",
        "panm",
        {"hidden": 128},
        81,
        128,
        peer="PANM authors' code",
        goal_s=0.27,
        eval_only=True,
        repeats=10,
    ),
    Case(
        "ntm",
        "NTM ctrl 100, 128x20, Copy n=20, B=128",
        "ntm",
        {"hidden": 100, "num_slots": 128, "word_size": 20},
        20,
        128,
        peer="pytorch-ntm",
        goal_s=0.1,
        goal_x_floor=3.0,
    ),
    Case(
        "ntm",
        "NTM ctrl 100, 128x20, Copy n=20, B=1",
        "ntm",
        {"hidden": 100, "num_slots": 128, "word_size": 20},
        20,
        1,
        peer="pytorch-ntm",
    ),
    Case(
        "dnc",
        "DNC N=64, W=32, R=4, T=50, B=32",
        "dnc",
        {"hidden": 256, "num_slots": 64, "word_size": 32, "num_reads": 4},
        24,
        32,
        "adam",
        peer="pytorch-dnc",
        goal_s=0.150,
        goal_x_floor=3.0,
    ),
    Case(
        "dnc",
        "DNC N=256, W=32, R=4, T=50, B=32",
        "dnc",
        {"hidden": 256, "num_slots": 256, "word_size": 32, "num_reads": 4},
        24,
        32,
        "adam",
        peer="pytorch-dnc",
        goal_x_floor=3.0,
        goal_vs_peer=5.0,
    ),
    # No remat: the link's hand-written VJP (dnc.link_and_directions) keeps one [B, N, N] array per
    # step for the backward pass, 6.7 GB here (peak 9 GB); autodiff kept several and needed remat.
    Case(
        "dnc",
        "DNC N=1024, W=32, R=4, T=50, B=32",
        "dnc",
        {"hidden": 256, "num_slots": 1024, "word_size": 32, "num_reads": 4},
        24,
        32,
        "adam",
        peer="pytorch-dnc",
        goal_s=10.0,
        goal_x_floor=3.0,
        repeats=20,
    ),
    Case("stack", "Stack-LSTM ctrl 256, T=64, B=32", "stack_lstm", {"hidden": 256}, 31, 32),
    # The accelerator goal: within 3x of its memory-bandwidth floor. The link VJP keeps one
    # [B, N, N] float32 array per step: 256 * 1024^2 * 4 B * 50 steps = 54 GB.
    Case(
        "dnc",
        "DNC N=1024, W=32, R=4, T=50, B=256",
        "dnc",
        {"hidden": 256, "num_slots": 1024, "word_size": 32, "num_reads": 4},
        24,
        256,
        "adam",
        goal_x_floor=3.0,
        accelerator_only=True,
        repeats=10,
    ),
)

SWEEP_MAX_BATCH = 131072


def find_case(pattern: str) -> Case:
    """The case labelled ``pattern``, else the one whose label contains it (case-insensitive), else a ValueError."""
    found = [c for c in CASES if pattern.lower() == c.label.lower()] or [
        c for c in CASES if pattern.lower() in c.label.lower()
    ]
    if len(found) != 1:
        labels = "\n  ".join(c.label for c in CASES)
        raise ValueError(
            f"case: expected a pattern matching exactly one of\n  {labels}\ngot {pattern!r}, which matches {len(found)}"
        )
    return found[0]


def build_case(case: Case, compute_dtype: str = "float32"):
    """``(fn, state, batch, params)``: the case's step function, its train state and batch, its parameter count.

    ``compute_dtype``: the forward pass's dtype (``TrainConfig.compute_dtype``; the parameters stay float32).
    """
    task = get_task("copy")  # sample() takes any length up to 1022; only its training range is 1..10
    batch = task.sample(np.random.default_rng(0), case.batch, case.task_length)
    model = build_model(case.model, input_size=task.input_size, output_size=task.output_size, **case.model_options)
    params = sum(x.size for x in jax.tree_util.tree_leaves(nnx.state(model, nnx.Param)))
    if case.optimizer == "adam":
        optimizer = optax.adam(1e-3)
    else:
        optimizer = paper_optimizer()
    graphdef, state = init_train_state(model, optimizer)
    if case.eval_only:

        def fn(state, batch):
            params, inputs = state.params, batch.inputs
            if compute_dtype != "float32":
                params, inputs = cast_floating(params, compute_dtype), inputs.astype(compute_dtype)
            m = merge_model(graphdef, params)
            return m(inputs, batch.input_mask, batch.targets.shape[1])
    else:
        fn = make_train_step(graphdef, optimizer, task, compute_dtype=compute_dtype)
    return fn, state, batch, params


def goal_of(case: Case, accelerator: bool) -> float | None:
    """The goal in seconds for this platform (None: no goal in seconds)."""
    return (case.gpu_goal_s if case.gpu_goal_s is not None else case.goal_s) if accelerator else case.goal_s


def goal_columns(case: Case, row: dict, accelerator: bool) -> dict:
    """``goal`` (every goal of the case, ``;``-separated) and ``meets_goal`` (all of them met).

    ``row`` needs ``median_s``, ``floor_s`` and ``x_floor``; a goal on the peer ratio
    reads ``speedup_vs_peer`` and is unmet while that is empty (no peers run). Both
    are "" for a case without goals.
    """
    texts, met = [], []
    seconds = goal_of(case, accelerator)
    if seconds is not None:
        texts.append(f"<= {seconds:g} s")
        met.append(row["median_s"] <= seconds)
    if case.goal_x_floor is not None:
        texts.append(f"<= {case.goal_x_floor:g} x floor ({case.goal_x_floor * row['floor_s']:.4g} s)")
        met.append(row["x_floor"] <= case.goal_x_floor)
    if case.goal_vs_peer is not None and not accelerator:
        texts.append(f">= {case.goal_vs_peer:g} x {case.peer or 'peer'}")
        ratio = row.get("speedup_vs_peer", "")
        met.append(ratio != "" and float(ratio) >= case.goal_vs_peer)
    if not texts:
        return {"goal": "", "meets_goal": ""}
    return {"goal": "; ".join(texts), "meets_goal": all(met)}


def warmup_of(case: Case) -> int:
    """Untimed steps before the timed ones: 1 for a case of fewer than 20 repeats, else 2."""
    return 1 if case.repeats < 20 else 2


PEERS_FILE = "peers.json"


def load_peers(folder: Path | None = None) -> dict | None:
    """The ``peers.json`` that ``benchmarks/speed/peers.py`` wrote in ``folder`` (default: this device's), else None."""
    path = (folder if folder is not None else common.RESULTS_DIR / common.device_slug()) / PEERS_FILE
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def peer_columns(label: str, peers: dict | None) -> dict:
    """``peer_s`` and ``speedup_vs_peer`` for the case ``label`` from a ``peers.json`` payload ("" where none).

    Both come from the peers run, where the peer and ours were timed alternately on
    one machine: ``speedup_vs_peer`` is that run's ratio, not ``peer_s`` over this
    table's ``median_s``.
    """
    for row in (peers or {}).get("rows", []):
        if row.get("case") == label:
            return {"peer_s": row["peer_s"], "speedup_vs_peer": row["ratio"]}
    return {"peer_s": "", "speedup_vs_peer": ""}


def peers_note(peers: dict | None) -> str:
    """The table's sentence saying where the peer columns come from, or how to fill them."""
    if peers is None:
        return (
            f" peer_s and speedup_vs_peer are empty: no {PEERS_FILE} for this device. Fill them by running "
            "python -m benchmarks.speed.peers --peer-python PYTHON_WITH_TORCH --panm PANM --ntm PYTORCH_NTM "
            "--dnc PYTORCH_DNC (benchmarks/speed/peers.py), then this suite again."
        )
    env = peers.get("environment", {})
    return (
        f" peer_s and speedup_vs_peer come from {PEERS_FILE} (benchmarks/speed/peers.py, run of "
        f"{env.get('date', '?')}, "
        f"commit {env.get('commit', '?')}, torch {env.get('torch', '?')}, command: {peers.get('command', '?')}): "
        "the peer's median step and the ratio peer / ours measured alternately in that run, not this table's median_s."
    )


def floor_of(counted: dict[str, float], rate_gflops: float, bandwidth_gbs: float) -> dict:
    """The step's two floors and the one that binds, from ``cost.count``'s FLOPs and bytes.

    ``flop_floor_s`` = FLOPs / the matmul rate (every FLOP at the best rate this
    device reached, elementwise ones included, so a lower bound); ``byte_floor_s`` =
    bytes / the memory bandwidth (the traffic the step cannot avoid, also a lower
    bound); ``floor_s`` is the larger and ``bound`` names it ("FLOPs" or "bytes").
    """
    flop_floor = counted["flops"] / (rate_gflops * 1e9)
    byte_floor = counted["bytes"] / (bandwidth_gbs * 1e9)
    return {
        "flop_floor_s": flop_floor,
        "byte_floor_s": byte_floor,
        "floor_s": max(flop_floor, byte_floor),
        "bound": "FLOPs" if flop_floor >= byte_floor else "bytes",
    }


def fault_columns(page_faults: float, fault_cost_s: float, median_s: float, floor_s: float) -> dict:
    """``page_faults`` per step, ``fault_s`` (those faults at the cost per fault measured in this run) and
    ``x_floor_less_faults`` = (median_s - fault_s) / floor_s; the last two empty where either is unknown."""
    counted = not math.isnan(page_faults)
    fault_s = page_faults * fault_cost_s if counted and not math.isnan(fault_cost_s) else None
    return {
        "page_faults": round(page_faults) if counted else "",
        "fault_s": fault_s if fault_s is not None else "",
        "x_floor_less_faults": (median_s - fault_s) / floor_s if fault_s is not None else "",
    }


def run_case(case: Case, quick: bool, bw: float, fault_cost_s: float = float("nan")) -> dict:
    fn, state, batch, params = build_case(case)
    # Data parallel over every device, placed as panm-jax train places them, where they divide the batch
    # (elsewhere, as at B = 1, the step runs on one device).
    if jax.device_count() > 1 and case.batch % jax.device_count() == 0:
        mesh = make_mesh()
        state, batch = replicate(state, mesh), shard_batch(batch, mesh)
    devices = len(jax.device_put(batch.inputs).sharding.device_set)  # the devices the batch is split over
    repeats = 3 if quick else case.repeats
    t = common.time_compiled(fn, state, batch, warmup=warmup_of(case), repeats=repeats)
    counted = cost.count(fn, state, batch)
    hidden = case.model_options.get("hidden", 256)
    rate = common.matmul_rate(case.batch, hidden, 4 * hidden, repeats)  # the controller's recurrent shape
    floors = floor_of(counted, rate, bw)
    floor = floors["floor_s"]
    row = {
        "case": case.label,
        "model": case.model,
        "params": params,
        "B": case.batch,
        "devices": devices,
        "T_in": int(batch.inputs.shape[1]),
        "T_out": int(batch.targets.shape[1]),
        "compile_s": t["compile_s"],
        "median_s": t["median_s"],
        "min_s": t["min_s"],
        "max_s": t["max_s"],
        "steps_per_s": 1.0 / t["median_s"],
        "GFLOP": counted["flops"] / 1e9,
        "MB_state": counted["bytes"] / 1e6,
        "matmul_GFLOPs": rate,
        **floors,
        "x_floor": t["median_s"] / floor,
        **fault_columns(t["page_faults"], fault_cost_s, t["median_s"], floor),
        "peer": case.peer,
        "peer_s": "",  # filled by main from peers.json (peer_columns)
        "speedup_vs_peer": "",
        "sequences_per_s": case.batch / t["median_s"],
        "goal": "",
        "meets_goal": "",
    }
    row.update(goal_columns(case, row, common.on_accelerator()))
    print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    return row


def _out_of_memory(err: Exception) -> bool:
    text = str(err)
    return "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower()


def run_or_out_of_memory(case: Case, quick: bool, bw: float, fault_cost_s: float = float("nan")) -> tuple[dict, bool]:
    """``(row, fitted)``: ``run_case``'s row, or a row saying the case ran out of device memory.

    Any other error is raised.
    """
    try:
        return run_case(case, quick, bw, fault_cost_s), True
    except Exception as err:  # noqa: BLE001 - only out-of-memory becomes a row
        if not _out_of_memory(err):
            raise
        print(f"{case.label}: out of device memory", flush=True)
        return {"case": case.label, "model": case.model, "B": case.batch, "median_s": "out of memory"}, False


def throughput_sweep(case: Case, bw: float) -> list[dict]:
    """Rows for ``case`` at batch x4, x16, ... until a batch does not fit (or SWEEP_MAX_BATCH).

    The largest batch that fits is the last timed row; the batch that ran out of
    device memory follows it (``median_s`` reads "out of memory"), so the table
    says where the sweep stopped and why.
    """
    rows = []
    b = case.batch * 4
    while b <= SWEEP_MAX_BATCH:
        big = replace(
            case,
            label=case.label.replace(f"B={case.batch}", f"B={b}"),
            batch=b,
            repeats=10,
            peer="",
            goal_s=None,
            gpu_goal_s=None,
            throughput_sweep=False,
        )
        row, fitted = run_or_out_of_memory(big, False, bw)
        rows.append(row)
        if not fitted:
            break
        b *= 4
    return rows


def main(argv=None) -> int:
    allocator.configure_from_environment()  # PANM_JAX_MALLOC=keep: benchmarks/allocator.py
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.speed", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="3 repeats, PANM n=10 and NTM B=1 only; records nothing")
    p.add_argument("--only", default="", help="comma-separated families: panm, ntm, dnc, stack")
    p.add_argument("--name", default="speed", help="the results' file name, <name>.json (default: speed)")
    args = p.parse_args(argv)
    families = {f for f in args.only.split(",") if f}
    accelerator = common.on_accelerator()
    cases = [c for c in CASES if (not families or c.family in families) and (accelerator or not c.accelerator_only)]
    if args.quick:
        cases = [c for c in cases if c.label.startswith(("PANM D=128, Copy", "NTM ctrl 100, 128x20, Copy n=20, B=1"))]
    env = common.environment()
    bw = common.memory_bandwidth(3 if args.quick else 20)
    print(f"memory bandwidth ({common.bandwidth_mib()} MiB, in place): {bw:.1f} GB/s", flush=True)
    # Host page faults matter on a CPU, where XLA's temporaries are host memory; on an accelerator they are not.
    fault_cost = float("nan") if accelerator else common.page_fault_cost(3 if args.quick else 10)
    print(f"cost of a minor page fault: {1e6 * fault_cost:.2f} us", flush=True)
    cols = [
        "case",
        "params",
        "devices",
        "compile_s",
        "median_s",
        "min_s",
        "max_s",
        "steps_per_s",
        "GFLOP",
        "MB_state",
        "matmul_GFLOPs",
        "flop_floor_s",
        "byte_floor_s",
        "floor_s",
        "bound",
        "x_floor",
        "page_faults",
        "fault_s",
        "x_floor_less_faults",
        "sequences_per_s",
        "peer",
        "peer_s",
        "speedup_vs_peer",
        "goal",
        "meets_goal",
    ]
    notes = (
        f"Memory bandwidth measured in this run: {bw:.1f} GB/s ({common.bandwidth_mib()} MiB scaled in "
        "place). GFLOP and MB_state counted from each step's jaxpr with loops multiplied out "
        "(benchmarks/speed/cost.py); matmul_GFLOPs measured at the step's controller shape; "
        "flop_floor_s = GFLOP / matmul rate, byte_floor_s = bytes / bandwidth (each a lower bound); "
        "floor_s is the larger, bound names it, x_floor = median_s / floor_s."
    )
    if not math.isnan(fault_cost):
        notes += (
            f" page_faults: the process's minor page faults per step (pages the OS mapped and zeroed afresh "
            "because XLA's CPU runtime allocates a call's temporaries anew and glibc returns large blocks to the OS "
            f"when they are freed); fault_s = page_faults x {1e6 * fault_cost:.2f} us, the wall time per fault "
            "measured in this run (benchmarks/common.py, page_fault_cost: a compiled pass writing a fresh "
            "output against the same pass in place), an estimate of what the faults add to median_s; "
            "x_floor_less_faults = (median_s - fault_s) / floor_s."
        )
    peers = load_peers()
    notes += peers_note(peers)
    if accelerator:
        notes += (
            " The peers run on this machine's CPU (benchmarks/speed/peers.py), so speedup_vs_peer compares this "
            "accelerator with that CPU. The rows at B > 128 are the throughput sweep: each batch x4 until one "
            "does not fit in device memory; sequences_per_s = B / median_s."
        )
    command = common.portable_command(argv, "benchmarks.speed")
    rows = []
    for i, case in enumerate(cases):
        row, fitted = run_or_out_of_memory(case, args.quick, bw, fault_cost)
        if fitted:
            row.update(peer_columns(case.label, peers))
            row.update(goal_columns(case, row, accelerator))  # again: a goal on the peer ratio needs its column
        rows.append(row)
        if not fitted and not case.model_options.get("remat", False):  # retry, recomputing each step
            row = run_case(
                replace(case, label=case.label + " (remat)", model_options={**case.model_options, "remat": True}),
                args.quick,
                bw,
                fault_cost,
            )
            row.update(peer_columns(case.label, peers))
            rows.append({**row, **goal_columns(case, row, accelerator)})
        if case.throughput_sweep and accelerator and not args.quick:
            rows.extend(throughput_sweep(case, bw))  # an accelerator: no fault columns
        if not args.quick:  # after every case: a crash later keeps what was measured
            done = i + 1 == len(cases)
            title = "Training steps at the peers' configurations" + (
                "" if done else f" (partial: {i + 1} of {len(cases)} cases)"
            )
            path = common.write_results(args.name, title, rows, cols, env, notes, command=command)
    print(common.markdown_table(rows, cols))
    if not args.quick:
        print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
