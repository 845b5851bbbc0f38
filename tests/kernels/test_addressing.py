"""Tests of panm_jax/kernels/addressing.py against tests/reference/ntm_ref.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from panm_jax.kernels import addressing as A
from tests.conftest import x64
from tests.reference import ntm_ref as ref

# Axis sizes that differ so that a transposed axis fails: N slots, W word, K heads, S shift.
N, W, K, S = 7, 5, 3, 3
TOL = 1e-5


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def _softmax_rows(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ---- 1. equals the reference -------------------------------------------------


def test_cosine_and_content_weights_match_reference(rng):
    memory = rng.normal(size=(N, W))
    keys = rng.normal(size=(K, W))
    beta = rng.uniform(0.5, 5.0, size=K)
    got_cos = np.asarray(A.cosine_similarity(jnp.asarray(keys, jnp.float32), jnp.asarray(memory, jnp.float32)))
    got_w = np.asarray(
        A.content_weights(
            jnp.asarray(memory, jnp.float32), jnp.asarray(keys, jnp.float32), jnp.asarray(beta, jnp.float32)
        )
    )
    for h in range(K):
        want_cos = [ref.cosine(keys[h], memory[i]) for i in range(N)]
        np.testing.assert_allclose(got_cos[h], want_cos, atol=TOL)
        np.testing.assert_allclose(got_w[h], ref.content_weights(memory, keys[h], beta[h]), atol=TOL)


def test_interpolate_shift_sharpen_match_reference(rng):
    w_c = _softmax_rows(rng.normal(size=(K, N)))
    w_prev = _softmax_rows(rng.normal(size=(K, N)))
    g = rng.uniform(size=K)
    s = _softmax_rows(rng.normal(size=(K, S)))
    gamma = rng.uniform(1.0, 4.0, size=K)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    w_g = np.asarray(A.interpolate(f32(w_c), f32(w_prev), f32(g)))
    w_t = np.asarray(A.circular_shift(f32(w_g), f32(s)))
    w = np.asarray(A.sharpen(f32(w_t), f32(gamma)))
    for h in range(K):
        want_g = ref.interpolate(w_c[h], w_prev[h], g[h])
        want_t = ref.circular_shift(want_g, s[h])
        np.testing.assert_allclose(w_g[h], want_g, atol=TOL)
        np.testing.assert_allclose(w_t[h], want_t, atol=TOL)
        np.testing.assert_allclose(w[h], ref.sharpen(want_t, gamma[h]), atol=TOL)


@pytest.mark.parametrize("num_slots,width", [(7, 1), (7, 5), (3, 5), (2, 3), (7, 11), (16, 13), (4, 9)])
def test_circular_shift_wide_and_narrow(rng, num_slots, width):
    # Shift widths wider than the memory wrap around several times; still a convolution.
    # Widths up to ROLL_SHIFT_MAX (9) take the roll path, wider ones the gather path.
    w = _softmax_rows(rng.normal(size=(num_slots,)))
    s = _softmax_rows(rng.normal(size=(width,)))
    got = np.asarray(A.circular_shift(jnp.asarray(w, jnp.float32), jnp.asarray(s, jnp.float32)))
    np.testing.assert_allclose(got, ref.circular_shift(w, s), atol=TOL)


# ---- 2. invariants ------------------------------------------------------------


def test_weights_are_distributions(rng):
    memory = jnp.asarray(rng.normal(size=(N, W)), jnp.float32)
    keys = jnp.asarray(rng.normal(size=(K, W)), jnp.float32)
    w = A.content_weights(memory, keys, jnp.full((K,), 100.0))
    s = jax.nn.softmax(jnp.asarray(rng.normal(size=(K, S)), jnp.float32))
    for weights in (w, A.circular_shift(w, s), A.sharpen(w, jnp.full((K,), 30.0))):
        assert bool(jnp.all((weights >= 0) & (weights <= 1)))
        np.testing.assert_allclose(np.asarray(weights.sum(-1)), 1.0, atol=1e-6)


def test_oneplus_range_and_overflow():
    x = jnp.array([-1e4, -10.0, 0.0, 10.0, 1e4], jnp.float32)
    y = A.oneplus(x)
    assert bool(jnp.all(jnp.isfinite(y))) and bool(jnp.all(y >= 1.0))
    np.testing.assert_allclose(float(y[2]), 1.0 + np.log(2.0), rtol=1e-6)
    np.testing.assert_allclose(float(y[4]), 1.0 + 1e4, rtol=1e-6)


# ---- 3. hand-built scenarios ----------------------------------------------------


def test_shift_by_plus_one_moves_one_slot():
    # A one-hot weighting at slot 2 with all shift mass on index S-1 (= +1) ends at slot 3.
    w = jnp.eye(N)[2]
    out = A.circular_shift(w, jnp.array([0.0, 0.0, 1.0]))
    np.testing.assert_array_equal(np.asarray(out), np.eye(N)[3])
    # Index 0 is a shift of -(S-1)/2 = -1; from slot 0 it wraps to slot N-1.
    out = A.circular_shift(jnp.eye(N)[0], jnp.array([1.0, 0.0, 0.0]))
    np.testing.assert_array_equal(np.asarray(out), np.eye(N)[N - 1])
    # Width 5: index 0 is a shift of -2.
    out = A.circular_shift(jnp.eye(N)[1], jnp.array([1.0, 0.0, 0.0, 0.0, 0.0]))
    np.testing.assert_array_equal(np.asarray(out), np.eye(N)[N - 1])


def test_key_equal_to_a_row_points_at_it():
    # cos(k, M[3]) = 1 and < 1 for the other (random) rows, so a large beta picks row 3.
    memory = jnp.asarray(np.random.default_rng(1).normal(size=(N, W)), jnp.float32)
    w = A.content_weights(memory, memory[3][None], jnp.array([200.0]))
    assert int(jnp.argmax(w[0])) == 3 and float(w[0, 3]) > 0.99


def test_sharpen_finite_when_all_zero_and_at_large_gamma():
    # Every weight 0: no 0/0, the result is uniform (all slots tie).
    w = A.sharpen(jnp.zeros((2, N)), jnp.array([1.0, 80.0]))
    np.testing.assert_allclose(np.asarray(w), 1.0 / N, atol=1e-6)
    # gamma = 80 on weights 0.6 / 0.4: 0.4^80 underflows float32 but the log form does not.
    w = A.sharpen(jnp.array([[0.6, 0.4]]), jnp.array([80.0]))
    np.testing.assert_allclose(np.asarray(w[0]), [1.0, 0.0], atol=1e-6)


def test_zero_key_and_zero_memory_give_uniform_weights():
    # cos(0, .) = 0 for every row, so the softmax is uniform whatever beta is.
    w = A.content_weights(jnp.zeros((N, W)), jnp.zeros((K, W)), jnp.full((K,), 50.0))
    np.testing.assert_allclose(np.asarray(w), 1.0 / N, atol=1e-6)


# ---- 4. gradients -----------------------------------------------------------------


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(2)
    with x64():
        memory = jnp.asarray(rng.normal(size=(N, W)))
        keys = jnp.asarray(rng.normal(size=(K, W)))
        beta = jnp.asarray(rng.uniform(0.5, 3.0, size=K))
        prev = jax.nn.softmax(jnp.asarray(rng.normal(size=(K, N))))
        g = jnp.asarray(rng.uniform(0.1, 0.9, size=K))
        s = jax.nn.softmax(jnp.asarray(rng.normal(size=(K, S))))
        gamma = jnp.asarray(rng.uniform(1.0, 3.0, size=K))

        def chain(memory, keys, beta, g, s, gamma):
            w = A.content_weights(memory, keys, beta)
            w = A.interpolate(w, prev, g)
            w = A.circular_shift(w, s)
            return A.sharpen(w, gamma)

        check_grads(chain, (memory, keys, beta, g, s, gamma), order=1, modes=("rev",), atol=1e-5, rtol=1e-5)
        check_grads(A.oneplus, (jnp.linspace(-5.0, 5.0, 7),), order=2)


def test_gradients_finite_at_zero_key_zero_memory_and_zero_weights():
    def loss(memory, keys, w):
        c = A.content_weights(memory, keys, jnp.ones((K,)))
        return jnp.sum(A.sharpen(c * w, jnp.full((K,), 2.0)) ** 2)

    grads = jax.grad(loss, argnums=(0, 1, 2))(jnp.zeros((N, W)), jnp.zeros((K, W)), jnp.zeros((K, N)))
    for gr in grads:
        assert bool(jnp.all(jnp.isfinite(gr)))
    g_gamma = jax.grad(lambda gm: jnp.sum(A.sharpen(jnp.zeros((K, N)), gm)))(jnp.full((K,), 3.0))
    assert bool(jnp.all(jnp.isfinite(g_gamma)))


# ---- 5. transforms -------------------------------------------------------------------


def test_vmap_equals_loop(rng):
    memory = jnp.asarray(rng.normal(size=(4, N, W)), jnp.float32)
    keys = jnp.asarray(rng.normal(size=(4, K, W)), jnp.float32)
    beta = jnp.asarray(rng.uniform(1, 3, size=(4, K)), jnp.float32)
    batched = jax.vmap(A.content_weights)(memory, keys, beta)
    for b in range(4):
        np.testing.assert_allclose(
            np.asarray(batched[b]), np.asarray(A.content_weights(memory[b], keys[b], beta[b])), atol=1e-6
        )


def test_even_shift_width_is_rejected():
    with pytest.raises(ValueError, match=r"shift: expected an odd shift width S .* got S = 4"):
        A.circular_shift(jnp.ones((N,)) / N, jnp.ones((4,)) / 4)
