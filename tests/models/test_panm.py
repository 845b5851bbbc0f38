"""Tests of panm_jax/models/panm.py, models/lstm.py and the registry (one interface)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from panm_jax.models import build_model, get_config, list_models
from panm_jax.tasks import get_task
from panm_jax.train.steps import init_train_state, make_train_step

# Small sizes that differ per axis: B = 3 examples, T_in = 7, D_in = 5, K = 4 classes.
B, T_IN, D_IN, K, T_OUT = 3, 7, 5, 4, 6
SMALL = {"panm": dict(hidden=16, mlp_hidden=8, address_bits=5), "lstm": dict(hidden=16)}


def _model(name: str, seed: int = 0, **extra):
    return build_model(name, input_size=D_IN, output_size=K, seed=seed, **{**SMALL[name], **extra})


def _inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.normal(size=(B, T_IN, D_IN)), jnp.float32)
    lengths = np.array([7, 4, 2])
    mask = jnp.asarray(np.arange(T_IN)[None] < lengths[:, None])
    return x * mask[..., None], mask


@pytest.mark.parametrize("name", ["panm", "lstm"])
def test_output_shape_and_finite(name):
    x, mask = _inputs()
    logits = _model(name)(x, mask, T_OUT, train=True, key=jax.random.key(0))
    assert logits.shape == (B, T_OUT, K)
    assert bool(jnp.all(jnp.isfinite(logits)))


@pytest.mark.parametrize("name", ["panm", "lstm"])
def test_appending_padding_changes_no_logit(name):
    # Example 1 has 4 real steps. Padding it out further with garbage (masked) rows must
    # change none of its logits: padded slots get no attention and carry no state.
    model = _model(name)
    x, mask = _inputs()
    garbage = jnp.asarray(np.random.default_rng(5).normal(size=(B, 5, D_IN)), jnp.float32) * 100.0
    x_long = jnp.concatenate([x, garbage], axis=1)
    mask_long = jnp.concatenate([mask, jnp.zeros((B, 5), bool)], axis=1)
    short = model(x, mask, T_OUT)
    long = model(x_long, mask_long, T_OUT)
    np.testing.assert_allclose(np.asarray(long), np.asarray(short), atol=1e-5)
    # and garbage inside the padding of the short batch changes nothing either
    x_dirty = jnp.where(mask[..., None], x, 7.0)
    np.testing.assert_allclose(np.asarray(model(x_dirty, mask, T_OUT)), np.asarray(short), atol=1e-5)


def test_panm_padded_slots_receive_no_attention_and_traces_have_shapes():
    x, mask = _inputs()
    logits, tr = _model("panm")(x, mask, T_OUT, train=True, key=jax.random.key(1), return_traces=True)
    assert tr.pointer_weights.shape == (B, T_OUT, 2, T_IN)
    assert tr.pointer_values.shape == (B, T_OUT, 2, 5)
    assert tr.mode2_weights.shape == (B, T_OUT, 1, T_IN)
    assert tr.base.shape == (B,)
    pad = ~np.asarray(mask)
    for w in (tr.pointer_weights, tr.mode2_weights):
        w = np.asarray(w)
        assert np.all(w[:, :, :, :][np.broadcast_to(pad[:, None, None, :], w.shape)] == 0.0)
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
    assert bool(jnp.all((tr.pointer_values >= 0) & (tr.pointer_values <= 1)))


def test_panm_base_address_random_in_training_zero_at_eval():
    model = _model("panm")
    x, mask = _inputs()
    _, tr_eval = model(x, mask, 2, return_traces=True)
    np.testing.assert_array_equal(np.asarray(tr_eval.base), 0)
    _, tr_a = model(x, mask, 2, train=True, key=jax.random.key(0), return_traces=True)
    _, tr_b = model(x, mask, 2, train=True, key=jax.random.key(1), return_traces=True)
    assert np.all((np.asarray(tr_a.base) >= 0) & (np.asarray(tr_a.base) < 2**5))
    assert not np.array_equal(np.asarray(tr_a.base), np.asarray(tr_b.base))
    # At eval with a_B = 0, head 0 starts at address 0 and head 1 at a_E = l(X) - 1:
    # after the first step both pointers are soft addresses; the start bits are in the carry,
    # checked here through the kernel's end_address for example 1 (l(X) = 4).
    from panm_jax.kernels import pointer

    assert int(pointer.end_address(jnp.int32(0), jnp.int32(4), 5)) == 3
    assert int(pointer.end_address(jnp.int32(30), jnp.int32(4), 5)) == 1  # (30 + 3) mod 32
    with pytest.raises(ValueError, match="key: expected a PRNG key"):
        model(x, mask, 2, train=True)


def test_no_retrace_across_batches_of_one_bucket(trace_counter):
    model = _model("panm")
    graphdef, params = nnx.split(model)
    counter = trace_counter(lambda p, x, m, k: nnx.merge(graphdef, p)(x, m, T_OUT, train=True, key=k))
    run = jax.jit(counter)
    x, mask = _inputs(0)
    run(params, x, mask, jax.random.key(0))
    x2, _ = _inputs(1)
    mask2 = jnp.asarray(np.arange(T_IN)[None] < np.array([[3], [7], [5]]))
    run(params, x2, mask2, jax.random.key(1))
    assert counter.count == 1


@pytest.mark.parametrize("name", ["panm", "lstm"])
def test_gradients_finite(name):
    model = _model(name)
    graphdef, params = nnx.split(model)
    x, mask = _inputs()

    def loss(p):
        logits = nnx.merge(graphdef, p)(x, mask, T_OUT, train=True, key=jax.random.key(0))
        return jnp.mean(jax.nn.log_softmax(logits)[..., 0])

    grads = jax.grad(loss)(params)
    leaves = jax.tree_util.tree_leaves(grads)
    assert leaves
    chex.assert_tree_all_finite(grads)
    assert any(float(jnp.max(jnp.abs(g))) > 0 for g in leaves)


def test_scaled_dot_score_bigru_encoder_and_no_mode2_heads_run():
    x, mask = _inputs()
    for extra in (
        {"score": "scaled_dot"},
        {"mode2_heads": 0},
        {"pointer_heads": 3},
        {"encoder": "bigru"},
        {"distractors": 4},
        {"distractors": 4, "distractor_sampling": "neighbours"},
    ):
        logits = _model("panm", **extra)(x, mask, 3)
        assert logits.shape == (B, 3, K) and bool(jnp.all(jnp.isfinite(logits)))


@pytest.mark.parametrize("sampling", ["uniform", "neighbours"])
def test_distractors_take_mass_in_training_only(sampling):
    # With K distractors, training-mode attention puts some mass on addresses outside the
    # bank (the weights on the real slots sum to less than 1, none on padding) and moves the
    # logits; evaluation is exactly the model without them (same parameters).
    x, mask = _inputs()
    plain, distracted = _model("panm"), _model("panm", distractors=6, distractor_sampling=sampling)
    key = jax.random.key(2)
    _, tr = distracted(x, mask, T_OUT, train=True, key=key, return_traces=True)
    w = np.asarray(tr.pointer_weights)
    assert np.all(w >= 0) and w.sum(-1).max() < 0.999
    assert np.all(w[np.broadcast_to(~np.asarray(mask)[:, None, None, :], w.shape)] == 0.0)
    assert not np.allclose(
        np.asarray(distracted(x, mask, T_OUT, train=True, key=key)),
        np.asarray(plain(x, mask, T_OUT, train=True, key=key)),
        atol=1e-4,
    )
    np.testing.assert_array_equal(np.asarray(distracted(x, mask, T_OUT)), np.asarray(plain(x, mask, T_OUT)))
    np.testing.assert_array_equal(
        np.asarray(tr.base), np.asarray(plain(x, mask, 1, train=True, key=key, return_traces=True)[1].base)
    )


@pytest.mark.parametrize("sampling", ["uniform", "neighbours"])
def test_distractors_are_masked_out_when_the_bank_fills_the_space(sampling):
    # 3 address bits and 8 real slots: no address is free, the draws are masked out, and
    # training is exactly the model without distractors, in value and gradient.
    x = jnp.asarray(np.random.default_rng(3).normal(size=(2, 8, D_IN)), jnp.float32)
    mask = jnp.ones((2, 8), bool)
    outs = []
    for k in (0, 5):
        graphdef, params = nnx.split(_model("panm", address_bits=3, distractors=k, distractor_sampling=sampling))
        loss = lambda p: jnp.sum(jnp.sin(nnx.merge(graphdef, p)(x, mask, 4, train=True, key=jax.random.key(4))))
        outs.append(jax.value_and_grad(loss)(params))
    np.testing.assert_allclose(float(outs[1][0]), float(outs[0][0]), rtol=1e-6)
    chex.assert_trees_all_close(outs[1][1], outs[0][1], rtol=1e-5, atol=1e-7)


def test_snap_pointers_feeds_back_whole_addresses_when_asked():
    x, mask = _inputs()
    key = jax.random.key(5)
    never, at_eval, always = (_model("panm", snap_pointers=s) for s in ("never", "eval", "always"))
    binary = lambda tr: bool(np.all(np.isin(np.asarray(tr.pointer_values), [0.0, 1.0])))
    assert not binary(never(x, mask, T_OUT, return_traces=True)[1])  # Eq. 3: soft
    assert binary(at_eval(x, mask, T_OUT, return_traces=True)[1])
    assert not binary(at_eval(x, mask, T_OUT, train=True, key=key, return_traces=True)[1])  # trains soft
    np.testing.assert_array_equal(
        np.asarray(at_eval(x, mask, T_OUT, train=True, key=key)), np.asarray(never(x, mask, T_OUT, train=True, key=key))
    )
    assert binary(always(x, mask, T_OUT, train=True, key=key, return_traces=True)[1])
    # Snapping changes the decoding, and its straight-through gradient reaches the Pointer Units.
    assert not np.allclose(np.asarray(at_eval(x, mask, T_OUT)), np.asarray(never(x, mask, T_OUT)), atol=1e-5)
    graphdef, params = nnx.split(always)
    grads = jax.grad(lambda p: jnp.sum(jnp.sin(nnx.merge(graphdef, p)(x, mask, T_OUT, train=True, key=key))))(params)
    pu = grads["decoder"]["pointer_units"]["input_kernel"][...]
    assert bool(jnp.all(jnp.isfinite(pu))) and float(jnp.max(jnp.abs(pu))) > 0


def test_registry_lists_and_rejects():
    assert {"panm", "lstm"} <= set(list_models())
    assert get_config("panm").hidden == 256 and get_config("panm").address_bits == 10
    with pytest.raises(ValueError, match=r"name: expected one of \[.*'lstm'.*'panm'.*\], got 'nope'"):
        build_model("nope", input_size=3, output_size=2)
    with pytest.raises(ValueError, match=r"unknown hyperparameter\(s\) \['widht'\] for model 'panm'; known: "):
        build_model("panm", input_size=3, output_size=2, widht=3)
    with pytest.raises(ValueError, match=r"score: expected one of \['cosine', 'scaled_dot'\], got 'dot'"):
        build_model("panm", input_size=3, output_size=2, score="dot")
    with pytest.raises(ValueError, match=r"distractors: expected a non-negative integer, got -1"):
        build_model("panm", input_size=3, output_size=2, distractors=-1)
    with pytest.raises(
        ValueError, match=r"distractor_sampling: expected one of \['uniform', 'neighbours'\], got 'near'"
    ):
        build_model("panm", input_size=3, output_size=2, distractor_sampling="near")
    with pytest.raises(ValueError, match=r"snap_pointers: expected one of \['never', 'eval', 'always'\], got True"):
        build_model("panm", input_size=3, output_size=2, snap_pointers=True)
    with pytest.raises(ValueError, match=r"input_size: expected a positive integer, got 0"):
        build_model("panm", input_size=0, output_size=2)
    with pytest.raises(ValueError, match=r"hidden: expected a positive integer, got -1"):
        build_model("lstm", input_size=3, output_size=2, hidden=-1)


def test_bad_call_inputs_are_named():
    model = _model("panm")
    x, mask = _inputs()
    with pytest.raises(ValueError, match=r"inputs: expected shape \[B, T_in, D_in\]"):
        model(x[0], mask, 2)
    with pytest.raises(ValueError, match=r"input_mask: expected shape \[B, T_in\]"):
        model(x, mask[:, :3], 2)
    with pytest.raises(ValueError, match=r"at most 2\^address_bits = 32 memory slots, got L = 40"):
        model(jnp.zeros((1, 40, D_IN)), jnp.ones((1, 40), bool), 2)


def test_panm_learns_a_tiny_copy():
    # Learning, not timing: Copy at a fixed length 4, batch 32, Adam 3e-3. In 150 steps the
    # cross-entropy falls from ~2.3 (log 10, chance) to well under a tenth of it (measured
    # ~0.01 at 200 steps with this seed); the threshold leaves a wide margin.
    task = get_task("copy")
    model = build_model(
        "panm",
        input_size=task.input_size,
        output_size=task.output_size,
        hidden=32,
        mlp_hidden=32,
        address_bits=6,
        seed=0,
    )
    optimizer = optax.adam(3e-3)
    graphdef, state = init_train_state(model, optimizer, seed=0)
    step = jax.jit(make_train_step(graphdef, optimizer, task))
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(150):
        state, metrics = step(state, task.sample(rng, 32, 4))
        losses.append(float(metrics["loss"]))
    start, end = np.mean(losses[:5]), np.mean(losses[-10:])
    assert start > 2.0
    assert end < 0.1 * start, (start, end)


def test_remat_gives_the_same_gradients():
    # remat recomputes each step in the backward pass: values and gradients are unchanged.
    x, mask = _inputs()
    grads = []
    for remat in (False, True):
        graphdef, params = nnx.split(_model("panm", remat=remat))
        grads.append(jax.grad(lambda p: jnp.sum(nnx.merge(graphdef, p)(x, mask, 3) ** 2))(params))
    chex.assert_trees_all_close(*grads, rtol=1e-5, atol=1e-6)
