"""Multi-process data parallelism: 2 and 4 local processes on the CPU train like one.

Each case starts ``panm-jax train`` (through ``multiprocess_worker.py``) in 2 or
4 Python processes, joined by a coordinator on 127.0.0.1 (``JAX_COORDINATOR_ADDRESS``,
``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``) with gloo for the CPU's cross-process
collectives, and compares the run with a single-process run of the same global
batches: the per-step losses (rtol 2e-5, as 4 devices against 1 in
``test_train.py``), the results, and the state each process hands to every
checkpoint save (the same in all). A 2-process run stopped after 2 steps, its
last checkpoint damaged, and resumed to 4 steps equals the uninterrupted
single-process run. Only process 0 may write ``metrics.jsonl`` and the results.
Every launch has a deadline, so a hang fails the test; a failure prints each
process's stderr. The whole file takes about 40 s on 2 CPU cores.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from panm_jax.train.checksums import verify_checksums
from panm_jax.train.config import load_config
from panm_jax.train.io import read_jsonl
from panm_jax.train.lock import WorkdirBusy, WorkdirLock, run_lock
from panm_jax.train.sharding import HEARTBEAT_TIMEOUT_S, distributed_settings
from tests.train.tiny import TINY

REPO = Path(__file__).resolve().parents[2]
# The tiny run of an LSTM of width 8 (the machinery under test does not depend on the model; PANM takes
# several times longer to compile), one bucket and one evaluation mode: one compilation of each step.
SETTINGS = [s for s in TINY if not s.startswith("model_options.")] + [
    'model="lstm"',
    "model_options.hidden=8",
    "buckets=[3]",
    'eval_modes=["L"]',
    "eval_every=2",
    "checkpoint_every=2",
]
STEPS = 4
DEADLINE_S = 240  # for all the processes of one launch


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(
    name: str, workdir: Path, steps: int, processes: int, devices: int, tmp: Path, extra: tuple[str, ...] = ()
) -> list[dict]:
    """Run ``panm-jax train`` in ``processes`` processes of ``devices`` CPU devices each; their records.

    Each record is ``multiprocess_worker.py``'s JSON plus ``stdout`` and ``stderr``.
    """
    port = _free_port()
    args = ["train", "--workdir", str(workdir), "--no-progress", "--steps", str(steps)]
    for item in [*SETTINGS, *extra]:
        args += ["--set", item]
    procs = []
    for i in range(processes):
        env = {
            **os.environ,
            "JAX_PLATFORMS": "cpu",
            "JAX_CPU_COLLECTIVES_IMPLEMENTATION": "gloo",
            "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}",
            "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}",
            "JAX_NUM_PROCESSES": str(processes),
            "JAX_PROCESS_ID": str(i),
            "JAX_COMPILATION_CACHE_DIR": os.environ["PANM_JAX_TEST_MULTIPROCESS_CACHE"],  # tests/conftest.py
        }
        env.pop("PANM_JAX_DISTRIBUTED", None)
        files = {k: tmp / f"{name}-{i}.{k}" for k in ("json", "stdout", "stderr")}
        with open(files["stdout"], "w") as out, open(files["stderr"], "w") as err:
            cmd = [sys.executable, "-m", "tests.train.multiprocess_worker", str(files["json"]), *args]
            procs.append((subprocess.Popen(cmd, env=env, cwd=REPO, stdout=out, stderr=err), files))

    def report(why: str) -> str:
        parts = [why]
        for i, (p, files) in enumerate(procs):
            parts.append(f"--- process {i} (exit code {p.returncode}) stderr:\n{files['stderr'].read_text()[-4000:]}")
        return "\n".join(parts)

    deadline = time.monotonic() + DEADLINE_S
    failed_at = None
    while any(p.poll() is None for p, _ in procs):
        now = time.monotonic()
        if failed_at is None and any(p.poll() not in (None, 0) for p, _ in procs):
            failed_at = now  # the others may wait on the failed one: give them a moment, then stop them
        if now > deadline or (failed_at is not None and now > failed_at + 10):
            for p, _ in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            pytest.fail(
                report(
                    f"{name}: {'a process failed' if failed_at else f'no end after {DEADLINE_S} s'}; "
                    "the others were stopped"
                )
            )
        time.sleep(0.1)
    if any(p.returncode != 0 for p, _ in procs):
        pytest.fail(report(f"{name}: a process failed"))
    records = []
    for _p, files in procs:
        record = json.loads(files["json"].read_text())
        record.update(stdout=files["stdout"].read_text(), stderr=files["stderr"].read_text())
        records.append(record)
    assert [r["process_index"] for r in records] == list(range(processes))
    assert {(r["process_count"], r["device_count"], r["local_device_count"]) for r in records} == {
        (processes, processes * devices, devices)
    }
    return records


def _losses(workdir: Path) -> dict[int, float]:
    """``{step: loss}`` from ``metrics.jsonl``. A step logged twice fails: two writers, or a resumed part that
    did not drop the records of the steps it trains again."""
    logged = [(r["step"], r["loss"]) for r in read_jsonl(workdir / "metrics.jsonl") if "loss" in r]
    steps = [step for step, _ in logged]
    for step in set(steps):
        assert steps.count(step) == 1, f"metrics.jsonl: step {step} logged {steps.count(step)} times: {steps}"
    return dict(logged)


def _metric_rows(results: dict) -> dict[str, dict[str, float]]:
    """``{mode: {metric: value}}`` of a results record (the numbers: metrics and loss)."""
    return {
        m["mode"]: {k: v for k, v in m.items() if k not in ("mode", "length", "examples")} for m in results["modes"]
    }


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> dict:
    """The single-process run of the same config: ``{"losses": {step: loss}, "results": ...}``."""
    from panm_jax.train.loop import train_and_evaluate

    workdir = tmp_path_factory.mktemp("single") / "run"
    results = train_and_evaluate(load_config(None, SETTINGS + [f"num_steps={STEPS}"]), workdir, progress=False)
    return {"losses": _losses(workdir), "results": results}


def _assert_matches_single(workdir: Path, records: list[dict], single: dict) -> None:
    """The run in ``workdir`` (``records``: its processes) against the single-process run."""
    losses = _losses(workdir)
    assert sorted(losses) == sorted(single["losses"]) == list(range(1, STEPS + 1))
    np.testing.assert_allclose(
        [losses[s] for s in sorted(losses)], [single["losses"][s] for s in sorted(losses)], rtol=2e-5, atol=1e-6
    )
    first = records[0]["results"]
    for r in records[1:]:  # every process computed the same (global) evaluation; each timed its own training
        assert {k: v for k, v in r["results"].items() if k != "training"} == {
            k: v for k, v in first.items() if k != "training"
        }
    assert json.loads((workdir / "results.json").read_text()) == first  # written once, by process 0
    assert first["step"] == single["results"]["step"]
    got, want = _metric_rows(first), _metric_rows(single["results"])
    assert {m: sorted(r) for m, r in got.items()} == {m: sorted(r) for m, r in want.items()}
    for mode, row in want.items():
        for name, value in row.items():
            np.testing.assert_allclose(got[mode][name], value, rtol=2e-5, atol=1e-6, err_msg=f"{mode} {name}")
    assert "panm-jax train" in records[0]["stdout"]
    assert all("panm-jax train" not in r["stdout"] for r in records[1:])  # process 0 alone prints
    assert (workdir / ".lock").read_text() == ""  # taken by process 0, released at the end


def _assert_same_state_everywhere(records: list[dict], steps: list[int]) -> None:
    """Every process handed the same state (its own copy of the replicated arrays) to each save."""
    for step in steps:
        digests = {r["saved"].get(str(step)) for r in records}
        assert len(digests) == 1 and None not in digests, (step, digests)


def test_two_processes_checkpoint_resume_and_match_one_process(tmp_path, single):
    # 2 processes of 2 devices each, a checkpoint every step: stop after 2 steps, damage the checkpoint of
    # step 2, resume to 4 (from step 1, the checkpoint before it).
    workdir, every_step = tmp_path / "run", ("checkpoint_every=1",)
    first = _launch("first", workdir, 2, processes=2, devices=2, tmp=tmp_path, extra=every_step)
    assert sorted(_losses(workdir)) == [1, 2]
    _assert_same_state_everywhere(first, [1, 2])
    assert verify_checksums(workdir / "checkpoints" / "2")
    data = max(
        (p for p in (workdir / "checkpoints" / "2" / "state").rglob("*") if p.parent.name == "d"),
        key=lambda p: p.stat().st_size,
    )
    damaged = bytearray(data.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    data.write_bytes(bytes(damaged))

    resumed = _launch("resumed", workdir, STEPS, processes=2, devices=2, tmp=tmp_path, extra=every_step)
    for i, r in enumerate(resumed):  # both found it corrupt; process 0 moved it aside, once
        assert (
            f"warning: process {i} of 2: checkpoint {workdir.resolve() / 'checkpoints' / '2'} is corrupt"
            in (r["stderr"])
        ), r["stderr"]
    assert sorted(p.name for p in (workdir / "checkpoints").iterdir()) == ["2", "3", "4", "corrupt-2"]  # keep 3
    assert "resumed from step 1" in resumed[0]["stdout"]
    events = [r for r in read_jsonl(workdir / "metrics.jsonl") if r.get("event") == "resumed"]
    assert [(e["event"], e["step"], e["processes"]) for e in events] == [("resumed", 1, 2)]
    assert events[0]["dropped"] >= 1  # step 2, logged by the first part, trained and logged again once
    assert all(sorted(r["saved"]) == ["2", "3", "4"] for r in resumed)  # from step 1, not from the start
    _assert_same_state_everywhere(resumed, [2, 3, STEPS])
    assert {r["saved"]["2"] for r in resumed} == {first[0]["saved"]["2"]}  # step 2 retrained bit for bit
    _assert_matches_single(workdir, resumed, single)


def test_four_processes_match_one_process(tmp_path, single):
    workdir = tmp_path / "run"
    records = _launch("four", workdir, STEPS, processes=4, devices=1, tmp=tmp_path)
    _assert_same_state_everywhere(records, [2, STEPS])
    _assert_matches_single(workdir, records, single)


# ---- the pieces, in this process ---------------------------------------------------------------


def test_distributed_settings_from_the_environment():
    assert distributed_settings({}) is None
    assert distributed_settings({"JAX_NUM_PROCESSES": "2"}) is None  # no coordinator asked for
    env = {"JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234", "JAX_NUM_PROCESSES": "4", "JAX_PROCESS_ID": "3"}
    assert distributed_settings(env) == {
        "coordinator_address": "10.0.0.1:1234",
        "num_processes": 4,
        "process_id": 3,
        "heartbeat_timeout_seconds": HEARTBEAT_TIMEOUT_S,
    }
    assert distributed_settings({**env, "PANM_JAX_HEARTBEAT_TIMEOUT": "5"})["heartbeat_timeout_seconds"] == 5
    # PANM_JAX_DISTRIBUTED=1 alone: JAX detects the rest (SLURM, Open MPI, Cloud TPU).
    assert distributed_settings({"PANM_JAX_DISTRIBUTED": "1"}) == {
        "coordinator_address": None,
        "num_processes": None,
        "process_id": None,
        "heartbeat_timeout_seconds": HEARTBEAT_TIMEOUT_S,
    }
    with pytest.raises(ValueError, match=r"PANM_JAX_HEARTBEAT_TIMEOUT: expected a positive number of seconds, got '0'"):
        distributed_settings({**env, "PANM_JAX_HEARTBEAT_TIMEOUT": "0"})
    with pytest.raises(ValueError, match=r"JAX_NUM_PROCESSES: expected a positive integer, got 'two'"):
        distributed_settings({**env, "JAX_NUM_PROCESSES": "two"})
    with pytest.raises(
        ValueError,
        match=r"JAX_PROCESS_ID: expected an integer in \[0, JAX_NUM_PROCESSES\), "
        r"got '4'",
    ):
        distributed_settings({**env, "JAX_PROCESS_ID": "4"})
    with pytest.raises(ValueError, match=r"JAX_PROCESS_ID: expected a non-negative integer, got '-1'"):
        distributed_settings({"PANM_JAX_DISTRIBUTED": "1", "JAX_PROCESS_ID": "-1"})


def test_run_lock_of_several_processes(tmp_path):
    everyone_ok = lambda ok: ok  # noqa: E731  (this process stands for all of them)
    # Process 0 takes the lock; another process of the same run takes none and is not refused.
    with run_lock(tmp_path, primary=True, agree=everyone_ok) as lock:
        assert lock is not None and (tmp_path / ".lock").read_text().split()[0] == str(os.getpid())
        with run_lock(tmp_path, primary=False, agree=everyone_ok) as other:
            assert other is None
    assert (tmp_path / ".lock").read_text() == ""
    # Another run holds the folder: process 0 names the holder, the others point to process 0.
    with WorkdirLock(tmp_path):
        with pytest.raises(WorkdirBusy, match=r"is in use by another run \(process \d+ on "):
            with run_lock(tmp_path, primary=True, agree=everyone_ok):
                pass
        with pytest.raises(WorkdirBusy, match=r"process 0 of this run could not take .*\.lock"):
            with run_lock(tmp_path, primary=False, agree=lambda ok: False):
                pass


def test_batch_sizes_must_divide_over_every_device():
    from panm_jax.train.loop import check_batch_sizes

    config = load_config(None, SETTINGS)  # batch_size 8, eval_examples 8, eval_batch_size 8
    check_batch_sizes(config, 4)
    with pytest.raises(ValueError, match=r"batch_size: expected a multiple of the 3 devices, got 8"):
        check_batch_sizes(config, 3)
    with pytest.raises(ValueError, match=r"eval_batch_size: expected a multiple of the 4 devices, got 6"):
        check_batch_sizes(config.replace(eval_batch_size=6, eval_examples=12), 4)
    with pytest.raises(
        ValueError,
        match=r"eval_examples: expected a multiple of the 4 devices, got 10 "
        r"\(a last evaluation batch of 2\)",
    ):
        check_batch_sizes(config.replace(eval_examples=10), 4)
