"""Peer comparison measured in one run: the peers' own PyTorch models against ours, on the same machine.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: about 1.5 hours at the defaults
(estimated from the step times in that folder's ``peers.json``, most of it the DNC at N = 1,024);
there is no ``--quick``: ``--cases`` and ``--repeats`` shorten it.

Run (torch is an optional extra of the benchmarks, installed in a virtual
environment of its own, never in the library's)::

    python3 -m venv /tmp/peers-venv && /tmp/peers-venv/bin/pip install torch numpy
    python -m benchmarks.speed.peers --peer-python /tmp/peers-venv/bin/python \\
        --panm PATH/TO/PANM --ntm PATH/TO/pytorch-ntm --dnc PATH/TO/pytorch-dnc [--cases ntm-b1,dnc64] [--rounds 3]

``--panm``, ``--ntm`` and ``--dnc`` are checkouts of thaihungle/PANM,
loudinthecloud/pytorch-ntm and ixaxaar/pytorch-dnc. Writes
``benchmarks/results/<device>/peers.json``, which ``benchmarks/speed/suite.py``
reads for its ``peer_s`` and ``speedup_vs_peer`` columns.

The cases are ``benchmarks/speed/suite.py``'s that name a peer (``Case.peer``), with
their configurations taken from there; ``--list`` prints their keys. For each
case the peer's own model class is built at the same configuration:

* ``panm*``: the authors' ``baselines.panm.PANM`` (bidirectional-GRU encoder,
  ``controller_size = hidden_dim = D``, ``add_space`` = our address bits), trained
  as their ``run_algo_task.py`` does: cross-entropy, gradient values clipped at 10,
  RMSprop (lr 1e-4, alpha 0.95, momentum 0.9). The evaluation case is one forward
  pass under ``torch.no_grad`` with the model in ``eval()`` mode;
* ``ntm-b*``: ``ntm.aio.EncapsulatedNTM`` (1 controller layer, 1 read + 1 write
  head), trained as pytorch-ntm's ``train.py`` does: input steps fed one at a time,
  output steps read with no input, BCE on the sigmoid outputs, gradients clamped
  to [-10, 10], RMSprop (lr 1e-4, alpha 0.95, momentum 0.9);
* ``dnc*``: ``dnc.DNC`` with one layer of one LSTM of width 256
  (``num_hidden_layers=1``; the package's default is 2), ``independent_linears``
  as its copy task, BCE with logits, gradient norm clipped at 50, Adam
  (eps 1e-9, betas 0.9, 0.98) as its ``tasks/copy_task.py``.

Every peer sees our Copy batch's shapes (input and output widths, T_in and T_out,
batch), filled with random one-hot symbols and the two delimiters; the DNC,
which reads and writes at every step, gets the T_in + T_out steps as one sequence.

Protocol: each measurement is a fresh subprocess, the peer's under
``--peer-python`` with ``torch.set_num_threads(os.cpu_count())``, ours under this
interpreter through ``suite.build_case`` and ``common.time_compiled``; both take
the warm-up of ``suite.warmup_of`` (untimed) and then ``repeats`` timed training
steps (forward, loss, backward, optimiser update) on a fixed batch, and report
the median. Per case the two alternate, peer then ours, for ``--rounds`` rounds;
``peer_s`` and ``ours_s`` are the medians of the rounds' medians and ``ratio`` =
peer_s / ours_s. The record names the CPU (model, cores, the AVX2 / AVX-512 /
AMX flags that decide XLA's and oneDNN's kernels), torch's and JAX's versions,
and the load average before and after. Run it on an otherwise idle machine:
torch's threads wait on each other at every operator, and where other processes
hold the cores a step slows down many-fold (``--peer-threads 1`` shows how much),
so a loaded machine measures the contention, not the implementations.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RESULT_PREFIX = "PEERS_RESULT "
SIDES = ("peer", "ours")


@dataclass(frozen=True)
class Peer:
    repo: str  # owner/name on GitHub
    marker: str  # a file every checkout of it has, relative to its root


PEERS = {  # suite.Case.family -> the peer implementation; the family is also the path argument's name
    "panm": Peer("thaihungle/PANM", "baselines/panm.py"),
    "ntm": Peer("loudinthecloud/pytorch-ntm", "ntm/aio.py"),
    "dnc": Peer("ixaxaar/pytorch-dnc", "dnc/dnc.py"),
}

CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16")


# ----------------------------------------------------------------------------- cases (ours' side: imports jax)


def case_key(case) -> str:
    """A short name for a ``suite.Case``: ``panm256``, ``panm128-eval81``, ``ntm-b1``, ``dnc1024``."""
    o = case.model_options
    if case.family == "panm":
        return f"panm{o['hidden']}" + (f"-eval{case.task_length}" if case.eval_only else "")
    if case.family == "ntm":
        return f"ntm-b{case.batch}"
    if case.family == "dnc":
        return f"dnc{o['num_slots']}"
    return f"{case.family}-b{case.batch}"


def peer_cases() -> dict[str, Any]:
    """``key -> suite.Case`` for every CPU case of the speed suite that names a peer."""
    from benchmarks.speed import suite

    cases = {case_key(c): c for c in suite.CASES if c.peer and c.family in PEERS and not c.accelerator_only}
    return cases


def select(cases: dict[str, Any], wanted: str) -> list[str]:
    """The keys named in the comma-separated ``wanted`` (keys or families; empty: all), in the suite's order."""
    names = [w for w in wanted.split(",") if w]
    if not names:
        return list(cases)
    unknown = [w for w in names if w not in cases and w not in {c.family for c in cases.values()}]
    if unknown:
        raise SystemExit(f"--cases: unknown {', '.join(unknown)}; expected keys or families of: {', '.join(cases)}")
    return [k for k, c in cases.items() if k in names or c.family in names]


def peer_spec(case) -> dict[str, Any]:
    """What the peer worker needs to build the peer's model at ``case``'s configuration (plain JSON)."""
    import numpy as np

    from panm_jax.models.panm import PANMConfig
    from panm_jax.tasks import get_task

    task = get_task("copy")
    batch = task.sample(np.random.default_rng(0), 1, case.task_length)
    spec = {
        "family": case.family,
        "batch": case.batch,
        "T_in": int(batch.inputs.shape[1]),
        "T_out": int(batch.targets.shape[1]),
        "input_size": task.input_size,
        "output_size": task.output_size,
        "eval_only": case.eval_only,
        **case.model_options,
    }
    if case.family == "panm":
        spec.setdefault("address_bits", PANMConfig.address_bits)
    return spec


# ----------------------------------------------------------------------------- the machine


def cpu_description(cpuinfo: str, cores: int | None = None) -> dict[str, Any]:
    """The CPU model, core count and the SIMD flags that decide XLA's and oneDNN's CPU kernels, from /proc/cpuinfo."""
    model, flags = "", set()
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        name = name.strip()
        if name == "model name" and not model:
            model = value.strip()
        elif name == "flags" and not flags:
            flags = set(value.split())
    out: dict[str, Any] = {"cpu_model": model or "unknown", "cores": cores if cores is not None else os.cpu_count()}
    for flag in CPU_FLAGS:
        out[flag] = flag in flags
    out["amx"] = " ".join(sorted(f for f in flags if f.startswith("amx"))) or False
    return out


def load_average() -> float:
    """The 1-minute load average (0.0 where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return 0.0


def this_cpu() -> dict[str, Any]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    return cpu_description(text)


# ----------------------------------------------------------------------------- the workers (one per subprocess)


def _copy_tensors(torch, spec: dict[str, Any]):
    """``(inputs [T_in, B, in], targets [T_out, B, out], symbols [T_out, B])``: a Copy batch of the spec's shapes."""
    t_in, t_out, b = spec["T_in"], spec["T_out"], spec["batch"]
    n_in, n_out = spec["input_size"], spec["output_size"]
    g = torch.Generator().manual_seed(0)
    symbols = torch.randint(n_out, (t_out, b), generator=g)
    targets = torch.nn.functional.one_hot(symbols, n_out).float()
    inputs = torch.zeros(t_in, b, n_in)
    inputs[0, :, n_out] = 1.0  # start delimiter
    inputs[1 : t_out + 1, :, :n_out] = targets
    inputs[t_in - 1, :, n_out + 1] = 1.0  # end delimiter
    return inputs, targets, symbols


def _panm_step(torch, spec):
    from baselines.panm import PANM  # the authors' repository

    d = spec["hidden"]
    model = PANM(
        in_size=spec["input_size"],
        out_size=spec["output_size"],
        embed_size=spec["input_size"],
        controller_size=d,
        hidden_dim=d,
        add_space=spec["address_bits"],
    )
    inputs, _, symbols = _copy_tensors(torch, spec)
    t_out, n_out = spec["T_out"], spec["output_size"]
    if spec["eval_only"]:
        model.eval()

        def step():
            with torch.no_grad():
                out, _ = model(inputs, target_length=t_out)
            return out

        return model, step
    model.train()
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-4, alpha=0.95, momentum=0.9)

    def step():
        optimizer.zero_grad()
        out, _ = model(inputs, target_length=t_out)
        loss = criterion(out.reshape(-1, n_out), symbols.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_value_(model.parameters(), 10)
        optimizer.step()
        return loss.item()

    return model, step


def _ntm_step(torch, spec):
    from ntm.aio import EncapsulatedNTM  # pytorch-ntm

    net = EncapsulatedNTM(
        spec["input_size"], spec["output_size"], spec["hidden"], 1, 1, spec["num_slots"], spec["word_size"]
    )
    inputs, targets, _ = _copy_tensors(torch, spec)
    criterion = torch.nn.BCELoss()
    optimizer = torch.optim.RMSprop(net.parameters(), momentum=0.9, alpha=0.95, lr=1e-4)

    def step():  # pytorch-ntm's train.train_batch
        optimizer.zero_grad()
        net.init_sequence(spec["batch"])
        for i in range(inputs.size(0)):
            net(inputs[i])
        y_out = torch.zeros(targets.size())
        for i in range(targets.size(0)):
            y_out[i], _ = net()
        loss = criterion(y_out, targets)
        loss.backward()
        for p in net.parameters():
            if p.grad is not None:
                p.grad.data.clamp_(-10, 10)
        optimizer.step()
        return loss.item()

    return net, step


def _dnc_step(torch, spec):
    from dnc import DNC  # pytorch-dnc

    rnn = DNC(
        input_size=spec["input_size"],
        hidden_size=spec["hidden"],
        rnn_type="lstm",
        num_layers=1,
        num_hidden_layers=1,
        nr_cells=spec["num_slots"],
        cell_size=spec["word_size"],
        read_heads=spec["num_reads"],
        batch_first=True,
        independent_linears=True,
        device=torch.device("cpu"),
    )
    inputs, targets, _ = _copy_tensors(torch, spec)
    t_in, t_out, b, n_in = spec["T_in"], spec["T_out"], spec["batch"], spec["input_size"]
    x = torch.zeros(b, t_in + t_out, n_in)  # one sequence: the input steps, then T_out steps of no input
    x[:, :t_in] = inputs.transpose(0, 1)
    y = torch.zeros(b, t_in + t_out, n_in)  # the DNC's output is input_size wide
    y[:, t_in:, : spec["output_size"]] = targets.transpose(0, 1)
    y_time_first = y.transpose(0, 1).contiguous()
    optimizer = torch.optim.Adam(rnn.parameters(), lr=1e-4, eps=1e-9, betas=(0.9, 0.98))

    def step():  # pytorch-dnc's tasks/copy_task.py
        optimizer.zero_grad()
        output, _ = rnn(x, (None, None, None), reset_experience=True, pass_through_memory=True)
        # DNC.forward returns [T, B, .] even with batch_first=True (it transposes back only when batch_first
        # is False); the loss takes the target in the layout the output has.
        target = y if output.shape == y.shape else y_time_first
        loss = torch.nn.functional.binary_cross_entropy_with_logits(output, target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(rnn.parameters(), 50)
        optimizer.step()
        return loss.item()

    return rnn, step


PEER_STEPS = {"panm": _panm_step, "ntm": _ntm_step, "dnc": _dnc_step}


def _summary(times: Sequence[float]) -> dict[str, float]:
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


def peer_worker(spec: dict[str, Any], checkout: str, warmup: int, repeats: int, threads: int = 0) -> dict[str, Any]:
    """Time the peer's step (runs under ``--peer-python``: imports torch and the peer's checkout, never jax).

    ``threads``: torch's intra-op threads (0: one per core).
    """
    import torch

    torch.set_num_threads(threads or os.cpu_count() or 1)
    torch.manual_seed(0)
    sys.path.insert(0, str(Path(checkout).resolve()))
    model, step = PEER_STEPS[spec["family"]](torch, spec)
    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return {
        **_summary(times),
        "params": sum(p.numel() for p in model.parameters()),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
    }


def ours_worker(label: str, warmup: int, repeats: int) -> dict[str, Any]:
    """Time our step for the speed case labelled ``label``, as ``suite.run_case`` times it."""
    import jax

    from benchmarks import allocator, common
    from benchmarks.speed import suite

    allocator.configure_from_environment()
    fn, state, batch, params = suite.build_case(suite.find_case(label))
    t = common.time_compiled(fn, state, batch, warmup=warmup, repeats=repeats)
    return {**{k: t[k] for k in ("median_s", "min_s", "max_s", "compile_s")}, "params": params, "jax": jax.__version__}


# ----------------------------------------------------------------------------- the comparison


def schedule(keys: Sequence[str], rounds: int) -> list[tuple[str, str, int]]:
    """``(key, side, round)`` in run order: per case, peer then ours, ``rounds`` times."""
    return [(k, side, r) for k in keys for r in range(rounds) for side in SIDES]


def summarise(key: str, case, results: dict[str, list[dict[str, Any]]], repeats: int) -> dict[str, Any]:
    """One table row from the per-round results of both sides."""
    med = {side: [r["median_s"] for r in results[side]] for side in SIDES}
    peer_s, ours_s = statistics.median(med["peer"]), statistics.median(med["ours"])
    return {
        "key": key,
        "case": case.label,
        "peer": case.peer,
        "peer_s": peer_s,
        "ours_s": ours_s,
        "ratio": peer_s / ours_s,
        "rounds": len(med["peer"]),
        "repeats": repeats,
        "peer_round_medians": med["peer"],
        "ours_round_medians": med["ours"],
        "peer_params": results["peer"][0].get("params", ""),
        "ours_params": results["ours"][0].get("params", ""),
    }


def compare(
    cases: dict[str, Any],
    keys: Sequence[str],
    rounds: int,
    measure: Callable[[str, str, int], dict[str, Any]],
    repeats_of: Callable[[Any], int],
    on_row: Callable[[list[dict[str, Any]]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run ``measure(key, side, round)`` in ``schedule`` order; return one row per case.

    ``on_row(rows)`` is called after each finished case, so a crash later keeps what was measured.
    """
    rows: list[dict[str, Any]] = []
    results: dict[str, dict[str, list]] = {k: {side: [] for side in SIDES} for k in keys}
    for key, side, r in schedule(keys, rounds):
        results[key][side].append(measure(key, side, r))
        if side == SIDES[-1] and r == rounds - 1:
            rows.append(summarise(key, cases[key], results[key], repeats_of(cases[key])))
            if on_row is not None:
                on_row(rows)
    return rows


def run_worker(cmd: Sequence[str]) -> dict[str, Any]:
    """Run one measurement subprocess from the repository root; its result is the last ``PEERS_RESULT`` line."""
    proc = subprocess.run(list(cmd), cwd=REPO, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_PREFIX)]
    if proc.returncode or not lines:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise SystemExit(f"measurement failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    return json.loads(lines[-1][len(RESULT_PREFIX) :])


def check_arguments(args: argparse.Namespace, families: set[str]) -> None:
    """Raise ``SystemExit`` with one line naming the argument when a path the selected cases need is missing."""
    for family in sorted(families):
        peer, path = PEERS[family], getattr(args, family)
        if not path:
            raise SystemExit(f"--{family}: required for the {family} cases: a checkout of github.com/{peer.repo}")
        if not Path(path).is_dir():
            raise SystemExit(f"--{family}: no such directory: {path} (expected a checkout of github.com/{peer.repo})")
        if not (Path(path) / peer.marker).is_file():
            raise SystemExit(f"--{family}: {path} has no {peer.marker}; expected a checkout of github.com/{peer.repo}")
    if not args.peer_python:
        raise SystemExit("--peer-python: required: a Python interpreter with torch installed")
    exe = Path(args.peer_python)
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        raise SystemExit(f"--peer-python: not an executable file: {args.peer_python}")


def checkout_commit(path: str) -> str:
    """The commit of the git work tree at ``path`` (``+dirty`` if changed), or a note that it is not one."""

    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", path, *a], capture_output=True, text=True, check=True).stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != Path(path).resolve():
            raise OSError("inside another work tree")
        return git("rev-parse", "--short", "HEAD") + (
            "+dirty" if git("status", "--porcelain", "--untracked-files=no") else ""
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not the root of a git work tree)"


COLUMNS = ["key", "case", "peer", "peer_s", "ours_s", "ratio", "rounds", "repeats", "peer_params", "ours_params"]


def write(rows, env, command: str, name: str = "peers"):
    """``results/<device>/<name>.json`` through ``common.write_results``."""
    from benchmarks import common

    notes = (
        "peer_s, ours_s: median over the rounds of each round's median step time (forward, loss, backward, "
        "optimiser update; the PANM eval row is one forward pass), peer and ours alternated case by case in "
        "this run, each measurement its own process; ratio = peer_s / ours_s (above 1: ours is faster). "
        "The peers run on this machine's CPU with torch_threads intra-op threads; the per-round medians are in the "
        "JSON. load_average_before / _after: other work running during the run (above the core count, the "
        "timings measure contention)."
    )
    title = "Peers' own models against ours, measured in one run"
    return common.write_results(name, title, rows, COLUMNS, env, notes, command=command)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peer-python", default="", help="a Python interpreter with torch (and numpy) installed")
    for family, peer in PEERS.items():
        p.add_argument(f"--{family}", default="", help=f"a checkout of github.com/{peer.repo}")
    p.add_argument("--cases", default="", help="comma-separated case keys or families (default: all; see --list)")
    p.add_argument("--rounds", type=int, default=3, help="peer/ours alternations per case (default 3)")
    p.add_argument("--repeats", type=int, default=0, help="timed steps per measurement (default: the speed case's)")
    p.add_argument(
        "--peer-threads", type=int, default=0, help="torch intra-op threads for the peers (default 0: one per core)"
    )
    p.add_argument(
        "--name", default="peers", help="results file name (default peers; the speed suite reads peers.json)"
    )
    p.add_argument("--list", action="store_true", help="print the case keys and labels, and exit")
    p.add_argument("--worker", choices=SIDES, help=argparse.SUPPRESS)
    p.add_argument("--spec", default="", help=argparse.SUPPRESS)
    p.add_argument("--label", default="", help=argparse.SUPPRESS)
    p.add_argument("--checkout", default="", help=argparse.SUPPRESS)
    p.add_argument("--warmup", type=int, default=1, help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.worker == "peer":  # under --peer-python: no jax, no benchmarks.common
        out = peer_worker(json.loads(args.spec), args.checkout, args.warmup, args.repeats, args.peer_threads)
        print(RESULT_PREFIX + json.dumps(out), flush=True)
        return 0
    if args.worker == "ours":
        out = ours_worker(args.label, args.warmup, args.repeats)
        print(RESULT_PREFIX + json.dumps(out), flush=True)
        return 0

    from benchmarks import common
    from benchmarks.speed import suite

    cases = peer_cases()
    if args.list:
        for k, c in cases.items():
            print(f"{k:16} {c.label}  (peer: {c.peer})")
        return 0
    if args.rounds < 1:
        raise SystemExit(f"--rounds: expected a positive integer, got {args.rounds}")
    if args.repeats < 0:
        raise SystemExit(f"--repeats: expected a non-negative integer, got {args.repeats}")
    keys = select(cases, args.cases)
    families = {cases[k].family for k in keys}
    check_arguments(args, families)

    def repeats_of(case) -> int:
        return args.repeats or case.repeats

    def measure(key: str, side: str, r: int) -> dict[str, Any]:
        case = cases[key]
        common_args = ["--warmup", str(suite.warmup_of(case)), "--repeats", str(repeats_of(case))]
        if side == "peer":
            spec = json.dumps(peer_spec(case))
            cmd = [args.peer_python, "-m", "benchmarks.speed.peers", "--worker", "peer", "--spec", spec]
            cmd += ["--checkout", getattr(args, case.family), "--peer-threads", str(args.peer_threads), *common_args]
        else:
            cmd = [
                sys.executable,
                "-m",
                "benchmarks.speed.peers",
                "--worker",
                "ours",
                "--label",
                case.label,
                *common_args,
            ]
        t0 = time.perf_counter()
        out = run_worker(cmd)
        print(
            f"{key} round {r + 1}/{args.rounds} {side}: median {out['median_s']:.4g} s "
            f"({time.perf_counter() - t0:.0f} s in all)",
            flush=True,
        )
        if side == "peer":
            peer_info.update(torch=out.get("torch", ""), torch_threads=out.get("torch_threads", ""))
        return out

    peer_info: dict[str, Any] = {}
    env = {**common.environment(), **this_cpu(), "load_average_before": load_average()}
    if env["load_average_before"] > 0.5 * (os.cpu_count() or 1):
        print(
            f"warning: load average {env['load_average_before']:.2f} on {os.cpu_count()} cores: other work is "
            "running; torch's threads slow down many-fold when they share cores, so these timings compare "
            "contention, not implementations",
            flush=True,
        )
    # The peers by repository and commit, not by where this machine keeps them (as the command names them).
    env["peer_checkouts"] = {PEERS[f].repo: checkout_commit(getattr(args, f)) for f in sorted(families)}
    command = common.portable_command(argv, "benchmarks.speed.peers")
    path = None

    def on_row(rows):
        nonlocal path
        env.update(peer_info, load_average_after=load_average())
        path = write(rows, env, command, args.name)

    rows = compare(cases, keys, args.rounds, measure, repeats_of, on_row)
    print(common.markdown_table(rows, COLUMNS))
    print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
