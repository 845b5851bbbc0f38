"""Tests of the Transformer backbones of Le et al. 2024 §3.3: the Universal Transformer
baselines (``universal_transformer``, ``universal_transformer_rpe``), PANM with a Transformer
encoder (``panm`` with ``encoder="transformer"`` / ``"transformer_rpe"``) and PANM with its
Controller stacked on a Transformer decoder (``panm_transformer``)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from panm_jax.models import build_model
from panm_jax.models.panm import decoding_options
from panm_jax.modules.encoders import TransformerEncoder
from panm_jax.modules.transformer import causal_mask, sinusoidal_encoding
from panm_jax.tasks import get_task
from tests.conftest import TraceCounter

# Small sizes that differ per axis: B = 3, T_in = 7, D_in = 5, K = 4 classes, T_out = 6.
B, T_IN, D_IN, K, T_OUT = 3, 7, 5, 4, 6
UT = dict(d_model=8, num_heads=2, ffn_hidden=12, steps=2)
PANM_TRM = dict(hidden=8, mlp_hidden=8, address_bits=6, encoder_layers=1, encoder_heads=2)
PANM_STACKED = dict(PANM_TRM, decoder_layers=2, decoder_heads=2, decoder_width=12)


def _inputs(seed: int = 0, lengths=(7, 4, 2), t_in: int = T_IN):
    rng = np.random.default_rng(seed)
    mask = jnp.asarray(np.arange(t_in)[None] < np.array(lengths)[:, None])
    return jnp.asarray(rng.normal(size=(B, t_in, D_IN)), jnp.float32) * mask[..., None], mask


def _num_params(name: str, **hparams) -> int:
    model = nnx.eval_shape(lambda: build_model(name, input_size=D_IN, output_size=K, **hparams))
    return sum(int(np.prod(p.shape)) for p in jax.tree_util.tree_leaves(nnx.state(model, nnx.Param)))


@functools.cache
def _compiled(name: str, variant: str = ""):
    """One model and one jitted forward (with traces, train=True) per model; counts its traces."""
    hparams = {"universal_transformer": UT, "universal_transformer_rpe": UT, "panm_transformer": PANM_STACKED}[name]
    extra = {"rpe": dict(encoder="transformer_rpe")}.get(variant, {})
    model = build_model(name, input_size=D_IN, output_size=K, **hparams, **extra)
    graphdef, params = nnx.split(model)
    counter = TraceCounter(
        lambda params, x, mask, key, num_outputs: nnx.merge(graphdef, params)(
            x, mask, num_outputs, train=True, key=key, return_traces=True
        )
    )
    return model, params, jax.jit(counter, static_argnums=4), counter


# ---- Universal Transformer -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["universal_transformer", "universal_transformer_rpe"])
def test_universal_transformer_shapes_padding_and_no_retrace(name):
    _, params, forward, counter = _compiled(name)
    x, mask = _inputs()
    key = jax.random.key(0)
    logits, traces = forward(params, x, mask, key, T_OUT)
    assert logits.shape == (B, T_OUT, K) and bool(jnp.all(jnp.isfinite(logits)))
    steps, heads = UT["steps"], UT["num_heads"]
    assert traces.encoder_self_attention.shape == (B, T_IN, steps, heads, T_IN)
    assert traces.cross_attention.shape == (B, T_OUT, steps, heads, T_IN)
    assert traces.decoder_self_attention.shape == (B, T_OUT, steps, heads, T_OUT)
    pad = np.broadcast_to(~np.asarray(mask)[:, None, None, None, :], traces.cross_attention.shape)
    assert np.all(np.asarray(traces.cross_attention)[pad] == 0.0)
    np.testing.assert_allclose(np.asarray(traces.cross_attention).sum(-1), 1.0, rtol=1e-5)
    # Garbage in the padded slots (same shapes: no retrace) changes no logit.
    dirty = jnp.where(mask[..., None], x, 1e3 * jnp.asarray(np.random.default_rng(1).normal(size=x.shape)))
    np.testing.assert_array_equal(np.asarray(forward(params, dirty, mask, key, T_OUT)[0]), np.asarray(logits))
    x2, mask2 = _inputs(seed=2, lengths=(3, 7, 5))
    assert not np.allclose(np.asarray(forward(params, x2, mask2, key, T_OUT)[0]), np.asarray(logits))
    assert counter.count == 1


@pytest.mark.parametrize("name", ["universal_transformer", "universal_transformer_rpe"])
def test_universal_transformer_shares_one_layer_across_steps(name):
    # The parameter count does not depend on the number of steps ...
    counts = {steps: _num_params(name, **{**UT, "steps": steps}) for steps in (1, 2, 5)}
    assert len(set(counts.values())) == 1, counts
    # ... and T steps are the one encoder layer and the one decoder layer applied T times,
    # with the coordinate embedding P^t = PE(i) + TE(t) (TE alone under RPE) added before each
    # (Dehghani et al. 2019, §2.1): a reference written out from the formula.
    model = build_model(name, input_size=D_IN, output_size=K, **{**UT, "steps": 3})
    relative = name.endswith("_rpe")
    x, mask = _inputs()
    d = UT["d_model"]

    def coordinates(n, t):
        te = sinusoidal_encoding(jnp.float32(t), d)
        return te if relative else sinusoidal_encoding(jnp.arange(n), d) + te

    key_mask = mask[:, None, None, :]
    h = model.embed(x)
    for t in (1, 2, 3):
        h, _ = model.encoder_layer(h + coordinates(T_IN, t), key_mask)
    memory = model.encoder_norm(h)
    if relative:
        y = jnp.zeros((B, T_OUT, d)).at[:, 0].set(model.start[...])
    else:
        y = jnp.zeros((B, T_OUT, d))
    for t in (1, 2, 3):
        y, _, _ = model.decoder_layer(y + coordinates(T_OUT, t), memory, causal_mask(T_OUT), key_mask)
    want = model.output(model.decoder_norm(y))
    np.testing.assert_allclose(np.asarray(model(x, mask, T_OUT)), np.asarray(want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["universal_transformer", "universal_transformer_rpe"])
def test_one_step_without_timestep_embedding_is_the_one_layer_transformer(name):
    # Csordás et al. 2021's Universal Transformer (no coordinate embedding) with one step is
    # exactly the 1-layer Transformer: the same seed gives the same weights, bit for bit.
    small = dict(d_model=8, num_heads=2, ffn_hidden=12)
    universal = build_model(name, input_size=D_IN, output_size=K, **small, steps=1, coordinate_embedding=False)
    plain = build_model(name.replace("universal_", ""), input_size=D_IN, output_size=K, **small, num_layers=1)
    ours = jax.tree_util.tree_leaves(nnx.state(universal, nnx.Param))
    theirs = jax.tree_util.tree_leaves(nnx.state(plain, nnx.Param))
    assert len(ours) == len(theirs) and all(np.array_equal(a, b) for a, b in zip(ours, theirs))
    x, mask = _inputs()
    np.testing.assert_array_equal(np.asarray(universal(x, mask, T_OUT)), np.asarray(plain(x, mask, T_OUT)))
    # With the timestep embedding (the default) the same weights give other logits.
    timed = build_model(name, input_size=D_IN, output_size=K, **small, steps=1)
    assert not np.allclose(np.asarray(timed(x, mask, T_OUT)), np.asarray(plain(x, mask, T_OUT)))


# ---- PANM with a Transformer encoder ---------------------------------------------------------


@pytest.mark.parametrize("encoder", ["transformer", "transformer_rpe"])
def test_panm_transformer_encoder_writes_the_memory(encoder):
    model = build_model("panm", input_size=D_IN, output_size=K, **PANM_TRM, encoder=encoder)
    assert isinstance(model.encoder, TransformerEncoder) and model.encoder.relative == (encoder == "transformer_rpe")
    x, mask = _inputs()
    memory, weights = model.encoder(x, mask)  # M = Encoder(X)
    assert memory.shape == (B, T_IN, PANM_TRM["hidden"]) and weights.shape == (B, T_IN, 1, 2, T_IN)
    assert np.all(np.asarray(memory)[~np.asarray(mask)] == 0.0)  # padding slots are empty
    # The encoder is the pre-LN stack written out: embedding (+ PE), the layer, the final LN.
    h = model.encoder.embed(x)
    if encoder == "transformer":
        h = h + sinusoidal_encoding(jnp.arange(T_IN), PANM_TRM["hidden"])
    h, _ = model.encoder.layers[0](h, mask[:, None, None, :])
    np.testing.assert_allclose(np.asarray(memory), np.asarray(model.encoder.norm(h) * mask[..., None]), atol=1e-6)
    # ... and PANM decodes exactly that memory.
    key = jax.random.key(3)
    base, options = decoding_options(model.config, B, True, key)
    want = model.decoder(memory, mask, base, T_OUT, **options)
    np.testing.assert_array_equal(np.asarray(model(x, mask, T_OUT, train=True, key=key)), np.asarray(want))


@pytest.mark.parametrize("encoder", ["transformer", "transformer_rpe"])
def test_panm_transformer_encoder_runs_on_longer_inputs(encoder):
    # Trained lengths say nothing about the bank: 40 input steps give a 40-slot address bank.
    model = build_model("panm", input_size=D_IN, output_size=K, **PANM_TRM, encoder=encoder)
    x, mask = _inputs(lengths=(40, 25, 3), t_in=40)
    logits, traces = model(x, mask, 8, return_traces=True)
    assert logits.shape == (B, 8, K) and bool(jnp.all(jnp.isfinite(logits)))
    w = np.asarray(traces.pointer_weights)
    assert w.shape == (B, 8, 2, 40)
    assert np.all(w[np.broadcast_to(~np.asarray(mask)[:, None, None, :], w.shape)] == 0.0)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)


def test_panm_transformer_encoder_options_are_checked():
    with pytest.raises(ValueError, match=r"encoder_heads: expected a divisor of hidden = 8"):
        build_model("panm", input_size=D_IN, output_size=K, **{**PANM_TRM, "encoder_heads": 3}, encoder="transformer")
    build_model("panm", input_size=D_IN, output_size=K, hidden=8, encoder_heads=3)  # the LSTM ignores them
    with pytest.raises(ValueError, match=r"encoder: expected one of \['bigru', 'lstm', 'transformer'"):
        build_model("panm", input_size=D_IN, output_size=K, encoder="gru")
    with pytest.raises(ValueError, match=r"encoder: expected one of \['transformer', 'transformer_rpe'\], got 'lstm'"):
        build_model("panm_transformer", input_size=D_IN, output_size=K, encoder="lstm")
    with pytest.raises(ValueError, match=r"decoder_heads: expected a divisor of the decoder width = 12, got 8"):
        build_model("panm_transformer", input_size=D_IN, output_size=K, **{**PANM_STACKED, "decoder_heads": 8})


# ---- PANM with the Controller stacked on a Transformer decoder ------------------------------


@pytest.mark.parametrize("variant", ["", "rpe"])
def test_panm_transformer_shapes_padding_and_no_retrace(variant):
    model, params, forward, counter = _compiled("panm_transformer", variant)
    x, mask = _inputs()
    logits, traces = forward(params, x, mask, jax.random.key(0), T_OUT)
    assert logits.shape == (B, T_OUT, K) and bool(jnp.all(jnp.isfinite(logits)))
    assert traces.pointer_weights.shape == (B, T_OUT, 2, T_IN)
    assert traces.mode2_weights.shape == (B, T_OUT, 1, T_IN)
    dirty = jnp.where(mask[..., None], x, 1e3)
    np.testing.assert_array_equal(
        np.asarray(forward(params, dirty, mask, jax.random.key(0), T_OUT)[0]), np.asarray(logits)
    )
    x2, mask2 = _inputs(seed=4, lengths=(2, 7, 6))
    assert bool(jnp.all(jnp.isfinite(forward(params, x2, mask2, jax.random.key(1), T_OUT)[0])))
    assert counter.count == 1
    if variant:  # the appended-padding check below is eager and slow: once is enough
        return
    # Appending padding (a new shape) changes no logit either.
    x_long = jnp.concatenate([x, jnp.full((B, 3, D_IN), 50.0)], axis=1)
    mask_long = jnp.concatenate([mask, jnp.zeros((B, 3), bool)], axis=1)
    np.testing.assert_allclose(
        np.asarray(model(x_long, mask_long, T_OUT)), np.asarray(model(x, mask, T_OUT)), atol=1e-5
    )


@pytest.mark.parametrize("variant", ["", "rpe"])
def test_panm_transformer_decoder_is_causal(variant):
    model = _compiled("panm_transformer", variant)[0]
    x, mask = _inputs()
    memory, _ = model.encoder(x, mask)
    # The decoder's blank inputs differ only by position (PE(t), or the start row under RPE);
    # changing input step 3 changes z_3.. and nothing before it. (Not by a constant row:
    # the layer norms remove those.)
    y = model.blank_inputs(B, T_OUT)
    z = np.asarray(model.decoder_states(y, memory, mask))
    assert z.shape == (B, T_OUT, PANM_STACKED["decoder_width"])
    shift = jnp.asarray(np.random.default_rng(3).normal(size=(B, PANM_STACKED["decoder_width"])), jnp.float32)
    z_moved = np.asarray(model.decoder_states(y.at[:, 3].add(shift), memory, mask))
    np.testing.assert_array_equal(z_moved[:, :3], z[:, :3])
    assert not np.allclose(z_moved[:, 3], z[:, 3])
    # The whole model: the first steps' logits do not depend on how many steps follow.
    np.testing.assert_allclose(
        np.asarray(model(x, mask, 3)), np.asarray(model(x, mask, T_OUT))[:, :3], rtol=1e-5, atol=1e-6
    )
    # z_t reaches the Controller: other decoder states give other logits.
    base, options = decoding_options(model.config, B, False, None)
    plain = model.decoder(memory, mask, base, T_OUT, decoder_inputs=jnp.asarray(z), **options)
    moved = model.decoder(memory, mask, base, T_OUT, decoder_inputs=jnp.asarray(z_moved), **options)
    np.testing.assert_array_equal(np.asarray(plain[:, :3]), np.asarray(moved[:, :3]))
    assert not np.allclose(np.asarray(plain[:, 3:]), np.asarray(moved[:, 3:]))


def test_panm_transformer_gradients_are_finite_and_it_learns_a_tiny_copy():
    # Copy at length 3 (batch 32, Adam 1e-2): cross-entropy from ~2.3 (chance over 10
    # classes) to ~0.02 after 100 steps with this seed (measured); the threshold leaves a
    # wide margin. The first step's gradients are checked on the way.
    task = get_task("copy")
    hp = dict(
        hidden=16, mlp_hidden=16, address_bits=4, encoder_layers=1, encoder_heads=2, decoder_layers=1, decoder_heads=2
    )
    model = build_model("panm_transformer", input_size=task.input_size, output_size=task.output_size, seed=0, **hp)
    graphdef, params = nnx.split(model, nnx.Param)
    optimizer = optax.adam(1e-2)

    @jax.jit
    def step(params, opt_state, inputs, mask, targets, key):
        def loss_fn(params):
            logits = nnx.merge(graphdef, params)(inputs, mask, targets.shape[1], train=True, key=key)
            return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, targets))

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss, grads

    opt_state = optimizer.init(params)
    rng = np.random.default_rng(0)
    losses = []
    for i in range(120):
        batch = task.sample(rng, 32, 3)
        params, opt_state, loss, grads = step(
            params, opt_state, batch.inputs, batch.input_mask, batch.targets, jax.random.key(i)
        )
        losses.append(float(loss))
        if i == 0:
            flat = nnx.to_flat_state(grads)
            for path, g in flat:
                assert bool(jnp.all(jnp.isfinite(g[...]))), path
            for part in ("encoder", "backbone_layers", "backbone_norm", "decoder"):  # z_t's path is trained too
                assert any(float(jnp.max(jnp.abs(g[...]))) > 0 for path, g in flat if path[0] == part), part
    start, end = np.mean(losses[:5]), np.mean(losses[-10:])
    assert start > 2.0
    assert end < 0.1 * start, (start, end)
