"""What every model does with what it is given: padding is inert, any finite input is
finite out, and a malformed call is a named error at trace time.

Every registered model is built small and differentiated once per input variant
through one compiled ``value_and_grad`` (one compilation per model):

* padded input positions holding NaN, +-inf or +-1e30 give the logits (at real
  positions) and the parameter gradients of zero padding;
* real input positions holding +-1e30 or the float32 maximum give finite logits and
  gradients (inputs beyond ``INPUT_BOUND`` are clipped; the Transformers' layer
  norm is scale-free).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from panm_jax.models.registry import INPUT_BOUND, build_model, list_models
from panm_jax.modules.transformer import LAYER_NORM_EPS, LayerNorm

B, T_IN, D_IN, K, T_OUT = 2, 5, 6, 3, 3
REAL = 3  # example 0 has REAL real steps, example 1 all T_IN

SMALL = {
    "panm": dict(hidden=8, mlp_hidden=8, address_bits=5),
    "transformer": dict(d_model=8, num_heads=2, ffn_hidden=8, num_layers=1),
    "transformer_rpe": dict(d_model=8, num_heads=2, ffn_hidden=8, num_layers=1),
    "universal_transformer": dict(d_model=8, num_heads=2, ffn_hidden=8, steps=2),
    "universal_transformer_rpe": dict(d_model=8, num_heads=2, ffn_hidden=8, steps=2),
    "transformer_encoder": dict(hidden=8, num_heads=2, num_layers=1),
    "panm_transformer": dict(
        hidden=8, mlp_hidden=8, address_bits=5, encoder_layers=1, encoder_heads=2, decoder_layers=1, decoder_heads=2
    ),
}
# Every other model takes `hidden`; the memory models also run with a Transformer controller.
CASES = [(name, SMALL.get(name, dict(hidden=8))) for name in list_models()] + [
    ("ntm", dict(hidden=8, controller="transformer", controller_heads=2, max_steps=16)),
]
IDS = [name + ("-transformer" if hp.get("controller") == "transformer" else "") for name, hp in CASES]


def _inputs():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(B, T_IN, D_IN)).astype(np.float32)
    mask = np.ones((B, T_IN), bool)
    mask[0, REAL:] = False
    x[0, REAL:] = 0.0  # zero padding: the reference
    return x, mask


def _compiled(name, hparams):
    model = build_model(name, input_size=D_IN, output_size=K, **hparams)
    graphdef, params = nnx.split(model)

    @jax.jit
    def run(params, x, mask):
        def loss(params):
            logits = nnx.merge(graphdef, params)(x, mask, T_OUT)
            return jnp.mean(jax.nn.log_softmax(logits)[..., 0]), logits

        (_, logits), grads = jax.value_and_grad(loss, has_aux=True)(params)
        return logits, jax.tree_util.tree_leaves(grads)

    return lambda x, mask: run(params, x, mask)


@pytest.mark.parametrize("name,hparams", CASES, ids=IDS)
def test_padding_is_inert_and_any_finite_input_is_finite(name, hparams):
    run = _compiled(name, hparams)
    x, mask = _inputs()
    logits0, grads0 = run(x, mask)
    assert np.all(np.isfinite(logits0)) and all(np.all(np.isfinite(g)) for g in grads0)
    for value in (np.nan, np.inf, -np.inf, 1e30, -1e30):
        padded = x.copy()
        padded[0, REAL:] = value
        logits, grads = run(padded, mask)
        np.testing.assert_allclose(logits, logits0, rtol=1e-6, atol=1e-7, err_msg=f"{name}: padding {value}")
        for g, g0 in zip(grads, grads0, strict=True):
            np.testing.assert_allclose(g, g0, rtol=1e-6, atol=1e-7, err_msg=f"{name}: padding {value}")
    big = np.finfo(np.float32).max
    signs = np.where(np.random.default_rng(1).random((B, T_IN, D_IN)) < 0.5, -1.0, 1.0).astype(np.float32)
    for value in (1e30, big):
        huge = x.copy()
        huge[1] = value * signs[1]  # every feature of every step of example 1, mixed signs
        huge[0, :REAL] = value  # and every real step of example 0, one sign
        logits, grads = run(huge, mask)
        assert np.all(np.isfinite(logits)), f"{name}: inputs of {value:g} give non-finite logits"
        assert all(np.all(np.isfinite(g)) for g in grads), f"{name}: inputs of {value:g} give non-finite gradients"


def test_inputs_beyond_the_bound_act_as_the_bound():
    run = _compiled("lstm", dict(hidden=8))
    x, mask = _inputs()
    at, beyond = x.copy(), x.copy()
    at[1, 2, 3], beyond[1, 2, 3] = INPUT_BOUND, 1e35
    np.testing.assert_array_equal(run(at, mask)[0], run(beyond, mask)[0])


BAD_CALLS = [
    (lambda x, m: (x[0], m, T_OUT), r"inputs: expected shape \[B, T_in, D_in\], got \(5, 6\)"),
    (
        lambda x, m: (x[..., :4], m, T_OUT),
        r"inputs: expected D_in = 6 \(the model's input_size\), got shape \(2, 5, 4\)",
    ),
    (
        lambda x, m: (x[:0], m[:0], T_OUT),
        r"inputs: expected at least one example and one input step .* got \(0, 5, 6\)",
    ),
    (lambda x, m: (x[:, :0], m[:, :0], T_OUT), r"inputs: expected at least one example .* got \(2, 0, 6\)"),
    (lambda x, m: (x.astype(np.int32), m, T_OUT), r"inputs: expected a real floating dtype .* got int32"),
    (lambda x, m: (x.astype(np.complex64), m, T_OUT), r"inputs: expected a real floating dtype .* got complex64"),
    (lambda x, m: (x > 0, m, T_OUT), r"inputs: expected a real floating dtype .* got bool"),
    (lambda x, m: (x, m[:, :3], T_OUT), r"input_mask: expected shape \[B, T_in\] = \(2, 5\), got \(2, 3\)"),
    (lambda x, m: (x, m.astype(np.complex64), T_OUT), r"input_mask: expected bool .* got complex64"),
    (lambda x, m: (x, m, 0), r"num_outputs: expected a positive integer, got 0"),
    (lambda x, m: (x, m, 2.0), r"num_outputs: expected a positive integer, got 2.0"),
]


@pytest.mark.parametrize("name", list_models())
def test_malformed_calls_are_named_errors(name):
    model = build_model(name, input_size=D_IN, output_size=K, **SMALL.get(name, dict(hidden=8)))
    x, mask = _inputs()
    for make, message in BAD_CALLS:
        with pytest.raises(ValueError, match=message):
            model(*make(x, mask))


def test_numeric_masks_read_as_nonzero():
    model = build_model("lstm", input_size=D_IN, output_size=K, hidden=8)
    x, mask = _inputs()
    np.testing.assert_array_equal(model(x, mask, T_OUT), model(x, mask.astype(np.float32) * 3.0, T_OUT))


# ---- the scale-free layer norm ----------------------------------------------------------------


def _layer_norm_reference(x, eps):
    """``(x - mean) / sqrt(var + eps)`` in float64 (Ba et al. 2016, Eq. 4), gamma 1, beta 0."""
    x = np.asarray(x, np.float64)
    centred = x - x.mean(-1, keepdims=True)
    return centred / np.sqrt((centred**2).mean(-1, keepdims=True) + eps)


def test_layer_norm_matches_the_formula_at_every_scale():
    norm = LayerNorm(16, rngs=nnx.Rngs(0))
    v = np.random.default_rng(2).normal(size=(4, 16)).astype(np.float32)
    for scale in (1e-30, 1e-3, 1.0, 1e3, 1e19, 1e30, 1e36):
        x = (v * np.float32(scale)).astype(np.float32)
        got = np.asarray(norm(jnp.asarray(x)))
        want = _layer_norm_reference(x, LAYER_NORM_EPS)
        assert np.all(np.isfinite(got)), scale
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6, err_msg=f"scale {scale:g}")
    # Below 1 nothing is scaled: bit-for-bit flax's own two-pass layer norm.
    flax_norm = nnx.LayerNorm(16, epsilon=LAYER_NORM_EPS, use_fast_variance=False, rngs=nnx.Rngs(0))
    np.testing.assert_array_equal(np.asarray(norm(jnp.asarray(v * 0.1))), np.asarray(flax_norm(jnp.asarray(v * 0.1))))


def test_layer_norm_of_huge_constant_rows_is_finite_with_a_finite_gradient():
    # eps * 2^-2e underflows to 0 here, so a variance of exactly 0 would divide 0 by 0.
    norm = LayerNorm(8, rngs=nnx.Rngs(0))
    for x in (jnp.full((8,), 3e38, jnp.float32), jnp.full((8,), -(2.0**100), jnp.float32)):
        y, grad = jax.value_and_grad(lambda x: jnp.sum(norm(x) * jnp.arange(8.0)))(x)
        assert np.isfinite(float(y)) and np.all(np.isfinite(np.asarray(grad)))
