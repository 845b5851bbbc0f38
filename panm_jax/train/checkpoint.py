"""Orbax checkpoints that resume a run exactly and survive crashes.

Two ``orbax.checkpoint.CheckpointManager`` folders under a run's workdir:

* ``checkpoints/<step>/``: the last ``keep`` checkpoints, saved every N steps
  and at the end;
* ``best/<step>/``: the one checkpoint with the best validation score so far
  (seed 001 selects on the L+1 mode).

Each checkpoint holds the whole ``TrainState`` (parameters, optimiser state,
step, PRNG key) and a JSON record (the config, the step, the data-stream
position, metrics). The data stream is a pure function of ``(seed, step)``, so
the step is its position, and a resumed run draws exactly the batches the
uninterrupted run would have drawn.

Atomicity: orbax writes a checkpoint into a temporary folder and renames it when
complete, so a crash (even ``kill -9``) during a save leaves the previous
checkpoints intact and no half-written one is ever taken as valid. A checkpoint
that is nevertheless corrupt or truncated (a disk fault, a copy gone wrong)
makes ``restore_latest`` warn naming its path, move it aside to
``checkpoints/corrupt-<step>`` (kept, never deleted) and fall back to the
previous good one.

The state is stored as a flat mapping of its leaves (``"00000"``, ...) and put
back into the structure of a freshly initialised state of the same config, so
restoring does not depend on how NNX or optax name their tree nodes.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

__all__ = ["CheckpointError", "Checkpointer"]

log = logging.getLogger(__name__)


class CheckpointError(ValueError):
    """No usable checkpoint (all corrupt), or one that does not fit the run's state."""


def _flatten(state) -> dict[str, np.ndarray]:
    leaves = jax.tree_util.tree_leaves(state)
    return {f"{i:05d}": np.asarray(jax.device_get(x)) for i, x in enumerate(leaves)}


def _unflatten(template, flat: dict[str, Any], where: str):
    leaves, treedef = jax.tree_util.tree_flatten(template)
    if len(flat) != len(leaves):
        raise CheckpointError(f"{where}: expected {len(leaves)} arrays for this config's state, found {len(flat)}")
    out = []
    for i, ref in enumerate(leaves):
        value = np.asarray(flat[f"{i:05d}"])
        if value.shape != np.shape(ref) or value.dtype != np.asarray(ref).dtype:
            raise CheckpointError(
                f"{where}: array {i} expected shape {np.shape(ref)} {np.asarray(ref).dtype}, "
                f"got {value.shape} {value.dtype} (a checkpoint of another config?)"
            )
        out.append(value)
    return jax.tree_util.tree_unflatten(treedef, out)


class Checkpointer:
    """Latest-k and best-on-validation checkpoints of one run (see the module docstring)."""

    def __init__(self, workdir: str | Path, keep: int = 3):
        self.workdir = Path(workdir).resolve()
        options = ocp.CheckpointManagerOptions(max_to_keep=keep, create=True, enable_async_checkpointing=False)
        self.latest = ocp.CheckpointManager(self.workdir / "checkpoints", options=options, item_names=("state", "meta"))
        best_options = ocp.CheckpointManagerOptions(max_to_keep=1, create=True, enable_async_checkpointing=False)
        self.best = ocp.CheckpointManager(self.workdir / "best", options=best_options, item_names=("state", "meta"))

    @staticmethod
    def _save(manager: ocp.CheckpointManager, step: int, state, meta: dict[str, Any]) -> None:
        manager.save(
            step,
            args=ocp.args.Composite(state=ocp.args.StandardSave(_flatten(state)), meta=ocp.args.JsonSave(meta)),
            force=True,
        )
        manager.wait_until_finished()

    def save(self, step: int, state, meta: dict[str, Any]) -> None:
        self._save(self.latest, step, state, meta)

    def save_best(self, step: int, state, meta: dict[str, Any]) -> None:
        self._save(self.best, step, state, meta)

    def _restore(self, manager: ocp.CheckpointManager, step: int, template):
        where = str(manager.directory / str(step))
        abstract = {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in _flatten(template).items()}
        restored = manager.restore(
            step,
            args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract), meta=ocp.args.JsonRestore()),
        )
        return _unflatten(template, dict(restored["state"]), where), dict(restored["meta"])

    def restore_latest(self, template):
        """``(state, meta)`` of the newest readable checkpoint, or ``None`` when there is none.

        A checkpoint that fails to load is reported (a warning naming its path)
        and skipped in favour of the one before it. Raises ``CheckpointError``
        when checkpoints exist but none can be read.
        """
        steps = sorted(self.latest.all_steps(), reverse=True)
        failures = []
        for step in steps:
            try:
                return self._restore(self.latest, step, template)
            except CheckpointError:
                raise
            except Exception as err:  # noqa: BLE001 - any read failure means this checkpoint is unusable
                path = Path(self.latest.directory) / str(step)
                # Keep the bytes (nothing written is deleted) but move them out of the
                # step sequence, so the resumed run can write this step again.
                aside = path.with_name(f"corrupt-{step}")
                path.rename(aside)
                self.latest.reload()
                message = (
                    f"checkpoint {path} is corrupt or unreadable ({type(err).__name__}: {err}); "
                    f"moved to {aside}, trying an older one"
                )
                warnings.warn(message, RuntimeWarning, stacklevel=2)
                log.warning(message)
                failures.append(str(path))
        if failures:
            raise CheckpointError(f"checkpoints: none of {failures} could be read")
        return None

    def restore_best(self, template):
        """``(state, meta)`` of the best checkpoint, or ``None``."""
        step = self.best.latest_step()
        if step is None:
            return None
        return self._restore(self.best, step, template)

    def best_meta(self) -> dict[str, Any] | None:
        step = self.best.latest_step()
        if step is None:
            return None
        return dict(self.best.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"])

    def close(self) -> None:
        self.latest.close()
        self.best.close()
