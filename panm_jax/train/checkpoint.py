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
number) are caught before the checkpoint is used. Only then are the checkpoints
beyond ``keep`` removed (this code rotates them, not orbax): each is first
renamed to ``deleting-<step>``, so it leaves the step sequence at once and
whole, and a reader never finds one half deleted; a run therefore always keeps
``keep`` verified checkpoints, the new one among them.

Reading a checkpoint: its checksums are verified, then its JSON record is read
and handed to the caller's ``check`` (the run compares its config there and
refuses a checkpoint of other settings, touching nothing), then the state is
read. A checkpoint that fails to verify or to load is corrupt: it is reported
(``notify``, one line naming its path), moved aside to ``corrupt-<step>`` in
its folder (kept, never deleted) and the previous good one is used; a corrupt
best checkpoint is moved aside the same way and the caller falls back to the
latest. A checkpoint asked for by its step (``restore_step``) has no fallback:
a corrupt one raises ``CheckpointError`` naming it, and is left in place.

Damage or mismatch. A checkpoint whose state cannot be read into this config's
state is either damaged (set aside, as above) or another run's (refused with
``CheckpointError``, "use another workdir", nothing moved: setting aside a
healthy run's checkpoints because the wrong config was pointed at its folder
would lose that run). The rule, in this order:

1. the record's config differs from the run's (``check``): a mismatch, decided
   before any array is read, whatever state the arrays are in;
2. the arrays the checkpoint says it holds differ from those this config's state
   has (their number, names, shapes and dtypes): a mismatch (another version of
   this code, or a caller's template of another config). What it holds is the
   layout recorded in its JSON record (``state_layout``, written with every
   checkpoint), else, for checkpoints written before that record, the array
   metadata orbax stored;
3. otherwise, its layout being this state's, an orbax failure to read the
   arrays, or arrays read back other than asked for, is damage, even when the
   files match their checksums (the checksums then record damaged files);
   layout metadata orbax cannot read at all counts as damage too.

A failure of the machine rather than of the checkpoint (no memory, too many open
files, permission refused) raises, and moves nothing. With ``read_only=True``
(``panm-jax eval``) corrupt checkpoints are reported and skipped but left in
place.

Reading while a run writes. A reader (``read_only``) takes no lock and writes
nothing; it lists the folder afresh before each read. A checkpoint that
disappears between the listing and the read was rotated away by the run: it is
not corrupt, and the reader lists again and reads the then newest (at most
``_LISTINGS`` listings). A checkpoint without its checksums while a live run
holds the workdir (``lock.live_holder``) is one whose checksums are still being
written: it is skipped without a note in favour of an older one, or read once
complete.

A checkpoint without its ``checksums.sha256`` is damaged too: every checkpoint
this code writes has one (a process killed between orbax's commit and the
checksums leaves one without, which ``Checkpointer._save`` removes when it can). Only with
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
raises ``CheckpointError`` instead of training on diverging replicas. Readers
list the folder until every process has the same listing, and decide together
whether a checkpoint disappeared or is still being written, so all of them read
the same one.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from panm_jax.train.checksums import CHECKSUM_FILE, ChecksumError, verify_checksums, write_checksums
from panm_jax.train.lock import live_holder
from panm_jax.train.sharding import all_agree, all_same, barrier, is_primary

__all__ = ["CheckpointError", "Checkpointer", "NonFiniteCheckpointError"]

log = logging.getLogger(__name__)

LAYOUT_KEY = "state_layout"  # in a checkpoint's JSON record: the arrays its state holds (``_layout``)
_LISTINGS = 10  # how many times a reader lists a folder whose checkpoints disappear or are unfinished
_UNFINISHED_WAIT_S = 0.5  # the pause before listing again when the only candidates are still being written
_MACHINE_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EMFILE, errno.ENFILE, errno.ENOMEM})
_MACHINE_STATUSES = ("PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "UNAVAILABLE")  # tensorstore's, as orbax raises them


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


def _layout(arrays: dict[str, Any]) -> dict[str, Any]:
    """``{"arrays": n, "sha256": ...}``: the number of a flat state's arrays and the SHA-256 of their names,
    shapes and dtypes (``arrays``: name -> array, or anything with ``shape`` and ``dtype``)."""
    text = ";".join(f"{k}:{np.dtype(v.dtype).name}{tuple(int(d) for d in v.shape)}" for k, v in sorted(arrays.items()))
    return {"arrays": len(arrays), "sha256": hashlib.sha256(text.encode()).hexdigest()}


def _orbax_layout(folder: Path) -> dict[str, Any] | None:
    """``_layout`` of the arrays orbax's metadata lists in a checkpoint's ``state`` folder; ``None`` when that
    metadata cannot be read (orbax then lists nothing)."""
    try:
        checkpointer = ocp.StandardCheckpointer()
        try:
            metadata = checkpointer.metadata(folder)
        finally:
            checkpointer.close()
        tree = dict(getattr(metadata, "item_metadata", metadata) or {})
        return _layout(tree) if tree else None
    except Exception:  # noqa: BLE001 - unreadable metadata: no layout to compare
        return None


def _machine_failure(err: BaseException) -> bool:
    """Whether ``err`` (or an error it was raised from) is the machine's, not the checkpoint's: no memory,
    too many open files, permission refused."""
    while err is not None:
        if isinstance(err, MemoryError) or (isinstance(err, OSError) and err.errno in _MACHINE_ERRNOS):
            return True
        if str(err).lstrip().startswith(_MACHINE_STATUSES):
            return True
        err = err.__cause__
    return False


def _words(value) -> np.ndarray:
    """``[8]`` int32: the SHA-256 of ``value`` as JSON (to compare it across processes with ``all_same``)."""
    return np.frombuffer(hashlib.sha256(json.dumps(value).encode()).digest(), np.int32)


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
    """A checkpoint whose bytes fail to verify or to load (internal: restore falls back past it).

    ``unfinished``: the reason is that it has no checksums (yet, when a run is writing it).
    """

    def __init__(self, message: str, *, unfinished: bool = False):
        super().__init__(message)
        self.unfinished = unfinished


# The suffix of the temporary folder orbax writes a checkpoint into before renaming it to its step.
ORBAX_TMP_SUFFIX = ".orbax-checkpoint-tmp"
# How tensorstore (orbax's file store) gives the operating system's error of a failed write.
_OS_ERROR_CODE = re.compile(r"os_error_code=(\d+)")
# How long an interrupted save waits for orbax's threads to end before removing what they wrote.
ORBAX_THREADS_WAIT_SECONDS = 60.0


def _wait_for_orbax_threads(timeout: float = ORBAX_THREADS_WAIT_SECONDS) -> None:
    """Wait (up to ``timeout`` seconds in all) for orbax's threads to end. A save interrupted in the main
    thread (an error, a second Ctrl-C: ``train/interrupt.py``) leaves them writing, and renaming the
    temporary folder to the step's, after the interrupt: what they wrote can be removed only once they are
    done."""
    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and type(thread).__module__.startswith("orbax."):
            thread.join(max(0.0, deadline - time.monotonic()))


def _discard_unfinished(path: Path) -> None:
    """After a save of ``path`` (``folder/step``) failed or was interrupted part-way: once orbax's threads are
    done, remove what they wrote of it, so that only whole, verified checkpoints are ever kept: orbax's
    temporary folder (orbax leaves it behind on an error) and the step's folder where it has no checksums
    (the interrupt may have come after orbax renamed it, before the checksums)."""
    _wait_for_orbax_threads()
    if not is_primary():
        return
    for tmp in path.parent.glob(f"{path.name}{ORBAX_TMP_SUFFIX}*"):
        shutil.rmtree(tmp, ignore_errors=True)
    if path.is_dir() and not (path / CHECKSUM_FILE).is_file():
        shutil.rmtree(path, ignore_errors=True)


def _os_error(err: BaseException, path: Path) -> OSError | None:
    """The operating system's error of a failed save as an ``OSError`` naming ``path`` (``folder/step``), where
    ``err`` names no path or a file of the removed temporary folder, or is one of tensorstore's errors that carry
    an ``os_error_code`` (a full disk: ``RESOURCE_EXHAUSTED ... No space left on device [os_error_code=28]``);
    ``None`` for any other error."""
    if isinstance(err, OSError) and (err.filename is None or ORBAX_TMP_SUFFIX in str(err.filename)):
        return OSError(err.errno, err.strerror or str(err), str(path))
    code = _OS_ERROR_CODE.search(str(err)) if isinstance(err, (ValueError, RuntimeError)) else None
    if code is None:
        return None
    number = int(code.group(1))
    return OSError(number, os.strerror(number), str(path))


class Checkpointer:
    """Latest-k and best-on-validation checkpoints of one run (see the module docstring).

    ``notify(message)`` receives every one-line note about the checkpoints read
    (a corrupt one moved aside, one restored unverified); by default each is a
    ``RuntimeWarning``. With ``read_only`` nothing is written, moved or deleted,
    and the folders are listed afresh before each read (a run may be writing
    there). ``allow_unverified`` reads a checkpoint that has no
    ``checksums.sha256`` (otherwise damaged, set aside like any other).
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

        def manager(folder: str) -> ocp.CheckpointManager:
            # (not orbax's read_only option, which logs two warnings per folder; no max_to_keep: _save
            # removes old checkpoints itself, after the new one's checksums)
            options = ocp.CheckpointManagerOptions(
                create=not read_only, max_to_keep=None, enable_async_checkpointing=False
            )
            return ocp.CheckpointManager(self.workdir / folder, options=options, item_names=("state", "meta"))

        self.latest = manager("checkpoints")
        self.best = manager("best")
        self._keep = {"checkpoints": keep, "best": 1}

    # ---- writing -------------------------------------------------------------------------------

    def _remove(self, manager: ocp.CheckpointManager, steps: list[int], what: str) -> None:
        """Delete the checkpoints of ``steps``, each renamed to ``deleting-<step>`` first (so it leaves the
        step sequence whole, at once), then every process lists the folder again."""
        if not steps:
            return
        folder = Path(manager.directory)
        if is_primary():
            for leftover in folder.glob("deleting-*"):  # left by a process killed while deleting
                shutil.rmtree(leftover, ignore_errors=True)
            for step in steps:
                doomed = folder / f"deleting-{step}"
                (folder / str(step)).rename(doomed)
                shutil.rmtree(doomed, ignore_errors=True)
        barrier(f"panm_jax: {what} {folder.name}/{steps}")  # several processes: the same steps in all
        manager.reload()

    def _save(self, manager: ocp.CheckpointManager, step: int, state, meta: dict[str, Any]) -> None:
        if self.read_only:
            raise RuntimeError(f"{manager.directory}: this Checkpointer is read-only")
        if step in manager.all_steps():
            # Saved before, by an earlier attempt at this step (a run resumed from an older
            # checkpoint re-reaches its best step and scores it again): the new one replaces it.
            self._remove(manager, [step], "replacing")
        path = Path(manager.directory) / str(step)
        flat = _flatten(state)
        meta = {**meta, LAYOUT_KEY: _layout(flat)}
        try:
            manager.save(
                step,
                args=ocp.args.Composite(state=ocp.args.StandardSave(flat), meta=ocp.args.JsonSave(meta)),
                force=True,
            )
            manager.wait_until_finished()
            if is_primary():
                write_checksums(path)  # after orbax's commit: of the final bytes
        except BaseException as err:
            _discard_unfinished(path)
            named = _os_error(err, path)
            if named is None:
                raise
            raise named from err
        barrier(f"panm_jax: checksums of {path.parent.name}/{step}")  # several processes: none reads before
        # Only now, the new checkpoint whole and verified, do the oldest go.
        self._remove(manager, sorted(manager.all_steps())[: -self._keep[path.parent.name]], "rotating")

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
            if _machine_failure(err):
                raise  # the machine's, not the checkpoint's: an OSError naming the path
            raise _Corrupt(_reason(err)) from err
        if not verified and not self.allow_unverified:
            raise _Corrupt(
                f"no {CHECKSUM_FILE}, which every checkpoint of this library has, so its bytes cannot be "
                "verified; --allow-unverified reads it anyway",
                unfinished=True,
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
        flat = _flatten(template)
        expected, recorded = _layout(flat), meta.get(LAYOUT_KEY)
        if recorded is not None and recorded != expected:  # rule 2 (module docstring), before reading
            raise CheckpointError(self._mismatch(path, recorded, expected))
        abstract = {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in flat.items()}
        try:
            restored = manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract)))
            arrays = {k: np.asarray(v) for k, v in dict(restored["state"]).items()}
        except Exception as err:  # noqa: BLE001 - sorted below: the machine's, a mismatch or damage
            if _machine_failure(err):
                raise CheckpointError(
                    f"checkpoint {path} could not be read on this machine ({_reason(err)}); nothing was moved: "
                    "check the folder's permissions, free memory and open-file limit"
                ) from err
            raise self._unreadable(path, recorded, expected, verified, _reason(err)) from err
        if _layout(arrays) != expected:  # arrays read back other than asked for
            raise self._unreadable(path, recorded, expected, verified, "its arrays read back with other shapes")
        self._note_unverified(path, verified)
        state = _unflatten(template, arrays, str(path))
        bad, total = _non_finite_count(state)
        if bad:
            raise NonFiniteCheckpointError(
                f"checkpoint {path}: {bad} of its {total} parameter values are NaN or infinite, so nothing can be "
                f"resumed or evaluated from it; kept checkpoints: {self.kept_steps()}"
            )
        return state, meta

    def _mismatch(self, path: Path, saved: dict[str, Any], expected: dict[str, Any]) -> str:
        if saved.get("arrays") != expected["arrays"]:
            detail = f"it holds {saved.get('arrays')} arrays, this config's state {expected['arrays']}"
        else:
            detail = f"its {expected['arrays']} arrays differ in shape or dtype from this config's state"
        return (
            f"{path}: its state does not fit this config's ({detail}: a checkpoint of another model or of "
            "another version of panm_jax); use another workdir"
        )

    def _unreadable(
        self, path: Path, recorded: dict[str, Any] | None, expected: dict[str, Any], verified: bool, reason: str
    ) -> Exception:
        """The error for a state that orbax cannot read into ``expected``'s layout (rules 2 and 3 of the
        module docstring): ``CheckpointError`` when the checkpoint holds other arrays, else ``_Corrupt``."""
        saved = recorded if recorded is not None else _orbax_layout(path / "state")
        if saved is not None and saved != expected:
            return CheckpointError(self._mismatch(path, saved, expected))
        if verified:
            reason = f"its files match their {CHECKSUM_FILE} but its arrays cannot be read: {reason}"
        return _Corrupt(reason)

    def _read_agreed(self, manager: ocp.CheckpointManager, step: int, template, check):
        """``_read`` in every process; a checkpoint that fails to read in any process is corrupt in all
        (``_Corrupt``), so every process falls back to the same one."""
        try:
            found, failure = self._read(manager, step, template, check), None
        except _Corrupt as err:
            found, failure = None, err
        if not all_agree(failure is None):
            if failure is None:
                failure = _Corrupt("unreadable in another process of this run (its note names the reason)")
            failure.unfinished = all_agree(failure.unfinished)  # the same decision in every process
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

    def _steps(self, manager: ocp.CheckpointManager) -> list[int]:
        """The steps of ``manager``'s checkpoints, sorted; listed afresh when read-only (a run may be writing),
        until every process has the same listing."""
        for _ in range(_LISTINGS):
            steps = None
            try:
                if self.read_only:
                    manager.reload()
                steps = sorted(manager.all_steps())
            except FileNotFoundError:  # a checkpoint rotated away while orbax read its timestamp: list again
                pass
            if all_same(_words(steps)) and steps is not None:
                return steps
        raise CheckpointError(
            f"--workdir: could not list the checkpoints in {manager.directory} in {_LISTINGS} tries (each time some "
            "were removed while listed, or the processes of this run saw different folders); expected one folder "
            "shared by all of them"
        )

    def _present(self, manager: ocp.CheckpointManager, step: int) -> bool:
        """Whether the checkpoint folder of ``step`` is still there, in every process (a reader's may be
        rotated away by the run writing it)."""
        return all_agree((Path(manager.directory) / str(step)).is_dir())

    def _being_written(self, err: _Corrupt) -> bool:
        """Whether a reader's checkpoint that failed with ``err`` is one a live run is still writing: it has no
        checksums yet and a live process holds the workdir (in any process's view)."""
        if not (self.read_only and err.unfinished):
            return False
        return not all_agree(live_holder(self.workdir) is None)

    def _newest(self, manager: ocp.CheckpointManager, template, check, *, what: str, then: str, fall_back: bool):
        """``(state, meta)`` of the newest readable checkpoint of ``manager`` (of its newest alone without
        ``fall_back``), or ``None``; a corrupt one is reported (``what``, ``then``) and moved aside.

        A checkpoint that disappears before it is read (rotated away by the run
        writing the folder) or that a live run is still writing is not corrupt:
        the folder is listed again, at most ``_LISTINGS`` times, and the then
        newest read (module docstring). ``fall_back``: raises ``CheckpointError``
        when checkpoints exist but none can be read.
        """
        reported: list[str] = []
        for _ in range(_LISTINGS):
            again = wait = False
            steps = [s for s in reversed(self._steps(manager)) if str(Path(manager.directory) / str(s)) not in reported]
            for step in steps if fall_back else steps[:1]:
                try:
                    return self._read_agreed(manager, step, template, check)
                except _Corrupt as err:
                    if not self._present(manager, step):
                        again = True  # rotated away: list again, for the then newest
                        break
                    if self._being_written(err):
                        again = wait = True  # an older one, else this one once complete
                        continue
                    reported.append(self._report_corrupt(what, manager, step, str(err), then))
            if not again:
                break
            if wait:
                time.sleep(_UNFINISHED_WAIT_S)
        else:
            raise CheckpointError(
                f"{manager.directory}: its checkpoints were removed or still being written each of the "
                f"{_LISTINGS} times it was listed (a run is writing there); try again"
            )
        if reported and fall_back:
            raise CheckpointError(f"{Path(manager.directory).name}: none of {reported} could be read")
        return None

    def restore_latest(self, template, check: Callable[[dict[str, Any]], None] | None = None):
        """``(state, meta)`` of the newest readable checkpoint, or ``None`` when there is none.

        A corrupt checkpoint is reported (naming its path), moved aside and
        skipped in favour of the one before it; one that disappears before it is
        read is not corrupt (``_newest``). Raises ``CheckpointError`` when
        checkpoints exist but none can be read, or from ``check(meta)``.
        """
        return self._newest(self.latest, template, check, what="checkpoint", then="trying an older one", fall_back=True)

    def _best(self, template, check, then: str):
        return self._newest(self.best, template, check, what="best checkpoint", then=then, fall_back=False)

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
        candidates = [(self.best, s) for s in self._steps(self.best)[-1:]]
        candidates += [(self.latest, s) for s in reversed(self._steps(self.latest))]
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
        return sorted(set(self._steps(self.latest)) | set(self._steps(self.best)))

    def newest_step(self, folder: str = "checkpoints") -> int | None:
        """The step of the newest checkpoint in ``folder`` (``"checkpoints"`` or ``"best"``), or ``None``."""
        steps = self._steps(self.best if folder == "best" else self.latest)
        return steps[-1] if steps else None

    def restore_step(self, step: int, template, check: Callable[[dict[str, Any]], None] | None = None):
        """``(state, meta)`` of the checkpoint of ``step``: ``checkpoints/<step>``, else ``best/<step>``.

        The caller asked for this one checkpoint, so there is no fallback: raises
        ``CheckpointError`` when no checkpoint of that step is kept (naming those
        that are; also when it disappears before it is read) and when it is
        corrupt or unreadable (naming its path; it is left in place).
        """
        for manager in (self.latest, self.best):
            if step in self._steps(manager):
                try:
                    return self._read_agreed(manager, step, template, check)
                except _Corrupt as err:
                    if not self._present(manager, step):
                        continue  # rotated away by the run writing the folder: not kept any more
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
