"""M10AE: the shift-reduce evaluator (the M10AE appendix, Algorithms 1-3; docs/references.md) against Python,
and the generator."""

from __future__ import annotations

import numpy as np
import pytest

from panm_jax.tasks import get_task
from panm_jax.tasks.m10ae import SYMBOLS, evaluate_mod10, generate_expression, nesting_depth


def _text(tokens):
    return "".join(SYMBOLS[t] for t in tokens)


@pytest.mark.parametrize(
    "expr, value",
    [
        ("7", 7),
        ("3+4*2", 1),  # precedence: 3 + 8 = 11
        ("8-3-2", 3),  # left-associative: (8 - 3) - 2, not 8 - (3 - 2) = 7
        ("2*3*4", 4),  # 24
        ("9-9*9", 8),  # 9 - 81 = -72 = 8 mod 10
        ("(2+3)*4", 0),  # 20
        ("2*(3+4)", 4),  # 14: the ')' reduction (slip 3) yields a numeral that then reduces with (2, *)
        ("((7))", 7),  # slips 2 and 3: numeral over a bare '(' before ')', then ')' over ('(', 7)
        ("2-(3)*4", 0),  # 2 - 12 = -10
        ("1+2*3-4*5+6", 3),  # 1 + 6 - 20 + 6 = -7
    ],
)
def test_evaluator_by_hand(expr, value):
    assert evaluate_mod10(expr) == value == eval(expr) % 10


def test_evaluator_agrees_with_python_on_10000_expressions():
    rng = np.random.default_rng(2024)
    for _ in range(10_000):
        n = int(2 * rng.integers(0, 31) + 1)  # 1..61 tokens
        depth = int(rng.integers(0, 9))
        tokens = generate_expression(rng, n, depth, float(rng.uniform(0.0, 0.6)))
        text = _text(tokens)
        assert evaluate_mod10(tokens) == eval(text) % 10, text


def test_malformed_expressions_are_refused():
    for bad in ("3+", "(3", "3)", "34", "+3"):
        with pytest.raises(ValueError, match="tokens: expected a well-formed expression"):
            evaluate_mod10(bad)
    with pytest.raises(ValueError, match="expression: expected only the symbols"):
        evaluate_mod10("3/4")


def _depth(text):
    d = best = 0
    for c in text:
        d += c == "("
        d -= c == ")"
        best = max(best, d)
    return best


def test_generator_controls_length_and_depth():
    rng = np.random.default_rng(0)
    for n in (1, 3, 9, 41, 153):
        for depth in (0, 1, 3):
            tokens = generate_expression(rng, n, depth, 0.5)
            assert len(tokens) == n
            assert _depth(_text(tokens)) <= depth
    assert "(" not in _text(generate_expression(rng, 99, 0, 1.0))
    assert _depth(_text(generate_expression(rng, 41, 5, 1.0))) == 5  # always parenthesise while allowed
    with pytest.raises(ValueError, match="num_tokens: expected an odd positive integer, got 4"):
        generate_expression(rng, 4)


def test_task_batches_carry_the_label_of_the_decoded_expression():
    task = get_task("m10ae")
    b = task.sample(np.random.default_rng(1), 32, 21)
    assert b.inputs.shape == (32, 23, 17) and b.targets.shape == (32, 1)
    for i in range(32):
        ex = task.decode(b, i)
        assert ex.inputs[0] == "<s>" and ex.inputs[-1] == "</s>"
        assert int(ex.targets[0]) == eval("".join(ex.inputs[1:-1])) % 10


def test_modes():
    task = get_task("m10ae")
    assert task.train_lengths.values().tolist() == list(range(1, 20, 2))
    assert {k: v.lo for k, v in task.test_modes.items()} == {"L": 19, "L+2": 21, "2L+1": 39, "4L+1": 77, "8L+1": 153}


@pytest.mark.parametrize("expr, depth", [("7", 0), ("3+4*2", 0), ("(3)", 1), ("(3+(4*2))-1", 2), ("(1)+((2))", 2)])
def test_nesting_depth(expr, depth):
    assert nesting_depth(expr) == depth


def test_nesting_depth_refuses_unbalanced_parentheses():
    for expr in ("(3", "3)", ")3("):
        with pytest.raises(ValueError, match="expected balanced parentheses"):
            nesting_depth(expr)


def test_batches_by_depth_group_every_example_by_its_depth():
    task = get_task("m10ae", max_depth=3, paren_prob=0.4)
    groups = task.batches_by_depth(np.random.default_rng(0), 39, 200)
    assert list(groups) == sorted(groups) and len(groups) > 1 and max(groups) <= 3
    assert sum(b.inputs.shape[0] for b in groups.values()) == 200
    for depth, b in groups.items():
        for i in range(b.inputs.shape[0]):
            ex = task.decode(b, i)
            text = "".join(ex.inputs[1:-1])
            assert len(text) == 39 and nesting_depth(text) == depth
            assert int(ex.targets[0]) == eval(text) % 10
    with pytest.raises(ValueError, match="length: expected"):
        task.batches_by_depth(np.random.default_rng(0), 40, 10)
    with pytest.raises(ValueError, match="num_examples: expected"):
        task.batches_by_depth(np.random.default_rng(0), 39, 0)


def test_options_are_declared_and_checked():
    from panm_jax.options import declared
    from panm_jax.tasks import task_options
    from panm_jax.tasks.base import TaskOptionError
    from panm_jax.tasks.m10ae import M10AETask

    defaults = {"max_train_length": 19, "max_depth": 4, "paren_prob": 0.25, "max_length": 1021}
    assert {k: p.default for k, p in task_options("m10ae").items()} == defaults
    for entry in declared(M10AETask.Options).values():
        assert entry.allowed and entry.doc and "\n" not in entry.doc, entry
    assert get_task("m10ae").options() == defaults
    assert get_task("m10ae", max_train_length=3, max_length=30).options()["max_length"] == 29  # odd lengths
    for options, message in (
        ({"max_train_length": 0}, "m10ae: option max_train_length: expected a positive integer, got 0"),
        ({"max_depth": -1}, "m10ae: option max_depth: expected a non-negative integer, got -1"),
        ({"paren_prob": 2}, "m10ae: option paren_prob: expected a number in [0, 1], got 2"),
        ({"max_length": 100}, "m10ae: option max_train_length: expected 8 * L + 1 <= max_length = 99, got L = 19"),
    ):
        with pytest.raises(TaskOptionError) as err:
            get_task("m10ae", **options)
        assert str(err.value) == message
