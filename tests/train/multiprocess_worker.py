"""One process of a multi-process ``panm-jax train`` run, started by ``test_multiprocess.py``.

    python -m tests.train.multiprocess_worker OUT.json panm-jax-train-arguments...

The process joins the run through the environment (``JAX_COORDINATOR_ADDRESS``,
``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``), runs ``panm_jax.cli.main`` with the
given arguments and writes ``OUT.json``: its process index and count, its
device counts, the SHA-256 of the state it handed to each checkpoint save
(``{step: digest}``: each process's own copy of the replicated state), the
results record it computed, and the CLI's exit code. The training code is not
changed: the two hooks only record what passes through them.
"""

from __future__ import annotations

import hashlib
import json
import sys

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


def main(out: str, argv: list[str]) -> int:
    from panm_jax import cli
    from panm_jax.train import loop
    from panm_jax.train.checkpoint import Checkpointer

    record: dict = {"saved": {}, "results": None}
    save, results_record = Checkpointer.save, loop.results_record

    def recording_save(self, step, state, meta):
        record["saved"][str(step)] = _digest(state)
        return save(self, step, state, meta)

    def recording_results(run, per_mode, step):
        record["results"] = results_record(run, per_mode, step)
        return record["results"]

    Checkpointer.save, loop.results_record = recording_save, recording_results
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
