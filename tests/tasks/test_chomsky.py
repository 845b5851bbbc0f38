"""The 15 Chomsky-hierarchy tasks (Delétang et al. 2023): answers checked by independent solvers, shapes, options.

Every generated example is read back from its one-hot input rows as symbols
and solved here from the task's definition (Python ``eval`` for the
arithmetic, Python integers and ``math.isqrt`` for the binary tasks, a list
stack, a cycle walk, ``sorted``, brute force over ``x``), then compared with
the generated targets.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from panm_jax.tasks.base import Batch, DecodedExample, Task, TaskOptionError
from panm_jax.tasks.chomsky import CHOMSKY_TASKS, MAX_LENGTH

NAMES = list(CHOMSKY_TASKS)

# name -> (level, input_size, output_size, min_length, T_in(N), T_out(N))
SPEC = {
    "even_pairs": ("regular", 2, 2, 1, lambda n: n, lambda n: 1),
    "modular_arithmetic": ("regular", 8, 5, 1, lambda n: n if n % 2 else n - 1, lambda n: 1),
    "parity_check": ("regular", 2, 2, 1, lambda n: n, lambda n: 1),
    "cycle_navigation": ("regular", 3, 5, 1, lambda n: n, lambda n: 1),
    "modular_arithmetic_brackets": ("context_free", 10, 5, 1, lambda n: n, lambda n: 1),
    "reverse_string": ("context_free", 2, 2, 1, lambda n: n, lambda n: n),
    "solve_equation": ("context_free", 11, 5, 3, lambda n: n, lambda n: 1),
    "stack_manipulation": ("context_free", 5, 3, 1, lambda n: n, lambda n: n + 1),
    "duplicate_string": ("context_sensitive", 2, 2, 1, lambda n: n, lambda n: 2 * n),
    "missing_duplicate": ("context_sensitive", 4, 2, 2, lambda n: n, lambda n: 1),
    "odds_first": ("context_sensitive", 2, 2, 1, lambda n: n, lambda n: n),
    "binary_addition": ("context_sensitive", 3, 3, 3, lambda n: n, lambda n: n + 1),
    "binary_multiplication": ("context_sensitive", 3, 3, 3, lambda n: n, lambda n: n),
    "compute_sqrt": ("context_sensitive", 2, 2, 1, lambda n: n, lambda n: math.ceil(n / 2)),
    "bucket_sort": ("context_sensitive", 5, 5, 1, lambda n: n, lambda n: n),
}

LENGTHS = (1, 2, 3, 4, 5, 40, 41, 137, 500)


def _task(name, **options) -> Task:
    return CHOMSKY_TASKS[name](**options)


def _lengths(task):
    return [n for n in LENGTHS if n >= task.lengths.lo]


def _read(task, batch: Batch, i: int) -> tuple[list[str], list[str]]:
    """Example ``i`` as (input symbols, target symbols), read from the one-hot rows and the class ids."""
    rows = batch.inputs[i][batch.input_mask[i]]
    assert ((rows == 0) | (rows == 1)).all() and (rows.sum(-1) == 1).all(), "input rows must be one-hot"
    src = [task.input_vocab[j] for j in rows.argmax(-1)]
    tgt = [task.output_vocab[j] for j in batch.targets[i][batch.target_mask[i]]]
    return src, tgt


# ------------------------------------------------------------------ solvers


def _mod5(expr: str) -> int:
    return eval(expr, {"__builtins__": {}}) % 5  # noqa: S307 - digits, + - * ( ) x only


def solve_even_pairs(s):
    pairs = sum(1 for p, q in zip(s, s[1:]) if p + q in ("ab", "ba"))
    return ["even" if pairs % 2 == 0 else "odd"]


def solve_modular_arithmetic(s):
    assert len(s) % 2 == 1
    assert all(t in "01234" for t in s[0::2]) and all(t in "+-*" for t in s[1::2])
    return [str(_mod5("".join(s)))]


def solve_parity_check(s):
    return ["even" if s.count("b") % 2 == 0 else "odd"]


def solve_cycle_navigation(s):
    pos = 0
    for a in s:
        pos = (pos + {"stay": 0, "+1": 1, "-1": -1}[a]) % 5
    return [str(pos)]


def solve_modular_arithmetic_brackets(s):
    assert "x" not in s and "=" not in s
    return [str(_mod5("".join(s)))]


def solve_reverse_string(s):
    return s[::-1]


def solve_solve_equation(s):
    assert s.count("x") == 1 and s.count("=") == 1 and s[-2] == "=" and "*" not in s
    lhs, rhs = "".join(s).split("=")
    solutions = [v for v in range(5) if _mod5(lhs.replace("x", str(v))) == int(rhs)]
    assert len(solutions) == 1, (lhs, rhs, solutions)
    return [str(solutions[0])]


def solve_stack_manipulation(s):
    k = 0
    while k < len(s) and s[k] in ("a", "b"):
        k += 1
    assert k >= 1 and all(a in ("POP", "PUSH a", "PUSH b") for a in s[k:])
    assert k <= max(len(s) - 1, 1)  # at least one action unless N = 1
    stack = list(s[:k])
    for a in s[k:]:
        if a == "POP":
            if stack:
                stack.pop()
        else:
            stack.append(a[-1])
    out = stack[::-1] + ["END"]
    return out + ["END"] * (len(s) + 1 - len(out))


def solve_duplicate_string(s):
    return s + s


def solve_missing_duplicate(s):
    h = len(s) // 2
    assert s[2 * h :] == ["#"] * (len(s) % 2) and "#" not in s[: 2 * h]
    assert s.count("_") == 1
    p = s.index("_")
    answer = s[(p + h) % (2 * h)]
    filled = s[: 2 * h]
    filled[p] = answer
    assert filled[:h] == filled[h:]
    return [answer]


def solve_odds_first(s):
    return s[0::2] + s[1::2]


def _operands(s, op):
    assert s.count(op) == 1
    p, q = "".join(s).split(op)
    assert p and q and set(p + q) <= {"0", "1"}
    p, q = int(p[::-1], 2), int(q[::-1], 2)  # little-endian
    assert p >= 1 and q >= 1
    return p, q


def _little_endian(value, steps):
    bits = list(bin(value)[2:][::-1]) + ["END"]
    assert len(bits) <= steps
    return bits + ["END"] * (steps - len(bits))


def solve_binary_addition(s):
    p, q = _operands(s, "+")
    return _little_endian(p + q, len(s) + 1)


def solve_binary_multiplication(s):
    p, q = _operands(s, "*")
    return _little_endian(p * q, len(s))


def solve_compute_sqrt(s):
    v = int("".join(s), 2)  # big-endian
    assert v >= 1
    return list(format(math.isqrt(v), f"0{math.ceil(len(s) / 2)}b"))


def solve_bucket_sort(s):
    return sorted(s)


SOLVERS = {name: globals()[f"solve_{name}"] for name in NAMES}


# -------------------------------------------------------------------- tests


def test_registry_dict_names_order_and_levels():
    assert NAMES == [
        "even_pairs",
        "modular_arithmetic",
        "parity_check",
        "cycle_navigation",
        "modular_arithmetic_brackets",
        "reverse_string",
        "solve_equation",
        "stack_manipulation",
        "duplicate_string",
        "missing_duplicate",
        "odds_first",
        "binary_addition",
        "binary_multiplication",
        "compute_sqrt",
        "bucket_sort",
    ]
    for name, cls in CHOMSKY_TASKS.items():
        assert issubclass(cls, Task) and cls.name == name
        assert cls.level == SPEC[name][0]
        task = cls()
        assert (task.input_size, task.output_size) == SPEC[name][1:3]
        assert task.target_kind == "classes" and task.output_mode == "after_input"
        assert task.metric_names == ("token_accuracy", "sequence_accuracy")
        assert task.length_sampling == "per_batch"


@pytest.mark.parametrize("name", NAMES)
def test_answers_match_an_independent_solver(name):
    task = _task(name)
    rng = np.random.default_rng(123)
    solve = SOLVERS[name]
    for n in _lengths(task):
        batch = task.sample(rng, 24 if n >= 137 else 64, n)
        for i in range(batch.inputs.shape[0]):
            src, tgt = _read(task, batch, i)
            assert len(src) == SPEC[name][4](n) and len(tgt) == SPEC[name][5](n)
            assert tgt == solve(list(src)), (name, n, src, tgt)


@pytest.mark.parametrize("name", NAMES)
def test_shapes_masks_dtypes_and_class_ids(name):
    task = _task(name)
    _, d_in, k, _, t_in, t_out = SPEC[name]
    rng = np.random.default_rng(0)
    for n in _lengths(task):
        assert task.input_steps(n) == t_in(n) and task.output_steps(n) == t_out(n)
        b = task.sample(rng, 3, n)
        assert b.inputs.shape == (3, t_in(n), d_in) and b.inputs.dtype == np.float32
        assert b.input_mask.shape == (3, t_in(n)) and b.input_mask.dtype == bool and b.input_mask.all()
        assert b.targets.shape == (3, t_out(n)) and b.targets.dtype == np.int32
        assert b.target_mask.shape == (3, t_out(n)) and b.target_mask.dtype == bool and b.target_mask.all()
        assert ((0 <= b.targets) & (b.targets < k)).all()


@pytest.mark.parametrize("name", NAMES)
def test_mixed_lengths_are_padded_and_each_example_still_solved(name):
    task = _task(name)
    lengths = np.array([task.lengths.lo, 41, 7, 41, 90])
    b = task.sample(np.random.default_rng(5), 5, lengths)
    _, _, _, _, t_in, t_out = SPEC[name]
    assert b.inputs.shape[1] == t_in(90) and b.targets.shape[1] == t_out(90)
    for i, n in enumerate(lengths):
        assert b.input_mask[i].sum() == t_in(n) and b.input_mask[i, : t_in(n)].all()
        assert b.target_mask[i].sum() == t_out(n) and b.target_mask[i, : t_out(n)].all()
        assert not b.inputs[i, t_in(n) :].any() and not b.targets[i, t_out(n) :].any()
        src, tgt = _read(task, b, i)
        assert tgt == SOLVERS[name](src)


@pytest.mark.parametrize("name", NAMES)
def test_determinism_from_the_rng(name):
    task = _task(name)
    a = task.sample(np.random.default_rng(7), 6, 60)
    b = task.sample(np.random.default_rng(7), 6, 60)
    c = task.sample(np.random.default_rng(8), 6, 60)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a.inputs, c.inputs)
    ta = task.test_batch(np.random.default_rng(3), 4, "41-500")
    tb = task.test_batch(np.random.default_rng(3), 4, "41-500")
    for x, y in zip(ta, tb):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("name", NAMES)
def test_length_modes(name):
    task = _task(name)
    lo = SPEC[name][3]
    assert (task.train_lengths.lo, task.train_lengths.hi) == (lo, 40)
    assert list(task.test_modes) == ["41-500", f"{task.min_length}-40"]
    assert (task.test_modes["41-500"].lo, task.test_modes["41-500"].hi) == (41, 500)
    assert (task.lengths.lo, task.lengths.hi) == (lo, MAX_LENGTH)
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(50):
        lengths = task.sample_lengths(rng, 8, "train")
        assert len(set(lengths.tolist())) == 1 and lo <= lengths[0] <= 40
        seen.add(int(lengths[0]))
        test = task.sample_lengths(rng, 8, "41-500")
        assert len(set(test.tolist())) == 1 and 41 <= test[0] <= 500
    assert len(seen) > 20  # uniform over the range, not a fixed length
    other = _task(name, max_train_length=10, max_test_length=20)
    assert other.train_lengths.hi == 10 and list(other.test_modes) == ["11-20", f"{other.min_length}-10"]
    padding = {"padding": "end"} if task.end_symbol is not None else {}  # the tasks whose answers end with END
    assert other.options() == {"max_train_length": 10, "max_test_length": 20, **padding}
    assert task.options() == {"max_train_length": 40, "max_test_length": 500, **padding}


@pytest.mark.parametrize("name", NAMES)
def test_option_and_length_errors(name):
    lo = SPEC[name][3]
    with pytest.raises(TaskOptionError, match=rf"{name}: unknown option.*'bogus'"):
        _task(name, bogus=1)
    # The declared check first (the bounds every Chomsky task has), then the bounds of this task and of L.
    for bad in ("40", True, 4.0, MAX_LENGTH):
        with pytest.raises(
            TaskOptionError, match=rf"{name}: option max_train_length: expected an integer in \[1, 4095"
        ):
            _task(name, max_train_length=bad)
    with pytest.raises(TaskOptionError, match=rf"{name}: option max_train_length: expected an integer in \[{lo}, 4095"):
        _task(name, max_train_length=lo - 1)
    for bad in (MAX_LENGTH + 1, "500"):
        with pytest.raises(TaskOptionError, match=rf"{name}: option max_test_length: expected an integer in \[2, 4096"):
            _task(name, max_test_length=bad)
    for bad in (40, 12):
        with pytest.raises(TaskOptionError, match=rf"{name}: option max_test_length: expected an integer in \[41, "):
            _task(name, max_test_length=bad)
    task = _task(name)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=rf"length: expected an integer in \[{lo}, {MAX_LENGTH}\], got {lo - 1}"):
        task.sample(rng, 2, lo - 1)
    with pytest.raises(ValueError, match=rf"got {MAX_LENGTH + 1}"):
        task.sample(rng, 2, MAX_LENGTH + 1)
    with pytest.raises(ValueError, match="mode: expected one of"):
        task.sample_lengths(rng, 2, "41-400")


@pytest.mark.parametrize("name", NAMES)
def test_decode_round_trip(name):
    task = _task(name)
    b = task.sample(np.random.default_rng(2), 3, np.array([50, task.lengths.lo, 9]))
    for i in range(3):
        d = task.decode(b, i)
        assert isinstance(d, DecodedExample)
        assert (d.inputs, d.targets) == _read(task, b, i)
        ids = [task.input_vocab.index(s) for s in d.inputs]
        np.testing.assert_array_equal(b.inputs[i][b.input_mask[i]].argmax(-1), ids)
        assert [task.output_vocab.index(s) for s in d.targets] == b.targets[i][b.target_mask[i]].tolist()


def _perfect_logits(task, batch):
    return jnp.asarray(np.eye(task.output_size, dtype=np.float32)[batch.targets] * 10.0)


@pytest.mark.parametrize("name", NAMES)
def test_metrics_and_loss(name):
    task = _task(name)
    b = task.sample(np.random.default_rng(4), 8, 30)
    logits = _perfect_logits(task, b)
    m = task.metrics(logits, b)
    assert list(m) == ["token_accuracy", "sequence_accuracy"]
    assert float(m["token_accuracy"]) == 1.0 and float(m["sequence_accuracy"]) == 1.0
    assert float(task.loss(logits, b)) < 1e-3
    noisy = jnp.asarray(np.random.default_rng(1).normal(size=logits.shape), dtype=jnp.float32)
    jitted, eager = jax.jit(task.metrics)(noisy, b), task.metrics(noisy, b)
    assert all(float(jitted[k]) == pytest.approx(float(eager[k])) for k in eager)
    # Every first output step wrong: no sequence right, token accuracy drops.
    wrong = logits.at[:, 0].set(jnp.roll(logits[:, 0], 1, axis=-1))
    m = task.metrics(wrong, b)
    assert float(m["sequence_accuracy"]) == 0.0 and float(m["token_accuracy"]) < 1.0


@pytest.mark.parametrize("name", ["stack_manipulation", "binary_addition", "binary_multiplication"])
def test_metrics_stop_at_the_first_end_symbol(name):
    task = _task(name)
    end = task.output_vocab.index("END")
    b = task.sample(np.random.default_rng(9), 16, 25)
    t = np.arange(b.targets.shape[1])[None, :]
    first_end = (b.targets == end).argmax(axis=1)[:, None]
    assert ((b.targets == end) == (t >= first_end)).all()  # the answer, END, then END padding
    assert (first_end[:, 0] < b.targets.shape[1] - 1).any()  # some padding exists to be ignored
    np.testing.assert_array_equal(np.asarray(task.scored_mask(b)), t <= first_end)
    logits = np.asarray(_perfect_logits(task, b)).copy()
    after = t > first_end
    logits[after] = np.roll(logits[after], 1, axis=-1)  # wrong only on the padding after the first END
    m = task.metrics(jnp.asarray(logits), b)
    assert float(m["token_accuracy"]) == 1.0 and float(m["sequence_accuracy"]) == 1.0
    # The loss still covers the padding: about 10 nats on each of those steps.
    assert float(task.loss(jnp.asarray(logits), b)) == pytest.approx(10.0 * after.mean(), rel=1e-2)
    at_end = t == first_end
    logits[at_end] = np.roll(logits[at_end], 1, axis=-1)  # now the END step itself is wrong
    m = task.metrics(jnp.asarray(logits), b)
    assert float(m["sequence_accuracy"]) == 0.0
    scored = (t <= first_end).sum()
    assert float(m["token_accuracy"]) == pytest.approx(1.0 - 16 / scored, abs=1e-6)


@pytest.mark.parametrize("name", ["stack_manipulation", "binary_addition", "binary_multiplication"])
def test_zero_padding_changes_only_the_steps_after_the_first_end(name):
    """``padding="zero"``: the released code's layout (the answer, END, then output 0); the same draws otherwise."""
    ended, zeroed = _task(name), _task(name, padding="zero")
    assert ended.options()["padding"] == "end" and zeroed.options()["padding"] == "zero"
    lengths = np.array([SPEC[name][3], 7, 25, 40, 90] * 3)
    a = ended.sample(np.random.default_rng(4), len(lengths), lengths)
    z = zeroed.sample(np.random.default_rng(4), len(lengths), lengths)
    np.testing.assert_array_equal(a.inputs, z.inputs)
    np.testing.assert_array_equal(a.input_mask, z.input_mask)
    np.testing.assert_array_equal(a.target_mask, z.target_mask)
    scored = np.asarray(ended.scored_mask(a))
    np.testing.assert_array_equal(scored, np.asarray(zeroed.scored_mask(z)))
    np.testing.assert_array_equal(a.targets[scored], z.targets[scored])
    after = np.asarray(a.target_mask) & ~scored  # the padding: after the first END, within T_out
    assert after.any()
    assert (a.targets[after] == ended.end_symbol).all() and (z.targets[after] == 0).all()
    for i in range(len(lengths)):  # each answer still the solver's, up to and including its END
        src, tgt = _read(zeroed, z, i)
        want = SOLVERS[name](src)
        k = want.index("END")
        assert tgt[: k + 1] == want[: k + 1] and set(tgt[k + 1 :]) <= {zeroed.output_vocab[0]}
    # The metrics read the same steps: a model right on the answers and wrong on the padding scores 1 either way.
    for task, b in ((ended, a), (zeroed, z)):
        logits = np.asarray(_perfect_logits(task, b)).copy()
        logits[after] = np.roll(logits[after], 1, axis=-1)
        m = task.metrics(jnp.asarray(logits), b)
        assert float(m["token_accuracy"]) == 1.0 and float(m["sequence_accuracy"]) == 1.0
    with pytest.raises(
        TaskOptionError, match=rf"{name}: option padding: expected one of \['end', 'zero'\], got 'zeros'"
    ):
        _task(name, padding="zeros")


def test_only_the_tasks_with_an_end_symbol_take_a_padding():
    with pytest.raises(TaskOptionError, match=r"reverse_string: unknown option\(s\) \['padding'\]"):
        _task("reverse_string", padding="zero")


def test_answers_are_spread_over_the_classes():
    rng = np.random.default_rng(11)
    for name in (
        "even_pairs",
        "modular_arithmetic",
        "parity_check",
        "cycle_navigation",
        "modular_arithmetic_brackets",
        "solve_equation",
        "missing_duplicate",
    ):
        task = _task(name)
        y = task.sample(rng, 400, 31).targets[:, 0]
        counts = np.bincount(y, minlength=task.output_size)
        assert (counts > 400 / task.output_size / 2).all(), (name, counts)


def test_the_random_splits_cover_their_ranges():
    rng = np.random.default_rng(12)
    n = 12
    # Stack manipulation: the initial stack has 1 .. N-1 symbols.
    b = _task("stack_manipulation").sample(rng, 600, n)
    k = (b.inputs.argmax(-1) < 2).sum(axis=1)
    assert set(k.tolist()) == set(range(1, n))
    # Binary operations: the first number has 1 .. N-2 bits.
    for name, op in (("binary_addition", 2), ("binary_multiplication", 2)):
        b = _task(name).sample(rng, 600, n)
        assert set((b.inputs.argmax(-1) == op).argmax(axis=1).tolist()) == set(range(1, n - 1))
    # Missing duplicate: every position of ww can be the hidden one (N odd: the last token is '#').
    b = _task("missing_duplicate").sample(rng, 600, 11)
    ids = b.inputs.argmax(-1)
    assert set((ids == 2).argmax(axis=1).tolist()) == set(range(10)) and (ids[:, 10] == 3).all()
    # Solve equation: x appears at many positions.
    b = _task("solve_equation").sample(rng, 300, 21)
    assert len(set((b.inputs.argmax(-1) == 9).argmax(axis=1).tolist())) > 8


def test_small_lengths_by_hand():
    rng = np.random.default_rng(0)
    assert _read(_task("modular_arithmetic"), _task("modular_arithmetic").sample(rng, 1, 2), 0)[0][0] in "01234"
    b = _task("modular_arithmetic_brackets").sample(rng, 50, 4)
    shapes = {
        tuple(t if t not in "01234" else "d" for t in _read(_task("modular_arithmetic_brackets"), b, i)[0])
        for i in range(50)
    }
    assert shapes == {("(", "-", "d", ")")}
    b = _task("stack_manipulation").sample(rng, 20, 1)
    for i in range(20):
        src, tgt = _read(_task("stack_manipulation"), b, i)
        assert src[0] in "ab" and tgt == [src[0], "END"]
    b = _task("solve_equation").sample(rng, 20, 3)
    for i in range(20):
        src, tgt = _read(_task("solve_equation"), b, i)
        assert src[:2] == ["x", "="] and tgt == [src[2]]


class _Scripted:
    """An rng that returns the given draws in order (each checked against the call's bounds and shape)."""

    def __init__(self, *draws):
        self.draws = [np.asarray(d) for d in draws]

    def _next(self, size):
        value = self.draws.pop(0)
        assert value.shape == np.empty(size).shape, (value.shape, size)
        return value

    def integers(self, low, high=None, size=None):
        value = self._next(size)
        assert ((value >= low) & (value < high)).all(), (value, low, high)
        return value

    def random(self, size=None):
        value = self._next(size)
        assert ((value >= 0) & (value < 1)).all()
        return value


E = "END"
# name -> (N, the draws the generator makes for one example, in order; its input and answer), worked by hand.
HAND = {
    # b b b a a a a: one unequal pair (b a), an odd count
    "even_pairs": (7, [[[1, 1, 1, 0, 0, 0, 0]]], "b b b a a a a", "odd"),
    # 1 + 2 * 3 = 7 = 2 (mod 5): the product first
    "modular_arithmetic": (5, [[[1, 2, 3]], [[5, 7]]], "1 + 2 * 3", "2"),
    # three b: odd
    "parity_check": (7, [[[1, 1, 1, 0, 0, 0, 0]]], "b b b a a a a", "odd"),
    # 0 + 1 - 1 + 0 - 1 - 1 = -2 = 3 (mod 5)
    "cycle_navigation": (5, [[[1, 2, 0, 2, 2]]], "+1 -1 stay -1 -1", "3"),
    # N = 7: split 1 + int(0 * 3) = 1, op int(0.9 * 3) = *, then d = int(0.45 * 5) = 2 and (d) with d = 4: 2 * 4 = 3
    "modular_arithmetic_brackets": (7, [[[0.0, 0.9, 0.45, 0.85, 0, 0, 0]]], "( 2 * ( 4 ) )", "3"),
    "reverse_string": (3, [[[0, 1, 1]]], "a b b", "b b a"),
    # E = ( 1 - 4 ) = -3 = 2; x replaces the second digit (pick int(0.9 * 2) = 1): ( 1 - x ) = 2 -> x = 4
    "solve_equation": (7, [[[0.0, 0.7, 0.25, 0.85, 0.0]], [0.9]], "( 1 - x ) = 2", "4"),
    # stack a b (bottom to top); POP -> a; PUSH a -> a a; PUSH b -> a a b; read from the top, END-padded to N + 1
    "stack_manipulation": (
        5,
        [[2], [[0, 1, 0, 0, 0]], [[2, 2, 2, 3, 4]]],
        ["a", "b", "POP", "PUSH a", "PUSH b"],
        f"b a a {E} {E} {E}",
    ),
    "duplicate_string": (2, [[[0, 1]]], "a b", "a b a b"),
    # w = a b, ww = a b a b, the third token hidden; odd N ends with #
    "missing_duplicate": (5, [[[0, 1]], [2]], "a b _ b #", "a"),
    "odds_first": (6, [[[0, 0, 0, 1, 0, 0]]], "a a a b a a", "a a a a b a"),
    # little-endian 01001 = 18, 011 = 6; 24 = 00011 (little-endian), END-padded to N + 1 = 10
    "binary_addition": (9, [[5], [[0, 1, 0, 0, 1, 0, 0, 1, 1]]], "0 1 0 0 1 + 0 1 1", "0 0 0 1 1" + f" {E}" * 5),
    # 11 * 11 = 3 * 3 = 9 = 1001 (little-endian), END-padded to N = 5
    "binary_multiplication": (5, [[2], [[1, 1, 0, 1, 1]]], "1 1 * 1 1", f"1 0 0 1 {E}"),
    # 100101 = 37; floor(sqrt(37)) = 6 = 110 on ceil(6 / 2) = 3 bits
    "compute_sqrt": (6, [[[1, 0, 0, 1, 0, 1]]], "1 0 0 1 0 1", "1 1 0"),
    "bucket_sort": (8, [[[1, 0, 2, 0, 4, 1, 1, 2]]], "1 0 2 0 4 1 1 2", "0 0 1 1 1 2 2 4"),
}


@pytest.mark.parametrize("name", NAMES)
def test_a_hand_worked_example(name):
    n, draws, source, answer = HAND[name]
    task = _task(name)
    x, y = task._draw(_Scripted(*draws), 1, n)
    symbols = source if isinstance(source, list) else source.split()
    assert [task.input_vocab[i] for i in x[0]] == symbols
    assert [task.output_vocab[i] for i in y[0]] == answer.split()
