"""The hand-written derivatives that keep a time scan's backward residuals few, and their count.

Inside ``lax.scan`` every array a step keeps for its backward pass becomes a
``[T, ...]`` stack, zero-filled, written and sliced once per step, whatever its
size. These derivatives keep fewer arrays than autodiff would, with the same
values:

* ``dnc.exclusive_cumprod``'s division-free VJP, against a float64 transcription
  of ``dx[i] = sum_{j>i} g[j] prod_{k<j, k != i} x[k]`` (zeros and ones included);
* ``addressing.normalize``'s VJP, against autodiff of ``x / |x|`` and ``1 / |x|``
  in float64, and the identity it defines at a zero vector;
* ``scan.select``'s blend, whose transpose is exactly ``(g, 0)`` or ``(0, g)``;
* the number of stacks one training step of the NTM and the DNC keeps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from panm_jax.kernels import addressing, dnc
from panm_jax.kernels.scan import select
from tests.conftest import x64


def _exclusive_cumprod_reference(x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(x)
    value = np.array([np.prod(x[:j]) for j in range(n)])
    grad = np.array(
        [sum(g[j] * np.prod([x[k] for k in range(j) if k != i]) for j in range(i + 1, n)) for i in range(n)]
    )
    return value, grad


@pytest.mark.parametrize("n", [1, 2, 3, 8, 33])
def test_exclusive_cumprod_and_its_vjp_equal_the_float64_transcription(n):
    rng = np.random.default_rng(n)
    rows = [rng.uniform(size=n), np.zeros(n), np.ones(n), rng.uniform(size=n)]
    rows[3][:: max(1, n // 3)] = 0.0  # zeros inside: the VJP must not divide by x
    with x64():
        for x in rows:
            g = rng.normal(size=n)
            value, vjp = jax.vjp(dnc.exclusive_cumprod, jnp.asarray(x))
            (grad,) = vjp(jnp.asarray(g))
            ref_value, ref_grad = _exclusive_cumprod_reference(x, g)
            np.testing.assert_allclose(np.asarray(value), ref_value, rtol=1e-14, atol=1e-300)
            np.testing.assert_allclose(np.asarray(grad), ref_grad, rtol=1e-12, atol=1e-14)
    # Leading axes are independent rows.
    x = rng.uniform(size=(2, 3, n)).astype(np.float32)
    value = np.asarray(dnc.exclusive_cumprod(jnp.asarray(x)))
    for idx in np.ndindex(2, 3):
        np.testing.assert_allclose(value[idx], _exclusive_cumprod_reference(x[idx], x[idx])[0], rtol=1e-5)


@pytest.mark.parametrize("axis", [-1, 0])
def test_normalize_vjp_equals_autodiff_of_x_over_its_norm(axis):
    rng = np.random.default_rng(5)

    def plain(x):
        norm = jnp.sqrt(jnp.sum(x * x, axis=axis, keepdims=True))
        return x / norm, jnp.squeeze(1.0 / norm, axis=axis)

    with x64():
        for scale in (1e-30, 1.0, 1e30):
            x = jnp.asarray(rng.normal(size=(4, 6)) * scale)
            g_unit = jnp.asarray(rng.normal(size=(4, 6)))
            g_inverse = jnp.asarray(rng.normal(size=(6,) if axis == 0 else (4,))) / scale
            ours, vjp = jax.vjp(lambda x: addressing.normalize(x, axis=axis), x)
            ref, vjp_ref = jax.vjp(plain, x)
            for a, b in zip(ours, ref):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-13)
            np.testing.assert_allclose(
                np.asarray(vjp((g_unit, g_inverse))[0]), np.asarray(vjp_ref((g_unit, g_inverse))[0]), rtol=1e-11
            )
        # A zero vector: unit 0, inverse norm 1, and the unit vector's derivative the identity.
        x = jnp.zeros((4, 6)).at[1:].set(jnp.asarray(rng.normal(size=(3, 6))))
        if axis == 0:
            x = x.T
        (unit, inverse), vjp = jax.vjp(lambda x: addressing.normalize(x, axis=axis), x)
        zero = (slice(None), 0) if axis == 0 else (0, slice(None))
        assert np.all(np.asarray(unit)[zero] == 0.0) and float(inverse[0]) == 1.0
        g = jnp.asarray(rng.normal(size=x.shape))
        (dx,) = vjp((g, jnp.asarray(rng.normal(size=inverse.shape))))
        np.testing.assert_array_equal(np.asarray(dx)[zero], np.asarray(g)[zero])


def test_select_transposes_exactly():
    # A masked step's gradient must pass to the old state untouched, and a real step's to the
    # new one: exactly, at magnitudes where a + (b - a) would round.
    new = jnp.array([1e8, 1.0, -3e-7])
    old = jnp.array([1.0, 1e8, 2.5])
    g = jnp.array([3.0, 1e-9, 7e20])
    for keep in (True, False):
        _, vjp = jax.vjp(lambda n, o, keep=keep: select(jnp.asarray(keep), n, o), new, old)
        d_new, d_old = vjp(g)
        np.testing.assert_array_equal(np.asarray(d_new), np.asarray(g) if keep else 0.0)
        np.testing.assert_array_equal(np.asarray(d_old), 0.0 if keep else np.asarray(g))


def _stacked_residuals(loss, *args) -> int:
    """The most ``[T, ...]`` arrays one scan of ``grad(loss)``'s forward pass stacks for its backward."""
    most = 0

    def walk(jaxpr):
        nonlocal most
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "scan":
                most = max(most, len(eqn.outvars) - eqn.params["num_carry"])
            for param in eqn.params.values():
                inner = getattr(param, "jaxpr", param)
                if hasattr(inner, "eqns"):
                    walk(inner)

    walk(jax.make_jaxpr(jax.grad(loss))(*args).jaxpr)
    return most


@pytest.mark.parametrize(
    "name,options,most",
    # Before the checkpointed activations, the shared select blend and exclusive_cumprod's and
    # normalize's VJPs: 56 (NTM) and 134 (DNC) stacks here.
    [("ntm", {"num_slots": 16, "word_size": 6}, 30), ("dnc", {"num_slots": 16, "word_size": 6}, 70)],
)
def test_a_training_step_keeps_few_stacks(name, options, most):
    from flax import nnx

    from panm_jax.models import build_model

    model = build_model(name, input_size=5, output_size=3, hidden=12, **options)
    graphdef, params = nnx.split(model)
    inputs = jnp.ones((2, 4, 5))
    mask = jnp.array([[True] * 4, [True, True, False, False]])

    def loss(params):
        return jnp.sum(nnx.merge(graphdef, params)(inputs, mask, 3) ** 2)

    count = _stacked_residuals(loss, params)
    assert count <= most, count
