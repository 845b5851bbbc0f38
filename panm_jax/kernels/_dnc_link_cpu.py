"""The DNC's link and directional weights as one compiled CPU kernel (XLA FFI), forward and VJP.

``link_and_directions(prev_link [H, N, N], prev_precedence [H, N], weights [H, N],
prev_read_weights [R, N])`` computes exactly what ``dnc.link_and_directions``
computes for each write head (Graves et al. 2016, "Hybrid computing using a
neural network with dynamic external memory", Nature 538, Methods, "Temporal
memory linkage")::

    L_t[i, j] = (1 - I[i, j]) ((1 - w[i] - w[j]) L_{t-1}[i, j] + w[i] p_{t-1}[j])
    f_t[r]    = L_t w^r_{t-1}[r],      b_t[r] = L_t^T w^r_{t-1}[r]

and has the VJP of ``panm_jax/kernels/_dnc_vjp.py`` (same equations, written
out there). Both run in C++ (``csrc/dnc_link.cc``) through XLA's foreign
function interface: each handler walks every row of every example's ``[N, N]``
link once and does all of that row's products and reductions while the row is
in the L1 cache, where XLA makes a pass over the whole array for each of them.
Leading axes (``jax.vmap``'s batch) are the kernel's own loop, shared among the
threads of XLA's intra-op pool.

Why: at ``N = 256`` these ``O(N^2)`` sweeps were most of a DNC training step on
a CPU (``benchmarks/results/cpu-2cores/profile_dnc_n256.json``). Pallas compiles no CPU
kernels, so the CPU path is C++.

Opt-in. ``dnc.step`` uses this kernel only when asked, by the environment
variable ``PANM_JAX_DNC_LINK``:

* unset or ``xla`` (the default): the XLA path (``dnc.link_and_directions``),
  on every platform; nothing is compiled;
* ``cpu``: this kernel for float32 and float64 states (an error if it cannot be
  built; other dtypes keep the XLA path);
* ``auto``: this kernel where it applies (JAX's default backend is the CPU with
  one device: the kernel has no sharding rule, so on a mesh of several devices
  the XLA path, which XLA partitions, is kept; float32 or float64), else the XLA
  path; where it cannot be built, one warning says why and the XLA path is used.

The choice is made when ``dnc.step`` is traced, and JAX keeps traces: set the
variable before the first call. ``docs/performance.md`` has the recorded speed
of the two paths.

Build. The kernel is compiled on its first use with the system C++ compiler
(``$CXX``, else ``c++``) against the XLA FFI headers that jaxlib ships
(``jax.ffi.include_dir()``), with ``-O3 -march=native``, into
``$PANM_JAX_CACHE_DIR`` (default ``$XDG_CACHE_HOME/panm_jax``, else
``~/.cache/panm_jax``), named by a hash of the source, the headers, the flags,
jaxlib's version and this CPU's instruction-set flags, and written atomically;
later processes load it. Compiling prints one line on stderr (``panm_jax:
compiling the DNC link's CPU kernel ...``), so that a first run's wait has its
reason; loading it from the cache prints nothing.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp

from panm_jax._cache import cache_root
from panm_jax.kernels._dnc_link_types import LinkAndDirections
from panm_jax.kernels.validation import check_shape

__all__ = ["available", "build", "flops", "link_and_directions", "supports", "use_for"]

_SOURCE = Path(__file__).parent / "csrc" / "dnc_link.cc"
_FLAGS = ("-O3", "-march=native", "-fopenmp-simd", "-std=c++17", "-shared", "-fPIC", "-w")
_TARGETS = {
    ("forward", "float32"): "PanmDncLinkForwardF32",
    ("forward", "float64"): "PanmDncLinkForwardF64",
    ("backward", "float32"): "PanmDncLinkBackwardF32",
    ("backward", "float64"): "PanmDncLinkBackwardF64",
}
_ENV = "PANM_JAX_DNC_LINK"
_CHOICES = ("xla", "cpu", "auto")  # the first is the default


def _cpu_flags() -> str:
    """This CPU's instruction-set flags (``-march=native`` depends on them), so that a shared cache never
    hands one machine a library built for another."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _library_path(compiler: str) -> Path:
    import jaxlib

    include = Path(jax.ffi.include_dir())
    digest = hashlib.sha256()
    digest.update(_SOURCE.read_bytes())
    digest.update((include / "xla" / "ffi" / "api" / "ffi.h").read_bytes())
    for text in (*_FLAGS, compiler, jaxlib.__version__, platform.machine(), _cpu_flags()):
        digest.update(text.encode())
    return cache_root() / f"libpanm_dnc_link-{digest.hexdigest()[:16]}.so"


def build() -> Path:
    """Compile ``csrc/dnc_link.cc`` (or find it already compiled) and return the shared library's path.

    Raises ``RuntimeError`` with the compiler's message when it cannot be built.
    """
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if not compiler:
        raise RuntimeError("no C++ compiler found (set CXX, or install g++ or clang++)")
    path = _library_path(compiler)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem + ".", suffix=".tmp")
    os.close(fd)
    cmd = [compiler, *_FLAGS, "-I", jax.ffi.include_dir(), str(_SOURCE), "-o", tmp]
    # A first run waits here for the compiler (seconds to a minute): say why, once, on stderr.
    print(
        f"panm_jax: compiling the DNC link's CPU kernel with {Path(compiler).name} (once; cached in {path.parent})",
        file=sys.stderr,
        flush=True,
    )
    try:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        except OSError as err:
            raise RuntimeError(f"{' '.join(cmd)} failed: {err}") from err
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr.strip()[-2000:]}")
        os.replace(tmp, path)  # atomic: concurrent builders each write their own file, the last one wins
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


@functools.cache
def _register() -> str | None:
    """Build, load and register the FFI targets once per process; ``None``, or why it failed."""
    try:
        library = ctypes.cdll.LoadLibrary(str(build()))
        for name in _TARGETS.values():
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(library, name)), platform="cpu")
    except (RuntimeError, OSError, AttributeError) as err:
        return str(err)
    return None


def available() -> bool:
    """Whether the CPU kernel is built and registered (building it on first call)."""
    return _register() is None


def supports(dtype) -> bool:
    """Whether the kernel has a version for ``dtype`` (float32 and float64)."""
    return jnp.dtype(dtype).name in ("float32", "float64")


def use_for(dtype) -> bool:
    """Whether ``dnc.step`` should use this kernel for arrays of ``dtype`` (see the module docstring)."""
    choice = os.environ.get(_ENV, _CHOICES[0]).strip().lower() or _CHOICES[0]
    if choice not in _CHOICES:
        raise ValueError(f"{_ENV}: expected one of {', '.join(_CHOICES)}, got {choice!r}")
    if choice == "xla" or not supports(dtype):
        return False
    if choice == "cpu":
        if not available():
            raise RuntimeError(f"{_ENV}=cpu, but the DNC link's CPU kernel cannot be built: {_register()}")
        return True
    if jax.default_backend() != "cpu" or jax.device_count() > 1:
        return False
    if not available():
        _warn_once(_register())
        return False
    return True


@functools.cache
def _warn_once(reason: str | None) -> None:
    warnings.warn(
        f"the DNC link's CPU kernel could not be built, so the DNC uses its XLA path (slower at large N): {reason}",
        RuntimeWarning,
        stacklevel=3,
    )


def flops(target_name: str, link_shape: tuple[int, ...], read_heads: int) -> float | None:
    """The arithmetic of one call of this kernel's FFI target, for cost counting (``benchmarks/speed/cost.py``).

    Per link (every leading axis of ``link_shape [..., N, N]``) and ``R`` read
    heads: the forward makes ``(4 + 4R) N^2`` floating-point operations (the
    update, then a dot product and an update of ``b`` per head and entry), the
    VJP ``(12 + 8R) N^2`` (``G``'s rank-``2R`` part, ``dL``, ``dp``, ``dw``,
    ``L_t``'s entry, and ``dv``'s two terms per head). ``None`` for another
    target.
    """
    links = 1
    for size in link_shape[:-2]:
        links *= size
    entries = links * link_shape[-1] * link_shape[-2]
    if target_name in (_TARGETS["forward", "float32"], _TARGETS["forward", "float64"]):
        return float((4 + 4 * read_heads) * entries)
    if target_name in (_TARGETS["backward", "float32"], _TARGETS["backward", "float64"]):
        return float((12 + 8 * read_heads) * entries)
    return None


def _target(direction: str, dtype) -> str:
    """The FFI target's name, registered first: a direct call may come before anything asked ``available()``."""
    reason = _register()
    if reason is not None:
        raise RuntimeError(f"the DNC link's CPU kernel cannot be built: {reason}")
    return _TARGETS[direction, jnp.dtype(dtype).name]


def _forward_call(prev_link, prev_precedence, weights, reads):
    out = jax.ShapeDtypeStruct(reads.shape, reads.dtype)
    call = jax.ffi.ffi_call(
        _target("forward", prev_link.dtype),
        (jax.ShapeDtypeStruct(prev_link.shape, prev_link.dtype), out, out),
        vmap_method="broadcast_all",
    )
    return call(prev_link, prev_precedence, weights, reads)  # L_t, b_t, f_t


def _backward_call(prev_link, prev_precedence, weights, reads, g_link, g_forward, g_backward):
    like = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in (prev_link, prev_precedence, weights, reads)]
    call = jax.ffi.ffi_call(_target("backward", prev_link.dtype), tuple(like), vmap_method="broadcast_all")
    return call(prev_link, prev_precedence, weights, reads, g_link, g_forward, g_backward)


@jax.custom_vjp
def link_and_directions(prev_link, prev_precedence, weights, prev_read_weights):
    """``dnc.link_and_directions`` for every write head at once, in the CPU kernel.

    Args:
      prev_link: ``[H, N, N]`` ``L_{t-1}``, one link per write head (or
        ``[N, N]``, one head without its axis, as ``dnc.link_and_directions``).
      prev_precedence: ``[H, N]`` ``p_{t-1}`` (``[N]``).
      weights: ``[H, N]`` ``w^w_t`` (``[N]``).
      prev_read_weights: ``[R, N]`` ``w^r_{t-1}``, shared by the heads.

    Returns:
      ``dnc.LinkAndDirections``: ``link [H, N, N]``, ``backward [H, R, N]``,
      ``forward [H, R, N]`` (without ``H`` for one head without its axis).
      Float32 or float64, CPU only; reverse-mode derivatives (``grad``,
      ``vjp``), not ``jvp``.
    """
    return _forward(prev_link, prev_precedence, weights, prev_read_weights)[0]


def _check(prev_link, prev_precedence, weights, prev_read_weights) -> None:
    """Shapes and dtypes at trace time: the C++ kernel trusts them (a wrong size would read out of bounds)."""
    n = prev_link.shape[-1] if prev_link.ndim >= 2 else None
    lead = tuple(prev_link.shape[:-2])
    check_shape("prev_link", prev_link, (*lead, n, n), "..., N, N")
    check_shape("prev_precedence", prev_precedence, (*lead, n), "..., N")
    check_shape("weights", weights, (*lead, n), "..., N")
    check_shape("prev_read_weights", prev_read_weights, (None, n), "R, N")
    for name, x in (
        ("prev_precedence", prev_precedence),
        ("weights", weights),
        ("prev_read_weights", prev_read_weights),
    ):
        if x.dtype != prev_link.dtype:
            raise ValueError(f"{name}: expected dtype {prev_link.dtype} (prev_link's), got {x.dtype}")
    if not supports(prev_link.dtype):
        raise ValueError(f"prev_link: expected dtype float32 or float64 (the kernel's), got {prev_link.dtype}")


def _forward(prev_link, prev_precedence, weights, prev_read_weights):
    _check(prev_link, prev_precedence, weights, prev_read_weights)  # also under grad, which calls only this
    reads = jnp.broadcast_to(prev_read_weights, (*weights.shape[:-1], *prev_read_weights.shape))  # [..., R, N]
    new_link, backward, forward = _forward_call(prev_link, prev_precedence, weights, reads)
    out = LinkAndDirections(link=new_link, backward=backward, forward=forward)
    return out, (prev_link, prev_precedence, weights, reads)


def _backward(residuals, cotangents):
    prev_link, prev_precedence, weights, reads = residuals
    d_link, d_precedence, d_weights, d_reads = _backward_call(
        prev_link, prev_precedence, weights, reads, cotangents.link, cotangents.forward, cotangents.backward
    )
    heads = tuple(range(d_reads.ndim - 2))  # the write heads share w^r_{t-1}
    return d_link, d_precedence, d_weights, jnp.sum(d_reads, axis=heads) if heads else d_reads


link_and_directions.defvjp(_forward, _backward)
