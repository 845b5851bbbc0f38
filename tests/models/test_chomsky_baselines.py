"""Delétang et al. 2023's baselines: ``rnn`` and ``single_lstm`` (blank_step_rnn), ``transformer_encoder``.

Against float64 NumPy transcriptions of the recurrences (the Elman core, the LSTM
with its forget bias of 1) with the model's own parameters; the positional
encodings by hand (sin/cos counted back from the end, ALiBi's biases, a rotary
quarter turn); what padding does (inert inside the input; the recurrent models'
earlier outputs ignore appended output steps, the encoder's do not); dropout only
in training; named errors.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from panm_jax.errors import UserError
from panm_jax.models import AlignedModeError, build_model
from panm_jax.models.transformer_encoder import alibi_bias, alibi_slopes, rotate, sin_cos_encoding

B, T_IN, D_IN, K, T_OUT, D = 2, 4, 3, 5, 3, 6
ENCODER = dict(hidden=8, num_heads=2, num_layers=1)


def _jit(model):
    """``model`` as one jitted function of ``(x, mask, num_outputs, **flags)`` (static ``num_outputs``, flags)."""
    graphdef, params = nnx.split(model)

    @functools.partial(jax.jit, static_argnums=(3, 4))
    def run(params, x, mask, num_outputs, train, key):
        return nnx.merge(graphdef, params)(x, mask, num_outputs, train=train, key=key)

    return lambda x, mask, num_outputs, train=False, key=None: run(params, x, mask, num_outputs, train, key)


def _inputs(seed=0):
    x = np.random.default_rng(seed).normal(size=(B, T_IN, D_IN)).astype(np.float32)
    mask = np.ones((B, T_IN), bool)
    mask[0, 2:] = False
    x[0, 2:] = 0.0
    return jnp.asarray(x), jnp.asarray(mask)


def _np(p):
    return np.asarray(p[...], np.float64)


def _reference(model, x, mask, t_out, cell, activation="relu"):
    """float64 NumPy: the core over [x_t; 0] at the real input steps, then [0; 1] on t_out blank steps."""
    core = model.core
    wx, bx, wh, bh = _np(core.input_proj.kernel), _np(core.input_proj.bias), _np(core.hidden_proj.kernel), None
    bh = _np(core.hidden_proj.bias)
    out = []
    for b in range(x.shape[0]):
        steps = [np.append(x[b, t], 0.0) for t in range(x.shape[1]) if mask[b, t]]
        steps += [np.eye(x.shape[2] + 1)[-1]] * t_out
        h, c, hs = np.zeros(D), np.zeros(D), []
        for s in steps:
            z = s @ wx + bx + h @ wh + bh
            if cell == "rnn":  # Haiku's VanillaRNN: relu; Elman's: tanh
                h = np.maximum(z, 0) if activation == "relu" else np.tanh(z)
            else:
                sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
                i, f, g, o = np.split(z, 4)
                c = sig(f) * c + sig(i) * np.tanh(g)
                h = sig(o) * np.tanh(c)
            hs.append(h)
        top = np.maximum(np.array(hs[-t_out:]), 0)
        out.append(top @ _np(model.readout.kernel) + _np(model.readout.bias))
    return np.array(out)


@pytest.mark.parametrize(
    "name,cell,options",
    [
        ("rnn", "rnn", {}),
        ("rnn", "rnn", {"activation": "tanh"}),
        ("single_lstm", "lstm", {}),
        ("single_lstm", "lstm", {"init": "haiku"}),
    ],
)
def test_recurrent_models_match_a_float64_transcription(name, cell, options):
    model = build_model(name, input_size=D_IN, output_size=K, hidden=D, **options)
    x, mask = _inputs()
    got = np.asarray(_jit(model)(x, mask, T_OUT))
    want = _reference(model, np.asarray(x), np.asarray(mask), T_OUT, cell, options.get("activation", "relu"))
    np.testing.assert_allclose(got, want, atol=1e-5)
    if cell == "lstm":  # the forget gate's bias starts at 1, the others at 0
        bias = np.asarray(model.core.hidden_proj.bias[...])
        assert (bias[D : 2 * D] == 1).all() and (np.delete(bias, np.s_[D : 2 * D]) == 0).all()


# The standard deviation of a standard normal truncated to [-2, 2] (Haiku's TruncatedNormal before scaling).
_PHI2 = np.exp(-2.0) / np.sqrt(2 * np.pi)  # the standard normal's density at 2
_MASS = math.erf(2 / math.sqrt(2))  # P(-2 < Z < 2)
TRUNCATED_STD = float(np.sqrt(1 - 2 * 2 * _PHI2 / _MASS))  # 0.8796


def _spread(param, scale):
    """Within Haiku's truncation (2 * scale), reaching near it, with the truncated normal's deviation."""
    v = np.asarray(param[...], np.float64).ravel()
    assert np.abs(v).max() <= 2 * scale + 1e-6
    assert np.abs(v).max() > 1.8 * scale
    np.testing.assert_allclose(v.std(), TRUNCATED_STD * scale, rtol=0.1)
    assert abs(v.mean()) < 0.1 * scale


def test_haiku_init_draws_each_layer_as_dm_haikus_defaults():
    hidden, inputs = 64, D_IN + 1  # the core reads D_in features and the blank token's
    lstm = build_model("single_lstm", input_size=D_IN, output_size=K, hidden=hidden, init="haiku")
    # hk.LSTM: one hk.Linear(4D) over [x; h], so both kernels share the fan-in I + D; biases 0, forget 1.
    for layer in (lstm.core.input_proj, lstm.core.hidden_proj):
        _spread(layer.kernel, 1 / np.sqrt(inputs + hidden))
    assert (np.asarray(lstm.core.input_proj.bias[...]) == 0).all()
    bias = np.asarray(lstm.core.hidden_proj.bias[...])
    assert (bias[hidden : 2 * hidden] == 1).all() and (np.delete(bias, np.s_[hidden : 2 * hidden]) == 0).all()
    _spread(lstm.readout.kernel, 1 / np.sqrt(hidden))  # hk.Linear(K) on relu(h): fan-in D
    assert (np.asarray(lstm.readout.bias[...]) == 0).all()
    # Flax's default gives the input projection its own fan-in (I): its weights are far larger.
    flax = build_model("single_lstm", input_size=D_IN, output_size=K, hidden=hidden)
    ratio = np.asarray(flax.core.input_proj.kernel[...]).std() / np.asarray(lstm.core.input_proj.kernel[...]).std()
    assert ratio > 0.8 * np.sqrt((inputs + hidden) / inputs) / TRUNCATED_STD
    # hk.VanillaRNN: two hk.Linear, each its own fan-in.
    rnn = build_model("rnn", input_size=D_IN, output_size=K, hidden=hidden, init="haiku")
    _spread(rnn.core.hidden_proj.kernel, 1 / np.sqrt(hidden))
    assert np.abs(np.asarray(rnn.core.input_proj.kernel[...])).max() <= 2 / np.sqrt(inputs) + 1e-6
    for layer in (rnn.core.input_proj, rnn.core.hidden_proj, rnn.readout):
        assert (np.asarray(layer.bias[...]) == 0).all()
    # The draw depends on the seed only.
    again = build_model("single_lstm", input_size=D_IN, output_size=K, hidden=hidden, init="haiku")
    other = build_model("single_lstm", input_size=D_IN, output_size=K, hidden=hidden, init="haiku", seed=1)
    np.testing.assert_array_equal(again.core.hidden_proj.kernel[...], lstm.core.hidden_proj.kernel[...])
    assert not np.array_equal(other.core.hidden_proj.kernel[...], lstm.core.hidden_proj.kernel[...])


def test_init_option_is_checked():
    with pytest.raises(UserError, match=r"init: expected one of \['flax', 'haiku'\], got 'pytorch'"):
        build_model("single_lstm", input_size=D_IN, output_size=K, hidden=D, init="pytorch")


@pytest.mark.parametrize("name", ["rnn", "single_lstm"])
def test_recurrent_outputs_ignore_padding_and_later_output_steps(name):
    built = build_model(name, input_size=D_IN, output_size=K, hidden=D)
    model = _jit(built)
    x, mask = _inputs()
    base = model(x, mask, T_OUT)
    garbage = x.at[0, 2:].set(1e3)
    longer = jnp.concatenate([x, jnp.full((B, 2, D_IN), 7.0)], 1), jnp.concatenate([mask, jnp.zeros((B, 2), bool)], 1)
    np.testing.assert_array_equal(model(garbage, mask, T_OUT), base)
    np.testing.assert_allclose(model(*longer, T_OUT), base, atol=1e-6)
    np.testing.assert_allclose(model(x, mask, T_OUT + 2)[:, :T_OUT], base, atol=1e-6)  # causal over blank steps
    with pytest.raises(AlignedModeError):
        built(x, mask, T_IN, aligned=True)


def test_sin_cos_positions_by_hand():
    # D = 4: w = (1, 1/100); PE(p) = [sin p, sin(p/100), cos p, cos(p/100)].
    np.testing.assert_allclose(
        sin_cos_encoding(jnp.asarray([2.0]), 4)[0], [np.sin(2), np.sin(0.02), np.cos(2), np.cos(0.02)], rtol=1e-6
    )


def test_alibi_biases_by_hand():
    assert np.allclose(alibi_slopes(2), [2**-4, 2**-8]) and np.allclose(alibi_slopes(8)[0], 0.5)
    assert np.allclose(alibi_slopes(3), [2**-4, 2**-8, 2**-2])  # two heads' slopes, then four heads' first
    bias = np.asarray(alibi_bias(jnp.arange(3), 1))[0]  # slope 2^-8: -|i - j| + 0.5 [j < i]
    expected = np.array([[0, -1, -2], [-0.5, 0, -1], [-1.5, -0.5, 0]]) * 2**-8
    np.testing.assert_allclose(bias, expected)


def test_rotary_turns_each_pair_by_its_angle():
    x = jnp.asarray([[[[1.0, 0.0]]]])  # [B, T, H, d = 2]: w_0 = 1
    np.testing.assert_allclose(rotate(x, jnp.asarray([[np.pi / 2]]))[0, 0, 0], [0.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(rotate(x, jnp.asarray([[0.0]])), x)


@pytest.mark.parametrize("positions", ["sin_cos", "relative", "alibi", "rotary", "none"])
def test_encoder_padding_inside_the_input_is_inert(positions):
    model = _jit(build_model("transformer_encoder", input_size=D_IN, output_size=K, positions=positions, **ENCODER))
    x, mask = _inputs()
    base = model(x, mask, T_OUT)
    assert base.shape == (B, T_OUT, K) and bool(jnp.isfinite(base).all())
    np.testing.assert_array_equal(model(x.at[0, 2:].set(1e3), mask, T_OUT), base)
    longer = jnp.concatenate([x, jnp.full((B, 2, D_IN), 7.0)], 1), jnp.concatenate([mask, jnp.zeros((B, 2), bool)], 1)
    np.testing.assert_allclose(model(*longer, T_OUT), base, atol=1e-5)
    # The blank tokens attend to each other: two more output steps change the first ones.
    assert not np.allclose(model(x, mask, T_OUT + 2)[:, :T_OUT], base, atol=1e-4)


def test_encoder_positions_make_the_order_matter_and_none_does_not():
    x, mask = _inputs()
    mask = jnp.ones_like(mask)
    flipped = x[:, ::-1]
    for positions, differs in (("sin_cos", True), ("none", False)):
        model = _jit(build_model("transformer_encoder", input_size=D_IN, output_size=K, positions=positions, **ENCODER))
        changed = not np.allclose(model(x, mask, 1), model(flipped, mask, 1), atol=1e-5)
        assert changed == differs, positions


def test_encoder_dropout_only_when_training_with_a_key():
    model = _jit(build_model("transformer_encoder", input_size=D_IN, output_size=K, **ENCODER))
    x, mask = _inputs()
    base = model(x, mask, T_OUT)
    np.testing.assert_array_equal(model(x, mask, T_OUT, train=True), base)  # no key: nothing drawn
    np.testing.assert_array_equal(model(x, mask, T_OUT, key=jax.random.PRNGKey(0)), base)  # not training
    assert not np.allclose(model(x, mask, T_OUT, train=True, key=jax.random.PRNGKey(0)), base)
    off = _jit(build_model("transformer_encoder", input_size=D_IN, output_size=K, dropout=0.0, **ENCODER))
    np.testing.assert_array_equal(off(x, mask, T_OUT, train=True, key=jax.random.PRNGKey(0)), off(x, mask, T_OUT))


@pytest.mark.parametrize(
    "hparams,message",
    [
        (dict(positions="learned"), "positions: expected one of"),
        (dict(hidden=8, num_heads=3), "num_heads: expected a divisor of hidden = 8"),
        (dict(dropout=1.0), r"dropout: expected a number in \[0, 1\)"),
        (dict(hidden=6, num_heads=2, positions="rotary"), "rotary positions need an even head width"),
    ],
)
def test_encoder_config_errors_name_the_option(hparams, message):
    with pytest.raises(ValueError, match=message):
        build_model("transformer_encoder", input_size=D_IN, output_size=K, **hparams)
