"""What trained each part of a run: code, software and device, logged at every start and resume.

Runs resume exactly from their checkpoints, so one run may be trained in parts,
by other versions of the code and on other machines (a CPU one day, a GPU the
next). The metrics log records, at each start and each resume, the step it goes
on from and what goes on training it::

    {"event": "resumed", "step": 45651, "code": "fe33993", "panm_jax": "0.1.0",
     "jax": "0.10.2", "flax": "0.12.8", "optax": "0.2.6", "python": "3.11.7",
     "device": "cpu", "platform": "cpu", "devices": 1, "processes": 1}

so every number a run gives can be traced to the code that produced it. The
run's ``results.json`` records the same ``environment`` for its evaluation.
``code`` is the commit of the git checkout that holds this package ("+dirty"
when tracked files differ from it), or None when the package was not imported
from a checkout of its own (a wheel, or a folder inside another repository).
"""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path
from typing import Any

import jax

__all__ = ["code_commit", "environment", "segment_record"]

_PACKAGE = Path(__file__).resolve().parents[1]  # the panm_jax folder


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(_PACKAGE), *args], capture_output=True, text=True, check=True, timeout=30
    ).stdout.strip()


def code_commit() -> str | None:
    """The short commit of the checkout this package was imported from, "+dirty" if edited; else None."""
    try:
        top = Path(_git("rev-parse", "--show-toplevel")).resolve()
        if top / "panm_jax" != _PACKAGE:  # e.g. a virtual environment inside another project's repository
            return None
        commit = _git("rev-parse", "--short", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty else "")


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    from panm_jax._version import __version__

    out: dict[str, str | None] = {"panm_jax": __version__}
    for name in ("jax", "flax", "optax"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    out["python"] = platform.python_version()
    return out


def environment() -> dict[str, Any]:
    """What is training or evaluating here: the code's commit, the software's versions, the device."""
    device = jax.devices()[0]
    return {
        "code": code_commit(),
        **_versions(),
        "device": device.device_kind,
        "platform": device.platform,
        "devices": jax.device_count(),
        "processes": jax.process_count(),
    }


def segment_record(event: str, step: int) -> dict[str, Any]:
    """The metrics-log record that opens a part of a run: ``event`` ("started" or "resumed") at ``step``."""
    return {"event": event, "step": int(step), **environment()}
