"""Orbax checkpoints that resume a run exactly and survive crashes.

Two ``orbax.checkpoint.CheckpointManager`` folders under a run's workdir:

* ``checkpoints/<step>/``: the last ``keep`` checkpoints, saved every N steps
  and at the end;
* ``best/<step>/``: the one checkpoint with the best validation score so far
  (Le et al. 2024, "Plug, Play, and Generalize: Length Extrapolation with
  Pointer-Augmented Neural Memory", select on the L+1 mode).

Each checkpoint holds the whole ``TrainState`` (parameters, optimiser state,
step, PRNG key) and a JSON record (the config, the step, the data-stream
position, metrics). The data stream is a pure function of ``(seed, step)``, so
the step is its position, and a resumed run draws exactly the batches the
uninterrupted run would have drawn.

Atomicity: orbax writes a checkpoint into a temporary folder and renames it when
complete, so a crash (even ``kill -9``) during a save leaves the previous
checkpoints intact and no half-written one is ever taken as valid. Once orbax
has finished, the SHA-256 of every file of the checkpoint goes into its
``checksums.sha256`` (``train/checksums.py``), so bytes changed later (a disk
fault, a copy gone wrong, a flipped bit that orbax would read back as a wrong
number) are caught before the checkpoint is used.

Reading a checkpoint: its checksums are verified, then its JSON record is read
and handed to the caller's ``check`` (the run compares its config there and
refuses a checkpoint of other settings, touching nothing), then the state is
read. A checkpoint that fails to verify or to load is corrupt: it is reported
(``notify``, one line naming its path), moved aside to ``corrupt-<step>`` in
its folder (kept, never deleted) and the previous good one is used; a corrupt
best checkpoint is moved aside the same way and the caller falls back to the
latest. A checkpoint asked for by its step (``restore_step``) has no fallback:
a corrupt one raises ``CheckpointError`` naming it, and is left in place. A
checkpoint whose bytes verify but which this code cannot read (its arrays do
not fit this version's state) is not corrupt: that raises ``CheckpointError``
and nothing is moved. With ``read_only=True`` (``panm-jax
eval``) corrupt checkpoints are reported and skipped but left in place.

A checkpoint without its ``checksums.sha256`` is damaged too: every checkpoint
this code writes has one (a process killed between orbax's commit and the
checksums leaves one without, which ``_save`` removes when it can). Only with
``allow_unverified=True`` (``--allow-unverified``) is such a checkpoint read,
unverified, with a note saying so. A checkpoint whose folder name is not the
step recorded inside it (a folder renamed by hand) is damaged as well: taken
for its name, it would resume at the wrong data position.

A checkpoint whose parameters are not all finite is refused
(``NonFiniteCheckpointError``, a ``CheckpointError``): nothing can be resumed
or evaluated from it. The loop checks the parameters' norm of every step before
saving, so this code does not write such a checkpoint; the refusal covers
folders written otherwise.

The state is stored as a flat mapping of its leaves (``"00000"``, ...) and put
back into the structure of a freshly initialised state of the same config, so
restoring does not depend on how NNX or optax name their tree nodes.

Several processes (``jax.distributed``): every process makes the same calls
(orbax requires it; its ``CheckpointManager`` has process 0 write the arrays
and the JSON record, and meets the others at barriers). The workdir must be one
folder that every process sees. Process 0 writes the checksums, then all
processes meet, so none reads a checkpoint before its checksums exist. Each
process verifies and reads a checkpoint itself; one that fails in any process
is corrupt for all (``all_agree``), so all of them fall back to the same
checkpoint; process 0 moves it aside once the others have finished with it.
The processes then compare the SHA-256 of what they read (``all_same``): a
workdir that is not one shared folder (each process reading its own copy)
raises ``CheckpointError`` instead of training on diverging replicas.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from panm_jax.train.checksums import CHECKSUM_FILE, ChecksumError, verify_checksums, write_checksums
from panm_jax.train.sharding import all_agree, all_same, barrier, is_primary

__all__ = ["CheckpointError", "Checkpointer", "NonFiniteCheckpointError"]

log = logging.getLogger(__name__)


class CheckpointError(ValueError):
    """No usable checkpoint (all corrupt), or one that does not fit the run's state or config."""


class NonFiniteCheckpointError(CheckpointError):
    """A checkpoint whose parameters hold NaN or infinite values."""


def _non_finite_count(state) -> tuple[int, int]:
    """``(non-finite values, values)`` over the floating leaves of ``state.params`` (of ``state`` itself
    when it has no ``params``)."""
    bad = total = 0
    for leaf in jax.tree_util.tree_leaves(getattr(state, "params", state)):
        a = np.asarray(leaf)
        if np.issubdtype(a.dtype, np.floating):
            bad += int(a.size - np.count_nonzero(np.isfinite(a)))
            total += int(a.size)
    return bad, total


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


def _digest_words(found) -> np.ndarray:
    """``[8]`` int32: the SHA-256 of a read checkpoint ``(state or None, meta)``: its arrays and its record."""
    state, meta = found
    digest = hashlib.sha256(json.dumps(meta, sort_keys=True, default=str).encode())
    for leaf in jax.tree_util.tree_leaves(state):
        a = np.ascontiguousarray(np.asarray(leaf))
        digest.update(f"{a.dtype}{a.shape}".encode())
        digest.update(a.tobytes())
    return np.frombuffer(digest.digest(), np.int32)


def _reason(err: BaseException, limit: int = 400) -> str:
    """``"Type: message"`` on one line, cut at ``limit`` characters (tensorstore's errors carry a whole spec)."""
    text = " ".join(f"{type(err).__name__}: {err}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _warn(message: str) -> None:
    """A ``RuntimeWarning`` attributed to the first caller outside this module."""
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_code.co_filename == __file__:
        frame, level = frame.f_back, level + 1
    warnings.warn(message, RuntimeWarning, stacklevel=level)


def _is_closed_loop_callback(unraisable) -> bool:
    """A ``RuntimeError('Event loop is closed')`` raised inside asyncio's ``call_soon_threadsafe``."""
    err = unraisable.exc_value
    if not isinstance(err, RuntimeError) or str(err) != "Event loop is closed":
        return False
    tb = unraisable.exc_traceback
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "call_soon_threadsafe":
            return True
        tb = tb.tb_next
    return False


def drop_closed_loop_callbacks() -> None:
    """Keep orbax's failed reads from printing dozens of "Event loop is closed" tracebacks.

    When orbax fails to read a checkpoint, the ``asyncio.run`` that drove the
    read closes its event loop while tensorstore still has reads of the other
    arrays in flight. Each of them, on completing, calls
    ``loop.call_soon_threadsafe`` on the closed loop from a tensorstore thread;
    the ``RuntimeError`` that raises has no caller to go to, so Python prints it
    as an unraisable exception, one traceback per array. The result it carried
    has no one left to receive it, so nothing is lost by dropping it. This
    installs (once) a ``sys.unraisablehook`` that drops exactly those
    (``RuntimeError("Event loop is closed")`` raised in ``call_soon_threadsafe``)
    and passes every other unraisable exception on to the hook it replaces.
    """
    previous = sys.unraisablehook
    if getattr(previous, "drops_closed_loop_callbacks", False):
        return

    def hook(unraisable):
        if not _is_closed_loop_callback(unraisable):
            previous(unraisable)

    hook.drops_closed_loop_callbacks = True
    sys.unraisablehook = hook


class _Corrupt(Exception):
    """A checkpoint whose bytes fail to verify or to load (internal: restore falls back past it)."""


class Checkpointer:
    """Latest-k and best-on-validation checkpoints of one run (see the module docstring).

    ``notify(message)`` receives every one-line note about the checkpoints read
    (a corrupt one moved aside, one restored unverified); by default each is a
    ``RuntimeWarning``. With ``read_only`` nothing is written, moved or deleted.
    ``allow_unverified`` reads a checkpoint that has no ``checksums.sha256``
    (otherwise damaged, set aside like any other).
    """

    def __init__(
        self,
        workdir: str | Path,
        keep: int = 3,
        *,
        read_only: bool = False,
        allow_unverified: bool = False,
        notify: Callable[[str], None] | None = None,
    ):
        self.workdir = Path(workdir).resolve()
        self.read_only = read_only
        self.allow_unverified = allow_unverified
        self.notify = notify or _warn
        self._unverified_noted: set[Path] = set()
        drop_closed_loop_callbacks()

        def manager(folder: str, keep: int) -> ocp.CheckpointManager:
            if read_only:  # (not orbax's read_only option, which logs two warnings per folder)
                options = ocp.CheckpointManagerOptions(create=False, max_to_keep=None, enable_async_checkpointing=False)
            else:
                options = ocp.CheckpointManagerOptions(max_to_keep=keep, create=True, enable_async_checkpointing=False)
            return ocp.CheckpointManager(self.workdir / folder, options=options, item_names=("state", "meta"))

        self.latest = manager("checkpoints", keep)
        self.best = manager("best", 1)

    # ---- writing -------------------------------------------------------------------------------

    def _save(self, manager: ocp.CheckpointManager, step: int, state, meta: dict[str, Any]) -> None:
        if self.read_only:
            raise RuntimeError(f"{manager.directory}: this Checkpointer is read-only")
        if step in manager.all_steps():
            # Saved before, by an earlier attempt at this step (a run resumed from an older
            # checkpoint re-reaches its best step and scores it again): the new one replaces it.
            manager.delete(step)
        path = Path(manager.directory) / str(step)
        try:
            manager.save(
                step,
                args=ocp.args.Composite(state=ocp.args.StandardSave(_flatten(state)), meta=ocp.args.JsonSave(meta)),
                force=True,
            )
            manager.wait_until_finished()
            if is_primary():
                write_checksums(path)  # after orbax's commit: of the final bytes
        except BaseException:
            # Interrupted (Ctrl-C) or failed (a full disk) part-way: discard this checkpoint, so that only
            # whole, verified ones are ever kept. Orbax's temporary folder is removed by orbax itself.
            if is_primary() and path.is_dir() and not (path / CHECKSUM_FILE).is_file():
                shutil.rmtree(path, ignore_errors=True)
            raise
        barrier(f"panm_jax: checksums of {path.parent.name}/{step}")  # several processes: none reads before

    def save(self, step: int, state, meta: dict[str, Any]) -> None:
        self._save(self.latest, step, state, meta)

    def save_best(self, step: int, state, meta: dict[str, Any]) -> None:
        self._save(self.best, step, state, meta)

    # ---- reading -------------------------------------------------------------------------------

    def _read(self, manager: ocp.CheckpointManager, step: int, template, check):
        """``(state or None, meta)`` of one checkpoint; raises ``_Corrupt`` when its bytes are bad.

        ``check(meta)`` runs before the state is read; ``template`` ``None`` reads the meta only.
        """
        path = Path(manager.directory) / str(step)
        try:
            verified = verify_checksums(path)
        except (ChecksumError, OSError) as err:
            raise _Corrupt(_reason(err)) from err
        if not verified and not self.allow_unverified:
            raise _Corrupt(
                f"no {CHECKSUM_FILE}, which every checkpoint of this library has, so its bytes cannot be "
                "verified; --allow-unverified reads it anyway"
            )
        try:
            meta = dict(manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"])
        except Exception as err:  # noqa: BLE001 - any read failure of a checkpoint's record means it is unusable
            raise _Corrupt(_reason(err)) from err
        if meta.get("step") != step:  # a folder renamed to another step: its data position would be wrong
            raise _Corrupt(f"its folder is named {step} but its record is of step {meta.get('step')!r}")
        if check is not None:
            check(meta)  # CheckpointError: the checkpoint is fine but not this run's; nothing is moved
        if template is None:
            self._note_unverified(path, verified)
            return None, meta
        abstract = {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in _flatten(template).items()}
        try:
            restored = manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract)))
        except Exception as err:  # noqa: BLE001
            if verified:  # the bytes are the ones written: not corruption, a state this code cannot read
                raise CheckpointError(
                    f"{path}: its files verify but its state does not fit this config's ({_reason(err)}); "
                    "use another workdir"
                ) from err
            raise _Corrupt(_reason(err)) from err
        self._note_unverified(path, verified)
        state = _unflatten(template, dict(restored["state"]), str(path))
        bad, total = _non_finite_count(state)
        if bad:
            raise NonFiniteCheckpointError(
                f"checkpoint {path}: {bad} of its {total} parameter values are NaN or infinite, so nothing can be "
                f"resumed or evaluated from it; kept checkpoints: {self.kept_steps()}"
            )
        return state, meta

    def _read_agreed(self, manager: ocp.CheckpointManager, step: int, template, check):
        """``_read`` in every process; a checkpoint that fails to read in any process is corrupt in all
        (``_Corrupt``), so every process falls back to the same one."""
        try:
            found, failure = self._read(manager, step, template, check), None
        except _Corrupt as err:
            found, failure = None, err
        if not all_agree(failure is None) and failure is None:
            failure = _Corrupt("unreadable in another process of this run (its note names the reason)")
        if failure is not None:
            raise failure
        if jax.process_count() > 1 and not all_same(_digest_words(found)):
            path = Path(manager.directory) / str(step)
            raise CheckpointError(
                f"--workdir: the processes of this run read different contents from {path}; "
                "expected one folder shared by all of them"
            )
        return found

    def _note_unverified(self, path: Path, verified: bool) -> None:
        if not verified and path not in self._unverified_noted:
            self._unverified_noted.add(path)
            self.notify(
                f"checkpoint {path} has no {CHECKSUM_FILE}; restoring it without verifying its bytes "
                "(--allow-unverified)"
            )

    def _set_aside(self, manager: ocp.CheckpointManager, step: int) -> tuple[Path, Path | None]:
        """Move a corrupt checkpoint out of the step sequence (kept, never deleted): ``(path, new path)``.

        Read-only: left in place (``None``).
        """
        path = Path(manager.directory) / str(step)
        if self.read_only:
            return path, None
        aside = path.with_name(f"corrupt-{step}")
        n = 1
        while aside.exists():
            n += 1
            aside = path.with_name(f"corrupt-{step}-{n}")
        name = f"{path.parent.name}/{step}"  # the same in every process, wherever the workdir is mounted
        barrier(f"panm_jax: read {name}")  # several processes: all have finished reading it
        if is_primary():
            path.rename(aside)
        barrier(f"panm_jax: moved {name}")
        manager.reload()
        return path, aside

    def _report_corrupt(self, what: str, manager, step: int, reason: str, then: str) -> str:
        path, aside = self._set_aside(manager, step)
        where = f"moved to {aside}" if aside is not None else "left in place"
        self.notify(f"{what} {path} is corrupt or unreadable ({reason}); {where}, {then}")
        return str(path)

    def restore_latest(self, template, check: Callable[[dict[str, Any]], None] | None = None):
        """``(state, meta)`` of the newest readable checkpoint, or ``None`` when there is none.

        A corrupt checkpoint is reported (naming its path), moved aside and
        skipped in favour of the one before it. Raises ``CheckpointError`` when
        checkpoints exist but none can be read, or from ``check(meta)``.
        """
        failures = []
        for step in sorted(self.latest.all_steps(), reverse=True):
            try:
                return self._read_agreed(self.latest, step, template, check)
            except _Corrupt as err:
                failures.append(self._report_corrupt("checkpoint", self.latest, step, str(err), "trying an older one"))
        if failures:
            raise CheckpointError(f"checkpoints: none of {failures} could be read")
        return None

    def _best(self, template, check, then: str):
        step = self.best.latest_step()
        if step is None:
            return None
        try:
            return self._read_agreed(self.best, step, template, check)
        except _Corrupt as err:
            self._report_corrupt("best checkpoint", self.best, step, str(err), then)
            return None

    def restore_best(
        self,
        template,
        check: Callable[[dict[str, Any]], None] | None = None,
        *,
        then: str = "going on without a best checkpoint",
    ):
        """``(state, meta)`` of the best checkpoint, or ``None`` (none, or corrupt: reported, ``then`` says
        what the caller does instead)."""
        return self._best(template, check, then)

    def stored_record(self) -> dict[str, Any] | None:
        """The JSON record of the best checkpoint, else of the newest readable latest one, or ``None``; read
        quietly (an unreadable checkpoint is skipped, not reported, moved or refused here)."""
        candidates = [(self.best, s) for s in self.best.all_steps()[-1:]]
        candidates += [(self.latest, s) for s in sorted(self.latest.all_steps(), reverse=True)]
        for manager, step in candidates:
            try:
                return self._read(manager, step, None, None)[1]
            except (_Corrupt, CheckpointError):
                continue
        return None

    def last_good(self, before: int) -> Path | None:
        """The newest of the latest checkpoints before step ``before`` that verifies and whose parameters
        are all finite (read here, whole), or ``None``. For the message of a run that stops."""
        for step in sorted((s for s in self.latest.all_steps() if s < before), reverse=True):
            path = Path(self.latest.directory) / str(step)
            try:
                if not verify_checksums(path) and not self.allow_unverified:
                    continue
                flat = self.latest.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore()))["state"]
            except Exception:  # noqa: BLE001 - unreadable: not a good checkpoint
                continue
            if _non_finite_count(list(dict(flat).values()))[0] == 0:
                return path
        return None

    def kept_steps(self) -> list[int]:
        """The steps of every checkpoint kept: the latest ones and the best, sorted."""
        return sorted(set(self.latest.all_steps()) | set(self.best.all_steps()))

    def restore_step(self, step: int, template, check: Callable[[dict[str, Any]], None] | None = None):
        """``(state, meta)`` of the checkpoint of ``step``: ``checkpoints/<step>``, else ``best/<step>``.

        The caller asked for this one checkpoint, so there is no fallback: raises
        ``CheckpointError`` when no checkpoint of that step is kept (naming those
        that are) and when it is corrupt or unreadable (naming its path; it is left
        in place).
        """
        for manager in (self.latest, self.best):
            if step in manager.all_steps():
                try:
                    return self._read_agreed(manager, step, template, check)
                except _Corrupt as err:
                    path = Path(manager.directory) / str(step)
                    raise CheckpointError(f"checkpoint {path} is corrupt or unreadable ({err})") from err
        raise CheckpointError(
            f"step {step}: no checkpoint of that step is kept in {self.workdir} (kept: {self.kept_steps()})"
        )

    def best_meta(
        self, check: Callable[[dict[str, Any]], None] | None = None, *, then: str = "going on without a best checkpoint"
    ) -> dict[str, Any] | None:
        """The best checkpoint's JSON record, or ``None`` (as ``restore_best``)."""
        found = self._best(None, check, then)
        return None if found is None else found[1]

    def close(self) -> None:
        self.latest.close()
        self.best.close()
