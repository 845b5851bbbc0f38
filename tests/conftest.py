"""Shared test helpers.

* ``x64()``: a context manager that enables float64 in JAX for one block (gradient
  checks and reference comparisons that need more than float32 resolution),
  whichever jax version is installed.
* ``trace_counter``: counts how often a function is traced (to show that a second
  call with new values but the same shapes does not retrace). The tests wrap the
  traced function in ``chex.assert_max_traces`` too, which fails at the retrace
  itself; the fixture clears chex's global trace counter so that a test (or a
  parametrized case, or a rerun) starts from zero.

The tests share one persistent compilation cache, kept between sessions, and compile at XLA's
backend optimisation level 0 (see below).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

# Folders this process made for the session; removed when it ends (pytest_unconfigure).
# Under pytest-xdist the controller makes them and its workers inherit them.
_SESSION_DIRS: list[str] = []


def _session_dir(variable: str, prefix: str) -> None:
    if variable not in os.environ:
        os.environ[variable] = tempfile.mkdtemp(prefix=prefix)
        _SESSION_DIRS.append(os.environ[variable])


# One persistent compilation cache for the tests, shared with the subprocesses they
# start (they inherit the environment): the same tiny models are compiled by several
# tests and CLI runs, and a cache hit skips XLA. It is the library's cache folder
# (panm_jax/_cache.py) under "xla-tests", kept between sessions, so a second run of the
# suite reads what the first compiled; the key of an entry holds the program, the JAX
# version and the flags, so a stale entry is never read. PANM_JAX_COMPILE_CACHE names
# another folder, or "off": a fresh folder for this session only.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    from panm_jax._cache import compile_cache_dir

    _setting = os.environ.get("PANM_JAX_COMPILE_CACHE", "")
    _folder = compile_cache_dir(_setting)
    if _folder is None:
        _session_dir("JAX_COMPILATION_CACHE_DIR", "panm_jax_test_cache_")
    else:
        os.environ["JAX_COMPILATION_CACHE_DIR"] = str(_folder if _setting.strip() else _folder.with_name("xla-tests"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
# Generated task data (the Mathematics pools) kept for the session only, not in ~/.cache.
_session_dir("PANM_JAX_CACHE_DIR", "panm_jax_test_data_")
# The processes of the multi-process runs (tests/train/test_multiprocess.py, test_lost_process.py) keep
# their compiled programs in a cache folder of their own, for the session only: an executable compiled for
# one process of a multi-process run is never offered to a test's own process. (A CI run whose suite had
# just run them lost a worker to a SIGSEGV inside XLA's loading of a cached executable, jax 0.10.2.)
_session_dir("PANM_JAX_TEST_MULTIPROCESS_CACHE", "panm_jax_test_multiprocess_xla_")
# Fast compilation for the session and for the subprocesses the tests start (they
# inherit the environment): the tests compile hundreds of small programs and run each
# for a few steps, so compiling dominates. XLA's backend optimisation level 0 (the whole
# suite took 957 s at the default level and 798 s at level 0, two workers on a 2-core
# CPU, 2026-11-26). The assertions are the same at any level; CI (.ci/run) also runs the
# kernels' tests at the default level (PANM_JAX_TEST_XLA_OPT=default), the code users
# run. Not used: XLA:CPU's loop emitters (--xla_cpu_use_fusion_emitters=false; they
# change the DNC's gradients under remat by up to 16 %), and LLVM without its expensive
# passes (--xla_llvm_disable_expensive_passes=true; a tiny PANM training step compiled in
# 4.4-4.8 s with it, 5.4-5.6 s without, 2026-11-29): one of the two CI runs that used it
# lost a worker to a SIGSEGV inside XLA's loading of a cached executable (jax 0.10.2);
# no CI run without it has lost one. The persistent cache stays: the suite took 797 s with
# it (2026-11-29) and 1152 s without it (2026-12-04), that flag set, two workers on a
# 2-core CPU.
_LEVEL_0 = "--xla_backend_optimization_level=0"

if os.environ.get("PANM_JAX_TEST_XLA_OPT") != "default" and _LEVEL_0 not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = " ".join(filter(None, [os.environ.get("XLA_FLAGS"), _LEVEL_0]))

import chex  # noqa: E402
import jax  # noqa: E402  (after the cache settings)
import pytest  # noqa: E402


def pytest_unconfigure(config):
    for path in _SESSION_DIRS:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def x64():
    """Enable float64 inside the block (``jax.enable_x64`` or its older home)."""
    ctx = getattr(jax, "enable_x64", None)
    if ctx is None:  # jax < 0.5 keeps it in jax.experimental
        from jax.experimental import enable_x64 as ctx  # type: ignore[no-redef]

        with ctx():
            yield
        return
    with ctx(True):
        yield


class TraceCounter:
    """Wraps a function; ``count`` is the number of times JAX traced it."""

    def __init__(self, fn):
        self.fn = fn
        self.count = 0

    def __call__(self, *args, **kwargs):
        self.count += 1  # runs only while tracing under jit
        return self.fn(*args, **kwargs)


@pytest.fixture
def trace_counter():
    chex.clear_trace_counter()  # chex.assert_max_traces counts per function footprint, process-wide
    yield TraceCounter
    chex.clear_trace_counter()
