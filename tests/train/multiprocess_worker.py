"""One process of a multi-process ``panm-jax train`` run, started by ``test_multiprocess.py``.

    python -m tests.train.multiprocess_worker OUT.json panm-jax-train-arguments...

The process joins the run through the environment (``JAX_COORDINATOR_ADDRESS``,
``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``), runs ``panm_jax.cli.main`` with the
given arguments and writes ``OUT.json``: its process index and count, its
device counts, the SHA-256 of the state it handed to each checkpoint save
(``{step: digest}``: each process's own copy of the replicated state), the
results record it computed, and the CLI's exit code. The training code is not
changed: the two hooks only record what passes through them.

``panm-jax train`` of a multi-process run runs the command again as its
training child (``panm_jax.cli.supervise``), so this module runs twice per
process: the child trains (with the hooks) and writes ``OUT.json``; the
supervising parent writes only its exit code, to ``OUT.json.code``.

``PANM_TEST_LOSE=PROCESS:POINT:N`` makes process ``PROCESS`` lose itself (SIGKILL
to its child and its parent, as a lost host) at its ``N``-th training step
(``POINT`` = ``train``), evaluation (``eval``) or checkpoint save (``save``),
first writing the time to ``OUT.json.lost``.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time

import jax
import numpy as np


def _digest(tree) -> str:
    """SHA-256 over every leaf's dtype, shape and bytes (host copies: this process's view of the state)."""
    h = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(tree):
        a = np.ascontiguousarray(np.asarray(leaf))
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _lose_at(out: str, point: str, n: int) -> None:
    """Wrap the training step, the evaluation or the checkpoint save so that its ``n``-th call kills this
    process and its supervising parent."""
    from panm_jax.train import loop
    from panm_jax.train.checkpoint import Checkpointer

    owner, name = {
        "train": (loop.Run, "advance"),
        "eval": (loop.Run, "evaluate_seeds"),
        "save": (Checkpointer, "save"),
    }[point]
    original, calls = getattr(owner, name), [0]

    def doomed(*args, **kwargs):
        calls[0] += 1
        if calls[0] == n:
            with open(f"{out}.lost", "w") as f:
                f.write(repr(time.time()))
            os.kill(os.getppid(), signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)
        return original(*args, **kwargs)

    setattr(owner, name, doomed)


def main(out: str, argv: list[str]) -> int:
    from panm_jax import cli
    from panm_jax.cli.supervise import needs_supervisor
    from panm_jax.train import engine
    from panm_jax.train.checkpoint import Checkpointer

    if needs_supervisor():  # the parent: it trains nothing (its child runs this module again)
        code = cli.main(argv)
        with open(f"{out}.code", "w") as f:
            f.write(str(code))
        return code
    lose = os.environ.get("PANM_TEST_LOSE")
    if lose:
        process, point, n = lose.split(":")
        if os.environ.get("JAX_PROCESS_ID") == process:
            _lose_at(out, point, int(n))

    record: dict = {"saved": {}, "results": None}
    save, results_record = Checkpointer.save, engine.results_record

    def recording_save(self, step, state, meta):
        record["saved"][str(step)] = _digest(state)
        return save(self, step, state, meta)

    def recording_results(run, per_mode, step):
        record["results"] = results_record(run, per_mode, step)
        return record["results"]

    Checkpointer.save, engine.results_record = recording_save, recording_results
    code = cli.main(argv)
    record.update(
        code=code,
        process_index=jax.process_index(),
        process_count=jax.process_count(),
        device_count=jax.device_count(),
        local_device_count=jax.local_device_count(),
    )
    with open(out, "w") as f:
        json.dump(record, f)
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2:]))
