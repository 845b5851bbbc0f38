"""Where the library keeps what it generates or builds on disk: one root for all of it.

``$PANM_JAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/panm_jax``, else ``~/.cache/panm_jax``.
Users: the Mathematics task's generated pools (``tasks/mathematics.py``, under
``mathematics/``) and the DNC link's compiled CPU kernel
(``kernels/_dnc_link_cpu.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "PANM_JAX_CACHE_DIR"


def cache_root() -> Path:
    """``$PANM_JAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/panm_jax`` (``~/.cache/panm_jax``)."""
    root = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "panm_jax"
    )
    return Path(root)
