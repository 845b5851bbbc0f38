"""Which PANM decoder a config builds: the paper's unless a variant's option is set, and each variant's
decoder refuses what it does not implement."""

from __future__ import annotations

import dataclasses

import pytest
from flax import nnx

from panm_jax.models.panm import PANMConfig, decoder_class
from panm_jax.modules.panm import DecoderConfig, PANMDecoder
from panm_jax.modules.panm_authors import AuthorsConfig, AuthorsDecoder
from panm_jax.modules.panm_extensions import ExtendedDecoder, ExtensionsConfig


@pytest.mark.parametrize(
    ("options", "cls"),
    [
        ({}, PANMDecoder),
        ({"score": "scaled_dot", "learn_temperature": False, "encoder": "bigru", "init": "pytorch"}, PANMDecoder),
        ({"random_base_at_eval": True}, PANMDecoder),
        ({"distractors": 4}, ExtendedDecoder),
        ({"snap_pointers": "eval"}, ExtendedDecoder),
        ({"controller_start": "mean"}, ExtendedDecoder),
        ({"controller_start": "encoder_final"}, AuthorsDecoder),
        ({"mode2_dropout": 0.5}, AuthorsDecoder),
        ({"eq3_addresses": "authors_view", "distractors": 4}, AuthorsDecoder),
    ],
)
def test_the_paper_decoder_unless_a_variants_option_is_set(options, cls):
    assert decoder_class(PANMConfig(**options)) is cls


def test_a_variant_decoder_refuses_a_start_it_does_not_implement():
    config = ExtensionsConfig(hidden=4, mlp_hidden=4, address_bits=4, controller_start="encoder_final")
    with pytest.raises(ValueError, match=r"controller_start: ExtendedDecoder starts from one of \['sum', 'mean'\]"):
        ExtendedDecoder(config, 3, rngs=nnx.Rngs(0))
    AuthorsDecoder(AuthorsConfig(**dataclasses.asdict(config)), 3, rngs=nnx.Rngs(0))  # its own start


def test_every_checked_field_is_checked_in_every_config_that_has_it():
    # A subclass that changes a default only keeps the field's check (PANMTransformerConfig's hidden).
    from panm_jax.models.panm_transformer import PANMTransformerConfig

    for cls in (DecoderConfig, ExtensionsConfig, AuthorsConfig, PANMConfig, PANMTransformerConfig):
        with pytest.raises(ValueError, match=r"hidden: expected a positive integer, got 0"):
            cls(hidden=0)
        with pytest.raises(ValueError, match=r"mlp_hidden: expected a positive integer, got -1"):
            cls(mlp_hidden=-1)
