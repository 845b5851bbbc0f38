"""PANM's controller start h^c_0: Eq. 7's sum over the real slots (default), their mean, or the encoder's last
hidden state (the authors' code)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from panm_jax.models import panm as panm_models
from panm_jax.models.panm import PANMConfig
from panm_jax.models.registry import build_model
from panm_jax.modules.panm import DecoderConfig
from panm_jax.modules.panm_extensions import ExtendedDecoder, Ours


def _decoder(start: str) -> ExtendedDecoder:
    config = DecoderConfig(hidden=4, address_bits=4, pointer_heads=2, mode2_heads=1, mlp_hidden=4)
    return ExtendedDecoder(config, 3, variant=Ours(controller_start=start), rngs=nnx.Rngs(0))


def test_sum_and_mean_over_the_real_slots_only():
    rng = np.random.default_rng(0)
    memory = rng.normal(size=(2, 5, 4)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    memory[0, 3:] = np.nan  # padded slots: never read
    want_sum = np.stack([memory[0, :3].sum(0), memory[1].sum(0)])
    np.testing.assert_allclose(_decoder("sum").controller_start_state(memory, mask), want_sum, rtol=1e-6)
    np.testing.assert_allclose(
        _decoder("mean").controller_start_state(memory, mask), want_sum / np.array([[3.0], [5.0]]), rtol=1e-6
    )


def test_the_mean_start_does_not_grow_with_the_input_length():
    row = np.ones((1, 1, 4), np.float32)
    for length in (3, 30):
        memory, mask = np.repeat(row, length, axis=1), np.ones((1, length), bool)
        np.testing.assert_allclose(_decoder("mean").controller_start_state(memory, mask), row[:, 0])
        np.testing.assert_allclose(_decoder("sum").controller_start_state(memory, mask), length * row[:, 0])


def test_the_option_reaches_the_model_and_changes_only_the_start():
    x = jnp.asarray(np.random.default_rng(1).normal(size=(2, 4, 5)), jnp.float32)
    mask = jnp.ones((2, 4), bool)
    small = dict(hidden=8, mlp_hidden=8, address_bits=5)
    default = build_model("panm", input_size=5, output_size=3, seed=0, **small)
    mean = build_model("panm", input_size=5, output_size=3, seed=0, controller_start="mean", **small)
    assert default.config.controller_start == "sum" and mean.decoder.variant.controller_start == "mean"
    # Same parameters (the option adds none); different logits, since h^c_0 differs by the factor l(X) = 4.
    assert jax.tree_util.tree_structure(nnx.state(default)) == jax.tree_util.tree_structure(nnx.state(mean))
    assert not np.allclose(default(x, mask, 3), mean(x, mask, 3))
    with pytest.raises(ValueError, match=r"controller_start: expected one of \['sum', 'mean'\] \(ours\) or"):
        PANMConfig.from_options(controller_start="max")


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (dict(address_bits=31), r"address_bits: expected an integer in \[1, 30\], got 31"),
        (dict(score="dot"), r"score: expected one of \['cosine', 'scaled_dot'\], got 'dot'"),
        (dict(mode2_heads=True), r"mode2_heads: expected a non-negative integer, got True"),
        (dict(inverse_temperature=0.0), r"inverse_temperature: expected a finite positive number, got 0.0"),
    ],
)
def test_the_decoder_and_the_model_configs_reject_an_option_with_one_message(option, message):
    # One check (the field's own) serves both: the same mistake reads the same.
    with pytest.raises(ValueError, match=message):
        PANMConfig(**option)
    with pytest.raises(ValueError, match=message):
        DecoderConfig(**{"address_bits": 4, "mlp_hidden": 4, **option})


def test_a_variants_start_is_checked_by_the_variant():
    with pytest.raises(ValueError, match=r"controller_start: expected one of \['sum', 'mean'\], got 'encoder_final'"):
        Ours(controller_start="encoder_final")


def test_encoder_final_starts_the_controller_at_the_recurrent_encoders_last_hidden_state():
    rng = np.random.default_rng(2)
    x = jnp.asarray(rng.normal(size=(2, 6, 5)), jnp.float32)
    mask = jnp.asarray(np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], bool))
    small = dict(hidden=8, mlp_hidden=8, address_bits=5)
    for encoder in ("lstm", "bigru"):
        model = build_model("panm", input_size=5, output_size=3, seed=0, encoder=encoder, **small)
        final = build_model(
            "panm", input_size=5, output_size=3, seed=0, encoder=encoder, controller_start="encoder_final", **small
        )
        # The option adds no parameters; the models differ only in h^c_0.
        assert jax.tree_util.tree_structure(nnx.state(model)) == jax.tree_util.tree_structure(nnx.state(final))
        memory, state = final.encoder(x, mask)
        last = state[0]  # LSTM (h, c): h; BiGRU (h_fwd, h_bwd): the forward direction
        # The forward direction's last real step: the state after x_1..x_l(X), padding carried through.
        steps = [final.encoder(x[:, : n + 1], mask[:, : n + 1])[1][0] for n in range(6)]
        np.testing.assert_allclose(last[0], steps[3][0], rtol=1e-6)  # example 0: l(X) = 4
        np.testing.assert_allclose(last[1], steps[5][1], rtol=1e-6)
        carry = final.decoder.start(final.decoder.context(memory, mask, jnp.zeros((2,), jnp.int32), encoder_final=last))
        np.testing.assert_allclose(carry.ctrl_hidden, last)
        base, options = panm_models.decoding_options(final.config, 2, False, None)
        want = final.decoder(memory, mask, base, 3, encoder_final=last, **options)
        np.testing.assert_allclose(final(x, mask, 3), want, rtol=1e-6)
        assert not np.allclose(model(x, mask, 3), final(x, mask, 3))
        with pytest.raises(ValueError, match=r"encoder_final: expected the encoder's final hidden state"):
            final.decoder(memory, mask, base, 3, **options)


def test_encoder_final_needs_a_recurrent_encoder():
    with pytest.raises(ValueError, match=r"controller_start: 'encoder_final' takes the last hidden state"):
        PANMConfig.from_options(controller_start="encoder_final", encoder="transformer", hidden=16)
