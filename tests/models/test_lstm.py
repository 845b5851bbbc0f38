"""The LSTM baseline's depth option ``layers`` (Grefenstette et al. 2015's deep LSTMs).

One layer is the model as it was (``test_panm_identity`` pins its numbers); here: the parameters a depth
adds, the output shapes, that the stacked model computes the composition its docstring states (a
transcription from its parts), that padding stays inert through every layer, that one gradient step
reaches every layer, and that a bad depth is a named error.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from panm_jax.models import build_model

B, T_IN, D_IN, K, T_OUT, D = 2, 5, 4, 3, 4, 6


def _batch():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(B, T_IN, D_IN)), jnp.float32)
    mask = jnp.asarray(np.arange(T_IN)[None] < np.array([T_IN, 3])[:, None])
    return x, mask


def _params(model) -> int:
    return sum(int(np.prod(leaf.shape)) for leaf in jax.tree_util.tree_leaves(nnx.state(model, nnx.Param)))


def test_one_layer_is_the_default_and_adds_no_parameters():
    default = build_model("lstm", input_size=D_IN, output_size=K, hidden=D)
    one = build_model("lstm", input_size=D_IN, output_size=K, hidden=D, layers=1)
    assert default.config.layers == 1
    assert len(default.upper_encoders) == len(default.upper_decoders) == 0
    paths = lambda m: [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(nnx.state(m))]  # noqa: E731
    assert paths(default) == paths(one)
    x, mask = _batch()
    np.testing.assert_array_equal(np.asarray(default(x, mask, T_OUT)), np.asarray(one(x, mask, T_OUT)))


@pytest.mark.parametrize("layers", [2, 3])
def test_each_layer_adds_an_encoder_and_a_decoder_lstm_of_width_hidden(layers):
    one = _params(build_model("lstm", input_size=D_IN, output_size=K, hidden=D))
    deep = _params(build_model("lstm", input_size=D_IN, output_size=K, hidden=D, layers=layers))
    lstm_d_to_d = 2 * (D * 4 * D + 4 * D)  # input and hidden projections with their biases
    assert deep - one == (layers - 1) * 2 * lstm_d_to_d


def test_shapes_in_both_modes():
    model = build_model("lstm", input_size=D_IN, output_size=K, hidden=D, layers=3)
    x, mask = _batch()
    logits, traces = model(x, mask, T_OUT, return_traces=True)
    assert logits.shape == (B, T_OUT, K) and traces["decoder_hidden"].shape == (B, T_OUT, D)
    aligned, traces = model(x, mask, T_IN, aligned=True, return_traces=True)
    assert aligned.shape == (B, T_IN, K) and traces["encoder_hidden"].shape == (B, T_IN, D)
    assert np.isfinite(np.asarray(logits)).all() and np.isfinite(np.asarray(aligned)).all()


def test_two_layers_compute_the_stacked_encoder_decoder():
    """Layer 2 reads layer 1's states; decoder layer l starts from encoder layer l's final state."""
    model = build_model("lstm", input_size=D_IN, output_size=K, hidden=D, layers=2)
    x, mask = _batch()
    h1, s1 = model.encoder(x, mask)
    _, s2 = model.upper_encoders[0](h1, mask)
    zero = jnp.zeros((B, 1))
    expected = []
    for _ in range(T_OUT):
        s1, h = model.decoder(s1, zero)
        s2, h = model.upper_decoders[0](s2, h)
        expected.append(model.output(h))
    np.testing.assert_allclose(np.asarray(model(x, mask, T_OUT)), np.stack(expected, axis=1), rtol=1e-5, atol=1e-6)


def test_trailing_padding_changes_nothing_through_the_layers():
    model = build_model("lstm", input_size=D_IN, output_size=K, hidden=D, layers=3)
    x, mask = _batch()
    garbage = jnp.full((B, 2, D_IN), 7.0)
    x_padded = jnp.concatenate([x, garbage], axis=1)
    mask_padded = jnp.concatenate([mask, jnp.zeros((B, 2), bool)], axis=1)
    np.testing.assert_allclose(
        np.asarray(model(x_padded, mask_padded, T_OUT)), np.asarray(model(x, mask, T_OUT)), rtol=1e-6, atol=1e-6
    )


def test_one_gradient_step_reaches_every_layer_and_lowers_the_loss():
    model = build_model("lstm", input_size=D_IN, output_size=K, hidden=D, layers=2)
    x, mask = _batch()
    targets = jnp.asarray(np.random.default_rng(1).integers(0, K, size=(B, T_OUT)))
    graphdef, params = nnx.split(model, nnx.Param)

    def loss(params):
        logits = nnx.merge(graphdef, params)(x, mask, T_OUT)
        return optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()

    value, grads = jax.jit(jax.value_and_grad(loss))(params)
    # every parameter but the bottom decoder's input projection, whose input is always zero
    for part in ("encoder", "upper_encoders", "decoder.hidden_proj", "upper_decoders", "output"):
        tree = grads
        for key in part.split("."):
            tree = tree[key]
        leaves = jax.tree_util.tree_leaves(tree)
        assert leaves and all(np.abs(np.asarray(g)).max() > 0 for g in leaves), part
    updates, _ = optax.sgd(0.1).update(grads, optax.sgd(0.1).init(params))
    assert jax.jit(loss)(optax.apply_updates(params, updates)) < value


@pytest.mark.parametrize("layers", [0, -1, 1.5])
def test_a_bad_depth_is_an_error_naming_layers(layers):
    with pytest.raises(ValueError, match="layers"):
        build_model("lstm", input_size=D_IN, output_size=K, hidden=D, layers=layers)
