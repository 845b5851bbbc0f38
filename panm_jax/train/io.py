"""Crash-safe files: atomic writes and an append-only JSONL log.

A file written with ``atomic_write_text`` is either the old version or the new
one, never a torn mix: the text goes to a temporary file in the same folder,
is flushed to disk, then renamed over the target (``os.replace`` is atomic on
POSIX) and the folder flushed, so the rename itself survives a power cut. The
metrics log is append-only; a crash can at worst leave a partial last line,
which ``read_jsonl`` skips and the next ``append_jsonl`` closes.

An ``OSError`` of a write names the file it was writing: the system's errors of
``write`` and ``fsync`` (a full disk, ``ENOSPC``) name no path, and one of the
temporary file would name a file that no longer exists, so both are raised
again with the target's path as ``filename``.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["append_jsonl", "atomic_write_bytes", "atomic_write_text", "read_jsonl", "with_path"]


def with_path(err: OSError, path: str | Path, tmp: str | None = None) -> OSError | None:
    """The error ``err`` naming ``path``, where it names no path or the temporary file ``tmp``; else ``None``."""
    if err.filename is not None and err.filename != tmp:
        return None
    return OSError(err.errno, err.strerror or str(err), str(path))


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves the old file or the new one, never a torn mix.

    The bytes go to a temporary file in the same folder (created with the parents),
    flushed to disk, renamed over ``path`` and the folder flushed; on any error the
    temporary file is removed and the error raised (an ``OSError`` naming ``path``).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:
        if (renamed := with_path(err, path)) is None:
            raise
        raise renamed from err
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file ordinary permissions
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(err, OSError) and (renamed := with_path(err, path, tmp)) is not None:
            raise renamed from err
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    """Flush a folder's entries (the rename) to disk; a no-op where folders cannot be opened (Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str) -> None:
    """``atomic_write_bytes`` of ``text`` encoded as UTF-8."""
    atomic_write_bytes(path, text.encode())


def append_jsonl(path: str | Path, record: dict[str, Any]) -> None:
    """Append one JSON line and flush it to disk.

    A torn last line (a crash in the middle of a write) is closed with a newline
    first, so the record appended after a resume starts a line of its own
    instead of being glued to, and lost with, the torn one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(path, "ab+") as f:
            torn = False
            if f.seek(0, os.SEEK_END) > 0:
                f.seek(-1, os.SEEK_END)
                torn = f.read(1) != b"\n"
            f.write((("\n" if torn else "") + json.dumps(record) + "\n").encode())
            f.flush()
            os.fsync(f.fileno())
    except OSError as err:  # write and fsync name no path (a full disk)
        if (renamed := with_path(err, path)) is None:
            raise
        raise renamed from err


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Every complete record of a JSONL file (a torn last line is skipped)."""
    out = []
    path = Path(path)
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out
