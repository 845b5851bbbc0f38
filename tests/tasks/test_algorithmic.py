"""The six algorithmic tasks of Le et al. 2024 (Plug, Play, and Generalize: Length Extrapolation with
Pointer-Augmented Neural Memory, TMLR; §3.1, App. D.1): hand-checked examples and loop oracles."""

from __future__ import annotations

import numpy as np
import pytest

from panm_jax.tasks import get_task
from panm_jax.tasks.algorithmic import END_CHANNEL, EXTRA_CHANNEL, START_CHANNEL
from panm_jax.tasks.base import TaskOptionError

NAMES = ["copy", "reverse", "mix", "dynamic_recall", "priority_sort", "id_sort"]


def _tokens(batch, i):
    """The tokens x of example i, read back from the one-hot rows 1..n."""
    rows = batch.inputs[i][batch.input_mask[i]]
    n = int(np.flatnonzero(rows[:, END_CHANNEL])[0]) - 1
    return rows[1 : n + 1, :10].argmax(-1), rows


def _targets(batch, i):
    return batch.targets[i][batch.target_mask[i]]


# ------------------------------------------------------------ hand-checked


def test_copy_by_hand():
    # Copy emits the sequence itself, after the end delimiter.
    b = get_task("copy").example([3, 1, 4, 1, 5])
    assert _targets(b, 0).tolist() == [3, 1, 4, 1, 5]


def test_reverse_by_hand():
    # Last in, first out: y_t = x_{n+1-t}.
    b = get_task("reverse").example([3, 1, 4, 1, 5])
    assert _targets(b, 0).tolist() == [5, 1, 4, 1, 3]


def test_mix_by_hand():
    # n = 5: odd steps give x_{ceil(5/2)} = x_3 = 4, even steps give x_1 = 3.
    b = get_task("mix").example([3, 1, 4, 1, 5])
    assert _targets(b, 0).tolist() == [4, 3, 4, 3, 4]
    # n = 4: ceil(4/2) = 2, so odd steps give x_2 = 7 and even steps x_1 = 2.
    b = get_task("mix").example([2, 7, 1, 8])
    assert _targets(b, 0).tolist() == [7, 2, 7, 2]


def test_dynamic_recall_by_hand():
    task = get_task("dynamic_recall")
    # n = 5 (odd): the token right AFTER the first occurrence of q = 1 (position 2) is x_3 = 4;
    # the second 1 (position 4, followed by 5) does not count.
    assert _targets(task.example([3, 1, 4, 1, 5], query=1), 0).tolist() == [4]
    # The App. D.5 prompt with letters mapped to digits: "E V y D m I e V u f _ V" -> "E".
    # n = 10 (even): the token right BEFORE the first V (position 2) is E.
    E, V, y, D, m, I, e, u, f = 0, 1, 2, 3, 4, 5, 6, 7, 8
    b = task.example([E, V, y, D, m, I, e, V, u, f], query=V)
    assert _targets(b, 0).tolist() == [E]
    # The query row follows the end delimiter: one-hot q plus the query channel.
    rows = b.inputs[0]
    assert rows[11, END_CHANNEL] == 1 and rows[12, V] == 1 and rows[12, EXTRA_CHANNEL] == 1
    assert b.inputs.shape == (1, 13, 13)
    # A query whose first occurrence has no neighbour on the needed side is refused:
    # n = 4 (even) needs the token before, and 3 first occurs at position 1.
    with pytest.raises(ValueError, match="query: expected a token whose first occurrence has a neighbour before it"):
        task.example([3, 1, 4, 1], query=3)


def test_priority_sort_by_hand():
    # Ascending priority: 5 (-3.0), 1 (-1.0), 1 (0.0), 3 (0.5), 4 (2.0).
    b = get_task("priority_sort").example([3, 1, 4, 1, 5], priority=[0.5, -1.0, 2.0, 0.0, -3.0])
    assert _targets(b, 0).tolist() == [5, 1, 1, 3, 4]
    np.testing.assert_allclose(b.inputs[0, 1:6, EXTRA_CHANNEL], [0.5, -1.0, 2.0, 0.0, -3.0])
    assert b.inputs[0, 0, EXTRA_CHANNEL] == 0 and b.inputs[0, 6, EXTRA_CHANNEL] == 0


def test_id_sort_by_hand():
    # The paper's App. D.1 example: x1 pairs with x4 and x2 with x3, so y = x4, x3, x2, x1;
    # with n = 5 the fifth token is paired with itself.
    b = get_task("id_sort").example([3, 1, 4, 1, 5], partner=[3, 2, 1, 0, 4])
    assert _targets(b, 0).tolist() == [1, 4, 1, 3, 5]
    ids = b.inputs[0, 1:6, EXTRA_CHANNEL:]
    np.testing.assert_array_equal(ids[0], ids[3])
    np.testing.assert_array_equal(ids[1], ids[2])
    assert not np.array_equal(ids[0], ids[1])


# ------------------------------------------------------------ layout


@pytest.mark.parametrize("name", NAMES)
def test_delimiters_and_one_hot_rows(name):
    task = get_task(name)
    b = task.sample(np.random.default_rng(0), 8, 6)
    assert (b.inputs[:, 0, START_CHANNEL] == 1).all()
    assert (b.inputs[:, 7, END_CHANNEL] == 1).all()
    assert (b.inputs[:, 1:7, :10].sum(-1) == 1).all()  # one token per row
    assert not b.inputs[:, 1:7, START_CHANNEL : END_CHANNEL + 1].any()
    expected_width = {"dynamic_recall": 13, "priority_sort": 13, "id_sort": 20}.get(name, 12)
    assert task.input_size == expected_width


def test_default_modes_match_tasks_md():
    task = get_task("copy")
    assert task.train_lengths.values().tolist() == list(range(1, 11))
    assert {k: v.lo for k, v in task.test_modes.items()} == {"L": 10, "L+1": 11, "2L+1": 21, "4L+1": 41, "8L+1": 81}
    assert get_task("dynamic_recall").train_lengths.lo == 2
    # The address space bounds the length: n + 2 rows fit 1024 PANM slots.
    assert task.lengths.hi == 1022 and get_task("dynamic_recall").lengths.hi == 1021


# ------------------------------------------------------------ loop oracles


def _oracle(name, x, rows):
    n = len(x)
    if name == "copy":
        return list(x)
    if name == "reverse":
        return list(x[::-1])
    if name == "mix":
        mid = x[(n + 1) // 2 - 1]  # x_{ceil(n/2)}, 1-indexed
        return [mid if t % 2 == 1 else x[0] for t in range(1, n + 1)]
    if name == "dynamic_recall":
        q = int(rows[n + 2, :10].argmax())
        first = list(x).index(q)
        return [x[first + 1] if n % 2 == 1 else x[first - 1]]
    if name == "priority_sort":
        pr = rows[1 : n + 1, EXTRA_CHANNEL]
        return [x[i] for i in sorted(range(n), key=lambda i: pr[i])]
    if name == "id_sort":
        ids = rows[1 : n + 1, EXTRA_CHANNEL:]
        out = []
        for i in range(n):
            same = [j for j in range(n) if j != i and np.array_equal(ids[j], ids[i])]
            assert len(same) <= 1
            out.append(x[same[0]] if same else x[i])
        return out
    raise AssertionError(name)


@pytest.mark.parametrize("name", NAMES)
def test_targets_equal_a_loop_oracle(name):
    task = get_task(name)
    rng = np.random.default_rng(11)
    lengths = np.array([2, 3, 7, 10, 21, 40, 41, 81])
    b = task.sample(rng, len(lengths), lengths)
    for i in range(len(lengths)):
        x, rows = _tokens(b, i)
        assert len(x) == lengths[i]
        assert _targets(b, i).tolist() == _oracle(name, x, rows)


def test_id_sort_pairs_every_token_and_self_pairs_one_when_odd():
    task = get_task("id_sort")
    b = task.sample(np.random.default_rng(2), 16, 9)
    for i in range(16):
        ids = b.inputs[i, 1:10, EXTRA_CHANNEL:]
        _, counts = np.unique(ids.round(6), axis=0, return_counts=True)
        assert sorted(counts.tolist()) == [1, 2, 2, 2, 2]  # four pairs and one self-paired token


def test_dynamic_recall_query_is_drawn_from_admissible_positions():
    # With n = 2 the only admissible query is x_2 (even n: the token before it, x_1),
    # and only when x_1 != x_2; rows with x_1 == x_2 are redrawn.
    task = get_task("dynamic_recall")
    b = task.sample(np.random.default_rng(4), 200, 2)
    x1 = b.inputs[:, 1, :10].argmax(-1)
    x2 = b.inputs[:, 2, :10].argmax(-1)
    q = b.inputs[:, 4, :10].argmax(-1)
    assert (x1 != x2).all() and (q == x2).all() and (b.targets[:, 0] == x1).all()


# ------------------------------------------------------------ readings of the task text (options)


def test_test_lengths_k_l_plus_1_gives_the_headers_lengths():
    # Le et al. 2024, §3.1: L+1, 2(L+1), 4(L+1), 8(L+1); with L = 9 the headers of Tables 13-16: 9/10/20/40/80.
    task = get_task("mix", test_lengths="k(L+1)", max_train_length=9)
    assert {k: v.lo for k, v in task.test_modes.items()} == {
        "L": 9,
        "L+1": 10,
        "2(L+1)": 20,
        "4(L+1)": 40,
        "8(L+1)": 80,
    }
    assert task.train_lengths.values().tolist() == list(range(1, 10))
    with pytest.raises(ValueError, match="test_lengths: expected one of"):
        get_task("copy", test_lengths="2L")
    # The longest mode must fit the address space: 8 * (L + 1) > 1022 is refused.
    with pytest.raises(ValueError, match=r"longest test mode \(k\(L\+1\): 1024\)"):
        get_task("copy", test_lengths="k(L+1)", max_train_length=127)


def test_mix_fixed_middle_reads_the_training_maximum():
    # L = 10: the middle is x_{ceil(10/2)} = x_5 at every length >= 5 ...
    task = get_task("mix", middle="fixed")
    x = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]  # n = 11: x_5 = 5 (own middle x_6 = 9)
    assert _targets(task.example(x), 0).tolist() == [5, 3] * 5 + [5]
    # ... and the last token of a shorter example.
    assert _targets(task.example([2, 7, 1]), 0).tolist() == [1, 2, 1]
    # L = 9: ceil(9/2) = 5 as well.
    task9 = get_task("mix", middle="fixed", max_train_length=9)
    assert _targets(task9.example(x[:10]), 0).tolist() == [5, 3] * 5


def test_mix_t_from_zero_swaps_the_steps():
    b = get_task("mix", t_from=0).example([3, 1, 4, 1, 5])
    assert _targets(b, 0).tolist() == [3, 4, 3, 4, 3]
    with pytest.raises(ValueError, match="t_from"):
        get_task("mix", t_from=2)


def test_mix_fixed_middle_equals_a_loop_oracle():
    task = get_task("mix", middle="fixed")
    lengths = np.array([1, 3, 5, 6, 10, 21, 81])
    b = task.sample(np.random.default_rng(5), len(lengths), lengths)
    for i in range(len(lengths)):
        x, _ = _tokens(b, i)
        mid = x[min(5, len(x)) - 1]
        assert _targets(b, i).tolist() == [mid if t % 2 == 1 else x[0] for t in range(1, len(x) + 1)]


def test_dynamic_recall_onwards_outputs_the_neighbour_and_what_follows():
    task = get_task("dynamic_recall", answer="onwards")
    # n = 7 (odd): the first 4 is x_3; its right neighbour x_4 = 1 and every token after it.
    assert _targets(task.example([5, 1, 4, 1, 5, 9, 2], query=4), 0).tolist() == [1, 5, 9, 2]
    # n = 6 (even): the left neighbour x_2 = 1, then x_3 .. x_6 (the query itself among them).
    assert _targets(task.example([5, 1, 4, 1, 5, 9], query=4), 0).tolist() == [1, 4, 1, 5, 9]
    assert task.output_steps(6) == 6 and get_task("dynamic_recall").output_steps(6) == 1
    # Sampled batches: the first target is the one-output task's answer, the rest follow it in x.
    rng = np.random.default_rng(3)
    lengths = np.array([2, 3, 8, 9, 20, 41])
    b = task.sample(rng, len(lengths), lengths)
    for i in range(len(lengths)):
        x, rows = _tokens(b, i)
        first = _oracle("dynamic_recall", x, rows)[0]
        y = _targets(b, i).tolist()
        start = len(x) - len(y)
        assert y[0] == first and y == list(x[start:])


def test_priority_sort_uniform_descending():
    task = get_task("priority_sort", priority="uniform", order="descending")
    b = task.example([3, 1, 4, 1, 5], priority=[0.5, -1.0, 0.9, 0.0, -0.3])
    assert _targets(b, 0).tolist() == [4, 3, 1, 5, 1]
    p = task.sample(np.random.default_rng(0), 64, 10).inputs[:, 1:11, EXTRA_CHANNEL]
    assert p.min() >= -1 and p.max() <= 1 and p.std() > 0.5  # U[-1, 1] has std 0.577; N(0, 1) leaves [-1, 1]
    x, rows = _tokens(task.sample(np.random.default_rng(1), 1, 9), 0)
    pr = rows[1:10, EXTRA_CHANNEL]
    y = _targets(task.sample(np.random.default_rng(1), 1, 9), 0).tolist()
    assert y == [x[i] for i in sorted(range(9), key=lambda i: -pr[i])]


# ------------------------------------------------------------ training lengths as a range


def test_min_train_length_draws_only_and_every_length_of_the_range():
    # Le et al. 2024, App. D.6 (Fig. 7 left): Mix trained on lengths 20-30.
    task = get_task("mix", min_train_length=20, max_train_length=30)
    assert task.train_lengths.values().tolist() == list(range(20, 31))
    rng = np.random.default_rng(0)
    drawn = [int(task.train_batch(rng, 2).target_mask[0].sum()) for _ in range(300)]
    assert set(drawn) == set(range(20, 31))  # within the range, and all of it (300 draws of 11 lengths)
    # Dynamic Recall's shortest length is 2: its default range is still 2..L, and a raised one is kept.
    assert get_task("dynamic_recall", min_train_length=5).train_lengths.values().tolist() == list(range(5, 11))


def test_a_listed_test_length_may_be_shorter_than_every_training_length():
    task = get_task("mix", min_train_length=20, max_train_length=30, test_lengths="10,61")
    assert {k: v.lo for k, v in task.test_modes.items()} == {"10": 10, "L": 30, "L+1": 31, "61": 61}
    assert task.validation_mode == "L+1"  # selection stays just past the training range, off the test lengths
    batch = next(task.eval_batches("10", 8, 8))
    assert batch.targets.shape == (8, 10) and batch.target_mask.all()
    for i in range(8):
        x, _ = _tokens(batch, i)
        assert len(x) == 10 and _targets(batch, i).tolist() == _oracle("mix", x, None)
    # One length alone, and a listed L or L+1 is that mode (no second mode of the same length).
    one = get_task("mix", min_train_length=20, max_train_length=30, test_lengths=10)
    assert {k: v.lo for k, v in one.test_modes.items()} == {"10": 10, "L": 30, "L+1": 31}
    same = get_task("copy", test_lengths="11, 10,5")
    assert {k: v.lo for k, v in same.test_modes.items()} == {"5": 5, "L": 10, "L+1": 11}
    assert same.options()["test_lengths"] == "5,10,11"  # rebuilds the same task
    assert get_task("copy", test_lengths=(11, 10, 5)).test_modes == same.test_modes  # as the CLI parses 11,10,5
    assert get_task("copy", **same.options()).test_modes == same.test_modes


@pytest.mark.parametrize(
    "options, message",
    [
        (
            {"min_train_length": 31, "max_train_length": 30},
            "mix: option min_train_length: expected an integer in [1, 30], got 31",
        ),
        ({"min_train_length": 0}, "mix: option min_train_length: expected a positive integer or None, got 0"),
        (
            {"test_lengths": "0,10"},
            "mix: option test_lengths: expected one of ['kL+1', 'k(L+1)'] or test lengths ('10,61' or 10), "
            "each a positive integer, got '0,10'",
        ),
        (
            {"test_lengths": "10;61"},
            "mix: option test_lengths: expected one of ['kL+1', 'k(L+1)'] or test lengths ('10,61' or 10), "
            "each a positive integer, got '10;61'",
        ),
        (
            {"test_lengths": 1023},
            "mix: option test_lengths: expected one of ['kL+1', 'k(L+1)'] or test lengths ('10,61' or 10), "
            "each an integer in [1, 1022], got 1023",
        ),
    ],
)
def test_bad_training_or_test_lengths_name_the_option(options, message):
    with pytest.raises(ValueError) as err:
        get_task("mix", **options)
    assert str(err.value) == message


def test_a_test_length_the_task_cannot_make_is_refused():
    # Dynamic Recall has no length-1 example (no query has a neighbour).
    with pytest.raises(ValueError) as err:
        get_task("dynamic_recall", test_lengths="1,20")
    assert str(err.value) == (
        "dynamic_recall: option test_lengths: expected one of ['kL+1', 'k(L+1)'] or test lengths ('10,61' or 10), "
        "each an integer in [2, 1021], got '1,20'"
    )


@pytest.mark.parametrize(
    "name, digest",
    [
        ("copy", "75be913c8b4f817b"),
        ("mix", "a885acfa4fe6e83d"),
        ("dynamic_recall", "9766b94967ec162a"),
        ("id_sort", "f222ad1a8ca69465"),
    ],
)
def test_default_batches_are_bit_identical_to_before_the_range_option(name, digest):
    # SHA-256 (first 16 hex digits) of three training batches and every test mode's evaluation batches,
    # recorded with the code before min_train_length and listed test lengths existed.
    import hashlib

    task = get_task(name)
    rng = np.random.default_rng(7)
    h = hashlib.sha256()
    batches = [task.train_batch(rng, 4) for _ in range(3)]
    batches += [b for mode in task.test_modes for b in task.eval_batches(mode, 6, 4, seed=1)]
    for batch in batches:
        for array in batch:
            h.update(np.ascontiguousarray(array).tobytes())
    assert h.hexdigest()[:16] == digest


def test_priority_sort_keep_outputs_the_first_share_of_the_sorted_order():
    # The 16 highest of 20, as the same authors' earlier Priority Sort (keep=0.8).
    task = get_task("priority_sort", priority="uniform", order="descending", keep=0.8)
    assert [task.output_steps(n) for n in (1, 5, 10, 11, 20, 21, 81)] == [1, 4, 8, 9, 16, 17, 65]
    b = task.example([3, 1, 4, 1, 5], priority=[0.5, -1.0, 0.9, 0.0, -0.3])
    assert _targets(b, 0).tolist() == [4, 3, 1, 5]
    # A padded batch of mixed lengths: each row's mask covers ceil(0.8 n) outputs, each the sorted prefix.
    lengths = np.array([3, 10, 20])
    batch = task.sample(np.random.default_rng(2), 3, lengths)
    assert batch.targets.shape == (3, 16) and batch.target_mask.sum(axis=1).tolist() == [3, 8, 16]
    full = get_task("priority_sort", priority="uniform", order="descending").sample(
        np.random.default_rng(2), 3, lengths
    )
    for i in range(len(lengths)):
        k = int(batch.target_mask[i].sum())
        assert batch.targets[i, :k].tolist() == full.targets[i, :k].tolist()
    assert get_task("priority_sort").output_steps(21) == 21  # the default outputs every token


@pytest.mark.parametrize("keep", [0, 1.5, "all"])
def test_priority_sort_keep_is_checked(keep):
    with pytest.raises(TaskOptionError, match=r"priority_sort: option keep: expected a number in \(0, 1\]"):
        get_task("priority_sort", keep=keep)


# ------------------------------------------------------------------ options


@pytest.mark.parametrize("name", NAMES)
def test_options_are_declared_with_a_default_allowed_values_and_a_meaning(name):
    from panm_jax.options import declared
    from panm_jax.tasks import task_options
    from panm_jax.tasks.registry import TASKS

    cls = TASKS[name]
    own = {
        "mix": {"middle": "own", "t_from": 1},
        "dynamic_recall": {"answer": "neighbour"},
        "priority_sort": {"priority": "normal", "order": "ascending", "keep": 1.0},
    }.get(name, {})
    shared = {"max_train_length": 10, "min_train_length": None, "max_length": None, "test_lengths": "kL+1"}
    options = task_options(name)
    assert {k: p.default for k, p in options.items()} == {**shared, **own}  # the shared ones first
    assert options["min_train_length"].annotation == int | None
    for entry in declared(cls.Options).values():
        assert entry.allowed and entry.doc and "\n" not in entry.doc, entry
    # What get_task resolves: the shortest lengths and the longest that fits the address slots.
    task = get_task(name)
    assert task.options() == {**shared, **own, "min_train_length": cls.min_length, "max_length": 1022 - cls.extra_rows}


def test_the_task_s_shortest_length_bounds_the_length_options():
    # Dynamic Recall's shortest length is 2: a bound of the class, checked past the declared one (>= 1).
    for option, message in (
        ("max_train_length", "expected an integer >= 2, got 1"),
        ("min_train_length", "expected an integer in [2, 10], got 1"),
        ("max_length", "expected an integer >= 2, got 1"),
    ):
        with pytest.raises(TaskOptionError) as err:
            get_task("dynamic_recall", **{option: 1})
        assert str(err.value) == f"dynamic_recall: option {option}: {message}"
    # Copy's is 1.
    assert get_task("copy", min_train_length=1, max_train_length=1).train_lengths.values().tolist() == [1]


def test_options_are_keywords_and_their_names_are_checked():
    from panm_jax.tasks.algorithmic import MixTask

    with pytest.raises(TypeError):
        MixTask(10)  # type: ignore[misc]
    with pytest.raises(TaskOptionError) as err:
        get_task("mix", midle="own")
    assert str(err.value) == (
        "mix: unknown option(s) ['midle']; expected some of ['max_length', 'max_train_length', 'middle', "
        "'min_train_length', 't_from', 'test_lengths']; did you mean 'middle'?"
    )
    # A list of test lengths is kept as a tuple and recorded as it rebuilds the task.
    assert get_task("copy", test_lengths=[12, 5]).options()["test_lengths"] == "5,12"
