"""The speed suite's CPU training steps under each malloc: one process per step and allocator, alternating.

Run: ``python -m benchmarks.allocators [--cases 'NTM ctrl 100, 128x20, Copy n=20, B=128;DNC N=256']
[--settings glibc,hugetlb,tcmalloc,jemalloc] [--rounds 3] [--repeats 5]``. Writes
``benchmarks/results/<device>/allocators.{json,md}`` (``--name`` adds a suffix).

XLA's CPU runtime allocates each call's temporary buffers with ``malloc``. With
glibc's defaults the large ones come from a fresh ``mmap`` on every call, and the
kernel faults them in and zeroes them 4 KiB at a time (``allocator.py``, and the
speed suite's fault columns). What an allocator does about it can only be chosen
when a process starts, so each measurement here is its own process:

* ``glibc``: glibc's malloc as it is;
* ``hugetlb``: glibc with ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``, huge pages
  where the kernel's transparent-huge-page mode allows them;
* ``tcmalloc``, ``jemalloc``: that library put first with ``LD_PRELOAD``, when it is
  installed (Debian: ``libtcmalloc-minimal4``, ``libjemalloc2``), with its default
  settings.

For each case (a label of ``benchmarks.speed.CASES``), each setting is run in turn,
``--rounds`` times. Every run compiles the step, runs it three times to warm up, then
times ``--repeats`` steps and counts the minor page faults per step. The row of a
setting has the median over its rounds of each round's median step, the faults,
and its speed-up over glibc's defaults measured in the same rounds. Every run's
first-step loss must equal glibc's bit for bit, because the allocator changes
nothing but where the buffers live.
"""

from __future__ import annotations

import argparse
import ctypes.util
import json
import os
import shlex
import statistics
import subprocess
import sys

import numpy as np

from benchmarks import common

DEFAULT_CASES = (
    "PANM D=256, Copy n=10, B=128",
    "NTM ctrl 100, 128x20, Copy n=20, B=128",
    "DNC N=64, W=32, R=4, T=50, B=32",
    "DNC N=256, W=32, R=4, T=50, B=32",
)
LIBRARIES = {"tcmalloc": ("tcmalloc_minimal", "tcmalloc"), "jemalloc": ("jemalloc",)}
SETTINGS = ("glibc", "hugetlb", "tcmalloc", "jemalloc")
WARMUP = 3  # untimed steps per process, the first of them the one whose loss is compared


def library(setting: str) -> str | None:
    """The shared library to preload for ``setting`` (its soname, which the loader finds), or None if absent."""
    for name in LIBRARIES[setting]:
        found = ctypes.util.find_library(name)
        if found:
            return found
    return None


def setting_env(setting: str) -> dict[str, str]:
    """This process's environment with ``setting``'s allocator, and no other allocator setting."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "GLIBC_TUNABLES", "PANM_JAX_MALLOC")}
    if setting == "hugetlb":
        env["GLIBC_TUNABLES"] = "glibc.malloc.hugetlb=1"
    elif setting in LIBRARIES:
        lib = library(setting)
        if lib is None:
            raise SystemExit(f"--settings: {setting} is not installed here (no lib{LIBRARIES[setting][0]})")
        env["LD_PRELOAD"] = lib
    return env


def child(label: str, repeats: int) -> dict:
    """Run in the measuring process: compile the case, check its first loss, time it; one JSON-ready row."""

    from benchmarks import allocator, speed

    fn, state, batch, _ = speed.build_case(speed.find_case(label))
    t = common.time_compiled(fn, state, batch, warmup=WARMUP, repeats=repeats, keep_first=True)
    out = t["first"]
    loss = np.asarray(out[1]["loss"]).item() if isinstance(out, tuple) and isinstance(out[1], dict) else float("nan")
    return {
        "median_s": t["median_s"],
        "min_s": t["min_s"],
        "page_faults": t["page_faults"],
        "loss": loss,
        "malloc": allocator.malloc_settings()
        or ("glibc, GLIBC_TUNABLES=" + os.environ["GLIBC_TUNABLES"] if os.environ.get("GLIBC_TUNABLES") else "glibc"),
    }


def run_child(module: str, label: str, repeats: int, env: dict[str, str], what: str) -> dict:
    """``python -m <module> --child <label>`` in a process of its own with ``env``; the JSON row it printed
    last. ``what`` names the setting in the error raised when the process fails."""
    cmd = [sys.executable, "-m", module, "--child", label, "--repeats", str(repeats)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        raise RuntimeError(f"{what} on {label!r} exited with {done.returncode}:\n{done.stderr[-2000:]}")
    return json.loads(lines[-1])


def measure(label: str, setting: str, repeats: int) -> dict:
    """One child process of ``setting`` on ``label``; its row."""
    return run_child("benchmarks.allocators", label, repeats, setting_env(setting), setting)


def process_arguments(p: argparse.ArgumentParser, cases: tuple[str, ...], rounds: int) -> None:
    """The arguments of a comparison of processes (``--cases``, ``--rounds``, ``--repeats``, ``--name`` and the
    hidden ``--child``), added to ``p``."""
    p.add_argument("--cases", default=";".join(cases), help="';'-separated labels of benchmarks.speed.CASES")
    p.add_argument("--rounds", type=int, default=rounds, help=f"alternations per case (default {rounds})")
    p.add_argument("--repeats", type=int, default=5, help="timed steps per process (default 5)")
    p.add_argument("--name", default="", help="suffix of the result files")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)


def check_counts(args: argparse.Namespace) -> None:
    """A named error for a ``--rounds`` or ``--repeats`` below 1."""
    for name in ("rounds", "repeats"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name}: expected a positive integer, got {getattr(args, name)}")


def compare(label: str, settings: list[str], rounds: int, repeats: int, run=None, rtol: float = 0.0) -> list[dict]:
    """Every setting on one case, in turn, ``rounds`` times; one row per setting.

    ``run(label, setting, repeats)`` measures one process (``measure`` unless given); every process's
    first-step loss must equal the first's, bit for bit, or within the relative tolerance ``rtol``."""
    run = run or measure
    runs: dict[str, list[dict]] = {s: [] for s in settings}
    for r in range(rounds):
        for s in settings:
            runs[s].append(run(label, s, repeats))
            print(f"{label} | {s} | round {r + 1}: {runs[s][-1]['median_s'] * 1e3:.1f} ms", flush=True)
    losses = [one["loss"] for s in settings for one in runs[s]]
    if any(abs(loss - losses[0]) > rtol * abs(losses[0]) or loss != loss for loss in losses):
        raise RuntimeError(f"{label!r}: the first step's loss differs between settings: {sorted(set(losses))}")
    base = statistics.median(one["median_s"] for one in runs[settings[0]])
    rows = []
    for s in settings:
        step = statistics.median(one["median_s"] for one in runs[s])
        rows.append(
            {
                "case": label,
                "setting": s,
                "malloc": runs[s][0]["malloc"],
                "step_s": step,
                "min_s": min(one["min_s"] for one in runs[s]),
                "page_faults": statistics.median(one["page_faults"] for one in runs[s]),
                f"speedup_vs_{settings[0]}": base / step,
                "rounds_s": [one["median_s"] for one in runs[s]],
                "loss": runs[s][0]["loss"],
            }
        )
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--settings", default=None, help="comma-separated, from " + ", ".join(SETTINGS))
    process_arguments(p, DEFAULT_CASES, rounds=3)
    args = p.parse_args(argv)
    check_counts(args)
    if args.child is not None:
        print(json.dumps(child(args.child, args.repeats)), flush=True)
        return 0
    from benchmarks import speed

    if args.settings is None:
        settings = [s for s in SETTINGS if s not in LIBRARIES or library(s)]
    else:
        settings = [s.strip() for s in args.settings.split(",") if s.strip()]
        unknown = [s for s in settings if s not in SETTINGS]
        if unknown or not settings:
            raise SystemExit(f"--settings: expected names from {', '.join(SETTINGS)}, got {args.settings!r}")
        for s in settings:
            setting_env(s)  # a named error now for one that is not installed
    try:
        labels = [speed.find_case(c.strip()).label for c in args.cases.split(";") if c.strip()]
    except ValueError as err:
        raise SystemExit(f"--cases: {err}") from None
    rows = [row for label in labels for row in compare(label, settings, args.rounds, args.repeats)]
    cols = ["case", "setting", "malloc", "step_s", "min_s", "page_faults", f"speedup_vs_{settings[0]}"]
    notes = (
        f"One process per case and setting, the settings in turn, {args.rounds} round(s); each process compiles "
        f"the step, runs it {WARMUP} times, then times {args.repeats} steps. step_s: the median over the rounds "
        f"of each round's median step; min_s: the fastest step of any round; page_faults: minor page faults per timed "
        f"step (median over the rounds); speedup_vs_{settings[0]}: its step_s over this row's. The first step's "
        "loss was the same, bit for bit, under every setting. Settings: glibc = glibc's malloc as it is; "
        "hugetlb = GLIBC_TUNABLES=glibc.malloc.hugetlb=1; tcmalloc, jemalloc = that library with LD_PRELOAD, its "
        "default settings."
    )
    command = "python -m benchmarks.allocators " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
    )
    name = "allocators" + (f"_{args.name}" if args.name else "")
    env = {k: v for k, v in common.environment().items() if k not in ("malloc", "GLIBC_TUNABLES")}
    json_path, md_path = common.write_results(
        name, "The CPU training steps under each malloc", rows, cols, env, notes, command
    )
    print(common.markdown_table(rows, cols))
    print("wrote", json_path, md_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
