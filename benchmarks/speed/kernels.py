"""Kernel speed suite: one memory step rolled out under ``lax.scan``.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: under a minute at the defaults
(estimated from that folder's ``kernels_*.json``); with ``--quick`` 10 s (measured).

Run: ``python -m benchmarks.speed.kernels [--suite ntm,dnc,stack] [--quick]``
(or ``make bench-kernels``). Each suite lives in ``benchmarks/speed/kernel_suites/`` and
writes ``benchmarks/results/<device>/kernels_<suite>.json``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

SUITES = ("ntm", "dnc", "stack")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", default=",".join(SUITES), help=f"comma-separated subset of {', '.join(SUITES)}")
    parser.add_argument(
        "--quick", action="store_true", help="fewer repeats and sizes (a smoke run, not for the record)"
    )
    args = parser.parse_args(argv)
    wanted = [s.strip() for s in args.suite.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in SUITES]
    if unknown:
        parser.error(f"--suite: unknown suite(s) {unknown}; known: {list(SUITES)}")
    for name in wanted:
        try:
            suite = importlib.import_module(f"benchmarks.speed.kernel_suites.{name}")
        except ModuleNotFoundError as err:
            print(f"[{name}] skipped: {err}", file=sys.stderr)
            continue
        suite.run(quick=args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
