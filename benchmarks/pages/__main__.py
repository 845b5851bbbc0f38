"""``python -m benchmarks.pages``: see ``benchmarks.pages.build.main``."""

from benchmarks.pages.build import main

raise SystemExit(main())
