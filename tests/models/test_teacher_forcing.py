"""Teacher forcing and greedy decoding (``panm_jax/models/teacher_forcing.py``).

For each model with the ``teacher_forcing`` option, built small:

* teacher-forced logits at step ``t`` read targets ``0..t-1`` only (changing target
  ``k`` changes steps ``k + 1..`` and leaves steps ``0..k`` bit-identical);
* greedy decoding is self-consistent: its logits are the teacher-forced logits on
  targets equal to its own argmaxes, and those argmaxes come from the step before
  (checked against a Python loop that re-runs the model one step at a time);
* without the option, ``targets`` change nothing;
* malformed ``targets`` are named errors;

and the train step feeds the targets (training) while the eval step decodes
greedily; a teacher-forced model on a task without class targets is refused.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from panm_jax.errors import UserError
from panm_jax.models import build_model
from panm_jax.models.teacher_forcing import previous_tokens
from panm_jax.tasks import get_task
from panm_jax.train.config import ConfigError, load_config
from panm_jax.train.steps import init_train_state, make_eval_step, make_train_step

B, T_IN, D_IN, K, T_OUT = 2, 5, 6, 4, 5
SMALL = {
    "transformer": dict(d_model=8, num_heads=2, ffn_hidden=8, num_layers=1),
    "transformer_rpe": dict(d_model=8, num_heads=2, ffn_hidden=8, num_layers=2),
    "universal_transformer": dict(d_model=8, num_heads=2, ffn_hidden=8, steps=2),
    "universal_transformer_rpe": dict(d_model=8, num_heads=2, ffn_hidden=8, steps=2),
    "panm_transformer": dict(
        hidden=8, mlp_hidden=8, address_bits=5, encoder_layers=1, encoder_heads=2, decoder_layers=1, decoder_heads=2
    ),
}
NAMES = list(SMALL)


def _model(name, teacher_forcing=True, seed=0):
    return build_model(name, input_size=D_IN, output_size=K, seed=seed, teacher_forcing=teacher_forcing, **SMALL[name])


def _data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(B, T_IN, D_IN)).astype(np.float32)
    mask = np.ones((B, T_IN), bool)
    mask[1, 3:] = False
    x[1, 3:] = 0.0
    targets = rng.integers(0, K, size=(B, T_OUT)).astype(np.int32)
    return x, mask, targets


def test_previous_tokens_shift_the_targets_right_behind_bos():
    targets = jnp.asarray([[3, 1, 2], [0, 0, 1]])
    np.testing.assert_array_equal(previous_tokens(targets, 4), [[4, 3, 1], [4, 0, 0]])


@pytest.mark.parametrize("name", NAMES)
def test_teacher_forced_step_t_reads_targets_before_t_only(name):
    model = _model(name)
    graphdef, params = nnx.split(model)
    run = jax.jit(lambda x, m, y: nnx.merge(graphdef, params)(x, m, T_OUT, targets=y))
    x, mask, targets = _data()
    base = np.asarray(run(x, mask, targets))
    assert base.shape == (B, T_OUT, K) and np.isfinite(base).all()
    for k in (0, 2):
        changed = targets.copy()
        changed[:, k] = (changed[:, k] + 1) % K
        out = np.asarray(run(x, mask, changed))
        np.testing.assert_array_equal(out[:, : k + 1], base[:, : k + 1])
        assert np.abs(out[:, k + 1] - base[:, k + 1]).max() > 1e-6


@pytest.mark.parametrize("name", NAMES)
def test_greedy_decoding_feeds_back_its_own_argmax(name):
    model = _model(name, seed=1)
    x, mask, _ = _data(1)
    greedy = np.asarray(model(x, mask, T_OUT))
    chosen = greedy.argmax(-1).astype(np.int32)
    # Its logits are the teacher-forced ones on its own choices...
    np.testing.assert_allclose(np.asarray(model(x, mask, T_OUT, targets=chosen)), greedy, rtol=1e-5, atol=1e-5)
    # ...and a loop that re-runs the model one step at a time makes the same choices.
    tokens = np.zeros((B, T_OUT), np.int32)
    for t in range(T_OUT):
        step_logits = np.asarray(model(x, mask, T_OUT, targets=tokens))[:, t]
        tokens[:, t] = step_logits.argmax(-1)
    np.testing.assert_array_equal(tokens, chosen)


@pytest.mark.parametrize("name", NAMES)
def test_without_the_option_targets_change_nothing(name):
    model = _model(name, teacher_forcing=False)
    x, mask, targets = _data()
    np.testing.assert_array_equal(np.asarray(model(x, mask, T_OUT, targets=targets)), np.asarray(model(x, mask, T_OUT)))


def test_malformed_targets_are_named_errors():
    model = _model("transformer")
    x, mask, targets = _data()
    with pytest.raises(UserError, match=r"targets: expected class ids of shape \[B, T_out\] = \(2, 5\)"):
        model(x, mask, T_OUT, targets=targets[:, :3])
    with pytest.raises(UserError, match=r"targets: expected integer class ids in 0\.\.3"):
        model(x, mask, T_OUT, targets=targets.astype(np.float32))
    with pytest.raises(ValueError, match="teacher_forcing: expected true or false"):
        build_model("transformer", input_size=D_IN, output_size=K, teacher_forcing=1)


def test_train_step_teacher_forces_and_eval_step_decodes_greedily():
    task = get_task("reverse")
    batch = task.sample(np.random.default_rng(0), 3, 4)
    model = build_model(
        "transformer",
        input_size=task.input_size,
        output_size=task.output_size,
        teacher_forcing=True,
        **SMALL["transformer"],
    )
    optimizer = optax.sgd(0.1)
    graphdef, state = init_train_state(model, optimizer)
    steps = batch.targets.shape[1]
    forced = task.loss(model(batch.inputs, batch.input_mask, steps, targets=batch.targets), batch)
    greedy = task.loss(model(batch.inputs, batch.input_mask, steps), batch)
    assert abs(float(forced) - float(greedy)) > 1e-6
    _, metrics = make_train_step(graphdef, optimizer, task)(state, batch)
    np.testing.assert_allclose(float(metrics["loss"]), float(forced), rtol=1e-5)
    np.testing.assert_allclose(
        float(make_eval_step(graphdef, task)(state.params, batch)["loss"]), float(greedy), rtol=1e-5
    )
    # The token table is trained: its gradient is not zero.
    grads = nnx.grad(lambda m: task.loss(m(batch.inputs, batch.input_mask, steps, targets=batch.targets), batch))(model)
    assert float(jnp.abs(grads.tokens.embedding[...]).sum()) > 0


def test_teacher_forcing_needs_class_targets():
    with pytest.raises(ConfigError, match=r"model_options.teacher_forcing: .* needs class targets; 'dyck'"):
        load_config(None, ["task=dyck", "model=transformer", "model_options.teacher_forcing=true"])
    assert load_config(None, ["task=scan", "model=transformer", "model_options.teacher_forcing=true"]).model_options
