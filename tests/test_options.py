"""The option primitive (``panm_jax.options.option``): one declaration carries an option's default, check,
allowed values and meaning; ``checks.expects`` says in each check's own words what it accepts."""

from __future__ import annotations

import dataclasses

import pytest

from panm_jax import checks
from panm_jax.errors import UserError
from panm_jax.options import check_options, declared, option


@dataclasses.dataclass(frozen=True)
class _Config:
    width: int = option(8, checks.positive_int, doc="cells per row")
    bits: int = option(10, checks.integer, 1, 30, doc="b: 2^b addresses")
    mode: str = option("sum", checks.one_of, ("sum", "mean"), doc="how the start is made")
    rate: float = option(0.0, checks.number, 0.0, 1.0, hi_open=True, doc="dropout")
    plain: int = 3

    def __post_init__(self):
        check_options(self)


@dataclasses.dataclass(frozen=True)
class _Wider(_Config):
    width: int = 64  # a subclass changes the default only


def test_a_declaration_carries_default_check_allowed_values_and_meaning():
    found = declared(_Config)
    assert list(found) == ["width", "bits", "mode", "rate", "plain"]
    assert found["width"] == ("width", 8, "a positive integer", "cells per row")
    assert found["bits"].allowed == "an integer in [1, 30]"
    assert found["mode"].allowed == "one of ['sum', 'mean']"
    assert found["rate"].allowed == "a number in [0, 1)"
    assert found["plain"] == ("plain", 3, "", "")  # not declared with option: nothing to read
    with pytest.raises(UserError, match=r"bits: expected an integer in \[1, 30\], got 31"):
        _Config(bits=31)
    with pytest.raises(UserError, match=r"mode: expected one of \['sum', 'mean'\], got 'max'"):
        _Config(mode="max")


def test_a_subclass_that_changes_a_default_keeps_the_declaration():
    assert declared(_Wider)["width"] == ("width", 64, "a positive integer", "cells per row")
    with pytest.raises(UserError, match=r"width: expected a positive integer, got 0"):
        _Wider(width=0)


def test_the_meaning_is_one_line_and_required():
    with pytest.raises(ValueError, match=r"doc: expected one line"):
        option(1, checks.positive_int, doc="")
    with pytest.raises(ValueError, match=r"doc: expected one line"):
        option(1, checks.positive_int, doc="two\nlines")
    field = option(None, lambda name, value: None, allowed="a positive integer or None", doc="an optional width")
    assert field.metadata["allowed"] == "a positive integer or None"


@pytest.mark.parametrize(
    ("check", "args", "kwargs", "bad"),
    [
        (checks.integer, (1, 30), {}, 31),
        (checks.integer, (None, 5), {}, 6),
        (checks.integer, (2,), {"why": "a pair"}, 1),
        (checks.integer, (), {}, 1.5),
        (checks.positive_int, (), {}, 0),
        (checks.nonnegative_int, (), {}, -1),
        (checks.odd_int, (), {}, 4),
        (checks.number, (0.0, 1.0), {"hi_open": True}, 1.0),
        (checks.number, (0.0,), {"lo_open": True}, 0.0),
        (checks.number, (None, 2.0), {}, 3.0),
        (checks.finite_number, (), {}, float("nan")),
        (checks.positive_number, (), {}, 0.0),
        (checks.probability, (), {}, 1.5),
        (checks.boolean, (), {}, "yes"),
        (checks.one_of, (("a", "b"),), {}, "c"),
        (checks.optional_integer, (2, 9), {}, 1),
        (checks.optional_integer, (0,), {}, "x"),
        (checks.optional_positive_int, (), {}, 0),
        (checks.optional_positive_number, (), {}, -1.0),
    ],
)
def test_what_a_check_expects_is_what_its_message_says(check, args, kwargs, bad):
    with pytest.raises(UserError) as err:
        check("x", bad, *args, **kwargs)
    assert str(err.value).startswith(f"x: expected {checks.expects(check, *args, **kwargs)}, got {bad!r}")
