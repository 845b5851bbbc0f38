"""The aligned mode: one output per input step, from the inputs so far (Dyck's ``output_mode``).

Every model that declares it (``supports_aligned``) is checked for what the mode
means, not for its own numbers:

* causality: changing the inputs after step ``k`` leaves the outputs at steps
  ``0..k`` bit-identical, and changing input ``k`` changes output ``k`` (it is read
  before its output);
* padding: appended padding steps (holding garbage) leave the real outputs as they were;
* ``num_outputs`` other than ``T_in`` is a named error;

the models without it raise ``AlignedModeError`` naming ``aligned``; a training
config pairing such a model with Dyck is a ``ConfigError`` on ``model``; and the
train and eval steps call the model in the task's mode.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from panm_jax.errors import UserError
from panm_jax.models import AlignedModeError, aligned_models, build_model, list_models, supports_aligned
from panm_jax.tasks import get_task
from panm_jax.train.config import ConfigError, load_config
from panm_jax.train.steps import init_train_state, make_eval_step

B, T_IN, D_IN, K = 2, 6, 5, 4
ALIGNED = [
    "deque_lstm",
    "dnc",
    "lstm",
    "ntm",
    "panm_srnn",
    "queue_lstm",
    "srnn",
    "stack_lstm",
    "stack_rnn",
    "tape_rnn",
]
SMALL = {
    "ntm": dict(hidden=8, num_slots=7, word_size=3),
    "dnc": dict(hidden=8, num_slots=7, word_size=3, num_reads=2),
    "stack_rnn": dict(hidden=8, width=3, stack_size=9),
    "tape_rnn": dict(hidden=8, width=3, tape_size=9),
    "srnn": dict(hidden=8, stack_depth=7, stack_width=3),
    "panm_srnn": dict(hidden=8, mlp_hidden=8, address_bits=5, srnn_hidden=6, stack_depth=7, stack_width=3),
}


def _model(name: str):
    return build_model(name, input_size=D_IN, output_size=K, **SMALL.get(name, dict(hidden=8)))


def _inputs(seed: int = 0):
    x = np.random.default_rng(seed).normal(size=(B, T_IN, D_IN)).astype(np.float32)
    return x, np.ones((B, T_IN), bool)


def test_the_aligned_models_are_the_causal_recurrent_ones():
    assert aligned_models() == ALIGNED
    assert [name for name in list_models() if supports_aligned(name)] == ALIGNED


@pytest.mark.parametrize("name", ALIGNED)
def test_output_t_reads_inputs_up_to_t_only(name):
    model = _model(name)
    graphdef, params = nnx.split(model)
    run = jax.jit(lambda x, m: nnx.merge(graphdef, params)(x, m, x.shape[1], aligned=True))
    x, mask = _inputs()
    base = np.asarray(run(x, mask))
    assert base.shape == (B, T_IN, K) and np.isfinite(base).all()
    for k in (0, 2, T_IN - 2):
        later = x.copy()
        later[:, k + 1 :] += 3.0  # change every input after step k
        out = np.asarray(run(later, mask))
        np.testing.assert_array_equal(out[:, : k + 1], base[:, : k + 1])
        assert not np.allclose(out[:, k + 1 :], base[:, k + 1 :])
        now = x.copy()
        now[:, k] += 3.0  # change input k: output k (read after it) changes, the earlier ones do not
        out = np.asarray(run(now, mask))
        np.testing.assert_array_equal(out[:, :k], base[:, :k])
        assert np.abs(out[:, k] - base[:, k]).max() > 1e-6


@pytest.mark.parametrize("name", ALIGNED)
def test_padding_leaves_the_real_outputs_alone(name):
    model = _model(name)
    x, mask = _inputs(1)
    real = np.asarray(model(x, mask, T_IN, aligned=True))
    garbage = np.full((B, 3, D_IN), 50.0, np.float32)
    padded = np.asarray(
        model(
            np.concatenate([x, garbage], 1), np.concatenate([mask, np.zeros((B, 3), bool)], 1), T_IN + 3, aligned=True
        )
    )
    np.testing.assert_allclose(padded[:, :T_IN], real, rtol=1e-5, atol=1e-6)
    if name != "lstm":  # the memory models output zeros on padding steps
        assert not padded[:, T_IN:].any()


@pytest.mark.parametrize("name", ["lstm", "stack_rnn"])
def test_aligned_needs_one_output_per_input_step(name):
    x, mask = _inputs()
    with pytest.raises(ValueError, match=rf"num_outputs: expected T_in = {T_IN} with aligned=True"):
        _model(name)(x, mask, T_IN - 1, aligned=True)


@pytest.mark.parametrize("name", sorted(set(list_models()) - set(ALIGNED)))
def test_models_without_the_mode_refuse_it_by_name(name):
    small = {
        "panm": dict(hidden=8, mlp_hidden=8, address_bits=5),
        "panm_transformer": dict(hidden=8, mlp_hidden=8, address_bits=5, encoder_layers=1, decoder_layers=1),
        "transformer_encoder": dict(hidden=8, num_heads=2, num_layers=1),
    }
    hp = small.get(name, dict(d_model=8, num_heads=2, ffn_hidden=8) if "transformer" in name else dict(hidden=8))
    if name.startswith("universal"):
        hp = dict(d_model=8, num_heads=2, ffn_hidden=8, steps=1)
    elif name.startswith("transformer") and name not in small:
        hp = {**hp, "num_layers": 1}
    model = build_model(name, input_size=D_IN, output_size=K, **hp)
    x, mask = _inputs()
    with pytest.raises(AlignedModeError, match=r"^aligned: model .* has no aligned mode") as err:
        model(x, mask, T_IN, aligned=True)
    assert isinstance(err.value, UserError) and "stack_rnn" in str(err.value)


def test_a_config_pairing_dyck_with_an_encoder_decoder_is_refused_on_model():
    with pytest.raises(ConfigError, match=r"model: the task 'dyck' needs one output per input step") as err:
        load_config(None, ["task=dyck", "model=panm"])
    assert err.value.field == "model" and "stack_lstm" in str(err.value)
    assert load_config(None, ["task=dyck", "model=stack_rnn"]).model == "stack_rnn"


def test_the_eval_step_calls_the_model_in_the_tasks_mode():
    task = get_task("dyck")
    batch = task.sample(np.random.default_rng(0), 3, 8)
    model = build_model("stack_lstm", input_size=task.input_size, output_size=task.output_size, hidden=8, width=3)
    graphdef, state = init_train_state(model, optax.sgd(0.1))
    metrics = make_eval_step(graphdef, task)(state.params, batch)
    steps = batch.targets.shape[1]
    aligned = task.loss(model(batch.inputs, batch.input_mask, steps, aligned=True), batch)
    after_input = task.loss(model(batch.inputs, batch.input_mask, steps), batch)
    np.testing.assert_allclose(float(metrics["loss"]), float(aligned), rtol=1e-6)
    assert abs(float(aligned) - float(after_input)) > 1e-6
    assert jnp.isfinite(aligned)
