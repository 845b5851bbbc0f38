"""Every registered model and every recorded PANM variant computes, bit for bit, what it computed when
``panm_identity.json`` was written (``tests/models/panm_identity.py`` says what is compared and how to
regenerate the fixture)."""

from __future__ import annotations

import json

import pytest

from tests.models.panm_identity import (
    FIXTURE,
    WIDTHS,
    cpu_kind,
    entry_id,
    environment,
    fingerprint,
    recorded_panm_variants,
    single_options,
)


def _load() -> dict:
    return json.loads(FIXTURE.read_text())


def _cases():
    return [pytest.param(e, id=entry_id(e)) for e in _load()["entries"]]


@pytest.mark.parametrize("entry", _cases())
def test_parameters_and_logits_are_bit_identical(entry):
    fixture = _load()
    recorded = fixture["environment"]
    if recorded != environment():
        pytest.skip(f"bit identity is defined for {recorded}, this is {environment()}")
    kinds = {fixture["cpu"]: None, **fixture.get("other_cpus", {})}
    if cpu_kind() not in kinds:
        pytest.skip(f"bit identity is recorded for the CPU kinds {sorted(kinds)}, this is {cpu_kind()}")
    want = entry["fingerprint"] if cpu_kind() == fixture["cpu"] else kinds[cpu_kind()].get(entry_id(entry))
    if want is None:
        pytest.skip(f"no fingerprint of this entry recorded for {cpu_kind()} (panm_identity.py: --refresh)")
    assert fingerprint(entry) == want


def test_the_fixture_covers_every_recorded_panm_variant_and_option():
    covered = [e["options"] for e in _load()["entries"] if e["model"] == "panm"]
    for variant in recorded_panm_variants() + single_options():
        assert any(dict(variant, **WIDTHS).items() <= options.items() for options in covered), variant
    assert {e["model"] for e in _load()["entries"]} >= {"panm", "panm_transformer"}
