"""Dyck D_n: targets against an independent stack checker, the length-bounded sampler, datasets."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from panm_jax.tasks import get_task
from panm_jax.tasks.base import LengthRange
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


def _grammar_rejection_draw(rng, max_len=6):
    # D_2's grammar top-down with an explicit stack; abandon a draw once it exceeds max_len.
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


def _suzgun_generate(rng, current_size, max_size, n=2, p=0.5, q=0.25):
    """Suzgun et al.'s ``DyckLanguage.generate`` (github.com/suzgunmirac/marnns, tasks/dyck_generator.py),
    transcribed from its logic: the recursion truncated at depth ``max_size``, and a bracket pair or a
    concatenation longer than ``max_size`` replaced by the empty string. Ids: ``0..n-1`` open, ``n..2n-1``."""
    if current_size >= max_size:
        return ()
    u = rng.random()
    if u < p:
        i = int(rng.integers(n))
        sample = (i, *_suzgun_generate(rng, current_size + 2, max_size, n, p, q), i + n)
        return sample if len(sample) <= max_size else ()
    if u < p + q:
        sample = _suzgun_generate(rng, current_size, max_size, n, p, q) + _suzgun_generate(
            rng, current_size, max_size, n, p, q
        )
        return sample if len(sample) <= max_size else ()
    return ()


def _suzgun_draw(rng, lo, hi, n=2):
    # Their generate_list: draw with max_size = hi, reject strings shorter than lo.
    while True:
        s = _suzgun_generate(rng, 0, hi, n)
        if len(s) >= lo:
            return s


def _total_variation(a: collections.Counter, b: collections.Counter, N: int) -> float:
    return 0.5 * sum(abs(a[k] - b[k]) for k in set(a) | set(b)) / N


def test_dataset_strings_follow_suzgun_et_al_s_generator():
    # D_2 strings of length 2..6 two ways: the exact truncated sampler (lengths from F_0, then a string
    # top-down), and a literal transcription of their recursive generator with rejection below 2. The
    # empirical distributions over the 50 strings must agree: at 20,000 draws each, sampling noise gives a
    # total variation distance ~0.03; the grammar conditioned on the range is 0.07 away in the lengths alone.
    g = DyckGrammar(2)
    rng = np.random.default_rng(0)
    N = 20_000
    span = LengthRange(2, 6, 2)
    exact = collections.Counter(tuple(g.sample(rng, int(m), cap=6)) for m in g.sample_length(rng, span, N))
    theirs = collections.Counter(_suzgun_draw(rng, 2, 6) for _ in range(N))
    assert len(set(exact) | set(theirs)) == 2 + 8 + 40
    assert _total_variation(exact, theirs, N) < 0.05


@pytest.mark.parametrize(("n", "mode"), [(3, "train"), (2, "L+2")])
def test_length_histogram_matches_suzgun_et_al_s_generator(n, mode):
    # The lengths sample_lengths draws for a range lo..hi against (1) the exact length distribution of
    # their generator truncated at M = hi, restricted to lo..hi, and (2) a Monte-Carlo run of the literal
    # transcription of it. Each bin may differ by 5 standard deviations of the binomial noise of its
    # sample sizes (a false alarm below 1e-5 over all bins); the grammar conditioned on the range instead
    # differs by 0.04 (D_3, 2..20) and 0.11 (D_2, 12..14) in its largest bin, 8 to 20 of those deviations.
    task = get_task("dyck", n=n)
    span = task.mode_range(mode)
    rng = np.random.default_rng(1)
    N, N_MC = 40_000, 10_000
    bins = np.arange(span.lo, span.hi + 1, 2)
    ours = np.array([np.mean(task.sample_lengths(rng, N, mode) == m) for m in bins])
    table = DyckGrammar(n).truncated_lengths(span.hi)[0, bins // 2]
    exact = table / table.sum()
    theirs_lengths = np.array([len(_suzgun_draw(rng, span.lo, span.hi, n)) for _ in range(N_MC)])
    theirs = np.array([np.mean(theirs_lengths == m) for m in bins])
    sd = np.sqrt(exact * (1 - exact))
    np.testing.assert_array_less(np.abs(ours - exact), 5 * sd / np.sqrt(N) + 1e-12)
    np.testing.assert_array_less(np.abs(theirs - exact), 5 * sd / np.sqrt(N_MC) + 1e-12)


def test_grammar_sampler_equals_rejection_sampling():
    # Strings of a given length (``sample``): the grammar conditioned on the length. D_2, lengths 2..6
    # drawn from the grammar's own P restricted to the range, then a string; against the grammar with
    # rejection outside the range (total variation ~0.03 from noise at 20,000 draws; uniform over the
    # strings of each length is 0.26 away).
    g = DyckGrammar(2)
    rng = np.random.default_rng(0)
    N = 20_000
    P = np.array([g.length_probability(k) for k in (1, 2, 3)])
    lengths = 2 * rng.choice([1, 2, 3], size=N, p=P / P.sum())
    conditioned = collections.Counter(tuple(g.sample(rng, int(m))) for m in lengths)
    rejected = collections.Counter(_grammar_rejection_draw(rng) for _ in range(N))
    assert len(set(conditioned) | set(rejected)) == 2 + 8 + 40
    assert _total_variation(conditioned, rejected, N) < 0.05


def test_truncated_lengths_obey_their_equations():
    g = DyckGrammar(3)
    M = 12
    F = g.truncated_lengths(M)
    K = M // 2
    np.testing.assert_allclose(F.sum(axis=1), 1.0, rtol=1e-13)
    np.testing.assert_array_equal(F[K], np.eye(K + 1)[0])  # c >= M: epsilon
    for d in range(K):
        for k in range(1, K + 1):
            rhs = 0.5 * F[d + 1, k - 1] + 0.25 * sum(F[d, j] * F[d, k - j] for j in range(k + 1))
            assert F[d, k] == pytest.approx(rhs, rel=1e-12)


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


def test_options_are_declared_and_checked():
    from panm_jax.options import declared
    from panm_jax.tasks import task_options
    from panm_jax.tasks.base import TaskOptionError
    from panm_jax.tasks.dyck import DyckTask

    defaults = {
        "n": 2,
        "p": 0.5,
        "q": 0.25,
        "max_train_length": None,  # the paper's L for the number of bracket types
        "num_train": 5000,
        "num_test": 5000,
        "data_seed": 0,
        "max_length": 1024,
        "loss": "bce",
        "train_set": "distinct",
    }
    assert {k: p.default for k, p in task_options("dyck").items()} == defaults
    for entry in declared(DyckTask.Options).values():
        assert entry.allowed and entry.doc and "\n" not in entry.doc, entry
    assert get_task("dyck").options() == {**defaults, "max_train_length": 10}
    assert get_task("dyck", n=3, max_train_length=21).options()["max_train_length"] == 20  # even lengths
    for options, message in (
        ({"n": 0}, "dyck: option n: expected an integer in [1, 4], got 0"),
        ({"loss": "l2"}, "dyck: option loss: expected one of ['bce', 'mse'], got 'l2'"),
        ({"max_train_length": 1}, "dyck: option max_train_length: expected an integer >= 2 or None, got 1"),
        ({"p": 0.0}, "dyck: options p, q: expected p > 0, p + q < 1 and p + 2q <= 1"),
        ({"max_length": 90}, "dyck: option max_length: expected at least 96 (the test bin 8L), got 90"),
    ):
        with pytest.raises(TaskOptionError) as err:
            get_task("dyck", **options)
        assert str(err.value).startswith(message)
    with pytest.raises(TypeError):
        DyckTask(3)  # type: ignore[misc]
