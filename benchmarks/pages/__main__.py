"""``python -m benchmarks.pages``: see ``benchmarks.pages.build.main``."""

from benchmarks.pages.build import main

if __name__ == "__main__":
    raise SystemExit(main())
