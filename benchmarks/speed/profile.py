"""Where a compiled step spends its time: per HLO instruction, per source line, per primitive.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: one compilation of the case and
2 x ``--steps`` calls; 16 s for the NTM case at B = 128 (measured).

    python -m benchmarks.speed.profile --case "NTM ctrl 100, 128x20, Copy n=20, B=128" [--steps 5] [--top 20]

``--case`` is any text that matches exactly one label of ``benchmarks.speed.suite.CASES``.
The step is compiled once, timed untraced for ``--steps`` calls (the wall time,
and the minor page faults per call where the OS reports them), then run under
``jax.profiler.trace`` for ``--steps`` more calls,
and the trace's per-thunk events (XLA's CPU and GPU runtimes name each event
after the HLO instruction it runs: a fusion, a dot, a while loop's body) are
summed and joined with the compiled HLO's ``metadata`` (the JAX ``op_name`` and
the Python ``source_file:source_line`` that emitted it). Three tables come out:

* instructions: the most expensive HLO instructions, their kind and op_name;
* source lines: the same time summed per line of our code (``panm_jax/...``),
  which is what to read to decide what to change;
* primitives: per JAX primitive (the last part of ``op_name``: ``dot_general``,
  ``mul``, ``reduce_sum``, ``cumprod``...).

Times are summed over every thread and every loop iteration and divided by
``--steps``, so they are milliseconds per step; on a CPU the runtime runs
independent thunks on several threads at once, so the sum can exceed the wall
time, which is printed beside it. The trace directory is kept (``--logdir``) for
TensorBoard's or Perfetto's viewers. ``--record NAME`` also writes the three
tables to ``benchmarks/results/<device>/profile_NAME.json``.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import re
import statistics
import tempfile
import time
from pathlib import Path

import jax

from benchmarks import allocator, common

# `%name = type[shape]{layout} opcode(operands), ..., metadata={op_name="..." source_file="..." source_line=N}`
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s([\w\-]+)\((.*)$")
_META = re.compile(r"metadata=\{([^}]*)\}")
_FIELD = re.compile(r'(\w+)=(?:"((?:[^"\\]|\\.)*)"|(\S+))')


def _stack_tables(hlo_text: str) -> dict[int, list[str]]:
    """``{stack_frame_id: ["file:line", ... innermost first]}`` from the module's FileNames/.../StackFrames tables."""
    sections: dict[str, dict[int, str]] = {}
    current = None
    for line in hlo_text.splitlines():
        if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = sections.setdefault(line, {})
        elif not line.strip() or line.startswith(("%", "ENTRY", "HloModule")):
            current = None  # a table ends at a blank line or where the computations begin
        elif current is not None:
            key, _, value = line.strip().partition(" ")
            current[int(key)] = value.strip().strip("{}")
    files = {k: v.strip('"') for k, v in sections.get("FileNames", {}).items()}
    locations = {}
    for k, v in sections.get("FileLocations", {}).items():
        f = {a: (q or b) for a, q, b in _FIELD.findall(v)}
        locations[k] = f"{_short_path(files.get(int(f.get('file_name_id', 0)), '?'))}:{f.get('line', '?')}"
    frames = {}
    for k, v in sections.get("StackFrames", {}).items():
        f = {a: (q or b) for a, q, b in _FIELD.findall(v)}
        frames[k] = (int(f.get("file_location_id", 0)), int(f.get("parent_frame_id", 0)))
    stacks = {}
    for k in frames:
        chain, seen, cur = [], set(), k
        while cur in frames and cur not in seen:
            seen.add(cur)
            loc, parent = frames[cur]
            chain.append(locations.get(loc, "?"))
            cur = parent
        stacks[k] = chain
    return stacks


_HEADER = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s+\(")
_CHEAP = {"parameter", "constant", "bitcast", "broadcast", "reshape", "get-tuple-element", "tuple", "iota", "copy"}


def _elements(type_text: str) -> int:
    dims = re.search(r"\[([\d,]*)\]", type_text)
    if not dims:
        return 1
    n = 1
    for d in filter(None, dims.group(1).split(",")):
        n *= int(d)
    return n


def hlo_metadata(hlo_text: str) -> dict[str, dict[str, str]]:
    """``{instruction name: {"opcode", "op_name", "source"}}`` for every instruction of an HLO module's text.

    ``source`` is the innermost frame of the instruction's Python stack that lies in
    ``panm_jax/`` (else the innermost frame): the line of our code that emitted it.
    A fusion's own metadata names just one of the operations it fused, so a fusion
    takes the ``op_name`` and ``source`` of its largest fused operation instead
    (by output elements, not counting parameters, broadcasts, copies and reshapes):
    the one whose memory passes it most likely spends its time on.
    """
    stacks = _stack_tables(hlo_text)
    out: dict[str, dict[str, str]] = {}
    members: dict[str, list[tuple[int, str]]] = {}  # computation -> [(elements, instruction)]
    calls: dict[str, str] = {}  # fusion instruction -> its fused computation
    computation = ""
    for line in hlo_text.splitlines():
        header = _HEADER.match(line)
        if header and not line.startswith(" "):
            computation = header.group(1)
            continue
        m = _INSTR.match(line)
        if not m:
            continue
        name, opcode, rest = m.group(1), m.group(3), m.group(4)
        info = {"opcode": opcode, "op_name": "", "source": ""}
        kind = re.search(r"kind=(k\w+)", rest)
        if kind:
            info["opcode"] = f"{opcode}:{kind.group(1)}"
            called = re.search(r"calls=%?([\w.\-]+)", rest)
            if called:
                calls[name] = called.group(1)
        meta = _META.search(rest)
        if meta:
            fields = {k: (q if q else b) for k, q, b in _FIELD.findall(meta.group(1))}
            info["op_name"] = fields.get("op_name", "")
            chain = stacks.get(int(fields["stack_frame_id"]), []) if "stack_frame_id" in fields else []
            if "source_file" in fields:
                chain = [f"{_short_path(fields['source_file'])}:{fields.get('source_line', '?')}"]
            ours = [c for c in chain if c.startswith("panm_jax/")]
            info["source"] = ours[0] if ours else (chain[0] if chain else "")
        out[name] = info
        if opcode not in _CHEAP and info["source"]:
            members.setdefault(computation, []).append((_elements(m.group(2)), name))
    for fusion, body in calls.items():
        if members.get(body):
            _, biggest = max(members[body], key=lambda pair: pair[0])  # first of the largest
            out[fusion] = {**out[fusion], "op_name": out[biggest]["op_name"], "source": out[biggest]["source"]}
    return out


def _short_path(path: str) -> str:
    for root in ("panm_jax/", "benchmarks/", "site-packages/"):
        i = path.rfind(root)
        if i >= 0:
            return path[i:].replace("site-packages/", "")
    return Path(path).name


def _trace(logdir: Path) -> list[dict]:
    """Every event of the newest trace written under ``logdir``."""
    files = sorted(logdir.glob("plugins/profile/*/*.trace.json.gz"))
    if not files:
        raise FileNotFoundError(f"logdir: no *.trace.json.gz under {logdir}/plugins/profile")
    with gzip.open(files[-1]) as f:
        return json.load(f)["traceEvents"]


def trace_events(logdir: Path) -> list[dict]:
    """Complete ('X') events of the newest trace written under ``logdir``."""
    return [e for e in _trace(logdir) if e.get("ph") == "X" and "dur" in e]


_MATMUL_KERNEL = re.compile(r"gemm|xmma|cutlass|cublas|matmul|sm\d+_", re.I)


def device_timeline(logdir: Path, steps: int, top: int = 8) -> dict:
    """What an accelerator did, per step, from the newest trace under ``logdir``.

    The device's processes are those the trace names ``/device:...`` (a GPU's
    streams); a CPU run has none, and the result says so (``device_events`` 0).
    Per step: the summed kernel time, the time at least one kernel ran (the
    union of their intervals: busy), the number of kernels, and the share of
    matrix-multiply kernels (cuBLAS/CUTLASS names); ``top``: the kernels that
    took the most time, by name.
    """
    events = _trace(logdir)
    device_pids = {
        e["pid"]
        for e in events
        if e.get("ph") == "M"
        and e.get("name") == "process_name"
        and e.get("args", {}).get("name", "").startswith("/device:")
    }
    kernels = [e for e in events if e.get("ph") == "X" and "dur" in e and e.get("pid") in device_pids]
    intervals = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in kernels)
    busy, end = 0.0, float("-inf")
    for start, stop in intervals:
        if stop > end:
            busy += stop - max(start, end)
            end = stop
    per_name: collections.Counter = collections.Counter()
    for e in kernels:
        per_name[e["name"]] += float(e["dur"])
    matmul = sum(us for name, us in per_name.items() if _MATMUL_KERNEL.search(name))
    return {
        "device_events": len(kernels),
        "kernels_per_step": len(kernels) / steps,
        "kernel_ms": sum(per_name.values()) / 1e3 / steps,
        "busy_ms": busy / 1e3 / steps,
        "matmul_ms": matmul / 1e3 / steps,
        "top": [(name, us / 1e3 / steps) for name, us in per_name.most_common(top)],
    }


_CONTAINERS = ("while", "call", "conditional")  # their bodies' instructions carry the time


def attribute(events: list[dict], meta: dict[str, dict[str, str]], steps: int) -> dict[str, dict[str, float]]:
    """Milliseconds per step per instruction / source line / primitive, from events named after HLO instructions.

    Container instructions (while loops, calls, conditionals) are left out: their
    events span the instructions inside them, which are counted themselves.
    """
    per_instr: collections.Counter = collections.Counter()
    for e in events:
        if e["name"] in meta and not meta[e["name"]]["opcode"].startswith(_CONTAINERS):
            per_instr[e["name"]] += e["dur"] / 1e3 / steps
    per_source: collections.Counter = collections.Counter()
    per_prim: collections.Counter = collections.Counter()
    for name, ms in per_instr.items():
        info = meta[name]
        per_source[info["source"] or "(no source)"] += ms
        prim = info["op_name"].rsplit("/", 1)[-1] if info["op_name"] else info["opcode"]
        per_prim[re.sub(r"\[.*$", "", prim)] += ms
    return {"instructions": dict(per_instr), "sources": dict(per_source), "primitives": dict(per_prim)}


def profile(fn, args: tuple, steps: int, logdir: Path) -> dict:
    compiled = jax.jit(fn).lower(*args).compile()
    meta = hlo_metadata(compiled.as_text())
    for _ in range(2):
        common.block(compiled(*args))
    # Wall time and page faults from untraced calls (the tracer's own buffers fault too),
    # then the same number of traced calls for the tables.
    walls = []
    faults = common.minor_faults()
    for _ in range(steps):
        t0 = time.perf_counter()
        common.block(compiled(*args))
        walls.append(time.perf_counter() - t0)
    after = common.minor_faults()
    faults = (after - faults) / steps if faults is not None and after is not None else None
    with jax.profiler.trace(str(logdir)):
        for _ in range(steps):
            common.block(compiled(*args))
    table = attribute(trace_events(logdir), meta, steps)
    return {
        "wall_ms": 1e3 * statistics.median(walls),
        "ops_ms": sum(table["instructions"].values()),
        "meta": meta,
        "page_faults_per_step": faults,
        **table,
    }


def _print_top(title: str, rows: dict[str, float], total: float, top: int, describe=None) -> None:
    print(f"\n{title}")
    for key, ms in sorted(rows.items(), key=lambda kv: -kv[1])[:top]:
        extra = f"  {describe(key)}" if describe else ""
        print(f"  {ms:9.2f} ms  {100 * ms / total:5.1f}%  {key}{extra}")


def main(argv=None) -> int:
    allocator.configure_from_environment()  # PANM_JAX_MALLOC=keep: benchmarks/allocator.py
    from benchmarks.speed.suite import build_case, find_case

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", required=True, help="text matching one label of benchmarks.speed.suite.CASES")
    p.add_argument("--steps", type=int, default=5, help="profiled calls (after 2 warm-up calls)")
    p.add_argument("--top", type=int, default=20, help="rows per table")
    p.add_argument("--logdir", default="", help="where to keep the trace (default: a temporary directory)")
    p.add_argument(
        "--record",
        default="",
        metavar="NAME",
        help="also write the tables to benchmarks/results/<device>/profile_NAME.json",
    )
    args = p.parse_args(argv)
    try:
        case = find_case(args.case)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    fn, state, batch, _ = build_case(case)
    logdir = Path(args.logdir) if args.logdir else Path(tempfile.mkdtemp(prefix="panm-profile-"))
    res = profile(fn, (state, batch), args.steps, logdir)
    meta = res["meta"]
    faults = res["page_faults_per_step"]
    fault_note = (
        f"{faults:.0f} minor page faults per step (pages the OS mapped afresh: 4 KiB each, 2 MiB where "
        "malloc uses huge pages)"
        if faults is not None
        else "page faults not measured (no resource module)"
    )
    print(
        f"{case.label}: wall {res['wall_ms']:.1f} ms per step (median of {args.steps}); "
        f"instructions sum to {res['ops_ms']:.1f} ms per step over all threads; {fault_note}; trace in {logdir}"
    )
    total = max(res["ops_ms"], 1e-9)
    _print_top(
        "instructions (ms per step, share of the instruction sum):",
        res["instructions"],
        total,
        args.top,
        lambda n: f"[{meta[n]['opcode']}] {meta[n]['source']}",
    )
    _print_top("source lines:", res["sources"], total, args.top)
    _print_top("primitives:", res["primitives"], total, args.top)
    if args.record:
        if not re.fullmatch(r"[\w\-]+", args.record):
            raise SystemExit(f"--record: expected a name of letters, digits, '_' or '-', got {args.record!r}")
        rows = []
        for table, entries in (
            ("instruction", res["instructions"]),
            ("source line", res["sources"]),
            ("primitive", res["primitives"]),
        ):
            for key, ms in sorted(entries.items(), key=lambda kv: -kv[1])[: args.top]:
                detail = f"{meta[key]['opcode']} {meta[key]['source']}" if table == "instruction" else ""
                rows.append(
                    {
                        "table": table,
                        "name": key,
                        "detail": detail,
                        "ms_per_step": round(ms, 3),
                        "share_pct": round(100 * ms / total, 1),
                    }
                )
        notes = (
            f"Wall time {res['wall_ms']:.1f} ms per step (median of {args.steps} untraced calls); the "
            f"instructions' times sum to {res['ops_ms']:.1f} ms per step over all threads. share_pct is of "
            f"that sum; {fault_note}. Rows: the top instructions, then source lines (the innermost frame in "
            "panm_jax/), then JAX primitives."
        )
        # The case by its whole label, whatever text of it was given.
        given = ["--case", case.label, "--steps", str(args.steps), "--top", str(args.top), "--record", args.record]
        path = common.write_results(
            f"profile_{args.record}",
            f"Profile: {case.label}",
            rows,
            ["table", "name", "detail", "ms_per_step", "share_pct"],
            common.environment(),
            notes,
            command=common.portable_command(given, "benchmarks.speed.profile"),
        )
        print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
