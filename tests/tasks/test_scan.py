"""SCAN (Lake & Baroni 2018): the language, its interpretation, the length splits and batches."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from panm_jax.tasks import TASKS, TaskOptionError
from panm_jax.tasks.scan import (
    ACTIONS,
    CUTOFFS,
    INPUT_VOCABULARY,
    OUTPUT_VOCABULARY,
    SCANTask,
    interpret,
    language,
    split,
)
from tests.tasks import test_interface as interface

# Sizes of the length splits (computed from the enumerated language; 22 is Lake & Baroni's).
SPLIT_SIZES = {
    22: (16990, 3920),
    24: (17326, 3584),
    25: (17774, 3136),
    26: (18286, 2624),
    27: (18734, 2176),
    28: (19182, 1728),
    30: (19758, 1152),
    32: (20206, 704),
    33: (20462, 448),
    36: (20526, 384),
    40: (20782, 128),
}
OCCURRING = list(range(1, 23)) + [24, 25, 26, 27, 28, 30, 32, 33, 36, 40, 48]


# ------------------------------------------------ an independent interpreter


def _reference(command: str) -> list[str]:
    """Interpret a command by rewriting its string top-down (written apart from the module)."""
    if " after " in command:
        first, second = command.split(" after ")
        return _reference(second) + _reference(first)
    if " and " in command:
        first, second = command.split(" and ")
        return _reference(first) + _reference(second)
    for word, times in (("twice", 2), ("thrice", 3)):
        if command.endswith(" " + word):
            return _reference(command[: -len(word) - 1]) * times
    words = command.split(" ")
    turn = {"left": "LTURN", "right": "RTURN"}
    act = [] if words[0] == "turn" else [words[0].upper()]
    if len(words) == 1:
        assert words[0] in ("walk", "look", "run", "jump")
        return act
    assert words[0] in ("walk", "look", "run", "jump", "turn") and words[-1] in turn
    if len(words) == 2:
        return [turn[words[1]]] + act
    assert len(words) == 3
    if words[1] == "opposite":
        return [turn[words[2]]] * 2 + act
    assert words[1] == "around"
    return ([turn[words[2]]] + act) * 4


def _grammar_strings() -> set[str]:
    """The language as strings, built by string products (not by the module)."""
    u = ["walk", "look", "run", "jump"]
    d = [f"{x} {s}" for x in u + ["turn"] for s in ("left", "right")]
    v = u + d + [f"{x} {m} {s}" for x in u + ["turn"] for m in ("opposite", "around") for s in ("left", "right")]
    s = [x + r for x in v for r in ("", " twice", " thrice")]
    return set(s) | {f"{a} {c} {b}" for a, b in itertools.product(s, s) for c in ("and", "after")}


# ----------------------------------------------------------------- language


def test_language_size_order_and_extent():
    lang = language()
    strings = [" ".join(w) for w in lang.commands]
    assert len(strings) == 20910 == len(set(strings))
    assert list(lang.commands) == sorted(lang.commands)  # deterministic order
    assert lang.max_words == 9 and lang.max_actions == 48
    assert np.flatnonzero(lang.counts).tolist() == OCCURRING
    assert set(w for c in lang.commands for w in c) == set(INPUT_VOCABULARY[:13])
    assert language() is lang  # cached


def test_language_is_exactly_the_grammar():
    assert {" ".join(w) for w in language().commands} == _grammar_strings()


def test_every_interpretation_matches_the_independent_interpreter():
    lang = language()
    for words, actions in zip(lang.commands, lang.actions):
        assert list(actions) == _reference(" ".join(words)), words


@pytest.mark.parametrize(
    "command, actions",
    [
        ("jump", "JUMP"),
        ("jump left", "LTURN JUMP"),
        ("jump around right", "RTURN JUMP RTURN JUMP RTURN JUMP RTURN JUMP"),
        ("turn left twice", "LTURN LTURN"),
        ("jump thrice", "JUMP JUMP JUMP"),
        ("jump opposite left and walk thrice", "LTURN LTURN JUMP WALK WALK WALK"),
        ("jump opposite left after walk around left", "LTURN WALK LTURN WALK LTURN WALK LTURN WALK LTURN LTURN JUMP"),
        ("jump twice after walk left", "LTURN WALK JUMP JUMP"),
        ("turn around right", "RTURN RTURN RTURN RTURN"),
        ("look opposite left thrice", "LTURN LTURN LOOK LTURN LTURN LOOK LTURN LTURN LOOK"),
        ("turn opposite right", "RTURN RTURN"),
        ("run after turn left", "LTURN RUN"),
    ],
)
def test_examples_by_hand(command, actions):
    assert interpret(command) == actions.split()
    task = SCANTask()
    assert task.decode(task.example(command)).targets == actions.split() + ["<eos>"]


def test_non_commands_are_rejected():
    for bad in ("walk twice twice", "turn", "walk and run and jump", "left walk", "walk left opposite"):
        with pytest.raises(ValueError, match="command: expected a command of the SCAN grammar"):
            interpret(bad)
    with pytest.raises(ValueError, match="command: expected a command of the SCAN grammar, got 'turn'"):
        SCANTask().batch_from_commands(["walk", "turn"])


# ------------------------------------------------------------------- splits


def test_split_sizes_at_every_cutoff():
    assert CUTOFFS == tuple(SPLIT_SIZES)
    previous = 0
    for c in CUTOFFS:
        train, test = split(c)
        assert (len(train), len(test)) == SPLIT_SIZES[c]
        assert len(train) + len(test) == 20910 and len(train) > previous
        previous = len(train)
        assert max(len(a) for _, a in train) == c < min(len(a) for _, a in test)
        assert {w for w, _ in train}.isdisjoint({w for w, _ in test})
    assert split(22) == (SCANTask().split())
    assert SPLIT_SIZES[22] == (16990, 3920)


def test_cutoffs_are_the_occurring_counts_from_22():
    # Every published cut-off is an action count some command has; 48 is the longest.
    assert list(CUTOFFS) == [n for n in OCCURRING if 22 <= n < 48]


def test_option_errors_name_the_option():
    for bad in (23, 0, 48, "22", 22.0, True, None):
        with pytest.raises(TaskOptionError, match=r"scan: option cutoff: expected one of \[22, 24, .*40\]"):
            SCANTask(cutoff=bad)
    with pytest.raises(TaskOptionError, match=r"scan: unknown option\(s\) \['max_length'\]"):
        SCANTask(max_length=10)
    with pytest.raises(TaskOptionError, match="option cutoff"):
        split(29)
    assert SCANTask(cutoff=np.int64(30)).options() == {"cutoff": 30}


def test_the_option_is_declared_with_a_default_allowed_values_and_a_meaning():
    from panm_jax.options import declared
    from panm_jax.tasks import task_options

    (cutoff,) = task_options("scan").values()
    assert (cutoff.name, cutoff.default, cutoff.annotation) == ("cutoff", 22, int)
    entry = declared(SCANTask.Options)["cutoff"]
    assert entry.allowed == f"one of {list(CUTOFFS)}" and entry.doc.startswith("train on commands of at most")
    with pytest.raises(TypeError):
        SCANTask(25)  # type: ignore[misc]


def test_lengths_and_modes():
    task = SCANTask(cutoff=25)
    assert (task.lengths.lo, task.lengths.hi) == (1, 48)
    assert (task.train_lengths.lo, task.train_lengths.hi) == (1, 25)
    assert (task.test_modes["test"].lo, task.test_modes["test"].hi) == (26, 48)
    assert (SCANTask().test_modes["test"].lo, SCANTask(cutoff=40).test_modes["test"].lo) == (24, 48)
    assert task.length_counts("test") == {n: int(language().counts[n]) for n in OCCURRING if n > 25}
    assert sum(task.length_counts("train").values()) == SPLIT_SIZES[25][0]
    assert sum(task.length_counts().values()) == 20910
    with pytest.raises(ValueError, match="mode: expected one of"):
        task.commands("valid")


# ------------------------------------------------------------------ batches


def test_batch_format_and_eos():
    task = SCANTask()
    b = task.batch_from_commands(["walk", "jump around left thrice after run opposite right twice"])
    assert b.inputs.shape == (2, 10, 15) and b.inputs.dtype == np.float32
    assert b.targets.shape == (2, 31) and b.targets.dtype == np.int32  # 30 actions + <eos>
    assert b.input_mask.all()  # <pad> rows are real rows
    assert (b.inputs.sum(-1) == 1).all()  # one-hot everywhere
    ex0, ex1 = task.decode(b, 0), task.decode(b, 1)
    assert ex0.inputs == ["walk", "<eos>"] + ["<pad>"] * 8
    assert ex0.targets == ["WALK", "<eos>"]
    assert ex1.inputs == "jump around left thrice after run opposite right twice <eos>".split()
    assert len(ex1.targets) == 31 and ex1.targets[-1] == "<eos>" and "<eos>" not in ex1.targets[:-1]
    assert b.target_mask.sum(1).tolist() == [2, 31]
    assert b.targets[0, 1] == OUTPUT_VOCABULARY.index("<eos>") and not b.targets[0, 2:].any()
    assert task.input_size == len(INPUT_VOCABULARY) == 15
    assert task.output_size == len(ACTIONS) + 1 == 7


@pytest.mark.parametrize("mode", ["train", "test"])
def test_decode_round_trip(mode):
    task = SCANTask()
    b = next(task.eval_batches(mode, 64, 64, seed=3))
    for i in range(64):
        ex = task.decode(b, i)
        end = ex.inputs.index("<eos>")
        assert set(ex.inputs[end + 1 :]) <= {"<pad>"} and "<pad>" not in ex.inputs[:end]
        assert ex.targets == _reference(" ".join(ex.inputs[:end])) + ["<eos>"]
        again = task.example(ex.inputs[:end])
        np.testing.assert_array_equal(again.targets[0], b.targets[i][: again.targets.shape[1]])


def test_sample_draws_commands_of_the_given_length():
    task = SCANTask()
    rng = np.random.default_rng(0)
    for n in (1, 3, 22, 24, 48):
        b = task.sample(rng, 32, n)
        assert b.targets.shape == (32, n + 1) and b.target_mask.all()
        assert (b.targets[:, n] == 6).all() and (b.targets[:, :n] < 6).all()
    # All six one-action commands show up, and only they.
    b = task.sample(rng, 200, 1)
    seen = {tuple(task.decode(b, i).inputs[:2]) for i in range(200)}
    assert {s[0] if s[1] == "<eos>" else " ".join(s) for s in seen} == {
        "walk",
        "look",
        "run",
        "jump",
        "turn left",
        "turn right",
    }
    for missing in (23, 29, 31, 41, 47):
        with pytest.raises(ValueError, match=rf"length: expected an action count that some SCAN .*, got {missing}"):
            task.sample(rng, 2, missing)
    with pytest.raises(ValueError, match="got 29"):
        task.sample(rng, 2, np.array([3, 29]))


def _action_counts(batch):
    return batch.target_mask.sum(1) - 1


@pytest.mark.parametrize("cutoff", [22, 33])
def test_train_and_test_batches_stay_in_their_split(cutoff):
    task = SCANTask(cutoff=cutoff)
    train, test = (set(map(" ".join, task.commands(m))) for m in ("train", "test"))
    rng = np.random.default_rng(cutoff)
    for _ in range(20):
        tb, eb = task.train_batch(rng, 64), task.test_batch(rng, 64, "test")
        assert (_action_counts(tb) <= cutoff).all() and (_action_counts(eb) > cutoff).all()
        for i in range(0, 64, 8):
            words = task.decode(tb, i).inputs
            assert " ".join(words[: words.index("<eos>")]) in train
            words = task.decode(eb, i).inputs
            assert " ".join(words[: words.index("<eos>")]) in test


def test_training_draws_are_uniform_over_commands_not_over_lengths():
    # Commands of at most 3 actions are 492 / 16,990 = 2.9 % of the training split
    # (3 / 22 = 13.6 % if lengths were uniform).
    task = SCANTask()
    n = task.sample_lengths(np.random.default_rng(0), 20000, "train")
    assert abs((n <= 3).mean() - 492 / 16990) < 0.006
    assert abs((n == 10).mean() - 1696 / 16990) < 0.01
    counts = np.bincount(_action_counts(task.train_batch(np.random.default_rng(1), 20000)), minlength=23)
    expected = language().counts[:23] / 16990 * 20000
    assert np.abs(counts - expected).max() < 5 * np.sqrt(expected.max())


def test_eval_batches_walk_the_split_once_and_are_fixed_by_the_seed():
    task = SCANTask()
    batches = list(task.eval_batches("test", 3920, 512, seed=0))
    assert [b.inputs.shape[0] for b in batches] == [512] * 7 + [336]
    seen = []
    for b in batches:
        for i in range(b.inputs.shape[0]):
            words = task.decode(b, i).inputs
            seen.append(" ".join(words[: words.index("<eos>")]))
    assert sorted(seen) == sorted(map(" ".join, task.commands("test"))) and len(set(seen)) == 3920
    again = next(task.eval_batches("test", 3920, 512, seed=0))
    other = next(task.eval_batches("test", 3920, 512, seed=1))
    for x, y in zip(batches[0], again):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(batches[0].inputs, other.inputs)
    # Beyond the split the permutation repeats; batches pad to their own longest target.
    long_run = list(task.eval_batches("test", 3921, 3920, seed=0))
    np.testing.assert_array_equal(long_run[1].inputs[0], long_run[0].inputs[0])
    assert long_run[1].targets.shape[1] == _action_counts(long_run[1])[0] + 1


def test_determinism_and_mixed_lengths():
    task = SCANTask()
    a = task.train_batch(np.random.default_rng(5), 16)
    b = task.train_batch(np.random.default_rng(5), 16)
    c = task.train_batch(np.random.default_rng(6), 16)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a.inputs, c.inputs)
    n = _action_counts(a)
    assert len(set(n.tolist())) > 1 and a.targets.shape[1] == n.max() + 1
    for i, k in enumerate(n):
        assert a.target_mask[i].tolist() == [True] * (k + 1) + [False] * (n.max() - k)
        assert a.targets[i, k] == 6 and not a.targets[i, k + 1 :].any()


def test_metrics_exact_match_needs_the_end_symbol():
    task = SCANTask()
    b = task.batch_from_commands(["walk twice", "jump left"])
    perfect = np.eye(7, dtype=np.float32)[b.targets] * 5.0
    m = task.metrics(perfect, b)
    assert list(m) == list(task.metric_names) == ["sequence_accuracy", "token_accuracy"]
    assert float(m["sequence_accuracy"]) == 1.0 and float(m["token_accuracy"]) == 1.0
    no_stop = perfect.copy()
    no_stop[0, 2] = np.eye(7)[0] * 5.0  # WALK instead of <eos> after "WALK WALK"
    m = task.metrics(no_stop, b)
    assert float(m["sequence_accuracy"]) == 0.5 and float(m["token_accuracy"]) == pytest.approx(5 / 6)


# ---------------------------------------------------- interface conformance

INTERFACE_CHECKS = [
    interface.test_unknown_option_is_named,
    interface.test_shapes_masks_and_dtypes,
    interface.test_mixed_lengths_are_padded_with_masks,
    interface.test_determinism_from_the_seed,
    interface.test_sample_lengths_stay_in_the_mode,
    interface.test_bad_length_and_batch_size,
    interface.test_describe_and_eval_batches,
]


@pytest.mark.parametrize("cutoff", [22, 40])
@pytest.mark.parametrize("check", INTERFACE_CHECKS, ids=lambda f: f.__name__)
def test_interface_checks_pass(monkeypatch, check, cutoff):
    # The shared interface tests, run on SCANTask registered under a temporary name.
    monkeypatch.setitem(TASKS, "scan_under_test", functools.partial(SCANTask, cutoff=cutoff))
    check("scan_under_test")
