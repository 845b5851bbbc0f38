"""Which PANM decoder a config builds: the paper's without a variant, else the variant's by its name; flat
options (``model_options``) compose into the variant they belong to, and stored flat options convert."""

from __future__ import annotations

import dataclasses

import pytest
from flax import nnx

from panm_jax.models.panm import AUTHORS_CODE, VARIANTS, PANMConfig, decoder_class
from panm_jax.models.registry import get_config, model_options
from panm_jax.modules.panm import DecoderConfig, PANMDecoder
from panm_jax.modules.panm_authors import AuthorsCode, AuthorsDecoder
from panm_jax.modules.panm_extensions import ExtendedDecoder, Ours


@pytest.mark.parametrize(
    ("options", "variant", "cls"),
    [
        ({}, None, PANMDecoder),
        ({"score": "scaled_dot", "learn_temperature": False, "encoder": "bigru", "init": "pytorch"}, None, PANMDecoder),
        ({"random_base_at_eval": True}, None, PANMDecoder),
        ({"distractors": 0, "controller_start": "sum", "mode2_dropout": 0.0}, None, PANMDecoder),  # defaults
        ({"distractors": 4}, Ours(distractors=4), ExtendedDecoder),
        ({"snap_pointers": "eval"}, Ours(snap_pointers="eval"), ExtendedDecoder),
        ({"controller_start": "mean"}, Ours(controller_start="mean"), ExtendedDecoder),
        ({"controller_start": "encoder_final"}, AuthorsCode(controller_start="encoder_final"), AuthorsDecoder),
        ({"mode2_dropout": 0.5}, AuthorsCode(mode2_dropout=0.5), AuthorsDecoder),
        (
            {"eq3_addresses": "authors_view", "controller_start": "encoder_final"},
            AuthorsCode(eq3_addresses="authors_view", controller_start="encoder_final"),
            AuthorsDecoder,
        ),
    ],
)
def test_flat_options_compose_into_their_variant_and_the_decoder_follows_its_name(options, variant, cls):
    config = PANMConfig.from_options(**options)
    assert config.variant == variant
    assert decoder_class(config) is cls
    assert PANMConfig.from_options(**config.to_options()) == config  # the flat form round-trips
    if variant is not None:
        assert VARIANTS[variant.name] == (type(variant), cls)
        assert config == PANMConfig(**{k: v for k, v in options.items() if k in PANMConfig.__annotations__},
                                    variant=variant)  # fmt: skip


def test_the_authors_code_preset_is_one_config_of_their_variant():
    config = get_config("panm", **AUTHORS_CODE)
    assert isinstance(config.variant, AuthorsCode) and decoder_class(config) is AuthorsDecoder
    assert (config.encoder, config.score, config.init, config.random_base_at_eval) == (
        "bigru", "scaled_dot", "pytorch", True
    )  # fmt: skip
    assert config.variant == AuthorsCode(
        eq3_addresses="authors_view", controller_attention=True, mode2_dropout=0.5, attention_projections=True,
        controller_reads_mode2=False, controller_start="encoder_final",
    )  # fmt: skip
    assert config.to_options() == dict(AUTHORS_CODE)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"distractors": 4, "eq3_addresses": "authors_view"},
            r"eq3_addresses: an option of the variant \['authors_code'\], which does not combine with \['ours'\]",
        ),
        (
            {"controller_start": "mean", "mode2_dropout": 0.5},
            r"mode2_dropout: an option of the variant \['authors_code'\], which does not combine with \['ours'\]",
        ),
        (
            {"controller_start": "max"},
            r"controller_start: expected one of \['sum', 'mean'\] \(ours\) or one of \['sum', 'encoder_final'\] "
            r"\(authors_code\), got 'max'",
        ),
        ({"distractors": -1}, r"distractors: expected a non-negative integer, got -1"),
        ({"distractors": 2, "variant": Ours()}, r"variant: given with the options of a variant \['distractors'\]"),
        ({"variant": "ours"}, r"variant: expected None or one of \['Ours', 'AuthorsCode'\], got 'ours'"),
    ],
)
def test_options_of_two_variants_or_a_bad_value_are_refused_by_name(options, message):
    with pytest.raises(ValueError, match=message):
        PANMConfig.from_options(**options)


def test_each_variant_decoder_takes_its_own_variant_only():
    config = DecoderConfig(hidden=4, mlp_hidden=4, address_bits=4)
    with pytest.raises(ValueError, match=r"variant: ExtendedDecoder expected an Ours config, got AuthorsCode"):
        ExtendedDecoder(config, 3, variant=AuthorsCode(), rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"variant: AuthorsDecoder expected an AuthorsCode config, got Ours"):
        AuthorsDecoder(config, 3, variant=Ours(), rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"variant: PANMDecoder expected None, got Ours"):
        PANMDecoder(config, 3, variant=Ours(), rngs=nnx.Rngs(0))
    AuthorsDecoder(config, 3, variant=AuthorsCode(controller_start="encoder_final"), rngs=nnx.Rngs(0))


def test_the_model_options_are_the_papers_fields_then_each_variants():
    names = list(model_options("panm"))
    paper = [f.name for f in dataclasses.fields(DecoderConfig)]
    assert names[: len(paper)] == paper and "variant" not in names
    ours = names.index("distractors")
    assert names[ours:] == [
        "distractors", "distractor_sampling", "snap_pointers", "controller_start",
        "eq3_addresses", "controller_attention", "mode2_dropout", "attention_projections", "controller_reads_mode2",
    ]  # fmt: skip
    assert model_options("panm")["controller_start"].default == "sum"


def test_every_checked_field_is_checked_in_every_config_that_has_it():
    # A subclass that changes a default only keeps the field's check (PANMTransformerConfig's hidden).
    from panm_jax.models.panm_transformer import PANMTransformerConfig

    for cls in (DecoderConfig, PANMConfig, PANMTransformerConfig):
        with pytest.raises(ValueError, match=r"hidden: expected a positive integer, got 0"):
            cls(hidden=0)
        with pytest.raises(ValueError, match=r"mlp_hidden: expected a positive integer, got -1"):
            cls(mlp_hidden=-1)


def test_a_stored_run_config_with_flat_variant_options_loads_into_the_variant():
    # config.json as a run folder holds it (written by panm-jax train before variants were configs of their own)
    from panm_jax.train.config import TrainConfig

    stored = {
        "task": "copy",
        "model": "panm",
        "model_options": {"hidden": 16, "mlp_hidden": 16, "encoder": "bigru", "eq3_addresses": "authors_view",
                          "controller_start": "encoder_final", "mode2_dropout": 0.5},
        "batch_size": 8,
        "num_steps": 4,
    }  # fmt: skip
    config = TrainConfig.from_dict(stored).model_config
    assert (config.hidden, config.encoder) == (16, "bigru")
    assert config.variant == AuthorsCode(
        eq3_addresses="authors_view", controller_start="encoder_final", mode2_dropout=0.5
    )
    assert TrainConfig.from_dict(stored).to_dict()["model_options"] == stored["model_options"]  # kept as written
