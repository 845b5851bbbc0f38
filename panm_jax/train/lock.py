"""One training run per workdir: an exclusive lock on ``workdir/.lock``.

Two processes training in one folder would interleave their checkpoints and
metrics (and each would move the other's half-read checkpoints aside). So a
run holds ``fcntl.flock(LOCK_EX)`` on ``workdir/.lock`` for its whole life:

    with WorkdirLock(workdir):
        ...  # train

A second run on the same folder gets ``WorkdirBusy`` at once, naming the
process (PID and host) that holds the lock. The kernel drops a ``flock`` when
its process ends in any way, ``kill -9`` included, so a crashed run never
leaves the folder locked. The file keeps the holder's PID while it runs and is
emptied on a clean release; a PID found in it when the lock is taken belongs to
a run that crashed, which ``acquire`` reports (``stale_pid``).

On a filesystem without ``flock`` support the PID alone decides: the folder is
busy while a live process of this host holds it.

A reader of the folder (``panm-jax eval``) takes no lock: it must not keep a
run from starting or resuming. ``live_holder(workdir)`` tells it, from the PID
in the file alone, whether a run is likely writing there now (a checkpoint
without its checksums is then one still being written, not a damaged one).

A run of several processes (``docs/distributed.md``) is one run: ``run_lock``
has process 0 alone take the lock, and the others take none (the processes of
one run share the workdir by design; a second lock would make process 1 refuse
the run that process 0 holds). Whether process 0 got it is shared with every
process, so all of them go on, or all raise ``WorkdirBusy``.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from panm_jax.train.io import with_path

__all__ = ["LOCK_FILE", "WorkdirBusy", "WorkdirLock", "live_holder", "run_lock"]

LOCK_FILE = ".lock"


class WorkdirBusy(RuntimeError):
    """Another live process holds the workdir's lock."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


def _parse(text: str) -> tuple[int | None, str]:
    """``(pid, host)`` from the lock file's ``"<pid> <host>"``; ``(None, "")`` when empty or garbled."""
    parts = text.split()
    if len(parts) >= 1 and parts[0].isdigit():
        return int(parts[0]), parts[1] if len(parts) > 1 else ""
    return None, ""


def live_holder(workdir: str | Path) -> tuple[int, str] | None:
    """``(pid, host)`` of the run that holds ``workdir``'s lock, read from the lock file without taking the lock
    (nor creating the file); ``None`` when no live run holds it.

    A PID of this host counts when that process is alive; a PID of another host cannot be checked from here and
    counts as live. The PID of a process that died without releasing the lock (``kill -9``) stays in the file, so
    a PID reused since by another process also counts as live: the answer is a hint for readers, never a reason
    to write.
    """
    try:
        with open(Path(workdir) / LOCK_FILE, "rb") as f:
            pid, host = _parse(f.read(256).decode(errors="replace"))
    except OSError:
        return None
    if pid is None:
        return None
    if host and host != socket.gethostname():
        return pid, host
    return (pid, host) if _alive(pid) else None


class WorkdirLock:
    """The exclusive lock of one workdir (see the module docstring); a context manager."""

    def __init__(self, workdir: str | Path):
        self.workdir = Path(workdir)
        self.path = self.workdir / LOCK_FILE
        self.stale_pid: int | None = None  # the PID of a crashed holder found when the lock was taken
        self._fd: int | None = None
        self._flocked = False

    def acquire(self) -> WorkdirLock:
        if self._fd is not None:
            raise RuntimeError(f"{self.path}: this lock is already held by this object")
        self.workdir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        flocked = False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                flocked = True
            except BlockingIOError:
                raise WorkdirBusy(self._busy_message(_parse(os.pread(fd, 256, 0).decode(errors="replace")))) from None
            except OSError as err:
                if err.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                    raise
                pid, host = _parse(os.pread(fd, 256, 0).decode(errors="replace"))
                if pid is not None and pid != os.getpid() and host == socket.gethostname() and _alive(pid):
                    raise WorkdirBusy(self._busy_message((pid, host))) from None
            pid, _ = _parse(os.pread(fd, 256, 0).decode(errors="replace"))
            self.stale_pid = pid if pid != os.getpid() else None
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
                os.fsync(fd)
            except OSError as err:  # a full disk: write() and fsync() name no path
                if (named := with_path(err, self.path)) is None:
                    raise
                raise named from err
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._flocked = fd, flocked
        return self

    def _busy_message(self, holder: tuple[int | None, str]) -> str:
        pid, host = holder
        who = f"process {pid}" + (f" on {host}" if host else "") if pid is not None else "another process"
        return (
            f"--workdir: {str(self.workdir)!r} is in use by another run ({who} holds {self.path}); "
            "wait for it to finish or use another workdir"
        )

    def release(self) -> None:
        """Empty the file (a clean end) and drop the lock; a no-op when not held."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        finally:
            if self._flocked:
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> WorkdirLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


@contextmanager
def run_lock(
    workdir: str | Path, *, primary: bool = True, agree: Callable[[bool], bool] | None = None
) -> Iterator[WorkdirLock | None]:
    """The lock of a run of one or several processes; yields the ``WorkdirLock`` held, or ``None``.

    One process (``agree`` ``None``): ``WorkdirLock(workdir)``. Several: the
    ``primary`` process (process 0) takes ``WorkdirLock(workdir)`` and the others
    take none; ``agree(ok)`` (called by every process, ``True`` when ``ok`` held in
    every process) tells each whether process 0 got it. When it did not, process 0
    raises its error (``WorkdirBusy`` naming the holder, or the ``OSError`` of a
    folder it cannot write) and the others a ``WorkdirBusy`` that points to it.
    """
    if agree is None:
        with WorkdirLock(workdir) as lock:
            yield lock
        return
    lock, failure = None, None
    if primary:
        try:
            lock = WorkdirLock(workdir).acquire()
        except Exception as err:  # noqa: BLE001 - shared with the other processes below, then raised
            failure = err
    try:
        if not agree(failure is None):
            if failure is not None:
                raise failure
            raise WorkdirBusy(
                f"--workdir: process 0 of this run could not take {Path(workdir) / LOCK_FILE} "
                "(another run holds it, or the folder cannot be written); its error names the reason"
            )
        yield lock
    finally:
        if lock is not None:
            lock.release()
