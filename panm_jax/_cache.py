"""Where the library keeps what it generates or builds on disk: one root for all of it.

``$PANM_JAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/panm_jax``, else ``~/.cache/panm_jax``.
Users: the Mathematics task's generated pools (``tasks/mathematics.py``, under
``mathematics/``), the DNC link's compiled CPU kernel (``kernels/_dnc_link_cpu.py``)
and JAX's persistent compilation cache (``xla/``: ``compile_cache_dir``, turned on by
``panm_jax.train.compile_cache.enable_compile_cache``).
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "PANM_JAX_CACHE_DIR"
COMPILE_CACHE_ENV = "PANM_JAX_COMPILE_CACHE"  # a folder, or "off"
OFF = ("off", "none", "0", "false", "no")

__all__ = ["CACHE_ENV", "COMPILE_CACHE_ENV", "cache_root", "compile_cache_dir"]


def cache_root() -> Path:
    """``$PANM_JAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/panm_jax`` (``~/.cache/panm_jax``)."""
    root = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "panm_jax"
    )
    return Path(root)


def compile_cache_dir(setting: str | None = None) -> Path | None:
    """The compilation cache's folder for ``setting`` (default ``$PANM_JAX_COMPILE_CACHE``): None for ``off``,
    the folder it names, or ``cache_root() / "xla"`` when it is unset or empty."""
    if setting is None:
        setting = os.environ.get(COMPILE_CACHE_ENV, "")
    setting = setting.strip()
    if setting.lower() in OFF:
        return None
    return Path(setting).expanduser() if setting else cache_root() / "xla"
