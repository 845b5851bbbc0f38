"""``python -m tests.suite``: tests cut short by a crashed worker run once more; failures never do.

Each case runs the runner on a small suite in a temporary folder, two workers, whose
tests append their names to a trail file: the trail shows which tests ran, and how often.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SUITE = {
    "test_a.py": """
import os, signal
from pathlib import Path
TRAIL = Path(__file__).with_name("trail")
def _ran(name): TRAIL.open("a").write(name + "\\n")
def test_first(): _ran("first")
def test_middle():
    _ran("middle")
    flag = Path(__file__).with_name("flag")
    {action}
def test_last(): _ran("last")
""",
    "test_b.py": """
import time, pytest
from pathlib import Path
TRAIL = Path(__file__).with_name("trail")
@pytest.mark.parametrize("i", range(4))
def test_b(i):
    time.sleep(0.3)
    TRAIL.open("a").write(f"b{i}\\n")
@pytest.mark.skip(reason="skipped")
def test_skipped(): pass
""",
}
CRASH_ONCE = "if not flag.exists(): flag.write_text('x'); os.kill(os.getpid(), signal.SIGKILL)  # as a crash, without a core file"
CRASH_ALWAYS = "os.kill(os.getpid(), signal.SIGKILL)  # as a crash, without a core file"
FAIL = "assert False, 'an ordinary failure'"


def _run(tmp_path: Path, action: str) -> tuple[int, str, list[str]]:
    for name, text in SUITE.items():
        (tmp_path / name).write_text(text.replace("{action}", action))
    proc = subprocess.run(
        [sys.executable, "-m", "tests.suite", "-n", "2", "--dist", "loadfile", "--max-worker-restart", "0"]
        + ["-p", "no:cacheprovider", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    trail = (tmp_path / "trail").read_text().split() if (tmp_path / "trail").exists() else []
    return proc.returncode, proc.stdout + proc.stderr, trail


def test_a_crash_once_runs_what_did_not_finish_again_and_passes(tmp_path):
    code, out, trail = _run(tmp_path, CRASH_ONCE)
    assert code == 0, out
    assert "test_a.py::test_middle" in out and "run again, once, in fresh workers" in out
    # Every test ran; the crashed one twice, the ones before it on its worker once. (The other worker's
    # tests are stopped with the run: one may have finished just as it ended, and run again.)
    assert set(trail) == {"first", "middle", "last", "b0", "b1", "b2", "b3"}, trail
    assert (trail.count("first"), trail.count("middle"), trail.count("last")) == (1, 2, 1), trail


def test_a_second_crash_fails_the_suite(tmp_path):
    code, out, trail = _run(tmp_path, CRASH_ALWAYS)
    assert code == 1, out
    assert trail.count("middle") == 2 and "last" not in trail


def test_an_ordinary_failure_is_not_run_again(tmp_path):
    code, out, trail = _run(tmp_path, FAIL)
    assert code == 1, out
    assert "run again" not in out
    assert sorted(trail) == sorted(["first", "middle", "last", "b0", "b1", "b2", "b3"]), trail
