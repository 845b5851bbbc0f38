"""The cosine similarity at every scale, and softmaxes at any strength.

The cosine ``u . v / (|u| |v|)`` is scale-invariant; the kernels' cosine
(``addressing.cosine_similarity``, ``ntm.similarity``, every content lookup) must
equal it to rounding for non-zero vectors of any scale the dtype represents, and
stay finite, value and gradient, at an exactly zero vector. The reference here is
exact: rational arithmetic (``fractions.Fraction``) on the very floats the kernel
sees, rounded once at the end.
"""

from __future__ import annotations

import contextlib
import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from panm_jax.kernels import addressing as A
from panm_jax.kernels import ntm
from tests.conftest import x64
from tests.reference import ntm_ref

K, N, W = 3, 5, 6
SCALES = (1e-30, 1e-6, 1.0, 1e6, 1e30)
# A few ulps of the result (|cos| <= 1): the unit vectors' rounding plus a W-term dot.
ULPS = {np.float32: 8 * 2.0**-24, np.float64: 8 * 2.0**-53}


def exact_cosine(u: np.ndarray, v: np.ndarray) -> float:
    """u . v / (|u| |v|) from the floats' exact rational values, rounded once (then a sqrt)."""
    fu = [Fraction(float(x)) for x in u]
    fv = [Fraction(float(x)) for x in v]
    dot = sum(a * b for a, b in zip(fu, fv))
    nu = sum(a * a for a in fu)
    nv = sum(b * b for b in fv)
    if nu == 0 or nv == 0:
        return 0.0
    return math.copysign(math.sqrt(float(dot * dot / (nu * nv))), 1.0 if dot >= 0 else -1.0)


def _vectors(rng, dtype, key_scale, row_scale):
    # Magnitudes in [1/2, 2] with random signs: at the edges of the range every entry stays a
    # normal number (XLA on the CPU flushes subnormals to zero).
    def draw(shape, scale):
        return (rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.5, 2.0, size=shape) * scale).astype(dtype)

    return draw((K, W), key_scale), draw((N, W), row_scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cosine_equals_the_exact_value_at_every_scale(dtype):
    rng = np.random.default_rng(0)
    scales = SCALES + ((1e-300, 1e300) if dtype == np.float64 else (1e-37, 1e38))
    worst = 0.0
    with x64() if dtype == np.float64 else contextlib.nullcontext():
        for key_scale in scales:
            for row_scale in scales:
                keys, rows = _vectors(rng, dtype, key_scale, row_scale)
                want = np.array([[exact_cosine(k, r) for r in rows] for k in keys])
                got = np.asarray(A.cosine_similarity(jnp.asarray(keys), jnp.asarray(rows)))
                got_ntm = np.asarray(ntm.similarity(jnp.asarray(keys), jnp.asarray(rows.T)))
                assert got.dtype == dtype and got_ntm.dtype == dtype
                err = max(np.max(np.abs(got - want)), np.max(np.abs(got_ntm - want)))
                assert err <= ULPS[dtype], (key_scale, row_scale, err)
                worst = max(worst, err)
    print(f"cosine, {np.dtype(dtype).name}, scales {scales[0]:g}..{scales[-1]:g}: largest error {worst:.2e}")


def test_cosine_gradient_is_exact_at_every_scale():
    # d cos(k, r) / dk = (r^ - cos k^) / |k|: times |k| it is scale-free, so the gradient at
    # scale s times s equals the unit-scale gradient computed from the formula in float64.
    rng = np.random.default_rng(1)
    k1 = rng.normal(size=(1, W))
    r1 = rng.normal(size=(N, W))
    worst = 0.0
    with x64():
        for s in (1e-300, 1e-30, 1e-6, 1.0, 1e6, 1e30, 1e300):
            for t in (1e-30, 1.0, 1e30):
                k, r = k1 * s, r1 * t
                grad = jax.grad(lambda q: jnp.sum(A.cosine_similarity(q, jnp.asarray(r))))(jnp.asarray(k))
                kn = np.linalg.norm(k1)
                rhat = r1 / np.linalg.norm(r1, axis=1, keepdims=True)
                cos = rhat @ (k1[0] / kn)
                want = np.sum(rhat - cos[:, None] * (k1[0] / kn), axis=0) / kn  # at unit scale
                err = np.max(np.abs(np.asarray(grad)[0] * s - want))
                assert err < 1e-12, (s, t, err)
                worst = max(worst, err)
    print(f"cosine gradient, float64, key scales 1e-300..1e300: largest error {worst:.2e}")


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16, jnp.float16])
def test_zero_vectors_have_similarity_zero_and_a_finite_documented_gradient(dtype):
    rng = np.random.default_rng(2)
    rows = jnp.asarray(rng.normal(size=(N, W)), dtype).at[2].set(0.0)
    zero_key = jnp.zeros((1, W), dtype)
    sim = A.cosine_similarity(zero_key, rows)
    assert sim.dtype == dtype
    np.testing.assert_array_equal(np.asarray(sim, np.float32), 0.0)
    grad = jax.grad(lambda q: jnp.sum(A.cosine_similarity(q, rows).astype(jnp.float32)))(zero_key)
    assert np.all(np.isfinite(np.asarray(grad, np.float32)))
    # normalize's documented gradient at a zero vector: the sum of the rows' unit vectors.
    rows32 = np.asarray(rows, np.float32)
    norms = np.linalg.norm(rows32, axis=1, keepdims=True)
    want = np.sum(np.where(norms > 0, rows32 / np.where(norms > 0, norms, 1), 0), axis=0)
    tol = 1e-6 if dtype == jnp.float32 else 2e-2
    np.testing.assert_allclose(np.asarray(grad, np.float32)[0], want, atol=tol)
    # The zero row: similarity 0 with every key, gradient w.r.t. the rows finite.
    keys = jnp.asarray(rng.normal(size=(K, W)), dtype)
    np.testing.assert_array_equal(np.asarray(A.cosine_similarity(keys, rows), np.float32)[:, 2], 0.0)
    g_rows = jax.grad(lambda m: jnp.sum(A.cosine_similarity(keys, m).astype(jnp.float32)))(rows)
    assert np.all(np.isfinite(np.asarray(g_rows, np.float32)))


def test_ntm_initial_memory_scores_as_the_papers_cosine():
    # Every slot at MEMORY_INIT = 1e-6 except one written row; a random key, beta = 5.
    # The previous guarded cosine scored the unwritten slots ~0.01 instead of ~0.6.
    rng = np.random.default_rng(3)
    memory = np.full((N, W), ntm.MEMORY_INIT)
    memory[1] = rng.normal(size=W)
    key = rng.normal(size=W) + 1.0  # a key with a clear component along the all-ones direction
    got = np.asarray(
        A.content_weights(
            jnp.asarray(memory, jnp.float32), jnp.asarray(key[None], jnp.float32), jnp.asarray([5.0], jnp.float32)
        )
    )[0]
    want = ntm_ref.content_weights(memory, key, 5.0)
    unwritten = key.sum() / (math.sqrt(W) * np.linalg.norm(key))
    got_sim = np.asarray(ntm.similarity(jnp.asarray(key[None], jnp.float32), jnp.asarray(memory.T, jnp.float32)))[0]
    assert unwritten > 0.5
    np.testing.assert_allclose(got_sim[[0, 2, 3, 4]], unwritten, atol=1e-6)
    np.testing.assert_allclose(got, want, atol=1e-6)
    print(
        f"MEMORY_INIT rows: similarity {got_sim[0]:.6f} (exact {unwritten:.6f}), "
        f"largest content-weight error {np.max(np.abs(got - want)):.1e}"
    )


@pytest.mark.parametrize("scale", [1.0, 1e4, 1e10, 1e20, 3e38])
def test_scaled_softmax_is_a_distribution_at_any_strength(scale):
    # Under jit a compiler may fuse softmax(b s)'s product and max-subtraction into one
    # fused multiply-add, which left every logit below -100 for b = 1e10 (all weights 0).
    scores = jnp.asarray([[0.9999999] * 8, [0.3, 0.9999999, -0.5, 0.9999999, 0.1, 0.2, 0.0, -1.0]], jnp.float32)
    weights = np.asarray(jax.jit(A.scaled_softmax)(scores, jnp.full((2,), scale, jnp.float32)))
    assert np.all(np.isfinite(weights))
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(weights[0], 1 / 8, atol=1e-6)
    if scale >= 1e4:
        np.testing.assert_allclose(weights[1], [0, 0.5, 0, 0.5, 0, 0, 0, 0], atol=1e-6)
    sharpened = np.asarray(
        jax.jit(A.sharpen)(jnp.asarray([[0.5, 0.5, 0, 0, 0, 0, 0, 0]], jnp.float32), jnp.asarray([scale], jnp.float32))
    )
    np.testing.assert_allclose(sharpened[0, :2], 0.5, atol=1e-6)


def test_scaled_softmax_gradient_equals_the_plain_softmax():
    rng = np.random.default_rng(4)
    s = jnp.asarray(rng.normal(size=(K, N)))
    b = jnp.asarray(rng.uniform(0.5, 4.0, size=K))
    c = jnp.asarray(rng.normal(size=(K, N)))
    with x64():
        s, b, c = (jnp.asarray(np.asarray(x), jnp.float64) for x in (s, b, c))
        got = jax.grad(lambda s, b: jnp.sum(c * A.scaled_softmax(s, b)), argnums=(0, 1))(s, b)
        want = jax.grad(lambda s, b: jnp.sum(c * jax.nn.softmax(b[:, None] * s)), argnums=(0, 1))(s, b)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-14)


# ---- the NTM's finite range --------------------------------------------------------------


def _ntm_rollout(raw, dtype):
    r, h, n, w = 1, 1, 8, 6

    def body(state, x):
        return ntm.step(state, ntm.controls_from_interface(x, w, r, h))

    _, reads = jax.lax.scan(body, ntm.init_state(n, w, r, h, dtype=dtype), raw)
    return reads


def _signs(steps):
    return np.random.default_rng(5).choice([-1.0, 1.0], size=(steps, ntm.interface_size(6, 1, 1)))


@pytest.mark.parametrize("magnitude", [1e20, 1e30, 3e38])
def test_ntm_values_are_finite_for_any_finite_interface(magnitude):
    raw = jnp.asarray(_signs(5) * magnitude, jnp.float32)
    reads = jax.jit(_ntm_rollout, static_argnums=1)(raw, jnp.float32)
    assert np.all(np.isfinite(np.asarray(reads)))


def test_ntm_gradient_is_finite_at_the_edge_of_its_documented_range():
    # float32: gradients finite for raw interface values of 1e11 in magnitude; float64: at 1e20
    # (controls_from_interface bounds them to validation.raw_limit; test_extreme_controls.py
    # checks every kernel and dtype at that bound and beyond).
    loss = lambda raw, dtype: jnp.sum(_ntm_rollout(raw, dtype))  # noqa: E731
    raw = jnp.asarray(_signs(5) * 1e11, jnp.float32)
    assert np.all(np.isfinite(np.asarray(jax.grad(loss)(raw, jnp.float32))))
    with x64():
        raw = jnp.asarray(_signs(5) * 1e20, jnp.float64)
        assert np.all(np.isfinite(np.asarray(jax.grad(loss)(raw, jnp.float64))))
