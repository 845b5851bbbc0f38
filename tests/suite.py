"""Run the test suite; tests cut short by a crashed worker run once more, in fresh workers.

    python -m tests.suite [pytest arguments]      (what ``make test`` runs)

A pytest-xdist worker that dies of a signal (CI runs have lost workers to SIGSEGVs in
XLA:CPU, jax 0.10.2, some while it loaded an executable from the persistent compilation
cache; tests/conftest.py) takes with it the test it was running and every test still queued for it
(``--max-worker-restart 0``: a replaced worker under ``--dist loadfile`` can leave
pytest-xdist waiting for ever). When the only failures of the run are such crashes, the
tests that did not finish (the crashed ones and the ones never run) run again, once,
with the same arguments, and the second run's exit code is the suite's. A test that
fails an assertion, or crashes its worker again, fails the suite; nothing is rerun after
an ordinary failure.

The same file is the pytest plugin (``-p tests.suite``) that records, in the controller,
the tests collected and how each ended (``PANM_JAX_SUITE_LOG``), and that keeps only the
listed tests in the second run (``PANM_JAX_SUITE_ONLY``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

LOG = "PANM_JAX_SUITE_LOG"
ONLY = "PANM_JAX_SUITE_ONLY"
CRASH = "crashed while running"  # pytest-xdist's report of a test whose worker died


# ---- the plugin -----------------------------------------------------------------------------------------


class _Record:
    """In the controller: the test ids the workers collected and how each test ended."""

    def __init__(self, path: str):
        self.path = path
        self.collected: list[str] = []
        self.finished: set[str] = set()  # passed or skipped, every phase
        self.crashed: list[str] = []
        self.failed: list[str] = []

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        if not self.collected:
            self.collected = list(ids)

    def pytest_runtest_logreport(self, report):
        if report.failed:
            text = str(report.longrepr)
            (self.crashed if report.when == "???" and CRASH in text else self.failed).append(report.nodeid)
        elif report.when == "teardown" or (report.when == "setup" and report.skipped):
            self.finished.add(report.nodeid)

    def pytest_sessionfinish(self, session):
        failed = sorted(set(self.failed))
        finished = sorted(self.finished - set(failed) - set(self.crashed))
        record = {"collected": self.collected, "finished": finished, "crashed": self.crashed, "failed": failed}
        Path(self.path).write_text(json.dumps(record))


def pytest_configure(config):
    if os.environ.get(LOG) and not hasattr(config, "workerinput"):  # the controller (or a run without workers)
        config.pluginmanager.register(_Record(os.environ[LOG]), "panm_jax_suite_record")


def pytest_collection_modifyitems(config, items):
    if not os.environ.get(ONLY):
        return
    keep = set(json.loads(Path(os.environ[ONLY]).read_text()))
    selected = [item for item in items if item.nodeid in keep]
    config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in keep])
    items[:] = selected


# ---- the runner -----------------------------------------------------------------------------------------


def _run(args: list[str], log: Path, only: Path | None) -> int:
    env = {**os.environ, LOG: str(log)}
    env.pop(ONLY, None)
    if only is not None:
        env[ONLY] = str(only)
    return subprocess.call([sys.executable, "-m", "pytest", "-p", "tests.suite", *args], env=env)


def main(args: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="panm_jax_suite_") as tmp:
        log = Path(tmp) / "first.json"
        code = _run(args, log, None)
        if code == 0 or not log.exists():
            return code
        record = json.loads(log.read_text())
        if record["failed"] or not record["crashed"] or not record["collected"]:
            return code  # an ordinary failure (or none recorded): nothing is rerun
        done = set(record["finished"])
        again = [nodeid for nodeid in record["collected"] if nodeid not in done]
        print(
            f"\n{len(record['crashed'])} test(s) crashed their worker ({', '.join(record['crashed'])}); "
            f"the {len(again)} test(s) that did not finish run again, once, in fresh workers.\n",
            flush=True,
        )
        only = Path(tmp) / "again.json"
        only.write_text(json.dumps(again))
        return _run(args, Path(tmp) / "second.json", only)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
