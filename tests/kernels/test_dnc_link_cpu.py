"""Tests for panm_jax/kernels/_dnc_link_cpu.py: the DNC link's compiled CPU kernel.

The kernel (C++ through XLA's FFI) must compute Graves et al. 2016's link and
directional weights (Nature 538, Methods, "Temporal memory linkage") and their
VJP. Checked here against a float64 NumPy transcription of the equations written
element by element, against JAX's autodiff of the same equations, against finite
differences, and through ``dnc.step`` against the XLA path it replaces when opted
in (``PANM_JAX_DNC_LINK=cpu``, set by each test that takes this path through
``dnc.step``; ``tests/kernels/test_dnc.py`` tests the XLA path against the DNC
reference). Sizes differ per axis (N = 7, R = 3, H = 2, batch 4) so that a swapped
axis fails.

The kernel is compiled on first use with the system's C++ compiler; where there
is none the tests skip with that reason, except under CI (``CI=true``), where a
missing kernel fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from panm_jax.kernels import _dnc_link_cpu, dnc
from panm_jax.kernels import scan as scan_lib
from tests.conftest import x64

N, R, H, B = 7, 3, 2, 4


@pytest.fixture(scope="module", autouse=True)
def _kernel_built():
    if not _dnc_link_cpu.available():
        reason = f"the DNC link's CPU kernel could not be built: {_dnc_link_cpu._register()}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def _link_inputs(rng, *lead, n=N, r=R):
    """``L_{t-1}`` (zero diagonal), ``p_{t-1}``, ``w^w_t`` and ``w^r_{t-1}``: non-negative, summing to at most 1."""
    link = rng.uniform(size=(*lead, n, n)) * (1.0 - np.eye(n)) / n
    precedence = rng.dirichlet(np.ones(n), size=lead or None) * 0.9
    weights = rng.dirichlet(np.ones(n), size=lead or None) * 0.8
    reads = rng.dirichlet(np.ones(n), size=r) * 0.7
    return link, precedence, weights, reads


def _reference(link, precedence, weights, reads):
    """One head, float64, element by element from the equations (not from the kernel's code)."""
    n = link.shape[0]
    new = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                new[i, j] = (1.0 - weights[i] - weights[j]) * link[i, j] + weights[i] * precedence[j]
    forward = np.array([[sum(new[i, j] * reads[k, j] for j in range(n)) for i in range(n)] for k in range(len(reads))])
    backward = np.array([[sum(new[j, i] * reads[k, j] for j in range(n)) for i in range(n)] for k in range(len(reads))])
    return new, backward, forward


def _plain(link, precedence, weights, reads):
    """The same equations as JAX array code, for autodiff."""
    new = dnc.link(link, precedence, weights)
    return dnc.LinkAndDirections(new, *dnc.directional_weights(new, reads))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_forward_equals_the_equations_for_every_head(dtype):
    rng = np.random.default_rng(0)
    link, precedence, weights, reads = _link_inputs(rng, H)
    with x64():
        out = _dnc_link_cpu.link_and_directions(*(jnp.asarray(x, dtype) for x in (link, precedence, weights, reads)))
        assert out.link.shape == (H, N, N) and out.forward.shape == out.backward.shape == (H, R, N)
        assert all(x.dtype == jnp.dtype(dtype) for x in out)
    tol = 1e-6 if dtype == "float32" else 1e-14
    for h in range(H):
        for got, want, name in zip(out, _reference(link[h], precedence[h], weights[h], reads), out._fields):
            np.testing.assert_allclose(np.asarray(got[h], np.float64), want, atol=tol, rtol=0, err_msg=name)
        assert np.all(np.diagonal(np.asarray(out.link[h])) == 0.0)


def test_vjp_equals_autodiff_and_finite_differences_in_float64():
    rng = np.random.default_rng(1)
    with x64():
        inputs = [jnp.asarray(x) for x in _link_inputs(rng, H)]
        cot = dnc.LinkAndDirections(*(jnp.asarray(rng.normal(size=s)) for s in ((H, N, N), (H, R, N), (H, R, N))))
        got, vjp = jax.vjp(_dnc_link_cpu.link_and_directions, *inputs)
        plain = jax.vmap(_plain, in_axes=(0, 0, 0, None))
        want, want_vjp = jax.vjp(plain, *inputs)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-15)
        for name, a, b in zip(("link", "precedence", "weights", "read_weights"), vjp(cot), want_vjp(cot)):
            assert a.shape == b.shape, name
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)
        check_grads(_dnc_link_cpu.link_and_directions, tuple(inputs), order=1, modes=("rev",))
        # One head without its axis, as dnc.link_and_directions takes it.
        one = [x[0] for x in inputs[:3]] + [inputs[3]]
        g = jax.grad(lambda *a: sum(jnp.sum(jnp.sin(o)) for o in _dnc_link_cpu.link_and_directions(*a)), (0, 1, 2, 3))
        g_plain = jax.grad(lambda *a: sum(jnp.sum(jnp.sin(o)) for o in _plain(*a)), (0, 1, 2, 3))
        for a, b in zip(g(*one), g_plain(*one)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("r", [1, 9])
def test_batched_under_vmap_and_jit_any_number_of_read_heads(r):
    # vmap adds a leading batch axis the kernel loops over (shared among threads);
    # every example must get its own result, as a loop over examples would.
    rng = np.random.default_rng(2)
    lead = [_link_inputs(rng, H, r=r) for _ in range(B)]
    batched = [jnp.asarray(np.stack([x[k] for x in lead]), jnp.float32) for k in range(4)]
    fn = jax.jit(jax.vmap(_dnc_link_cpu.link_and_directions))
    out = fn(*batched)
    for b in range(B):
        single = _dnc_link_cpu.link_and_directions(*(x[b] for x in batched))
        for got, want in zip(out, single):
            np.testing.assert_array_equal(got[b], want)
        want = jax.vmap(_plain, in_axes=(0, 0, 0, None))(*(x[b] for x in batched))
        for got, ref in zip(out, want):
            np.testing.assert_allclose(got[b], ref, rtol=1e-5, atol=1e-6)


def _rollout_loss(n_heads, masked):
    """A DNC rollout's loss and its gradients (state and raw controls), traced afresh so that the path setting
    applies."""
    rng = np.random.default_rng(3)
    w = 5
    size = dnc.interface_size(word_size=w, num_reads=R, num_writes=n_heads)
    raw = jnp.asarray(2.0 * rng.normal(size=(B, 6, size)), jnp.float32)
    mask = jnp.ones((B, 6), bool).at[:, 3].set(not masked)
    probe = jnp.asarray(rng.normal(size=(R, w)), jnp.float32)

    def loss(raw):
        def one(x, m):
            def body(s, xm):
                c = dnc.controls_from_interface(xm[0], word_size=w, num_reads=R, num_writes=n_heads)
                return dnc.step(s, c, xm[1])

            state = dnc.init_state(N, w, R, n_heads)
            final, reads = scan_lib.scan(body, state, (x, m))
            return jnp.sum(reads * probe) + jnp.sum(jnp.sin(final.link))

        return jnp.sum(jax.vmap(one)(raw, mask))

    return jax.jit(jax.value_and_grad(loss))(raw)


@pytest.mark.parametrize("n_heads,masked", [(1, False), (2, True)])
def test_dnc_step_gives_the_same_rollout_and_gradients_on_either_path(monkeypatch, n_heads, masked):
    monkeypatch.setenv("PANM_JAX_DNC_LINK", "cpu")
    cpu = _rollout_loss(n_heads, masked)
    monkeypatch.setenv("PANM_JAX_DNC_LINK", "xla")
    xla = _rollout_loss(n_heads, masked)
    for a, b in zip(cpu, xla):
        assert np.all(np.isfinite(a))
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def _step_jaxpr(dtype=jnp.float32) -> str:
    state = jax.tree_util.tree_map(lambda x: x.astype(dtype), dnc.init_state(N, 5, R, H))
    size = dnc.interface_size(word_size=5, num_reads=R, num_writes=H)
    controls = dnc.controls_from_interface(jnp.zeros(size, dtype), word_size=5, num_reads=R, num_writes=H)
    return str(jax.make_jaxpr(lambda s, c: dnc.step(s, c))(state, controls))  # a new function: traced afresh


def test_path_choice(monkeypatch):
    monkeypatch.delenv("PANM_JAX_DNC_LINK", raising=False)
    assert not _dnc_link_cpu.use_for(jnp.float32)  # the default is the XLA path, on a CPU too
    assert "ffi_call" not in _step_jaxpr()
    monkeypatch.setenv("PANM_JAX_DNC_LINK", "auto")
    on_one_cpu = jax.default_backend() == "cpu" and jax.device_count() == 1
    assert _dnc_link_cpu.use_for(jnp.float32) == on_one_cpu
    assert ("ffi_call" in _step_jaxpr()) == on_one_cpu  # dnc.step takes the kernel
    assert "ffi_call" not in _step_jaxpr(jnp.bfloat16)
    assert not _dnc_link_cpu.use_for(jnp.bfloat16)  # no bfloat16 kernel: the XLA path
    monkeypatch.setenv("PANM_JAX_DNC_LINK", "xla")
    assert not _dnc_link_cpu.use_for(jnp.float32)
    assert "ffi_call" not in _step_jaxpr()
    monkeypatch.setenv("PANM_JAX_DNC_LINK", "cpu")
    assert _dnc_link_cpu.use_for(jnp.float64)
    monkeypatch.setenv("PANM_JAX_DNC_LINK", "gpu")
    with pytest.raises(ValueError, match="PANM_JAX_DNC_LINK: expected one of xla, cpu, auto, got 'gpu'"):
        _dnc_link_cpu.use_for(jnp.float32)


def test_the_library_is_built_once_and_named_by_its_inputs(tmp_path, monkeypatch):
    path = _dnc_link_cpu.build()
    stamp = path.stat().st_mtime_ns
    assert _dnc_link_cpu.build() == path and path.stat().st_mtime_ns == stamp  # found, not rebuilt
    monkeypatch.setenv("PANM_JAX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    with pytest.raises(RuntimeError, match="/nonexistent/c\\+\\+"):
        _dnc_link_cpu.build()
    assert not list(tmp_path.glob("*.tmp"))  # a failed build leaves nothing behind


def test_compiling_says_so_on_stderr_once_and_a_cached_library_says_nothing(tmp_path, monkeypatch, capsys):
    # The compiler is replaced by a stand-in that writes the output file: the notice, not the C++, is tested.
    compiled = []

    def compiler(cmd, **kwargs):
        out = Path(cmd[cmd.index("-o") + 1])
        out.write_bytes(b"stand-in library")
        compiled.append(out)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setenv("PANM_JAX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_dnc_link_cpu.subprocess, "run", compiler)
    path = _dnc_link_cpu.build()
    err = capsys.readouterr().err
    assert len(compiled) == 1 and path.parent == tmp_path and path.read_bytes() == b"stand-in library"
    assert err.count("\n") == 1 and "compiling the DNC link's CPU kernel" in err and str(tmp_path) in err
    assert _dnc_link_cpu.build() == path and len(compiled) == 1  # a cache hit: not compiled again ...
    assert capsys.readouterr().err == ""  # ... and nothing said


def test_wrong_shapes_and_dtypes_are_named_before_the_kernel_runs():
    link, vec, reads = jnp.zeros((H, N, N)), jnp.zeros((H, N)), jnp.zeros((R, N))
    with pytest.raises(ValueError, match=r"prev_precedence: expected shape \[\.\.\., N\] = \(2, 7\), got \(2, 8\)"):
        _dnc_link_cpu.link_and_directions(link, jnp.zeros((H, N + 1)), vec, reads)
    with pytest.raises(ValueError, match=r"prev_link: expected shape \[\.\.\., N, N\]"):
        _dnc_link_cpu.link_and_directions(jnp.zeros((H, N, N + 1)), vec, vec, reads)
    with pytest.raises(ValueError, match=r"prev_read_weights: expected shape \[R, N\] = \(\?, 7\), got \(3, 6\)"):
        _dnc_link_cpu.link_and_directions(link, vec, vec, jnp.zeros((R, N - 1)))
    with pytest.raises(ValueError, match="weights: expected dtype float32 \\(prev_link's\\), got bfloat16"):
        _dnc_link_cpu.link_and_directions(link, vec, vec.astype(jnp.bfloat16), reads)
    with pytest.raises(
        ValueError, match="prev_link: expected dtype float32 or float64 \\(the kernel's\\), got bfloat16"
    ):
        _dnc_link_cpu.link_and_directions(*(x.astype(jnp.bfloat16) for x in (link, vec, vec, reads)))


def test_a_direct_first_call_registers_the_kernel():
    # In a fresh process where nothing has asked whether the kernel is available (dnc.step asks),
    # calling it directly must build and register its FFI targets, not fail with XLA's
    # "No FFI handler registered".
    script = (
        "import jax.numpy as jnp\n"
        "from panm_jax.kernels import _dnc_link_cpu\n"
        "p = jnp.array([0.5, 0.3, 0.2])\n"
        "out = _dnc_link_cpu.link_and_directions(jnp.zeros((3, 3)), p, jnp.full(3, 0.2), jnp.ones((1, 3)) / 3)\n"
        "print(round(float(out.link[0, 1]), 6), round(float(out.link[1, 1]), 6))\n"
    )
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo), "JAX_PLATFORMS": "cpu"}
    env.pop(_dnc_link_cpu._ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=repo, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # L_t[0, 1] = (1 - w_0 - w_1) L_{t-1}[0, 1] + w_0 p_1 = 0.2 * 0.3 (L_{t-1} = 0); the diagonal stays 0.
    assert done.stdout.split() == ["0.06", "0.0"]
