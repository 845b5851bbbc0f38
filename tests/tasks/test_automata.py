"""Automata as data: the machines, their TOML files, and the acceptance and transduction tasks.

Every generated example is checked twice: by running the machine, and by a
direct predicate written here (a^n b^n by counting, palindromes by reversal,
an even number of 1s by counting, binary increment by integer arithmetic).
"""

from __future__ import annotations

import functools
import itertools
import re
import typing
from collections import Counter
from importlib import resources

import numpy as np
import pytest

from panm_jax.tasks import Batch, LengthRange, TaskOptionError, registry
from panm_jax.tasks.automata import (
    AcceptanceTask,
    FATransition,
    FiniteAutomaton,
    MachineError,
    MachineFormatError,
    MachineLimitError,
    PDATransition,
    PushdownAutomaton,
    TransductionTask,
    TuringMachine,
    UnknownMachineError,
    list_machines,
    load_machine,
    machine_from_toml,
)
from tests.tasks import test_interface as interface

# ------------------------------------------------------------ direct predicates


def is_anbn(w: str) -> bool:
    n = len(w) // 2
    return n >= 1 and w == "a" * n + "b" * n


def is_palindrome(w: str) -> bool:
    return w == w[::-1]


def has_even_ones(w: str) -> bool:
    return w.count("1") % 2 == 0


def increment(w: str) -> str:
    """The binary_increment output window (one cell for the carry, then the input's cells)."""
    s = format(int(w, 2) + 1, f"0{len(w)}b")
    return "_" + s if len(s) == len(w) else s


PREDICATES = {"anbn": is_anbn, "palindromes": is_palindrome, "even_ones": has_even_ones}
ALPHABETS = {"anbn": "ab", "palindromes": "ab", "even_ones": "01"}


def strings(alphabet: str, max_len: int):
    for n in range(max_len + 1):
        for t in itertools.product(alphabet, repeat=n):
            yield "".join(t)


def decoded(task, batch: Batch):
    for i in range(batch.inputs.shape[0]):
        ex = task.decode(batch, i)
        yield "".join(ex.inputs), ex.targets


# ------------------------------------------------------------------- machines


def test_shipped_machines_and_their_kinds():
    assert set(list_machines()) >= {"anbn", "palindromes", "binary_increment", "even_ones"}
    kinds = {name: type(load_machine(name)) for name in ("anbn", "palindromes", "binary_increment", "even_ones")}
    assert kinds == {
        "anbn": PushdownAutomaton,
        "palindromes": PushdownAutomaton,
        "binary_increment": TuringMachine,
        "even_ones": FiniteAutomaton,
    }
    assert load_machine("anbn").deterministic and not load_machine("palindromes").deterministic


@pytest.mark.parametrize("name", sorted(PREDICATES))
def test_machine_agrees_with_the_predicate_on_every_short_string(name):
    m, pred = load_machine(name), PREDICATES[name]
    words = list(strings(ALPHABETS[name], 10))
    assert len(words) == 2**11 - 1
    assert [w for w in words if m.accepts(w) != pred(w)] == []
    assert sum(map(m.accepts, words)) >= 5  # not vacuous (a^n b^n has 5 members here)


def test_pda_run_is_an_accepting_computation():
    run = load_machine("anbn").run("aabb")
    assert run[0] == ("push", 0, ("Z",))
    assert run[-1][0] == "accept" and run[-1][1] == 4
    assert load_machine("anbn").run("aab") is None
    # The nondeterministic machine guesses the middle: the accepting run turns at position 2 of abba.
    states = [c[0] for c in load_machine("palindromes").run("abba")]
    assert states == ["push", "push", "push", "match", "match", "match", "accept"]


def test_binary_increment_on_every_short_number():
    m = load_machine("binary_increment")
    for w in strings("01", 8):
        if not w:
            continue
        r = m.run(w)
        assert r.accepted and r.state == "done"
        assert "".join(r.output) == increment(w), w
        assert len(r.output) == m.output_steps(len(w)) == len(w) + 1
    assert "".join(m.transduce("0111")) == "_1000" and "".join(m.transduce("111")) == "1000"


def test_words_outside_the_alphabet_are_named():
    with pytest.raises(MachineError, match=r"word: symbol 'c' at position 2 is not in the input alphabet"):
        load_machine("anbn").accepts("abc")
    with pytest.raises(MachineError, match=r"word: symbol '_' at position 0"):
        load_machine("binary_increment").run("_1")


# --------------------------------------------------------- acceptance task


@pytest.mark.parametrize("name", sorted(PREDICATES))
def test_every_acceptance_example_is_checked_by_the_machine_and_the_predicate(name):
    task = AcceptanceTask(machine=name, max_train_length=12, max_test_length=24)
    m, pred = task.machine, PREDICATES[name]
    rng = np.random.default_rng(0)
    seen = Counter()
    for mode in ("train", "test"):
        for _ in range(4):
            batch = task.test_batch(rng, 32, mode) if mode == "test" else task.train_batch(rng, 32)
            for word, target in decoded(task, batch):
                assert target in (["accept"], ["reject"])
                label = target == ["accept"]
                assert m.accepts(word) == label == pred(word), (word, target)
                assert task.mode_range(mode).contains(len(word))
                seen[mode, label] += 1
    assert all(seen[mode, label] == 64 for mode in ("train", "test") for label in (True, False))


def test_lengths_follow_the_machine():
    anbn = AcceptanceTask(machine="anbn")
    assert anbn.lengths == LengthRange(2, 40, 2)
    assert anbn.train_lengths == LengthRange(2, 20, 2) and anbn.test_modes == {"test": LengthRange(22, 40, 2)}
    with pytest.raises(ValueError, match=r"length: expected an even integer in \[2, 40\], got 7"):
        anbn.sample(np.random.default_rng(0), 2, 7)
    # max_train_length 11 has no member at 11: the training range stops at 10.
    assert AcceptanceTask(machine="anbn", max_train_length=11, max_test_length=21).train_lengths == LengthRange(
        2, 10, 2
    )
    # Every string of length 1 is a palindrome: no negatives there, so palindromes start at 2.
    assert AcceptanceTask(machine="palindromes").lengths == LengthRange(2, 40, 1)
    assert AcceptanceTask(machine="even_ones").lengths == LengthRange(1, 40, 1)


def test_class_balance():
    task = AcceptanceTask(machine="palindromes")
    rng = np.random.default_rng(1)
    for b in (2, 8, 50):
        batch = task.sample(rng, b, task.sample_lengths(rng, b, "train"))
        assert batch.targets.sum() == b // 2
    odd = [int(task.sample(rng, 3, 5).targets.sum()) for _ in range(60)]
    assert set(odd) == {1, 2}
    assert 15 < odd.count(2) < 45
    # Positives sit at random places, not always first.
    firsts = {int(task.sample(rng, 4, 6).targets[0, 0]) for _ in range(30)}
    assert firsts == {0, 1}


def test_negatives_mix_near_misses_and_random_strings():
    task = AcceptanceTask(machine="anbn")
    rng = np.random.default_rng(2)
    distances = []
    for _ in range(200):
        w = "".join(task.sample_nonmember(rng, 10))
        assert len(w) == 10 and not is_anbn(w) and not task.machine.accepts(w)
        distances.append(sum(x != y for x, y in zip(w, "aaaaabbbbb")))
    near = sum(d == 1 for d in distances)
    assert 60 < near < 140 and max(distances) >= 3


def test_palindrome_members_cover_every_palindrome_evenly():
    m = load_machine("palindromes")
    rng = np.random.default_rng(3)
    for n, count in ((4, 4), (5, 8)):
        got = Counter("".join(m.sample_member(rng, n, 40)) for _ in range(800))
        assert set(got) == {w for w in strings("ab", n) if len(w) == n and is_palindrome(w)}
        assert len(got) == count and min(got.values()) > 800 / count / 2
    long = "".join(m.sample_member(rng, 39, 40))
    assert len(long) == 39 and is_palindrome(long) and m.accepts(long)


def test_dfa_members_are_uniform():
    m = load_machine("even_ones")
    rng = np.random.default_rng(4)
    got = Counter("".join(m.sample_member(rng, 3)) for _ in range(2000))
    assert set(got) == {"000", "011", "101", "110"}
    assert all(400 < c < 600 for c in got.values())
    assert m.count_members(10) == 2**9


def test_decode_round_trip_and_example():
    task = AcceptanceTask(machine="anbn")
    words = ["aabb", "ab", "abab", "aaabbb"]
    batch = task.encode(words)
    assert [w for w, _ in decoded(task, batch)] == words
    assert batch.targets[:, 0].tolist() == [1, 1, 0, 1]
    assert batch.input_mask.sum(1).tolist() == [4, 2, 4, 6]
    assert not batch.inputs[1, 2:].any()
    assert task.decode(task.example("aaab")).targets == ["reject"]
    with pytest.raises(ValueError, match="length: expected an even integer"):
        task.example("aab")


def test_acceptance_metrics():
    task = AcceptanceTask(machine="even_ones")
    batch = task.sample(np.random.default_rng(5), 16, 6)
    right = np.eye(2, dtype=np.float32)[batch.targets] * 5.0
    assert float(task.metrics(right, batch)["accuracy"]) == 1.0
    assert float(task.metrics(right[..., ::-1], batch)["accuracy"]) == 0.0
    assert set(task.metrics(right, batch)) == set(task.metric_names)


def test_acceptance_options():
    task = AcceptanceTask(machine="palindromes", max_train_length=6, max_test_length=9)
    assert task.options() == {"machine": "palindromes", "max_train_length": 6, "max_test_length": 9}
    again = AcceptanceTask(**task.options())
    a, b = task.sample(np.random.default_rng(6), 5, 8), again.sample(np.random.default_rng(6), 5, 8)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert task.describe()["name"] == "automaton_acceptance (palindromes)"
    with pytest.raises(TaskOptionError, match=r"option max_test_length: expected an integer >= 7, got 6"):
        AcceptanceTask(max_train_length=6, max_test_length=6)
    with pytest.raises(
        TaskOptionError, match=r"has no length in 1..1 \(the train lengths\) with both members and non-members"
    ):
        AcceptanceTask(machine="anbn", max_train_length=1, max_test_length=4)
    with pytest.raises(TaskOptionError, match=r"option machine: machine: expected one of \[.*'anbn'.*got 'nope'"):
        AcceptanceTask(machine="nope")
    with pytest.raises(TaskOptionError, match="expected a finite automaton or a pushdown automaton, got a Turing"):
        AcceptanceTask(machine="binary_increment")
    with pytest.raises(TaskOptionError, match="expected a Turing machine, got a pushdown automaton"):
        TransductionTask(machine="anbn")


@pytest.mark.parametrize("cls", [AcceptanceTask, TransductionTask])
def test_options_are_declared_with_a_default_allowed_values_and_a_meaning(cls):
    from panm_jax.options import declared

    default = "anbn" if cls is AcceptanceTask else "binary_increment"
    options = registry.task_options(cls.name)
    assert {k: p.default for k, p in options.items()} == {
        "machine": default,
        "max_train_length": 20,
        "max_test_length": 40,
    }
    assert options["max_train_length"].annotation is int and str in typing.get_args(options["machine"].annotation)
    entries = declared(cls.Options)
    for entry in entries.values():
        assert entry.allowed and entry.doc and "\n" not in entry.doc, entry
    assert entries["machine"].allowed.startswith("a shipped name or a path to a TOML file, or a ")
    assert cls().options() == {"machine": default, "max_train_length": 20, "max_test_length": 40}
    with pytest.raises(TaskOptionError) as err:
        cls(max_train_length=0)
    assert str(err.value) == f"{cls.name}: option max_train_length: expected a positive integer, got 0"
    with pytest.raises(TypeError):
        cls(default)  # type: ignore[misc]


# ------------------------------------------------------------ dataclasses


def _ends_with_ab() -> FiniteAutomaton:
    t = FATransition
    return FiniteAutomaton(
        states=("s", "a", "ab"),
        input_alphabet=("a", "b"),
        start="s",
        accepting=("ab",),
        name="ends_ab",
        transitions=(
            t("s", "a", "a"),
            t("s", "b", "s"),
            t("a", "a", "a"),
            t("a", "b", "ab"),
            t("ab", "a", "a"),
            t("ab", "b", "s"),
        ),
    )


def test_a_dataclass_machine_drives_the_task():
    task = AcceptanceTask(machine=_ends_with_ab(), max_train_length=5, max_test_length=8)
    assert task.lengths == LengthRange(2, 8, 1)
    batch = task.sample(np.random.default_rng(7), 20, 7)
    for w, target in decoded(task, batch):
        assert (target == ["accept"]) == w.endswith("ab") == task.machine.accepts(w)
    assert batch.targets.sum() == 10


def test_a_dataclass_machine_is_validated():
    with pytest.raises(MachineFormatError, match=r"<python>: transitions\[0\]\.to: expected a declared state"):
        FiniteAutomaton(
            states=("s",),
            input_alphabet=("a",),
            start="s",
            accepting=("s",),
            transitions=(FATransition("s", "a", "t"),),
        )
    with pytest.raises(MachineFormatError, match=r"<python>: start_stack: expected a declared stack symbol"):
        PushdownAutomaton(
            states=("q",),
            input_alphabet=("a",),
            stack_alphabet=("Z",),
            start="q",
            start_stack="Y",
            accepting=(),
            transitions=(),
        )


def test_member_lengths_must_form_a_progression():
    # Members (those starting with a) of lengths 1, 2 and 4 only: a chain of states, a dead end after 4.
    t = FATransition
    m = FiniteAutomaton(
        states=("0", "1", "2", "3", "4"),
        input_alphabet=("a", "b"),
        start="0",
        accepting=("1", "2", "4"),
        transitions=(t("0", "a", "1"),) + tuple(t(str(i), s, str(i + 1)) for i in range(1, 4) for s in "ab"),
    )
    assert [m.count_members(n) for n in range(6)] == [0, 1, 2, 0, 8, 0]
    with pytest.raises(TaskOptionError, match=r"not an arithmetic progression \(none of length 3\)"):
        AcceptanceTask(machine=m, max_train_length=2, max_test_length=4)


def _marker_pda(x_continues: bool) -> PushdownAutomaton:
    """x a^n b^n (or nothing, if x leads to a dead end): the first symbol pushes a marker X or Y,
    and only X under the A's accepts. Both markers can sit at height 2, so the generator's
    over-approximation cannot tell them apart there: a walk that starts with y must backtrack."""
    t = PDATransition
    return PushdownAutomaton(
        states=("mark", "push", "pop", "dead", "accept"),
        input_alphabet=("x", "y", "a", "b"),
        stack_alphabet=("Z", "X", "Y", "A"),
        start="mark",
        start_stack="Z",
        accepting=("accept",),
        deterministic=True,
        name="marker",
        transitions=(
            t("mark", "x", "Z", "push" if x_continues else "dead", ("X", "Z")),
            t("mark", "y", "Z", "push", ("Y", "Z")),
            *(t("push", "a", top, "push", ("A", top)) for top in ("X", "Y", "A")),
            t("push", "b", "A", "pop", ()),
            t("pop", "b", "A", "pop", ()),
            t("pop", "", "X", "accept", ("X",)),
        ),
    )


def test_the_member_search_backtracks_and_terminates():
    rng = np.random.default_rng(9)
    m = _marker_pda(x_continues=True)
    got = {"".join(m.sample_member(rng, 9)) for _ in range(20)}
    assert got == {"xaaaabbbb"}
    # No member at all, though the over-approximation admits the length: the search proves it.
    none = _marker_pda(x_continues=False)
    assert none.may_have_members(9) and none.sample_member(rng, 9) is None
    task = AcceptanceTask(machine=none, max_train_length=5, max_test_length=9)
    with pytest.raises(MachineError, match="marker has no member of length 5"):
        task.sample(rng, 2, 5)


def test_the_configuration_budget_is_named():
    # An epsilon move that pushes forever: the search must give up, not loop.
    m = PushdownAutomaton(
        states=("q", "f"),
        input_alphabet=("a",),
        stack_alphabet=("Z",),
        start="q",
        start_stack="Z",
        accepting=("f",),
        max_configurations=500,
        name="grow",
        transitions=(PDATransition("q", "", "Z", "q", ("Z", "Z")), PDATransition("q", "a", "Z", "q", ())),
    )
    with pytest.raises(MachineLimitError, match=r"<python>: max_configurations: deciding 'aa' needs more than 500"):
        m.accepts("aa")


# ---------------------------------------------------------- transduction task


def test_every_transduction_example_matches_integer_arithmetic():
    task = TransductionTask(max_train_length=8, max_test_length=16)
    assert task.input_size == 2 and task.output_size == 3
    rng = np.random.default_rng(8)
    count = 0
    for mode in ("train", "test"):
        lengths = task.sample_lengths(rng, 40, mode)
        batch = task.sample(rng, 40, lengths)
        assert batch.targets.shape == (40, int(lengths.max()) + 1)
        assert batch.target_mask.sum(1).tolist() == (lengths + 1).tolist()
        for (w, target), n in zip(decoded(task, batch), lengths):
            assert len(w) == n and "".join(target) == increment(w) == "".join(task.machine.transduce(w))
            count += 1
    assert count == 80


def test_transduction_metrics_and_example():
    task = TransductionTask()
    batch = task.encode(["011", "1", "10110"])
    assert [t for _, t in decoded(task, batch)] == [list("_100"), list("10"), list("_10111")]
    right = np.eye(3, dtype=np.float32)[batch.targets] * 5.0
    m = task.metrics(right, batch)
    assert float(m["sequence_accuracy"]) == 1.0 and float(m["token_accuracy"]) == 1.0
    wrong = right.copy()
    wrong[0, 1] = np.roll(wrong[0, 1], 1)  # one wrong step in the first example
    m = task.metrics(wrong, batch)
    assert float(m["sequence_accuracy"]) == pytest.approx(2 / 3)
    assert float(m["token_accuracy"]) == pytest.approx(11 / 12)
    assert task.decode(task.example("111")).targets == list("1000")


# ------------------------------------------------------------- malformed files

GOOD_DFA = """
kind = "dfa"
states = ["even", "odd"]
input_alphabet = ["0", "1"]
start = "even"
accepting = ["even"]
transitions = [
  { from = "even", read = "0", to = "even" },
  { from = "even", read = "1", to = "odd" },
]
"""

LOOPING_TM = """
kind = "tm"
states = ["run", "halt"]
input_alphabet = ["1"]
tape_alphabet = ["1", "_"]
blank = "_"
start = "run"
accepting = ["halt"]
transitions = [
  { from = "run", read = "1", to = "run", write = "1", move = "R" },
  { from = "run", read = "_", to = "run", write = "_", move = "R" },
]
"""


def _shipped(filename: str) -> str:
    """A shipped machine's text, read the way ``load_machine`` finds it (as package data)."""
    return resources.files("panm_jax.tasks").joinpath("machines", filename).read_text(encoding="utf-8")


def _file(tmp_path, text, name="bad.toml"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def _format_error(tmp_path, text, field):
    with pytest.raises(MachineFormatError) as info:
        load_machine(str(_file(tmp_path, text)))
    err = info.value
    assert err.field == field and err.source.endswith("bad.toml")
    assert str(err).startswith(f"{err.source}: {field}: ")
    return str(err)


def test_a_good_file_loads(tmp_path):
    m = load_machine(str(_file(tmp_path, GOOD_DFA, "mine.toml")))
    assert isinstance(m, FiniteAutomaton) and m.name == "mine" and m.accepts("00") and not m.accepts("1")


@pytest.mark.parametrize(
    "edit, field, message",
    [
        (lambda s: s.replace('states = ["even", "odd"]\n', ""), "states", "missing"),
        (lambda s: s.replace('read = "1"', 'read = "2"'), "transitions[1].read", "expected a declared input symbol"),
        (lambda s: s.replace('to = "odd"', 'to = "odd2"'), "transitions[1].to", "expected a declared state"),
        (lambda s: s.replace('start = "even"', 'start = "nowhere"'), "start", "expected a declared state"),
        (lambda s: s.replace('accepting = ["even"]', 'accepting = ["evn"]'), "accepting[0]", "declared state"),
        (lambda s: s.replace('"1"]', '"0"]'), "input_alphabet[1]", "listed twice"),
        (lambda s: s.replace('read = "1"', 'read = "0"'), "transitions[1]", "must be deterministic"),
        (lambda s: s.replace("accepting", "acepting"), "acepting", "unknown field"),
        (lambda s: s.replace('read = "1", to', 'read = "1", too = "x", to'), "transitions[1].too", "unknown key"),
        (lambda s: s.replace('"dfa"', '"nfa"'), "kind", "expected one of"),
        (lambda s: s.replace('states = ["even", "odd"]', 'states = "even"'), "states", "expected a list"),
        (lambda s: s + "\n[[[oops", "<file>", "not valid TOML"),
    ],
)
def test_malformed_files_name_the_file_and_the_field(tmp_path, edit, field, message):
    assert message in _format_error(tmp_path, edit(GOOD_DFA), field)


def test_non_utf8_bytes_are_named(tmp_path):
    raw = GOOD_DFA.encode().replace(b'"dfa"', b'"df\xff"')
    assert "not UTF-8 text (byte 0xff" in _format_error(tmp_path, raw, "<file>")


def test_pda_and_tm_fields_are_checked(tmp_path):
    anbn = _shipped("anbn.toml")
    assert "push[1]" in _format_error(
        tmp_path, anbn.replace('push = ["A", "Z"]', 'push = ["A", "X"]'), "transitions[0].push[1]"
    )
    _format_error(tmp_path, anbn.replace('push = ["A", "Z"]', 'push = "AZ"'), "transitions[0].push")
    _format_error(tmp_path, anbn.replace('pop = "Z", to = "push"', 'pop = "Q", to = "push"'), "transitions[0].pop")
    _format_error(tmp_path, anbn.replace('start_stack = "Z"\n', ""), "start_stack")
    pal = _shipped("palindromes.toml")
    assert "deterministic = true" in _format_error(
        tmp_path, pal.replace("deterministic = false", "deterministic = true"), "transitions[9]"
    )
    tm = _shipped("binary_increment.toml")
    _format_error(
        tmp_path,
        tm.replace('move = "R" },\n  { from = "right", read = "1"', 'move = "U" },\n  { from = "right", read = "1"'),
        "transitions[0].move",
    )
    _format_error(
        tmp_path, tm.replace('input_alphabet = ["0", "1"]', 'input_alphabet = ["0", "1", "_"]'), "input_alphabet[2]"
    )
    _format_error(tmp_path, tm.replace('accepting = ["done"]', 'accepting = ["carry"]'), "transitions[3].from")
    _format_error(tmp_path, tm.replace("output_left = 1", "output_left = -1"), "output_left")


def test_a_turing_machine_that_does_not_halt_is_named(tmp_path):
    path = _file(tmp_path, LOOPING_TM, "loop.toml")
    m = load_machine(str(path))
    with pytest.raises(
        MachineLimitError, match=re.escape(f"{path}: max_steps: loop did not halt within 90 steps on '1'")
    ):
        m.run("1")
    task = TransductionTask(machine=str(path))
    with pytest.raises(MachineLimitError, match="did not halt"):
        task.sample(np.random.default_rng(0), 2, 3)
    small = load_machine(str(_file(tmp_path, LOOPING_TM + "max_steps = 7\n", "loop7.toml")))
    with pytest.raises(MachineLimitError, match="within 7 steps"):
        small.run("11")


def test_output_outside_the_window_is_named(tmp_path):
    tm = _shipped("binary_increment.toml")
    m = load_machine(str(_file(tmp_path, tm.replace("output_left = 1", "output_left = 0"), "narrow.toml")))
    assert "".join(m.transduce("011")) == "100"
    with pytest.raises(MachineLimitError, match=r"output_left, output_right: .*'1' in cell -1, outside .*\[0, 3\)"):
        m.transduce("111")


def test_unknown_names_and_paths(tmp_path):
    with pytest.raises(UnknownMachineError, match=r"expected one of \['anbn', .*got 'anbm'"):
        load_machine("anbm")
    with pytest.raises(UnknownMachineError, match="no such file"):
        load_machine(str(tmp_path / "missing.toml"))
    with pytest.raises(MachineFormatError, match=r"<string>: kind: missing"):
        machine_from_toml("states = []")
    path = _file(tmp_path, GOOD_DFA.replace('read = "1"', 'read = "2"'))
    with pytest.raises(TaskOptionError, match=re.escape(f"option machine: {path}: transitions[1].read")):
        AcceptanceTask(machine=path)


# ------------------------------------------------------ the interface checks

VARIANTS = {
    "automaton_acceptance": AcceptanceTask,
    "automaton_acceptance_palindromes": functools.partial(AcceptanceTask, machine="palindromes"),
    "automaton_acceptance_even_ones": functools.partial(AcceptanceTask, machine="even_ones"),
    "automaton_transduction": TransductionTask,
}
CHECKS = [
    interface.test_unknown_option_is_named,
    interface.test_shapes_masks_and_dtypes,
    interface.test_mixed_lengths_are_padded_with_masks,
    interface.test_determinism_from_the_seed,
    interface.test_sample_lengths_stay_in_the_mode,
    interface.test_bad_length_and_batch_size,
    interface.test_describe_and_eval_batches,
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_the_interface_checks_pass(monkeypatch, name, check):
    monkeypatch.setitem(registry.TASKS, name, VARIANTS[name])
    check(name)
