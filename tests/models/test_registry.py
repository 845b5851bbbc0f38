"""The model registry: the one table ``MODELS``, read without importing a model, and the checks of ``build_model``
and of the one call every model answers (``prepare_inputs``)."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from panm_jax.errors import UserError
from panm_jax.models import build_model, get_config, list_models, register_model
from panm_jax.models.registry import MODELS, ModelSpec, _resolve, prepare_inputs
from tests.models.test_model_inputs import SMALL  # each model built small

MODEL_MODULES = (
    "panm_jax.models.panm",
    "panm_jax.models.panm_transformer",
    "panm_jax.models.memory_models",
    "panm_jax.models.lstm",
    "panm_jax.models.attention_models",
    "panm_jax.models.srnn",
    "panm_jax.models.blank_step_rnn",
    "panm_jax.models.transformer_encoder",
)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_entry_names_a_config_dataclass_and_a_builder(name):
    spec = MODELS[name]
    assert spec.module in MODEL_MODULES
    assert dataclasses.is_dataclass(_resolve(spec, spec.config))
    assert callable(_resolve(spec, spec.builder))
    assert type(get_config(name)) is _resolve(spec, spec.config)


def test_listing_the_models_imports_none_of_them():
    code = (
        "import sys; from panm_jax.models import aligned_models, list_models; "
        "assert len(list_models()) == 21 and aligned_models(); "
        f"loaded = [m for m in {MODEL_MODULES!r} if m in sys.modules]; assert not loaded, loaded; "
        "from panm_jax.models import build_model; build_model('lstm', input_size=2, output_size=2, hidden=4); "
        "assert 'panm_jax.models.lstm' in sys.modules and 'panm_jax.models.panm' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_register_model_adds_an_entry_and_refuses_a_taken_name(monkeypatch):
    monkeypatch.setattr("panm_jax.models.registry.MODELS", dict(MODELS))
    from panm_jax.models import registry

    @register_model("lstm_under_test", type(get_config("lstm")), "an LSTM, registered at run time", aligned=True)
    def build(config, input_size, output_size, rngs):
        return _resolve(MODELS["lstm"], MODELS["lstm"].builder)(config, input_size, output_size, rngs)

    assert registry.MODELS["lstm_under_test"] == ModelSpec(
        __name__, type(get_config("lstm")), build, "an LSTM, registered at run time", True
    )
    assert "lstm_under_test" in list_models() and registry.supports_aligned("lstm_under_test")
    build_model("lstm_under_test", input_size=2, output_size=3, hidden=4)
    with pytest.raises(ValueError, match="name: model 'lstm' is already registered"):
        register_model("lstm", object, "a second lstm")(build)


@pytest.mark.parametrize("seed", [1.5, -1, True, "0"])
def test_build_model_refuses_a_seed_that_is_not_a_non_negative_integer(seed):
    with pytest.raises(UserError, match=rf"seed: expected a non-negative integer, got {seed!r}"):
        build_model("lstm", input_size=2, output_size=2, seed=seed)


@pytest.mark.parametrize(
    ("name", "field", "value", "expected"),
    [
        ("panm", "remat", "no", "true or false"),  # the option's own check (panm_jax.options)
        ("panm", "remat", 1, "true or false"),
        ("panm_transformer", "random_base_at_eval", "yes", "true or false"),
        ("panm", "encoder_ffn_hidden", "8", "a positive integer or None"),
    ],
)
def test_build_model_checks_each_value_against_its_field_type(name, field, value, expected):
    """The check a training config's ``model_options`` get, on the direct path too (after the config's own)."""
    with pytest.raises(UserError, match=rf"^{field}: expected {re.escape(expected)}, got {re.escape(repr(value))}$"):
        build_model(name, input_size=2, output_size=2, **{field: value})
    with pytest.raises(UserError, match=r"^hidden: expected a positive integer, got '8'$"):  # the config's own
        build_model("panm", input_size=2, output_size=2, hidden="8")


def test_build_model_refuses_what_a_training_config_refuses_in_the_same_words():
    from panm_jax.train.config import load_config

    with pytest.raises(UserError) as direct:
        build_model("panm", input_size=2, output_size=2, remat="no")
    with pytest.raises(UserError) as config:
        load_config(None, ["model=panm", 'model_options.remat="no"'])
    assert (
        str(config.value)
        == f"model_options.{direct.value}"
        == "model_options.remat: " + ("expected true or false, got 'no'")
    )


def _model_and_batch(name: str):
    model = build_model(name, input_size=3, output_size=2, **SMALL.get(name, {"hidden": 8}))
    inputs = np.random.default_rng(0).normal(size=(2, 4, 3)).astype(np.float32)
    mask = np.array([[True] * 4, [True, True, False, False]])
    return model, inputs, mask


@pytest.mark.parametrize("name", ["panm", "panm_transformer", "ntm", "lstm", "transformer"])  # one per module
def test_an_eager_call_names_nan_at_a_real_step(name):
    """Every model's call starts with ``prepare_inputs`` (``test_model_inputs`` checks its other refusals on each)."""
    model, inputs, mask = _model_and_batch(name)
    inputs[1, 1, 2] = np.nan
    with pytest.raises(ValueError, match=r"inputs: expected no NaN at a real step .*got NaN at example 1, step 1"):
        model(jnp.asarray(inputs), jnp.asarray(mask), 2)


def test_nan_in_padding_is_inert_and_jit_checks_nothing():
    model, inputs, mask = _model_and_batch("lstm")
    clean = np.asarray(model(inputs, mask, 2))
    padded = inputs.copy()
    padded[1, 2:] = np.nan  # padding: not a real step
    np.testing.assert_array_equal(np.asarray(model(padded, mask, 2)), clean)
    real = inputs.copy()
    real[0, 0, 0] = np.nan
    # Under jit the values are not known when the inputs are checked: no check, no host sync.
    out = nnx.jit(lambda m, x, k: m(x, k, 2))(model, jnp.asarray(real), jnp.asarray(mask))
    assert np.isnan(np.asarray(out)[0]).all()


def test_prepare_inputs_checks_only_concrete_values():
    inputs = jnp.full((1, 2, 3), jnp.nan)
    mask = jnp.array([[True, False]])
    with pytest.raises(ValueError, match="got NaN at example 0, step 0"):
        prepare_inputs(inputs, mask, 1)
    traced = jax.jit(lambda x, k: prepare_inputs(x, k, 1)[0])(inputs, mask)
    assert np.isnan(np.asarray(traced)[0, 0]).all() and (np.asarray(traced)[0, 1] == 0).all()


def test_build_model_takes_a_typed_config_in_place_of_hyperparameters():
    """``config=`` (a training config's ``model_config``) builds the model the hyperparameters would."""
    config = get_config("lstm", hidden=5)
    a = build_model("lstm", input_size=2, output_size=3, seed=1, config=config)
    b = build_model("lstm", input_size=2, output_size=3, seed=1, hidden=5)
    for x, y in zip(jax.tree.leaves(nnx.state(a)), jax.tree.leaves(nnx.state(b)), strict=True):
        np.testing.assert_array_equal(x, y)
    with pytest.raises(ValueError, match=r"^config: expected a PANMConfig \(model 'panm'\), got LSTMSeq2SeqConfig$"):
        build_model("panm", input_size=2, output_size=3, config=config)
    with pytest.raises(ValueError, match=r"^config: expected either config or hyperparameters, got both"):
        build_model("lstm", input_size=2, output_size=3, config=config, hidden=6)
