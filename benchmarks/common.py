"""Shared benchmark harness: timing, environment record, atomic result files.

Every benchmark in this folder times compilation and steady state apart (with
``block_until_ready``), reports ratios measured in one run, and records the
device, the JAX/Flax versions, the commit and the command (``portable_command``)
beside every number, in one JSON record per run (``write_results``).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax

from benchmarks import allocator
from panm_jax.train.io import atomic_write_text
from panm_jax.train.provenance import code_commit

RESULTS_DIR = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parent.parent


def device_slug() -> str:
    """A folder name for this device: ``cpu-2cores`` or ``nvidia-h100-80gb-hbm3``."""
    dev = jax.devices()[0]
    if dev.platform == "cpu":
        return f"cpu-{os.cpu_count()}cores"
    return accelerator_slug(dev.device_kind)


def accelerator_slug(device_kind: str) -> str:
    """The folder name of an accelerator by its ``device_kind``: ``"NVIDIA H200"`` -> ``nvidia-h200``."""
    return re.sub(r"[^a-z0-9]+", "-", device_kind.lower()).strip("-")


def transparent_hugepages() -> str:
    """The kernel's transparent-huge-page mode (``always``, ``madvise``, ``never``), or ``""`` off Linux.

    Recorded with every result: with ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` glibc's
    malloc asks for huge pages for XLA's large CPU buffers where the mode allows it,
    which changes a step's page faults and its time (README, "Measured").
    """
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return ""
    found = re.search(r"\[(\w+)\]", text)
    return found.group(1) if found else ""


# Options whose value is a folder the run writes into (its runs, a trace).
WORK_FOLDERS = ("--workdir", "--trace", "--logdir")
# The variables that change how a benchmark runs, recorded before its command where set.
COMMAND_VARIABLES = ("GLIBC_TUNABLES", allocator.ENV_VAR, "PANM_JAX_DNC_LINK", "LD_PRELOAD", "XLA_FLAGS")


def portable_command(args: Sequence[str] | None = None, module: str | None = None) -> str:
    """The command that ran, as a record's ``command`` holds it: run from the root of any checkout, it names
    no folder of the machine that ran it.

    ``args``: the arguments (default ``sys.argv[1:]``); ``module``: the module run (default: the one whose
    file ``sys.argv[0]`` is, a package's ``__main__.py`` naming the package). Written as ``python -m MODULE
    ARGS``, each argument shell-quoted, after the ``COMMAND_VARIABLES`` that are set (``XLA_FLAGS=...``).
    No path of this machine is kept:

    * an absolute path inside the repository: relative to its root (``benchmarks/results/...``);
    * the interpreter given to ``--peer-python``: ``PYTHON``;
    * a folder of ``WORK_FOLDERS`` outside the repository (``--workdir /tmp/x/abl``): ``runs/`` and its last
      component (``runs/abl``);
    * any other absolute path outside the repository: a placeholder named after its option (``--peer-repo``
      -> ``PEER_REPO``, ``--panm`` -> ``PANM``), ``PATH`` for an argument that is no option's value, and
      the variable's name for a variable's value.

    ``--option value`` and ``--option=value`` are read alike, and so is each item of a comma-separated list
    (``--combine /a.json,/b.json``). Relative paths are kept as given.
    """
    args = sys.argv[1:] if args is None else list(args)
    variables = "".join(
        f"{name}={shlex.quote(_portable_value(os.environ[name], name))} "
        for name in COMMAND_VARIABLES
        if os.environ.get(name)
    )
    words = []
    option = ""  # the option whose value ``arg`` is, if any
    for arg in args:
        if arg.startswith("--") and "=" in arg:
            key, value = arg.split("=", 1)
            words.append(f"{key}={_portable_value(value, key)}")
        else:
            words.append(_portable_value(arg, option))
        option = arg if arg.startswith("--") and "=" not in arg else ""
    program = f"python -m {module or _module_run()}"
    return variables + " ".join([program, *map(shlex.quote, words)])


def _portable_value(value: str, option: str) -> str:
    """``value``, given to ``option`` (``""``: to none; a variable's name: its value), with each absolute path
    among its comma-separated items made portable by the rules of ``portable_command``."""
    if option == "--peer-python":
        return "PYTHON"

    def item(text: str) -> str:
        if not os.path.isabs(text):
            return text
        for path in (Path(os.path.normpath(text)), Path(text).resolve()):
            if path.is_relative_to(REPO):
                return path.relative_to(REPO).as_posix()
        if option in WORK_FOLDERS:
            return "runs/" + Path(os.path.normpath(text)).name
        return option.lstrip("-").replace("-", "_").upper() or "PATH"

    return ",".join(item(text) for text in value.split(","))


def _module_run() -> str:
    """The module whose file ``sys.argv[0]`` is (``benchmarks/speed/zoo.py`` -> ``benchmarks.speed.zoo``;
    ``benchmarks/speed/__main__.py`` -> ``benchmarks.speed``); a file outside the repository by its stem."""
    path = Path(sys.argv[0]).resolve()
    if not path.is_relative_to(REPO):
        return path.stem
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__main__" else parts)


def _dnc_link_path() -> str:
    """Which link the DNC step uses here (``panm_jax/kernels/_dnc_link_cpu.py``): ``cpu kernel`` or ``xla``."""
    from panm_jax.kernels import _dnc_link_cpu

    try:
        return "cpu kernel" if _dnc_link_cpu.use_for("float32") else "xla"
    except (ValueError, RuntimeError) as err:
        return f"unusable: {err}"


def environment() -> dict[str, Any]:
    """What the numbers were measured on."""
    import flax

    dev = jax.devices()[0]
    return {
        "device": dev.device_kind,
        "platform": dev.platform,
        "num_devices": jax.device_count(),
        "cpu_count": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "flax": flax.__version__,
        "commit": code_commit() or "unknown",
        "GLIBC_TUNABLES": os.environ.get("GLIBC_TUNABLES", ""),
        "malloc": allocator.malloc_settings() or "glibc defaults",  # benchmarks/allocator.py
        "transparent_hugepages": transparent_hugepages(),
        "dnc_link": _dnc_link_path(),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def block(tree):
    """``block_until_ready`` on every leaf; returns the tree."""
    return jax.tree_util.tree_map(lambda x: x.block_until_ready() if hasattr(x, "block_until_ready") else x, tree)


def minor_faults() -> int | None:
    """The process's minor page faults so far, or None where the OS does not say (no ``resource``).

    A call that writes into memory the allocator has just got from the OS (on a CPU, XLA's
    temporary buffers over glibc's mmap threshold) pays one fault per page it touches first.
    """
    try:
        import resource
    except ImportError:
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def time_compiled(fn: Callable, *args, warmup: int = 2, repeats: int = 20, keep_first: bool = False) -> dict:
    """Compile ``jax.jit(fn)`` for ``args`` and time it.

    Returns ``compile_s`` (lowering + XLA compilation), the steady-state
    ``median_s``, ``min_s``, ``max_s`` over ``repeats`` calls after ``warmup``, and
    ``page_faults``: the process's minor page faults per timed call (NaN where the
    OS does not count them). With ``keep_first`` (and ``warmup >= 1``), also
    ``first``: what the first warm-up call returned.
    """
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    first = None
    for i in range(warmup):
        out = block(compiled(*args))
        if keep_first and i == 0:
            first = out
    times = []
    faults = minor_faults()
    for _ in range(repeats):
        t0 = time.perf_counter()
        block(compiled(*args))
        times.append(time.perf_counter() - t0)
    after = minor_faults()
    return {
        "compile_s": compile_s,
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "page_faults": (after - faults) / repeats if faults is not None and after is not None else float("nan"),
        **({"first": first} if keep_first else {}),
    }


def time_calls(fn: Callable[[], Any], *, warmup: int = 1, repeats: int = 5) -> dict[str, float]:
    """Time a zero-argument callable that does its own dispatch (e.g. a Python loop)."""
    for _ in range(warmup):
        block(fn())
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        block(fn())
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


def time_alternately(
    compiled: dict[Any, tuple[Callable, Any, Any]], rounds: int, repeats: int
) -> dict[Any, list[float]]:
    """``{key: [each round's median seconds]}`` of compiled steps ``{key: (step, state, batch)}``, timed in turn.

    Each round times every step ``repeats`` times after one warm-up call, one key after another, so that a
    machine whose speed drifts between runs cannot favour one of them.
    """
    times: dict[Any, list[float]] = {key: [] for key in compiled}
    for _ in range(rounds):
        for key, (step, state, batch) in compiled.items():
            t = time_calls(lambda s=step, a=state, b=batch: s(a, b), warmup=1, repeats=repeats)
            times[key].append(t["median_s"])
    return times


def matmul_rate(batch: int, k: int, n: int, repeats: int = 20) -> float:
    """Dense matmul GFLOP/s at the shape [B, k] x [k, n] (then back through [n, k]).

    64 pairs run inside one ``fori_loop`` so the per-call dispatch cost (which
    dominates a single small matmul, e.g. at B = 1) does not count as compute.
    """
    import jax.numpy as jnp

    a = jnp.ones((batch, k), jnp.float32)
    w = jnp.ones((k, n), jnp.float32) / k
    w2 = jnp.ones((n, k), jnp.float32) / n
    loops = 64

    def f(a, w, w2):
        return jax.lax.fori_loop(0, loops, lambda i, x: (x @ w) @ w2, a)

    t = time_compiled(f, a, w, w2, repeats=max(repeats, 10))
    return loops * 2 * 2 * batch * k * n / t["median_s"] / 1e9


def on_accelerator() -> bool:
    """Whether JAX's default device is an accelerator (its platform is not ``cpu``)."""
    return jax.devices()[0].platform != "cpu"


def bandwidth_mib() -> int:
    """The array size that ``memory_bandwidth`` copies: 256 MiB on a CPU, 2 GiB on an accelerator.

    An accelerator moves 256 MiB in well under a millisecond, where the launch
    would weigh in the timing.
    """
    return 2048 if on_accelerator() else 256


def memory_bandwidth(repeats: int = 20) -> float:
    """Memory bandwidth in GB/s: a float32 array of ``bandwidth_mib()`` MiB read and written once, in place.

    The argument is donated, so each call writes over the buffer it reads and no
    call allocates. An earlier version wrote a fresh output each call: on a CPU
    glibc maps such a buffer anew (over 32 MiB) and the kernel faults it in 4 KiB
    at a time, so it measured mostly page faults (8.5 GB/s on the development
    machine where the in-place copy moves 62 GB/s; 34 GB/s with huge pages).
    """
    import jax.numpy as jnp

    f = jax.jit(lambda x: x * 1.0001, donate_argnums=0)
    x = jnp.ones((bandwidth_mib() * 256 * 1024,), jnp.float32)
    nbytes = 2 * x.size * 4
    for _ in range(2):
        x = block(f(x))
    times = []
    for _ in range(max(5, repeats // 2)):
        t0 = time.perf_counter()
        x = block(f(x))
        times.append(time.perf_counter() - t0)
    return nbytes / statistics.median(times) / 1e9


def page_fault_cost(repeats: int = 10, mib: int | None = None) -> float:
    """Seconds per minor page fault taken by a compiled call's fresh output, measured here and now.

    The same element-wise pass over ``bandwidth_mib()`` MiB is timed two ways: writing
    over its donated input (no fresh memory) and writing a fresh output, which the
    allocator gets from the OS (on glibc, anything over its mmap threshold) and the OS
    maps a page at a time on first touch. The difference in time over the difference
    in faults is what one fault costs a step on this machine, in this process's malloc
    setting (4 KiB pages by default; 2 MiB where malloc asks for huge pages, which cost
    more per fault and need far fewer). NaN where the OS does not count faults or the
    fresh output took none (an allocator that keeps freed memory mapped). ``mib``: the
    array's size (default ``bandwidth_mib()``); keep it well over glibc's 32 MiB mmap threshold.
    """
    import jax.numpy as jnp

    size = (mib or bandwidth_mib()) * 256 * 1024
    fresh = jax.jit(lambda x: x * 1.0001)
    inplace = jax.jit(lambda x: x * 1.0001, donate_argnums=0)
    x = jnp.ones((size,), jnp.float32)
    y = jnp.ones((size,), jnp.float32)
    for _ in range(2):
        block(fresh(x))
        y = block(inplace(y))
    if minor_faults() is None:
        return float("nan")
    t_fresh, t_inplace, faults = [], [], []
    for _ in range(max(3, repeats)):
        f0 = minor_faults()
        t0 = time.perf_counter()
        out = block(fresh(x))
        t_fresh.append(time.perf_counter() - t0)
        f1 = minor_faults()
        del out  # freed, as a step's temporaries are, so the next call maps its output afresh
        t0 = time.perf_counter()
        y = block(inplace(y))
        t_inplace.append(time.perf_counter() - t0)
        faults.append(f1 - f0)
    per_call = statistics.median(faults)
    if per_call <= 0:
        return float("nan")
    return max(0.0, statistics.median(t_fresh) - statistics.median(t_inplace)) / per_call


COST_CELLS = ("train_seconds", "compile_seconds", "steps_per_second", "buckets", "padding_efficiency")


def cost_cells(results: Sequence[dict[str, Any]]) -> dict[str, str]:
    """What the runs of a table row cost, from each run's ``results.json`` ``training`` record
    (``panm_jax.train.engine.training_cost``): training wall seconds (validation and checkpoints
    included), compile seconds, steps per second, the buckets and their padding efficiency, one value per
    run joined by commas (``"-"`` for a run trained before runs recorded it); ``{}`` when none recorded it."""
    costs = [r.get("training") or {} for r in results]
    if not any(costs):
        return {}

    def cell(key: str, fmt) -> str:
        return ",".join("-" if c.get(key) is None else fmt(c[key]) for c in costs)

    return {
        "train_seconds": cell("wall_seconds", lambda v: f"{v:.0f}"),
        "compile_seconds": cell("compile_seconds", lambda v: f"{v:.0f}"),
        "steps_per_second": cell("steps_per_second", lambda v: f"{v:.2f}"),
        "buckets": "; ".join(dict.fromkeys("-" if not c else " ".join(map(str, c["buckets"])) for c in costs)),
        "padding_efficiency": cell("padding_efficiency", lambda v: f"{v:.3f}"),
    }


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """``rows`` as a Markdown table of ``columns`` (floats to 4 significant digits, a missing key blank), as the
    runners print their results."""

    def fmt(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append("| " + " | ".join(fmt(r.get(c, "")) for c in columns) + " |")
    return "\n".join(lines)


def write_results(
    name: str,
    title: str,
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
    env: dict[str, Any],
    notes: str = "",
    command: str = "",
    settings: dict[str, Any] | None = None,
    device: str | None = None,
) -> Path:
    """Write the record ``results/<device>/<name>.json`` atomically; return its path.

    The record holds ``name``, ``title``, ``command`` (``portable_command``), ``settings`` where given,
    ``environment`` (``env``), ``rows`` and ``notes``, written as ``json.dumps(record, indent=2)`` and a
    newline, a NaN or infinite number as null (``without_nonfinite``). ``columns``: the table's columns as the
    runner prints them (``markdown_table``); the record keeps
    every key of every row, so they are not written. ``settings``: what the file's name stands for, spelled
    out (a name may abbreviate them, as ``benchmarks/accuracy/reproduce.py`` abbreviates model options to a
    hash). ``device``: the folder, when the numbers were measured on another machine than this one (a table
    of finished runs read back); default ``device_slug()``.
    """
    payload: dict[str, Any] = {"name": name, "title": title, "command": command}
    if settings is not None:
        payload["settings"] = settings
    payload |= {"environment": env, "rows": list(rows), "notes": notes}
    json_path = RESULTS_DIR / (device or device_slug()) / f"{name}.json"
    atomic_write_text(json_path, json.dumps(without_nonfinite(payload), indent=2, allow_nan=False) + "\n")
    return json_path


def without_nonfinite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by ``None`` (JSON's null: no value), so that a record
    is valid JSON and the pages never print ``nan``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: without_nonfinite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_nonfinite(v) for v in value]
    return value


def run_processes(jobs: Sequence[tuple[str, list[str], Path]], parallel: int) -> None:
    """Run ``(label, command, log_path)`` jobs as child processes, at most ``parallel`` at once, each
    one's output appended to its log; raises ``SystemExit`` naming the jobs that failed."""
    todo = list(jobs)
    running: list[tuple[subprocess.Popen, str, Any]] = []
    failed = []
    while todo or running:
        while todo and len(running) < parallel:
            label, cmd, log_path = todo.pop(0)
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log = open(log_path, "a")  # noqa: SIM115 - closed when the process ends
            running.append(
                (subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy()), label, log)
            )
            print(f"started {label} -> {log_path}", flush=True)
        time.sleep(2)
        still = []
        for proc, label, log in running:
            if proc.poll() is None:
                still.append((proc, label, log))
                continue
            log.close()
            print(f"finished {label}: exit {proc.returncode}", flush=True)
            if proc.returncode:
                failed.append(label)
        running = still
    if failed:
        raise SystemExit(f"{len(failed)} job(s) failed: {failed}; see their .log files")
