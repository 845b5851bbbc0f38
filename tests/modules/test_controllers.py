"""Tests of panm_jax/modules/controllers.py, encoders.py and the PANM Pointer Units."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.test_util import check_grads

from panm_jax.modules.controllers import GRUCell, LSTMCell, gru_pointwise, lstm_pointwise
from panm_jax.modules.encoders import BiGRUEncoder, LSTMEncoder
from panm_jax.modules.panm import PointerUnits
from tests.conftest import x64

I, D, B = 5, 7, 3


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _gru_ref(x, h, wx, bx, wh, bh):
    # PyTorch GRU equations, float64, gate order r, z, n.
    gx, gh = x @ wx + bx, h @ wh + bh
    r = _sigmoid(gx[:, :D] + gh[:, :D])
    z = _sigmoid(gx[:, D : 2 * D] + gh[:, D : 2 * D])
    n = np.tanh(gx[:, 2 * D :] + r * gh[:, 2 * D :])
    return (1 - z) * n + z * h


def test_gru_cell_matches_numpy_equations():
    cell = GRUCell(I, D, rngs=nnx.Rngs(0))
    rng = np.random.default_rng(0)
    x, h = rng.normal(size=(B, I)), rng.normal(size=(B, D))
    got, out = cell(jnp.asarray(h, jnp.float32), jnp.asarray(x, jnp.float32))
    p = {
        k: np.asarray(v, np.float64)
        for k, v in (
            ("wx", cell.input_proj.kernel[...]),
            ("bx", cell.input_proj.bias[...]),
            ("wh", cell.hidden_proj.kernel[...]),
            ("bh", cell.hidden_proj.bias[...]),
        )
    }
    want = _gru_ref(x, h, p["wx"], p["bx"], p["wh"], p["bh"])
    np.testing.assert_allclose(np.asarray(got), want, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(out))


def test_lstm_cell_matches_numpy_equations():
    cell = LSTMCell(I, D, rngs=nnx.Rngs(1))
    rng = np.random.default_rng(1)
    x, h, c = rng.normal(size=(B, I)), rng.normal(size=(B, D)), rng.normal(size=(B, D))
    (h1, c1), out = cell((jnp.asarray(h, jnp.float32), jnp.asarray(c, jnp.float32)), jnp.asarray(x, jnp.float32))
    g = (
        x @ np.asarray(cell.input_proj.kernel[...], np.float64)
        + np.asarray(cell.input_proj.bias[...])
        + h @ np.asarray(cell.hidden_proj.kernel[...], np.float64)
        + np.asarray(cell.hidden_proj.bias[...])
    )
    i, f, gg, o = _sigmoid(g[:, :D]), _sigmoid(g[:, D : 2 * D]), np.tanh(g[:, 2 * D : 3 * D]), _sigmoid(g[:, 3 * D :])
    c_want = f * c + i * gg
    np.testing.assert_allclose(np.asarray(c1), c_want, atol=1e-5)
    np.testing.assert_allclose(np.asarray(h1), o * np.tanh(c_want), atol=1e-5)


def _plain_gru(gx, gh, h):
    # The GRU equations through autodiff (no custom VJP).
    r = jax.nn.sigmoid(gx[..., :D] + gh[..., :D])
    z = jax.nn.sigmoid(gx[..., D : 2 * D] + gh[..., D : 2 * D])
    n = jnp.tanh(gx[..., 2 * D :] + r * gh[..., 2 * D :])
    return (1 - z) * n + z * h


def _plain_lstm(gates, c):
    i, f = jax.nn.sigmoid(gates[..., :D]), jax.nn.sigmoid(gates[..., D : 2 * D])
    g, o = jnp.tanh(gates[..., 2 * D : 3 * D]), jax.nn.sigmoid(gates[..., 3 * D :])
    c = f * c + i * g
    return o * jnp.tanh(c), c


def test_pointwise_vjps_equal_autodiff_in_float64():
    # The written-out VJPs of the cells' gates against autodiff of the same equations, with random
    # cotangents on every output (the LSTM's h' and c'), and against finite differences.
    rng = np.random.default_rng(11)
    with x64():
        args = {
            "gru": (
                jnp.asarray(rng.normal(size=(B, 3 * D))),
                jnp.asarray(rng.normal(size=(B, 3 * D))),
                jnp.asarray(rng.normal(size=(B, D))),
            ),
            "lstm": (jnp.asarray(2 * rng.normal(size=(B, 4 * D))), jnp.asarray(rng.normal(size=(B, D)))),
        }
        for name, ours, plain in (("gru", gru_pointwise, _plain_gru), ("lstm", lstm_pointwise, _plain_lstm)):
            out, vjp = jax.vjp(ours, *args[name])
            out_ref, vjp_ref = jax.vjp(plain, *args[name])
            leaves = jax.tree_util.tree_leaves
            for a, b in zip(leaves(out), leaves(out_ref)):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-13, atol=1e-13)
            cot = jax.tree_util.tree_map(lambda o: jnp.asarray(rng.normal(size=o.shape)), out)
            got, want = vjp(cot), vjp_ref(cot)
            assert len(got) == len(args[name])
            for a, b in zip(got, want):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-11, atol=1e-12, err_msg=name)
            check_grads(ours, args[name], order=1, modes=("rev",), atol=1e-6, rtol=1e-6)


def test_pointer_units_equal_independent_gru_cells():
    # Each head of the stacked Pointer Units is an ordinary GRU with its own parameters.
    units = PointerUnits(2, I, D, rngs=nnx.Rngs(2))
    rng = np.random.default_rng(2)
    h = rng.normal(size=(B, 2, D))
    p = rng.uniform(size=(B, 2, I))
    got = np.asarray(units(jnp.asarray(h, jnp.float32), jnp.asarray(p, jnp.float32)))
    for head in range(2):
        want = _gru_ref(
            p[:, head],
            h[:, head],
            np.asarray(units.input_kernel[...][head], np.float64),
            np.asarray(units.input_bias[...][head]),
            np.asarray(units.hidden_kernel[...][head], np.float64),
            np.asarray(units.hidden_bias[...][head]),
        )
        np.testing.assert_allclose(got[:, head], want, atol=1e-5)
    # The initialisation variance is per head (fan-in = I), not over the stacked axis.
    assert abs(float(np.std(units.hidden_kernel[...])) - (1.0 / D) ** 0.5) < 0.1 * (1.0 / D) ** 0.5


def test_lstm_encoder_masks_and_equals_a_python_loop():
    enc = LSTMEncoder(I, D, rngs=nnx.Rngs(3))
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.normal(size=(B, 6, I)), jnp.float32)
    mask = jnp.asarray(np.arange(6)[None] < np.array([[6], [3], [1]]))
    out, (h, c) = enc(x, mask)
    for b, n in enumerate([6, 3, 1]):
        carry = enc.cell.init_carry(())
        for t in range(n):  # the reference: a plain Python loop over the real steps only
            carry, y = enc.cell(carry, x[b, t])
            np.testing.assert_allclose(np.asarray(out[b, t]), np.asarray(y), atol=1e-5)
        np.testing.assert_allclose(np.asarray(h[b]), np.asarray(carry[0]), atol=1e-5)
        np.testing.assert_array_equal(np.asarray(out[b, n:]), 0.0)


def test_bigru_encoder_sums_numpy_forward_and_backward_grus_over_the_real_steps():
    enc = BiGRUEncoder(I, D, rngs=nnx.Rngs(4))
    rng = np.random.default_rng(4)
    x = rng.normal(size=(B, 6, I))
    lengths = [6, 3, 1]
    mask = np.arange(6)[None] < np.array(lengths)[:, None]
    x_padded = np.where(mask[..., None], x, 100.0)  # garbage in the padding must not leak in
    out, (h_fwd, h_bwd) = enc(jnp.asarray(x_padded, jnp.float32), jnp.asarray(mask))

    def params(cell):
        return [
            np.asarray(v, np.float64)
            for v in (
                cell.input_proj.kernel[...],
                cell.input_proj.bias[...],
                cell.hidden_proj.kernel[...],
                cell.hidden_proj.bias[...],
            )
        ]

    pf, pb = params(enc.forward_cell), params(enc.backward_cell)
    for b, n in enumerate(lengths):
        fwd, bwd = [], [None] * n
        h = np.zeros((1, D))
        for t in range(n):  # float64 NumPy GRU over the real steps, forwards
            h = _gru_ref(x[b, t][None], h, *pf)
            fwd.append(h[0])
        np.testing.assert_allclose(np.asarray(h_fwd[b]), h[0], atol=1e-5)
        h = np.zeros((1, D))
        for t in reversed(range(n)):  # and backwards from the last real step
            h = _gru_ref(x[b, t][None], h, *pb)
            bwd[t] = h[0]
        np.testing.assert_allclose(np.asarray(h_bwd[b]), h[0], atol=1e-5)
        np.testing.assert_allclose(np.asarray(out[b, :n]), np.stack(fwd) + np.stack(bwd), atol=1e-5)
        np.testing.assert_array_equal(np.asarray(out[b, n:]), 0.0)
