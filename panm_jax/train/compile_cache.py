"""JAX's persistent compilation cache, on by default for ``panm-jax train`` and ``eval`` and the accuracy runners.

The cache keeps every program XLA compiles for longer than ``MIN_COMPILE_SECONDS`` on
disk, keyed by the program, the JAX version, the device and the compiler's flags, so a
second run of the same command (a rerun of ``make demo``, an evaluation of a finished
run, a resumed run) reads its programs instead of compiling them again. Its folder is
``~/.cache/panm_jax/xla`` (``panm_jax._cache.compile_cache_dir``);
``$PANM_JAX_COMPILE_CACHE`` (or ``panm-jax --compile-cache``) names another folder, or
``off``; a cache the user has set up for JAX itself (``$JAX_COMPILATION_CACHE_DIR``) is
used as it is. The folder only grows (a program takes a few hundred KiB to a few MiB);
deleting it at any time is safe. The speed suite leaves the cache off, since it times
compilation.

    from panm_jax import enable_compile_cache
    enable_compile_cache()          # before the first compilation; returns the folder, or None when off
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

from panm_jax._cache import COMPILE_CACHE_ENV, compile_cache_dir
from panm_jax.errors import UserError

__all__ = ["MIN_COMPILE_SECONDS", "enable_compile_cache"]

MIN_COMPILE_SECONDS = 0.5  # programs that compile faster are not worth a file (JAX's default is 1 s)


def enable_compile_cache(setting: str | None = None) -> Path | None:
    """Turn on JAX's persistent compilation cache in ``compile_cache_dir(setting)``; returns the folder in use,
    or None when it is off. Call it before the first compilation. A folder already set for JAX
    (``$JAX_COMPILATION_CACHE_DIR`` or ``jax.config``) is kept, unless ``setting`` says otherwise."""
    current = jax.config.jax_compilation_cache_dir
    if setting is None and current:
        return Path(current)
    folder = compile_cache_dir(setting)
    if folder is None:
        if current:
            jax.config.update("jax_compilation_cache_dir", None)
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as err:
        if setting is None and not os.environ.get(COMPILE_CACHE_ENV, "").strip():  # the default place: go without
            return None
        raise UserError(
            f"compile cache: expected a folder this user can write (--compile-cache or ${COMPILE_CACHE_ENV}), "
            f"got {str(folder)!r} ({err.strerror or err}); give another folder or 'off'"
        ) from None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    return folder
