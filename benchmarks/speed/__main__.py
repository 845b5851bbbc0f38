"""``python -m benchmarks.speed``: the speed suite (``benchmarks/speed/suite.py``)."""

from benchmarks.speed.suite import main

if __name__ == "__main__":
    raise SystemExit(main())
