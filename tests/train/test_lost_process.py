"""A lost process of a multi-process run: the other stops with one line and exit code 4, and the run resumes.

Each case starts a 2-process ``panm-jax train`` (through ``multiprocess_worker.py``,
as ``test_multiprocess.py`` does) in which one process loses itself, with SIGKILL to
its training child and its supervising parent as a lost host would, at a training
step, an evaluation or a checkpoint save (``PANM_TEST_LOSE``). The survivor must
end with exit code 4 within the heartbeat timeout and a margin, having printed one
line on stderr that names the lost process and where the run resumes (no
traceback, no C++ report of JAX's fate sharing); then the same command on both
processes resumes the run from its last checkpoint, and it must end bit for bit as an
uninterrupted 2-process run of the same steps: every step's loss, the results and
the state saved at the last step. The file takes about two minutes on 2 CPU cores.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from panm_jax.train.io import read_jsonl
from tests.train.test_multiprocess import REPO, SETTINGS, _free_port, _losses

STEPS = 6
HEARTBEAT_S = 5  # PANM_JAX_HEARTBEAT_TIMEOUT of these runs
NOTICE_S = HEARTBEAT_S + 30  # the survivor's line comes within this of the loss
DEADLINE_S = 240


def _launch(name: str, workdir: Path, tmp: Path, lose: str | None = None) -> list[dict]:
    """Both processes of ``panm-jax train`` on ``workdir``; each one's exit code, stderr, end time and (when
    its training child finished) its worker record; ``lose`` is ``PANM_TEST_LOSE``."""
    port = _free_port()
    args = ["train", "--workdir", str(workdir), "--no-progress", "--steps", str(STEPS)]
    for item in SETTINGS:
        args += ["--set", item]
    procs = []
    for i in range(2):
        env = {
            **os.environ,
            "JAX_PLATFORMS": "cpu",
            "JAX_CPU_COLLECTIVES_IMPLEMENTATION": "gloo",
            "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=1",
            "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}",
            "JAX_NUM_PROCESSES": "2",
            "JAX_PROCESS_ID": str(i),
            "JAX_COMPILATION_CACHE_DIR": os.environ["PANM_JAX_TEST_MULTIPROCESS_CACHE"],  # tests/conftest.py
            "PANM_JAX_HEARTBEAT_TIMEOUT": str(HEARTBEAT_S),
        }
        env.pop("PANM_JAX_DISTRIBUTED", None)
        env.pop("PANM_TEST_LOSE", None)
        if lose:
            env["PANM_TEST_LOSE"] = lose
        out = tmp / f"{name}-{i}"
        with open(f"{out}.stderr", "w") as err:
            cmd = [sys.executable, "-m", "tests.train.multiprocess_worker", f"{out}.json", *args]
            procs.append((subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err), out))
    ended: dict[int, float] = {}
    deadline = time.monotonic() + DEADLINE_S
    while len(ended) < len(procs) and time.monotonic() < deadline:
        for i, (p, _) in enumerate(procs):
            if i not in ended and p.poll() is not None:
                ended[i] = time.time()
        time.sleep(0.05)
    for p, _ in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    runs = []
    for i, (p, out) in enumerate(procs):
        record = json.loads(Path(f"{out}.json").read_text()) if Path(f"{out}.json").exists() else None
        lost = Path(f"{out}.json.lost")
        runs.append(
            {
                "code": p.returncode,
                "stderr": Path(f"{out}.stderr").read_text(),
                "ended": ended.get(i),
                "lost_at": float(lost.read_text()) if lost.exists() else None,
                "record": record,
            }
        )
    return runs


def _report(runs: list[dict]) -> str:
    return "\n".join(f"--- process {i} (exit code {r['code']}):\n{r['stderr'][-3000:]}" for i, r in enumerate(runs))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> dict:
    """The same 2-process run without a loss: its losses, results and the digest of its last saved state."""
    tmp = tmp_path_factory.mktemp("uninterrupted")
    runs = _launch("whole", tmp / "run", tmp)
    assert [r["code"] for r in runs] == [0, 0], _report(runs)
    return {
        "losses": _losses(tmp / "run"),
        "results": json.loads((tmp / "run" / "results.json").read_text()),
        "saved": runs[0]["record"]["saved"][str(STEPS)],
    }


# (the lost process, where it is lost, at its n-th call there, whether the case also resumes the run). The
# save cases lose it at the save of step 4, after one checkpoint. The stop is checked in every case; to keep
# the file's time down, the resume in one case of each point.
CASES = [
    (1, "train", 3, False),
    (0, "train", 3, True),
    (1, "eval", 2, True),
    (0, "eval", 2, False),
    (1, "save", 2, False),
    (0, "save", 2, True),
]


@pytest.mark.parametrize("lost, point, n, resume", CASES)
def test_a_lost_process_stops_the_other_with_one_line_and_the_run_resumes(
    tmp_path, uninterrupted, lost, point, n, resume
):
    workdir = tmp_path / "run"
    runs = _launch("lost", workdir, tmp_path, lose=f"{lost}:{point}:{n}")
    survivor = 1 - lost
    gone, kept = runs[lost], runs[survivor]
    assert gone["code"] == -9 and gone["lost_at"] is not None, _report(runs)
    assert kept["code"] == 4, _report(runs)
    lines = [line for line in kept["stderr"].splitlines() if line.strip() and not line.startswith("[Gloo]")]
    assert len(lines) == 1, _report(runs)
    assert re.fullmatch(
        rf"error: process {survivor} of 2: process {lost} of this run was lost \(.+\); every process stops; the same "
        rf"command on every process resumes {re.escape(str(workdir))} from (step \d+|the start \(no checkpoint yet\))",
        lines[0],
    ), _report(runs)
    assert kept["ended"] - gone["lost_at"] < NOTICE_S, kept["ended"] - gone["lost_at"]
    if not resume:
        return
    checkpointed = re.search(r"from step (\d+)", lines[0])
    assert checkpointed, lines[0]

    again = _launch("again", workdir, tmp_path)  # the same command on both processes
    assert [r["code"] for r in again] == [0, 0], _report(again)
    parts = [(r["event"], r["step"]) for r in read_jsonl(workdir / "metrics.jsonl") if "event" in r]
    assert parts == [("started", 0), ("resumed", int(checkpointed.group(1)))], parts
    assert _losses(workdir) == uninterrupted["losses"]  # every step once, bit for bit
    results = json.loads((workdir / "results.json").read_text())
    assert {k: v for k, v in results.items() if k != "training"} == {
        k: v for k, v in uninterrupted["results"].items() if k != "training"
    }
    assert {r["record"]["saved"][str(STEPS)] for r in again} == {uninterrupted["saved"]}
