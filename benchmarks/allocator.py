"""Keep freed host memory for reuse: glibc's malloc settings for XLA's CPU runtime.

XLA's CPU runtime allocates a call's temporary buffer afresh on every call, with
``malloc``, from one of its worker threads. For a training step that buffer is
large (the NTM step at B = 128 keeps a ``[42, 128, 20, 128]`` stack of memories
for its backward pass: 120 MB in all), and glibc serves any block that large from
a worker thread's arena with a fresh ``mmap`` and returns it with ``munmap`` when
it is freed, whatever ``M_MMAP_THRESHOLD`` says. The kernel then maps and zeroes
every page of it again on the next call (the page faults per step are counted in
``benchmarks/results/cpu-2cores``).

``keep_freed_memory()`` tells glibc, through ``mallopt``, to serve every thread
from the main arena (``M_ARENA_MAX = 1``), never to ``mmap`` a block
(``M_MMAP_MAX = 0``) and never to give freed memory back (``M_TRIM_THRESHOLD``
at its maximum), so the second call finds the first call's pages already mapped.
The cost: the process keeps its peak heap until it exits, and threads share one
arena.

It is opt-in, because it is not a win for every model, and it can run a machine
out of memory (freed blocks are never returned, and one arena fragments): the
paired runs that decided this are recorded in
``benchmarks/results/cpu-2cores/speed_keep_malloc.json``. The benchmarks apply it when ``PANM_JAX_MALLOC=keep`` is set
(``configure_from_environment``); anyone may call it directly, before the first
computation, in their own script. It does nothing off glibc (macOS, musl), where it returns ``{}``. Call it before the
first computation: glibc fixes a thread's arena, and how many arenas it may
create, when a thread first needs one (after ``import jax`` is fine: XLA's
threads start with the backend).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = ["ENV_VAR", "configure_from_environment", "keep_freed_memory", "malloc_settings", "preloaded"]

# The environment variable that chooses: "keep" applies keep_freed_memory, "system" (or unset) leaves malloc alone.
ENV_VAR = "PANM_JAX_MALLOC"

# mallopt parameter numbers (glibc <malloc.h>).
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
_SETTINGS = {
    "M_ARENA_MAX": (_M_ARENA_MAX, 1),
    "M_MMAP_MAX": (_M_MMAP_MAX, 0),
    "M_TRIM_THRESHOLD": (_M_TRIM_THRESHOLD, 2**31 - 1),
}

_applied: dict[str, int] = {}


def _glibc():
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.gnu_get_libc_version  # noqa: B018 (only glibc has it)
        return libc
    except (OSError, AttributeError):
        return None


def configure_from_environment() -> dict[str, int]:
    """``keep_freed_memory()`` if ``PANM_JAX_MALLOC=keep``; nothing if it is unset or ``system``.

    Raises ``ValueError`` naming the variable for any other value.
    """
    value = os.environ.get(ENV_VAR, "").strip().lower()
    if value == "keep":
        return keep_freed_memory()
    if value in ("", "system"):
        return {}
    raise ValueError(f"{ENV_VAR}: expected 'keep' or 'system' (or unset), got {os.environ[ENV_VAR]!r}")


def keep_freed_memory() -> dict[str, int]:
    """Apply the settings above; returns those applied (``{}`` off glibc).

    Idempotent. Raises ``RuntimeError`` if glibc refuses a setting.
    """
    if _applied:
        return dict(_applied)
    libc = _glibc()
    if libc is None:
        return {}
    for name, (param, value) in _SETTINGS.items():
        if libc.mallopt(ctypes.c_int(param), ctypes.c_int(value)) != 1:
            raise RuntimeError(f"mallopt({name}, {value}) failed: glibc refused the setting")
        _applied[name] = value
    return dict(_applied)


# The malloc replacements that may be put in a process with LD_PRELOAD, by the file name of their library.
_REPLACEMENTS = {"libtcmalloc": "tcmalloc", "libjemalloc": "jemalloc", "libmimalloc": "mimalloc"}


def preloaded(maps: str | None = None) -> str:
    """The malloc replacement mapped into this process (``tcmalloc``, ``jemalloc``, ``mimalloc``), else ``""``.

    Read from ``/proc/self/maps`` (``maps``: that text, for tests); ``""`` where it cannot be read. Such a
    library replaces glibc's ``malloc`` for XLA's CPU runtime when it is put in the process with
    ``LD_PRELOAD`` (it must be there before the process starts).
    """
    if maps is None:
        try:
            with open("/proc/self/maps") as f:
                maps = f.read()
        except OSError:
            return ""
    for line in maps.splitlines():
        name = line.rsplit("/", 1)[-1]
        for prefix, found in _REPLACEMENTS.items():
            if name.startswith((prefix + ".", prefix + "_")):
                return found
    return ""


def malloc_settings() -> str:
    """What ``keep_freed_memory`` applied in this process, or the malloc replacement preloaded into it, for
    result records (``""`` if neither)."""
    applied = ",".join(f"{k}={v}" for k, v in _applied.items())
    return ", ".join(x for x in (applied, preloaded() and f"{preloaded()} (LD_PRELOAD)") if x)
