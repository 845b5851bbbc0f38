"""SHA-256 checksums of a checkpoint folder, written beside its files and checked on restore.

Orbax detects a truncated array file or a damaged header, but not bytes changed
in the middle of an array: a flipped bit restores as a wrong number (a NaN, an
enormous weight) without any error. So once orbax has finished writing a
checkpoint, ``write_checksums`` records the SHA-256 of every file in it, in
``<checkpoint>/checksums.sha256`` (written atomically), and ``verify_checksums``
recomputes them before the checkpoint is read.

The file has the format of ``sha256sum``, one ``<hex digest>  <relative path>``
line per file, so ``cd checkpoints/1000 && sha256sum -c checksums.sha256``
checks a checkpoint by hand. The listing must name exactly the files in the
folder: a file missing, changed or not listed (so also a listing cut short)
fails the check.

A checkpoint without the file was left by a process that died between orbax's
commit and the checksums (or written by other code): ``verify_checksums``
returns ``False``, and the caller treats the checkpoint as damaged unless told
to read it unverified (``Checkpointer(allow_unverified=True)``). Seen by a
reader while a live run holds the workdir, it is one whose checksums are still
to be written, which ``Checkpointer`` passes over without calling it damaged.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from panm_jax.train.io import atomic_write_text

__all__ = ["CHECKSUM_FILE", "ChecksumError", "verify_checksums", "write_checksums"]

CHECKSUM_FILE = "checksums.sha256"
_CHUNK = 1 << 20


class ChecksumError(ValueError):
    """A checkpoint's files do not match its recorded checksums."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.name != CHECKSUM_FILE
        and not (p.name.startswith(f".{CHECKSUM_FILE}.") and p.name.endswith(".tmp"))
    )


def write_checksums(folder: str | Path) -> Path:
    """Record the SHA-256 of every file under ``folder`` in ``folder/checksums.sha256``; returns its path."""
    folder = Path(folder)
    lines = [f"{_sha256(p)}  {p.relative_to(folder).as_posix()}" for p in _files(folder)]
    out = folder / CHECKSUM_FILE
    atomic_write_text(out, "\n".join(lines) + "\n")
    return out


def verify_checksums(folder: str | Path) -> bool:
    """Check ``folder`` against its ``checksums.sha256``.

    Returns ``True`` when the listed files are exactly the folder's files, each
    with its recorded digest, and ``False`` when the folder has no checksum
    file. Raises ``ChecksumError``
    naming the first file that is missing, differs or is not listed, or a line
    of the listing that cannot be parsed.
    """
    folder = Path(folder)
    listing = folder / CHECKSUM_FILE
    if not listing.exists():
        return False
    listed = set()
    for number, line in enumerate(listing.read_text().splitlines(), 1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or not name:
            raise ChecksumError(f"{listing}: line {number}: expected '<sha256>  <path>', got {line!r}")
        path = folder / name
        listed.add(name)
        if not path.is_file():
            raise ChecksumError(f"{path}: listed in {CHECKSUM_FILE} but missing")
        actual = _sha256(path)
        if actual != digest:
            raise ChecksumError(f"{path}: SHA-256 {actual[:12]}... does not match the recorded {digest[:12]}...")
    unlisted = [p for p in _files(folder) if p.relative_to(folder).as_posix() not in listed]
    if unlisted:
        raise ChecksumError(f"{unlisted[0]}: in the checkpoint but not listed in {CHECKSUM_FILE}")
    return True
