"""Dyck D_n: targets against an independent stack checker, the length-bounded sampler, datasets."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from panm_jax.tasks import get_task
from panm_jax.tasks.dyck import DyckGrammar, count_dyck_strings

PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def legal_next(prefix: str, n: int) -> set[str]:
    """Independent checker: after `prefix`, any opening bracket, or the closer of the innermost open one."""
    opens = "([{<"[:n]
    stack = []
    for c in prefix:
        if c in PAIRS:
            stack.append(c)
        else:
            assert stack and PAIRS[stack.pop()] == c, "not a Dyck prefix"
    return set(opens) | ({PAIRS[stack[-1]]} if stack else set())


def is_dyck(s: str) -> bool:
    stack = []
    for c in s:
        if c in PAIRS:
            stack.append(c)
        elif not stack or PAIRS[stack.pop()] != c:
            return False
    return not stack


def test_targets_by_hand():
    # D_2, "([])": after "(" the legal next symbols are ( [ ); after "([" they are ( [ ];
    # after "([]" the innermost open bracket is "(" again, so ( [ ); after "([])" the
    # stack is empty: only the opening brackets (the end is not modelled).
    task = get_task("dyck", n=2)
    b = task.encode([[0, 1, 3, 2]])  # ( [ ] )
    assert task.decode(b).inputs == ["(", "[", "]", ")"]
    assert task.decode(b).targets == ["([)", "([]", "([)", "(["]
    np.testing.assert_array_equal(b.targets[0], [[1, 1, 1, 0], [1, 1, 0, 1], [1, 1, 1, 0], [1, 1, 0, 0]])


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_targets_match_the_independent_checker(n):
    task = get_task("dyck", n=n)
    rng = np.random.default_rng(n)
    lengths = np.array([2, 4, 10, 20, 38, 60, 96, 160])
    b = task.sample(rng, len(lengths), lengths)
    for i, m in enumerate(lengths):
        ex = task.decode(b, i)
        s = "".join(ex.inputs)
        assert len(s) == m and is_dyck(s)
        for t in range(m):
            assert set(ex.targets[t]) == legal_next(s[: t + 1], n)


def test_length_conditioning_equals_rejection_sampling():
    # Draw D_2 strings of length 2..6 two ways: the exact conditioned sampler, and the
    # grammar itself with rejection of strings outside the range. The two empirical
    # distributions over the 50 strings must agree (total variation distance ~0.03 from
    # sampling noise at 20,000 draws; uniform over the strings of each length is 0.26 away).
    g = DyckGrammar(2)
    rng = np.random.default_rng(0)
    N = 20_000
    task = get_task("dyck", n=2, max_train_length=6)
    conditioned = collections.Counter(tuple(g.sample(rng, int(m))) for m in task.sample_lengths(rng, N, "train"))

    def rejection_draw(rng, max_len=6):
        # The grammar top-down with an explicit stack; abandon a draw once it exceeds max_len.
        while True:
            out, stack = [], ["S"]
            while stack and len(out) <= max_len:
                item = stack.pop()
                if item != "S":
                    out.append(item)
                    continue
                u = rng.random()
                if u < 0.5:  # S -> (_i S )_i, p = 0.5, i uniform
                    i = int(rng.integers(2))
                    out.append(i)
                    stack += [i + 2, "S"]
                elif u < 0.75:  # S -> S S, q = 0.25
                    stack += ["S", "S"]
            if not stack and 2 <= len(out) <= max_len:
                return tuple(out)

    rejected = collections.Counter(rejection_draw(rng) for _ in range(N))
    keys = set(conditioned) | set(rejected)
    assert len(keys) == 2 + 8 + 40
    tv = 0.5 * sum(abs(conditioned[k] - rejected[k]) for k in keys) / N
    assert tv < 0.05, tv


def test_length_probabilities_obey_the_grammar_equation():
    g = DyckGrammar(3)
    P = [g.length_probability(k) for k in range(30)]
    r = 0.25
    assert P[0] == pytest.approx(r + 0.25 * P[0] ** 2)
    for k in range(1, 30):
        assert P[k] == pytest.approx(0.5 * P[k - 1] + 0.25 * sum(P[j] * P[k - j] for j in range(k + 1)))


def test_long_strings_need_no_recursion():
    task = get_task("dyck", n=3, max_length=4096)
    b = task.sample(np.random.default_rng(0), 2, 4000)
    assert b.inputs.shape == (2, 4000, 6) and is_dyck("".join(task.decode(b, 1).inputs))


def test_datasets_d2():
    task = get_task("dyck", n=2)
    train = task.dataset("train")
    # Only 1,618 D_2 strings have length 2..10 (< the 5,000 asked): the set is all of them.
    assert task.dataset_size("train") == sum(count_dyck_strings(2, m) for m in range(2, 11, 2)) == 1618
    assert len(set(train)) == len(train)
    assert {k: (r.lo, r.hi) for k, r in task.test_modes.items()} == {
        "L+2": (12, 14),
        "2L": (20, 24),
        "4L": (40, 48),
        "8L": (80, 96),
    }
    test = task.dataset("L+2")
    assert len(test) == len(set(test)) == 5000
    assert all(12 <= len(s) <= 14 for s in test)


def test_datasets_d3_fixed_by_data_seed():
    small = dict(n=3, num_train=300, num_test=200)
    a, b, c = get_task("dyck", **small), get_task("dyck", **small), get_task("dyck", data_seed=1, **small)
    assert a.dataset("train") == b.dataset("train") != c.dataset("train")
    assert len(set(a.dataset("train"))) == 300 and all(2 <= len(s) <= 20 for s in a.dataset("train"))
    assert all(160 <= len(s) <= 192 for s in a.dataset("8L"))
    batches = list(a.eval_batches("8L", batch_size=64))
    assert [x.inputs.shape[0] for x in batches] == [64, 64, 64, 8]
    # Training batches come from the fixed set.
    tb = a.train_batch(np.random.default_rng(0), 16)
    train = set(a.dataset("train"))
    for i in range(16):
        ids = tb.inputs[i][tb.input_mask[i]].argmax(-1)
        assert tuple(ids.tolist()) in train


def test_perfect_logits_score_one():
    task = get_task("dyck", n=3)
    b = task.sample(np.random.default_rng(0), 4, 40)
    logits = np.where(b.targets > 0.5, 3.0, -3.0)
    m = task.metrics(logits, b)
    assert float(m["sequence_accuracy"]) == 1.0 and float(m["step_accuracy"]) == 1.0
