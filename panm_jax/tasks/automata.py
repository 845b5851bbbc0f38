"""Automata as data: finite automata, pushdown automata and Turing machines as tasks.

A machine is written as data, in a small TOML file (``load_machine``) or as a
Python dataclass, and a task generates examples from it:

* ``AcceptanceTask`` (``automaton_acceptance``): classify a string over the
  machine's input alphabet as accepted or rejected (a finite or pushdown
  automaton);
* ``TransductionTask`` (``automaton_transduction``): write the tape a Turing
  machine leaves when it halts.

**Definitions.** The standard ones of Hopcroft & Ullman (1979), "Introduction
to Automata Theory, Languages, and Computation":

* ``FiniteAutomaton`` (Q, Sigma, delta, q0, F): deterministic; ``delta`` may be
  partial (a missing move rejects, as if into a dead state).
* ``PushdownAutomaton`` (Q, Sigma, Gamma, delta, q0, gamma0, F), the 7-tuple
  of Suzgun, Gehrmann, Belinkov & Shieber (2019), "Memory-Augmented Recurrent
  Neural Networks Can Learn Generalized Dyck Languages": ``delta`` maps
  (state, input symbol or epsilon, stack top) to a finite set of (state, string
  pushed in place of the top); acceptance by final state (the input consumed
  and an accepting state reached, epsilon moves included). It may be
  nondeterministic: ``accepts`` searches the configurations (state, input
  position, stack) breadth first, each configuration once, and raises
  ``MachineLimitError`` rather than answer when more than
  ``max_configurations`` would be needed (only machines whose epsilon moves
  grow the stack without bound get there). ``deterministic = true`` asks for
  the deterministic conditions to be checked on load (at most one move per
  (state, symbol, top), and no reading move where an epsilon move exists); the
  search then follows a single path.
* ``TuringMachine`` (Q, Sigma, Gamma, delta, q0, B, F): one tape, infinite both
  ways; deterministic; moves ``L`` and ``R``. The head starts on the first input
  symbol; the machine halts when it enters an accepting state (which therefore
  has no moves) or when no move is defined; it accepts when it halts in an
  accepting state. A run longer than the step bound (``max_steps``, by default
  ``10 (n + 2)^2`` for an input of length ``n``) raises ``MachineLimitError``.
  Its output is the tape window from ``output_left`` cells before the input to
  ``output_right`` cells after it, blanks included (a fixed ``n + output_left +
  output_right`` cells); a halted tape with a non-blank symbol outside the
  window raises ``MachineLimitError``.

Symbols and states are non-empty strings; the empty string ``""`` stands for
epsilon in a pushdown automaton's ``read``. A word is a sequence of symbols (a
Python ``str`` is the sequence of its characters, which is what one-character
alphabets want).

**TOML format** (``kind`` is ``"dfa"``, ``"pda"`` or ``"tm"``)::

    kind = "pda"
    name = "anbn"                       # optional: the file's stem
    description = "a^n b^n, n >= 1"    # optional
    deterministic = true                # pda, optional (default false)
    states = ["push", "pop", "accept"]
    input_alphabet = ["a", "b"]
    stack_alphabet = ["Z", "A"]         # pda
    start = "push"
    start_stack = "Z"                   # pda: gamma0
    accepting = ["accept"]
    transitions = [
      { from = "push", read = "a", pop = "Z", to = "push", push = ["A", "Z"] },
      ...
    ]

A finite automaton's transitions have ``from, read, to``; a pushdown
automaton's ``from, read, pop, to, push`` (``push[0]`` ends on top, ``[]``
pops); a Turing machine's ``from, read, to, write, move`` and the machine has
``tape_alphabet``, ``blank`` and optionally ``output_left``, ``output_right``,
``max_steps``. Optional for a pushdown automaton: ``max_configurations``
(default 200000). Every field is checked on load (unknown keys, types,
symbols and states that are not declared, determinism where it is required, no
move out of a Turing machine's accepting state); a malformed machine raises
``MachineFormatError``, whose message starts with the file and the field
(``anbn.toml: transitions[3].push[0]: ...``), as do files that are not UTF-8
or not TOML. The same checks run on a dataclass built in Python (its
``source`` is ``"<python>"``).

Shipped machines (``list_machines()``; ``load_machine("anbn")``):
``anbn`` (a deterministic PDA for a^n b^n, n >= 1), ``palindromes`` (a
nondeterministic PDA for every palindrome over {a, b}, odd and even length: it
guesses the middle), ``even_ones`` (a DFA: an even number of 1s over {0, 1})
and ``binary_increment`` (a TM adding 1 to a binary number, most significant
bit first; the output window has one cell before the input, for the carry).

**Generating members.** Random strings of a^n b^n are almost never members,
so positives are built from the machine:

* finite automaton: exactly uniform over the members of length ``n``, by
  counting the accepted strings of each length from each state (dynamic
  programming) and drawing one symbol at a time in proportion;
* pushdown automaton: a randomised depth-first search over concrete
  configurations (state, stack, symbols left to read) that picks uniformly
  among the moves whose successor may still accept, each configuration
  visited at most once, stacks bounded by ``1 + g (N + 1)`` (``g``: the most
  one move adds to the stack, ``N``: the longest length of the task). "May
  still accept" is an over-approximation computed once per machine: whether an
  abstract configuration (state, stack height, top symbol) can accept after
  reading exactly ``r`` more symbols, where the symbol uncovered by a pop is
  any symbol that can ever sit at that height (a forward fixed point). It
  never prunes a configuration that can accept, and for the shipped machines it
  is exact, so the search never backtracks there; it terminates in any case (a
  finite, deduplicated space; past ``max_configurations`` visited
  configurations it raises ``MachineLimitError``). The strings are not uniform
  over the language in general (for the shipped ``palindromes`` they are).

Negatives are verified non-members of the same length: half of the attempts a
*near miss* (a member with one symbol changed to another), half a uniformly
random string; each is run through the machine and kept only if rejected
(a palindrome with its middle symbol changed is still a palindrome, and is
discarded). A batch has ``B // 2`` positives (plus one more with probability
1/2 when ``B`` is odd), at random places; every positive is run through the
machine as well before it is used.

**Lengths without members** (odd lengths for a^n b^n) **or without
non-members** (length 1 for palindromes: every single symbol is one) are
skipped: the admissible lengths of the acceptance task are the lengths
``1..max_test_length`` at which the machine may have both members and
non-members, which must form an arithmetic progression ``lo, lo + step, ...``;
the task's ``LengthRange`` takes that step (a^n b^n: 2, 4, 6, ..., and a
request for an odd length is a ``ValueError`` that says "an even integer";
palindromes: 2, 3, 4, ...). Members are decided exactly for a finite
automaton and by the over-approximation above for a pushdown automaton;
non-members exactly for a finite automaton and, for a pushdown automaton, by
trying every string while there are at most 4096 of them (assumed beyond). A
machine whose admissible lengths are not a progression is refused with a
``TaskOptionError`` naming the first missing length; a length admitted by
these tests at which the generator finds no member (or no non-member) raises
``MachineError`` when it is sampled.

**Task format.** Acceptance: the input is the string, one one-hot row over the
input alphabet per symbol (``T_in = n``; lengths start at 1), ``output_mode =
"after_input"`` with one output step, classes 0 = reject, 1 = accept; metric
``accuracy``. Transduction: the input is the input tape (``T_in = n``,
one-hot over the input alphabet), the targets the output window as class ids
over the tape alphabet (``T_out = n + output_left + output_right``); inputs
are uniform strings over the input alphabet, and when the machine has
accepting states only those it accepts (its domain; redrawn up to 100 times);
metrics ``sequence_accuracy`` (headline) and ``token_accuracy``. Both tasks
draw one length per example (``per_example``) uniformly from the mode's
range: train ``..max_train_length``, test ``max_train_length + 1 ..
max_test_length``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import tomllib
from collections import deque
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, cast

import numpy as np

from panm_jax import checks
from panm_jax.errors import UnknownNameError, UserError
from panm_jax.tasks import metrics as _metrics
from panm_jax.tasks.base import (
    Batch,
    DecodedExample,
    LengthRange,
    Task,
    TaskOptionError,
    check_int_option,
    check_option_names,
    one_hot,
    step_mask,
)

__all__ = [
    "AcceptanceTask",
    "FATransition",
    "FiniteAutomaton",
    "MachineError",
    "MachineFormatError",
    "MachineLimitError",
    "PDATransition",
    "PushdownAutomaton",
    "TMResult",
    "TMTransition",
    "TransductionTask",
    "TuringMachine",
    "UnknownMachineError",
    "list_machines",
    "load_machine",
    "machine_from_toml",
]

_PYTHON = "<python>"
_MOVES = ("L", "R")
_NEGATIVE_TRIES = 64
_DOMAIN_TRIES = 100
_ENUMERATE_NONMEMBERS = 4096


# ---------------------------------------------------------------------- errors


class MachineError(UserError):
    """A machine that cannot be used as given (a ``ValueError``; the message names it)."""


class MachineFormatError(MachineError):
    """A malformed machine: ``source`` (the file, or ``"<python>"``) and ``field`` are named."""

    def __init__(self, source: str, field: str, message: str):
        self.source, self.field = source, field
        super().__init__(f"{source}: {field}: {message}")


class MachineLimitError(MachineError):
    """A run or search went past its bound (steps, configurations) or its output window."""


class UnknownMachineError(MachineError, UnknownNameError):
    """``load_machine`` was given a name that is not shipped, or a path that is not a file.

    Also an ``UnknownNameError``, the type of every unknown name in the library.
    """


# ----------------------------------------------------------------- validation


def _check_name_list(source: str, field: str, values, what: str) -> tuple[str, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise MachineFormatError(source, field, f"expected a list of {what} names (strings), got {values!r}")
    out = tuple(values)
    if not out:
        raise MachineFormatError(source, field, f"expected at least one {what}, got an empty list")
    seen: dict[str, int] = {}
    for i, v in enumerate(out):
        if not isinstance(v, str) or not v:
            raise MachineFormatError(source, f"{field}[{i}]", f"expected a non-empty string, got {v!r}")
        if v in seen:
            raise MachineFormatError(source, f"{field}[{i}]", f"{v!r} is listed twice (first at [{seen[v]}])")
        seen[v] = i
    return out


def _check_member(source: str, field: str, value, allowed: Sequence[str], what: str) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise MachineFormatError(source, field, f"expected a declared {what} (one of {list(allowed)}), got {value!r}")
    return value


def _check_accepting(source: str, accepting, states: Sequence[str]) -> tuple[str, ...]:
    if isinstance(accepting, (str, bytes)) or not isinstance(accepting, (Sequence, frozenset, set)):
        raise MachineFormatError(source, "accepting", f"expected a list of state names, got {accepting!r}")
    out = tuple(accepting)
    for i, q in enumerate(out):
        _check_member(source, f"accepting[{i}]", q, states, "state")
        if q in out[:i]:
            raise MachineFormatError(source, f"accepting[{i}]", f"{q!r} is listed twice")
    return out


def _check_count(source: str, field: str, value, lo: int = 1, allow_none: bool = False):
    """``checks.integer(field, value, lo)``, a failure raised as ``MachineFormatError`` naming ``source``."""
    if value is None and allow_none:
        return None
    try:
        return checks.integer(field, value, lo)
    except UserError as err:
        raise MachineFormatError(source, field, str(err).removeprefix(f"{field}: ")) from None


def _check_transitions(source: str, transitions, cls, to_symbols) -> tuple:
    if isinstance(transitions, (str, bytes)) or not isinstance(transitions, Sequence):
        raise MachineFormatError(source, "transitions", f"expected a list of transitions, got {transitions!r}")
    out = []
    for i, t in enumerate(transitions):
        if isinstance(t, cls):
            pass
        elif isinstance(t, Sequence) and not isinstance(t, (str, bytes)) and len(t) == len(cls._fields):
            t = cls(*t)
        else:
            raise MachineFormatError(source, f"transitions[{i}]", f"expected a {cls.__name__} {cls._fields}, got {t!r}")
        out.append(to_symbols(i, t))
    return tuple(out)


def _set(obj, **kw):
    for k, v in kw.items():
        object.__setattr__(obj, k, v)


class _Machine:
    """What the three machines share: the word check and a short description."""

    kind: ClassVar[str]
    source: str
    name: str
    input_alphabet: tuple[str, ...]
    # Set by each machine's ``__post_init__`` (with ``object.__setattr__``: the machines are frozen).
    _sigma_index: dict[str, int]
    _final: frozenset[str]

    def check_word(self, word) -> tuple[str, ...]:
        """``word`` as a tuple of input symbols; ``ValueError`` naming a symbol outside the alphabet."""
        if isinstance(word, (bytes, np.ndarray)) or not isinstance(word, (str, Sequence)):
            raise MachineError(f"word: expected a string or a sequence of symbols, got {type(word).__name__}")
        symbols = tuple(word)
        for i, s in enumerate(symbols):
            if s not in self._sigma_index:
                raise MachineError(
                    f"word: symbol {s!r} at position {i} is not in the input alphabet "
                    f"{list(self.input_alphabet)} of {self.name}"
                )
        return symbols

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}, {self.source})"


# ----------------------------------------------------------- finite automaton


class FATransition(NamedTuple):
    """``delta(state, read) = to`` (TOML keys ``from, read, to``)."""

    state: str
    read: str
    to: str


@dataclasses.dataclass(frozen=True)
class FiniteAutomaton(_Machine):
    """A deterministic finite automaton (Q, Sigma, delta, q0, F); ``delta`` may be partial."""

    states: tuple[str, ...]
    input_alphabet: tuple[str, ...]
    transitions: tuple[FATransition, ...]
    start: str
    accepting: tuple[str, ...]
    name: str = "dfa"
    description: str = ""
    source: str = dataclasses.field(default=_PYTHON, compare=False)

    kind: ClassVar[str] = "dfa"

    if TYPE_CHECKING:  # caches set by ``__post_init__``; for the type checker only, not dataclass fields
        _delta: dict[tuple[str, str], str] = dataclasses.field(init=False)
        _counts: list[dict[str, int]] = dataclasses.field(init=False)

    def __post_init__(self):
        src = self.source
        states = _check_name_list(src, "states", self.states, "state")
        sigma = _check_name_list(src, "input_alphabet", self.input_alphabet, "symbol")
        start = _check_member(src, "start", self.start, states, "state")
        accepting = _check_accepting(src, self.accepting, states)
        delta: dict[tuple[str, str], tuple[str, int]] = {}

        def check(i, t):
            _check_member(src, f"transitions[{i}].from", t.state, states, "state")
            _check_member(src, f"transitions[{i}].read", t.read, sigma, "input symbol")
            _check_member(src, f"transitions[{i}].to", t.to, states, "state")
            key = (t.state, t.read)
            if key in delta:
                raise MachineFormatError(
                    src,
                    f"transitions[{i}]",
                    f"a second move from {t.state!r} reading {t.read!r} (the first is transitions[{delta[key][1]}]); "
                    "a finite automaton must be deterministic",
                )
            delta[key] = (t.to, i)
            return t

        transitions = _check_transitions(src, self.transitions, FATransition, check)
        _set(self, states=states, input_alphabet=sigma, start=start, accepting=accepting, transitions=transitions)
        _set(
            self,
            _delta={k: v[0] for k, v in delta.items()},
            _sigma_index={s: i for i, s in enumerate(sigma)},
            _final=frozenset(accepting),
            _counts=[],
        )

    def run(self, word) -> list[str] | None:
        """The states visited on ``word`` (``len(word) + 1`` of them), or ``None`` if a move is missing."""
        q = self.start
        path = [q]
        for s in self.check_word(word):
            nxt = self._delta.get((q, s))
            if nxt is None:
                return None
            q = nxt
            path.append(q)
        return path

    def accepts(self, word) -> bool:
        path = self.run(word)
        return path is not None and path[-1] in self._final

    def count_members(self, length: int) -> int:
        """The number of accepted strings of exactly ``length`` symbols."""
        return self._count_table(length)[length][self.start]

    def _count_table(self, length: int) -> list[dict[str, int]]:
        counts = self._counts  # counts[r][q]: accepted strings of length r read from q
        if not counts:
            counts.append({q: int(q in self._final) for q in self.states})
        while len(counts) <= length:
            prev = counts[-1]
            counts.append(
                {
                    q: sum(prev[self._delta[(q, s)]] for s in self.input_alphabet if (q, s) in self._delta)
                    for q in self.states
                }
            )
        return counts

    def may_have_members(self, length: int, max_length: int | None = None) -> bool:
        """Whether some string of ``length`` symbols is accepted (exact)."""
        return self.count_members(length) > 0

    def sample_member(self, rng: np.random.Generator, length: int, max_length: int | None = None):
        """A member of exactly ``length`` symbols, uniform over all of them; ``None`` if there is none."""
        counts = self._count_table(length)
        q = self.start
        if counts[length][q] == 0:
            return None
        word = []
        for r in range(length, 0, -1):
            options = [(s, self._delta[(q, s)]) for s in self.input_alphabet if (q, s) in self._delta]
            weights = np.array([counts[r - 1][p] / counts[r][q] for _, p in options])  # exact big-int division
            s, q = options[int(rng.choice(len(options), p=weights / weights.sum()))]
            word.append(s)
        return tuple(word)


# ---------------------------------------------------------- pushdown automaton


class PDATransition(NamedTuple):
    """``(to, push) in delta(state, read, pop)``; ``read == ""`` is epsilon; ``push[0]`` ends on top."""

    state: str
    read: str
    pop: str
    to: str
    push: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class PushdownAutomaton(_Machine):
    """A pushdown automaton (Q, Sigma, Gamma, delta, q0, gamma0, F), acceptance by final state."""

    states: tuple[str, ...]
    input_alphabet: tuple[str, ...]
    stack_alphabet: tuple[str, ...]
    transitions: tuple[PDATransition, ...]
    start: str
    start_stack: str
    accepting: tuple[str, ...]
    deterministic: bool = False
    max_configurations: int = 200_000
    name: str = "pda"
    description: str = ""
    source: str = dataclasses.field(default=_PYTHON, compare=False)

    kind: ClassVar[str] = "pda"

    if TYPE_CHECKING:  # caches set by ``__post_init__``; for the type checker only, not dataclass fields
        _moves: dict[tuple[str, str], list[tuple[PDATransition, tuple[str, ...]]]] = dataclasses.field(init=False)
        _growth: int = dataclasses.field(init=False)
        _tables: dict[int, tuple[int, np.ndarray]] = dataclasses.field(init=False)

    def __post_init__(self):
        src = self.source
        states = _check_name_list(src, "states", self.states, "state")
        sigma = _check_name_list(src, "input_alphabet", self.input_alphabet, "symbol")
        gamma = _check_name_list(src, "stack_alphabet", self.stack_alphabet, "stack symbol")
        start = _check_member(src, "start", self.start, states, "state")
        start_stack = _check_member(src, "start_stack", self.start_stack, gamma, "stack symbol")
        accepting = _check_accepting(src, self.accepting, states)
        if not isinstance(self.deterministic, bool):
            raise MachineFormatError(src, "deterministic", f"expected true or false, got {self.deterministic!r}")
        budget = _check_count(src, "max_configurations", self.max_configurations)
        seen: dict[tuple, int] = {}

        def check(i, t):
            f = f"transitions[{i}]"
            _check_member(src, f"{f}.from", t.state, states, "state")
            if t.read != "":
                _check_member(src, f"{f}.read", t.read, sigma, 'input symbol (or "" for epsilon)')
            _check_member(src, f"{f}.pop", t.pop, gamma, "stack symbol")
            _check_member(src, f"{f}.to", t.to, states, "state")
            push = t.push
            if isinstance(push, (str, bytes)) or not isinstance(push, Sequence):
                raise MachineFormatError(src, f"{f}.push", f"expected a list of stack symbols, got {push!r}")
            push = tuple(push)
            for j, s in enumerate(push):
                _check_member(src, f"{f}.push[{j}]", s, gamma, "stack symbol")
            t = t._replace(push=push)
            if t in seen:
                raise MachineFormatError(src, f, f"the same move as transitions[{seen[t]}]")
            seen[t] = i
            return t

        transitions = _check_transitions(src, self.transitions, PDATransition, check)
        if self.deterministic:
            by_key: dict[tuple[str, str, str], int] = {}
            for i, t in enumerate(transitions):
                key = (t.state, t.read, t.pop)
                if key in by_key:
                    raise MachineFormatError(
                        src,
                        f"transitions[{i}]",
                        f"deterministic = true, but transitions[{by_key[key]}] already moves from {t.state!r} "
                        f"reading {t.read!r} with {t.pop!r} on top",
                    )
                by_key[key] = i
            for i, t in enumerate(transitions):
                if t.read == "":
                    for j, u in enumerate(transitions):
                        if u.read != "" and (u.state, u.pop) == (t.state, t.pop):
                            raise MachineFormatError(
                                src,
                                f"transitions[{j}]",
                                f"deterministic = true, but transitions[{i}] is an epsilon move from {t.state!r} "
                                f"with {t.pop!r} on top, and this one reads {u.read!r} there",
                            )
        moves: dict[tuple[str, str], list[tuple[PDATransition, tuple[str, ...]]]] = {}
        for t in transitions:
            moves.setdefault((t.state, t.pop), []).append((t, t.push[::-1]))
        _set(
            self,
            states=states,
            input_alphabet=sigma,
            stack_alphabet=gamma,
            start=start,
            start_stack=start_stack,
            accepting=accepting,
            transitions=transitions,
            max_configurations=budget,
        )
        _set(
            self,
            _moves=moves,
            _sigma_index={s: i for i, s in enumerate(sigma)},
            _final=frozenset(accepting),
            _growth=max([len(t.push) - 1 for t in transitions] + [0]),
            _tables={},
        )

    # ------------------------------------------------------------- running

    def run(self, word) -> list[tuple[str, int, tuple[str, ...]]] | None:
        """An accepting computation on ``word``, or ``None`` if there is none.

        The computation is a list of configurations ``(state, symbols read,
        stack)`` (the stack bottom first), from ``(start, 0, (start_stack,))``
        to an accepting state with the whole word read: the shortest one, found
        by a breadth-first search over configurations (each visited once).
        Raises ``MachineLimitError`` past ``max_configurations`` configurations.
        """
        w = self.check_word(word)
        n = len(w)
        start: tuple[str, int, tuple[str, ...]] = (self.start, 0, (self.start_stack,))
        parent: dict[tuple, tuple | None] = {start: None}
        queue = deque([start])
        while queue:
            conf = queue.popleft()
            q, i, stack = conf
            if i == n and q in self._final:
                path = []
                node: tuple | None = conf
                while node is not None:
                    path.append(node)
                    node = parent[node]
                return path[::-1]
            if not stack:
                continue
            for t, push_rev in self._moves.get((q, stack[-1]), ()):
                if t.read:
                    if i == n or w[i] != t.read:
                        continue
                    j = i + 1
                else:
                    j = i
                nxt = (t.to, j, stack[:-1] + push_rev)
                if nxt not in parent:
                    if len(parent) >= self.max_configurations:
                        raise MachineLimitError(
                            f"{self.source}: max_configurations: deciding {''.join(w)!r} needs more than "
                            f"{self.max_configurations} configurations of {self.name}"
                        )
                    parent[nxt] = conf
                    queue.append(nxt)
        return None

    def accepts(self, word) -> bool:
        return self.run(word) is not None

    # ---------------------------------------------------------- generating

    def _table(self, max_length: int):
        """``(H, feasible)``: the stack bound and the over-approximation of the module docstring.

        ``feasible[r, q, h, x]``: an abstract configuration in state ``q`` with
        stack height ``h`` (0: empty) and top ``x`` may accept after reading
        exactly ``r`` more symbols.
        """
        for m, table in self._tables.items():
            if m >= max_length:
                return table
        H = 1 + self._growth * (max_length + 1)
        Q, G = len(self.states), len(self.stack_alphabet)
        qi = {q: i for i, q in enumerate(self.states)}
        gi = {s: i for i, s in enumerate(self.stack_alphabet)}
        moves = [
            (qi[t.state], gi[t.pop], int(t.read != ""), qi[t.to], [gi[s] for s in t.push]) for t in self.transitions
        ]
        # Forward: which symbols can ever sit at each height (possible[h, x]).
        reach = np.zeros((Q, H + 1, G), bool)
        possible = np.zeros((H + 1, G), bool)
        reach[qi[self.start], 1, gi[self.start_stack]] = True
        possible[1, gi[self.start_stack]] = True
        total = -1
        while total != int(reach.sum()) + int(possible.sum()):
            total = int(reach.sum()) + int(possible.sum())
            for q, x, _, p, push in moves:
                m = len(push)
                if m:
                    if m > H:
                        continue
                    src = reach[q, 1 : H - m + 2, x]  # heights h = 1..H-m+1 -> h + m - 1
                    reach[p, m : H + 1, push[0]] |= src
                    for k, s in enumerate(push):  # push[k] lands at height h + m - 1 - k
                        possible[m - k : H - k + 1, s] |= src
                else:
                    reach[p, 1:H, :] |= reach[q, 2 : H + 1, x][:, None] & possible[1:H, :]
        # Backward, by the number of symbols left to read.
        final = np.array([q in self._final for q in self.states])
        feasible = np.zeros((max_length + 1, Q, H + 1, G), bool)
        for r in range(max_length + 1):
            cur = feasible[r]
            if r == 0:
                cur[final] = True
            total = -1
            while total != int(cur.sum()):
                total = int(cur.sum())
                for q, x, k, p, push in moves:
                    if k > r:
                        continue
                    src = feasible[r - k]
                    m = len(push)
                    if m:
                        if m <= H:
                            cur[q, 1 : H - m + 2, x] |= src[p, m : H + 1, push[0]]
                    else:
                        cur[q, 1, x] |= src[p, 0, 0]
                        cur[q, 2 : H + 1, x] |= (src[p, 1:H, :] & possible[1:H, :]).any(-1)
        self._tables.clear()
        self._tables[max_length] = (H, feasible)
        return H, feasible

    def may_have_members(self, length: int, max_length: int | None = None) -> bool:
        """False when no string of ``length`` symbols is accepted (the over-approximation says so)."""
        _, feasible = self._table(max(length, max_length or 0))
        return bool(feasible[length, self.states.index(self.start), 1, self.stack_alphabet.index(self.start_stack)])

    def sample_member(self, rng: np.random.Generator, length: int, max_length: int | None = None):
        """A member of exactly ``length`` symbols (module docstring), or ``None`` if the search finds none.

        ``max_length`` sets the stack bound (``1 + g (max_length + 1)``; default
        ``length``). Raises ``MachineLimitError`` past ``max_configurations``
        visited configurations.
        """
        H, feasible = self._table(max(length, max_length or 0))
        qi = {q: i for i, q in enumerate(self.states)}
        gi = {s: i for i, s in enumerate(self.stack_alphabet)}

        def options(conf):
            q, stack, r = conf
            if not stack:
                return []
            h = len(stack)
            out = []
            for t, push_rev in self._moves.get((q, stack[-1]), ()):
                k = 1 if t.read else 0
                h2 = h - 1 + len(t.push)
                if k > r or h2 > H:
                    continue
                if t.push:
                    ok = feasible[r - k, qi[t.to], h2, gi[t.push[0]]]
                elif h2 == 0:
                    ok = feasible[r - k, qi[t.to], 0, 0]
                else:
                    ok = feasible[r - k, qi[t.to], h2, gi[stack[-2]]]
                if ok:
                    out.append((t, push_rev))
            return [out[i] for i in rng.permutation(len(out))]

        start = (self.start, (self.start_stack,), length)
        if not self.may_have_members(length, max_length):
            return None
        visited = {start}
        path = [(start, options(start), "")]  # (configuration, moves left to try, symbol read to get here)
        while path:
            (q, stack, r), todo, _ = path[-1]
            if r == 0 and q in self._final:
                return tuple(s for _, _, s in path if s)
            if not todo:
                path.pop()
                continue
            t, push_rev = todo.pop()
            nxt = (t.to, stack[:-1] + push_rev, r - (1 if t.read else 0))
            if nxt in visited:
                continue
            if len(visited) >= self.max_configurations:
                raise MachineLimitError(
                    f"{self.source}: max_configurations: generating a member of length {length} of {self.name} "
                    f"visited more than {self.max_configurations} configurations"
                )
            visited.add(nxt)
            path.append((nxt, options(nxt), t.read))
        return None


# ----------------------------------------------------------- Turing machine


class TMTransition(NamedTuple):
    """``delta(state, read) = (to, write, move)``, ``move`` in ``{"L", "R"}``."""

    state: str
    read: str
    to: str
    write: str
    move: str


class TMResult(NamedTuple):
    """A halted run: the final state, whether it accepts, the steps taken and the output window."""

    state: str
    accepted: bool
    steps: int
    output: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class TuringMachine(_Machine):
    """A deterministic one-tape Turing machine (Q, Sigma, Gamma, delta, q0, B, F) (module docstring)."""

    states: tuple[str, ...]
    input_alphabet: tuple[str, ...]
    tape_alphabet: tuple[str, ...]
    blank: str
    transitions: tuple[TMTransition, ...]
    start: str
    accepting: tuple[str, ...]
    output_left: int = 0
    output_right: int = 0
    max_steps: int | None = None
    name: str = "tm"
    description: str = ""
    source: str = dataclasses.field(default=_PYTHON, compare=False)

    kind: ClassVar[str] = "tm"

    if TYPE_CHECKING:  # cache set by ``__post_init__``; for the type checker only, not a dataclass field
        _delta: dict[tuple[str, str], TMTransition] = dataclasses.field(init=False)

    def __post_init__(self):
        src = self.source
        states = _check_name_list(src, "states", self.states, "state")
        sigma = _check_name_list(src, "input_alphabet", self.input_alphabet, "symbol")
        gamma = _check_name_list(src, "tape_alphabet", self.tape_alphabet, "tape symbol")
        blank = _check_member(src, "blank", self.blank, gamma, "tape symbol")
        for i, s in enumerate(sigma):
            if s == blank:
                raise MachineFormatError(src, f"input_alphabet[{i}]", f"the blank {blank!r} is not an input symbol")
            _check_member(src, f"input_alphabet[{i}]", s, gamma, "tape symbol (the input alphabet is part of it)")
        start = _check_member(src, "start", self.start, states, "state")
        accepting = _check_accepting(src, self.accepting, states)
        for field in ("output_left", "output_right"):
            _check_count(src, field, getattr(self, field), lo=0)
        max_steps = _check_count(src, "max_steps", self.max_steps, allow_none=True)
        delta: dict[tuple[str, str], tuple[TMTransition, int]] = {}

        def check(i, t):
            f = f"transitions[{i}]"
            _check_member(src, f"{f}.from", t.state, states, "state")
            if t.state in accepting:
                raise MachineFormatError(
                    src, f"{f}.from", f"{t.state!r} is accepting, and a machine halts in an accepting state"
                )
            _check_member(src, f"{f}.read", t.read, gamma, "tape symbol")
            _check_member(src, f"{f}.to", t.to, states, "state")
            _check_member(src, f"{f}.write", t.write, gamma, "tape symbol")
            if t.move not in _MOVES:
                raise MachineFormatError(src, f"{f}.move", f"expected one of {list(_MOVES)}, got {t.move!r}")
            key = (t.state, t.read)
            if key in delta:
                raise MachineFormatError(
                    src,
                    f,
                    f"a second move from {t.state!r} reading {t.read!r} (the first is transitions[{delta[key][1]}]); "
                    "a Turing machine must be deterministic",
                )
            delta[key] = (t, i)
            return t

        transitions = _check_transitions(src, self.transitions, TMTransition, check)
        _set(
            self,
            states=states,
            input_alphabet=sigma,
            tape_alphabet=gamma,
            blank=blank,
            start=start,
            accepting=accepting,
            transitions=transitions,
            output_left=int(self.output_left),
            output_right=int(self.output_right),
            max_steps=max_steps,
        )
        _set(
            self,
            _delta={k: v[0] for k, v in delta.items()},
            _sigma_index={s: i for i, s in enumerate(sigma)},
            _final=frozenset(accepting),
        )

    def step_bound(self, length: int) -> int:
        """The most steps a run on an input of ``length`` symbols may take."""
        return self.max_steps if self.max_steps is not None else 10 * (length + 2) ** 2

    def output_steps(self, length: int) -> int:
        return length + self.output_left + self.output_right

    def run(self, word) -> TMResult:
        """Run to a halt; ``MachineLimitError`` past the step bound or with output outside the window."""
        w = self.check_word(word)
        n, bound = len(w), self.step_bound(len(w))
        tape = dict(enumerate(w))
        q, head, steps = self.start, 0, 0
        while q not in self._final:
            t = self._delta.get((q, tape.get(head, self.blank)))
            if t is None:
                break
            if steps == bound:
                raise MachineLimitError(
                    f"{self.source}: max_steps: {self.name} did not halt within {bound} steps on {''.join(w)!r}"
                )
            tape[head] = t.write
            head += 1 if t.move == "R" else -1
            q, steps = t.to, steps + 1
        lo, hi = -self.output_left, n + self.output_right
        outside = sorted(i for i, s in tape.items() if s != self.blank and not lo <= i < hi)
        if outside:
            raise MachineLimitError(
                f"{self.source}: output_left, output_right: {self.name} halted on {''.join(w)!r} with "
                f"{tape[outside[0]]!r} in cell {outside[0]}, outside its output window [{lo}, {hi})"
            )
        return TMResult(q, q in self._final, steps, tuple(tape.get(i, self.blank) for i in range(lo, hi)))

    def accepts(self, word) -> bool:
        return self.run(word).accepted

    def transduce(self, word) -> tuple[str, ...]:
        """The output window after the machine halts on ``word``."""
        return self.run(word).output


Machine = FiniteAutomaton | PushdownAutomaton | TuringMachine
_KINDS = {"dfa": FiniteAutomaton, "pda": PushdownAutomaton, "tm": TuringMachine}
_TRANSITION_KEYS = {
    "dfa": ("from", "read", "to"),
    "pda": ("from", "read", "pop", "to", "push"),
    "tm": ("from", "read", "to", "write", "move"),
}
_COMMON = ("kind", "name", "description", "states", "input_alphabet", "transitions", "start", "accepting")
_KEYS = {
    "dfa": (_COMMON, ()),
    "pda": (_COMMON + ("stack_alphabet", "start_stack"), ("deterministic", "max_configurations")),
    "tm": (_COMMON + ("tape_alphabet", "blank"), ("output_left", "output_right", "max_steps")),
}
_OPTIONAL = ("name", "description")


# -------------------------------------------------------------------- loading


def _machines_dir():
    return resources.files("panm_jax.tasks").joinpath("machines")


def list_machines() -> list[str]:
    """The names of the shipped machines (``load_machine(name)``), sorted."""
    return sorted(p.name[:-5] for p in _machines_dir().iterdir() if p.name.endswith(".toml"))


def load_machine(path_or_name) -> Machine:
    """A machine from a TOML file (a path) or a shipped one (a name without ``/`` or ``.toml``).

    Raises:
      UnknownMachineError: no such shipped name, or no such file.
      MachineFormatError: the file is not UTF-8, not TOML, or a field is wrong
        (the message starts with the file and the field).
    """
    if isinstance(path_or_name, os.PathLike):
        path_or_name = os.fspath(path_or_name)
    if not isinstance(path_or_name, str) or not path_or_name:
        raise UnknownMachineError(f"machine: expected a shipped name or a path to a TOML file, got {path_or_name!r}")
    is_path = path_or_name.endswith(".toml") or "/" in path_or_name or os.sep in path_or_name
    if is_path:
        path = Path(path_or_name)
        if not path.is_file():
            raise UnknownMachineError(f"machine: no such file {path_or_name!r}")
        raw, source, stem = path.read_bytes(), str(path), path.stem
    else:
        entry = _machines_dir().joinpath(f"{path_or_name}.toml")
        if not entry.is_file():
            raise UnknownMachineError(f"machine: expected one of {list_machines()} or a path, got {path_or_name!r}")
        raw, source, stem = entry.read_bytes(), f"{path_or_name}.toml", path_or_name
    return machine_from_toml(raw, source, default_name=stem)


def machine_from_toml(raw: bytes | str, source: str = "<string>", default_name: str = "machine") -> Machine:
    """A machine from TOML text (``bytes`` must be UTF-8); errors name ``source``."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise MachineFormatError(
                source, "<file>", f"not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset {err.start})"
            ) from None
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as err:
        raise MachineFormatError(source, "<file>", f"not valid TOML: {err}") from None
    kind = data.get("kind")
    if kind is None:
        raise MachineFormatError(source, "kind", f"missing; expected one of {list(_KINDS)}")
    if kind not in _KINDS:
        raise MachineFormatError(source, "kind", f"expected one of {list(_KINDS)}, got {kind!r}")
    required, optional = _KEYS[kind]
    known = set(required) | set(optional)
    for key in data:
        if key not in known:
            raise MachineFormatError(source, key, f"unknown field for kind {kind!r}; expected some of {sorted(known)}")
    for key in required:
        if key not in data and key not in _OPTIONAL:
            raise MachineFormatError(source, key, "missing")
    for key in ("name", "description"):
        if key in data and not isinstance(data[key], str):
            raise MachineFormatError(source, key, f"expected a string, got {data[key]!r}")
    tkeys = _TRANSITION_KEYS[kind]
    rows = data["transitions"]
    if not isinstance(rows, list):
        raise MachineFormatError(source, "transitions", f"expected an array of tables, got {rows!r}")
    transitions = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise MachineFormatError(
                source, f"transitions[{i}]", f"expected a table with keys {list(tkeys)}, got {row!r}"
            )
        for key in row:
            if key not in tkeys:
                raise MachineFormatError(source, f"transitions[{i}].{key}", f"unknown key; expected {list(tkeys)}")
        for key in tkeys:
            if key not in row:
                raise MachineFormatError(source, f"transitions[{i}].{key}", "missing")
        transitions.append(tuple(row[k] for k in tkeys))
    kwargs = {k: v for k, v in data.items() if k not in ("kind", "transitions")}
    kwargs.setdefault("name", default_name)
    return _KINDS[kind](transitions=transitions, source=source, **kwargs)


def _task_machine(task: str, machine, kinds: tuple[str, ...]) -> Machine:
    if not isinstance(machine, tuple(_KINDS.values())):
        try:
            machine = load_machine(machine)
        except MachineError as err:
            raise TaskOptionError(f"{task}: option machine: {err}") from err
    if machine.kind not in kinds:
        names = {"dfa": "a finite automaton", "pda": "a pushdown automaton", "tm": "a Turing machine"}
        want = " or ".join(names[k] for k in kinds)
        raise TaskOptionError(f"{task}: option machine: expected {want}, got {names[machine.kind]} ({machine})")
    return machine


def _may_have_nonmembers(machine, length: int) -> bool:
    """False when every string of ``length`` symbols is accepted.

    Exact for a finite automaton; for a pushdown automaton, the strings are
    tried in order (stopping at the first rejected one) while there are at
    most ``_ENUMERATE_NONMEMBERS`` of them, and assumed to include a
    non-member beyond.
    """
    sigma = machine.input_alphabet
    if isinstance(machine, FiniteAutomaton):
        return machine.count_members(length) < len(sigma) ** length
    if len(sigma) ** length > _ENUMERATE_NONMEMBERS:
        return True
    return any(not machine.accepts(w) for w in itertools.product(sigma, repeat=length))


def _option_value(machine):
    return os.fspath(machine) if isinstance(machine, os.PathLike) else machine


# ---------------------------------------------------------------------- tasks


class AcceptanceTask(Task):
    """Accept or reject a string (a finite or pushdown automaton; module docstring).

    Options:
      machine: a shipped name (``"anbn"``, the default), a path to a TOML
        file, or a ``FiniteAutomaton`` / ``PushdownAutomaton``.
      max_train_length: the longest training string (default 20).
      max_test_length: the longest test string (default 40); test strings are
        longer than ``max_train_length``.
    """

    name = "automaton_acceptance"
    metric_names = ("accuracy",)
    length_sampling = "per_example"
    labels = ("reject", "accept")

    _OPTIONS = ("machine", "max_train_length", "max_test_length")

    def __init__(self, machine="anbn", max_train_length: int = 20, max_test_length: int = 40, **unknown: Any):
        check_option_names(self.name, unknown, self._OPTIONS)
        self.machine = cast("FiniteAutomaton | PushdownAutomaton", _task_machine(self.name, machine, ("dfa", "pda")))
        L = check_int_option(self.name, "max_train_length", max_train_length, 1)
        T = check_int_option(self.name, "max_test_length", max_test_length, L + 1)
        self._options = {"machine": _option_value(machine), "max_train_length": L, "max_test_length": T}
        m = self.machine
        feasible = [n for n in range(1, T + 1) if m.may_have_members(n, T) and _may_have_nonmembers(m, n)]
        train = [n for n in feasible if n <= L]
        test = [n for n in feasible if n > L]
        if not train or not test:
            what, lo, hi = ("train", 1, L) if not train else ("test", L + 1, T)
            raise TaskOptionError(
                f"{self.name}: options max_train_length, max_test_length: machine {m} has no length "
                f"in {lo}..{hi} (the {what} lengths) with both members and non-members"
            )
        lo = feasible[0]
        step = math.gcd(*(n - lo for n in feasible[1:])) or 1
        missing = [n for n in range(lo, feasible[-1] + 1, step) if n not in set(feasible)]
        if missing:
            raise TaskOptionError(
                f"{self.name}: option machine: the lengths at which {m} has members and non-members, "
                f"{feasible[:8]}..., are not an arithmetic progression (none of length {missing[0]})"
            )
        self.lengths = LengthRange(lo, feasible[-1], step)
        self.train_lengths = LengthRange(lo, train[-1], step)
        self.test_modes = {"test": LengthRange(test[0], feasible[-1], step)}
        self.input_size = len(m.input_alphabet)
        self.output_size = 2

    def input_steps(self, length: int) -> int:
        return length

    def output_steps(self, length: int) -> int:
        return 1

    # ----------------------------------------------------------- generation

    def sample_member(self, rng: np.random.Generator, length: int) -> tuple[str, ...]:
        """A member of exactly ``length`` symbols, checked by running the machine."""
        word = self.machine.sample_member(rng, int(length), self.lengths.hi)
        if word is None:
            raise MachineError(f"{self.machine.source}: {self.machine.name} has no member of length {length}")
        if not self.machine.accepts(word):  # the generator's own check
            raise MachineError(f"{self.machine.source}: generated {''.join(word)!r}, which is not accepted")
        return word

    def sample_nonmember(self, rng: np.random.Generator, length: int) -> tuple[str, ...]:
        """A rejected string of ``length`` symbols: a near miss or a random string (module docstring)."""
        sigma = self.machine.input_alphabet
        near = bool(rng.integers(2))
        for _ in range(_NEGATIVE_TRIES):
            if near and len(sigma) > 1:
                word = list(self.sample_member(rng, length))
                i = int(rng.integers(length))
                others = [s for s in sigma if s != word[i]]
                word[i] = others[int(rng.integers(len(others)))]
            else:
                word = [sigma[i] for i in rng.integers(len(sigma), size=length)]
            if not self.machine.accepts(word):
                return tuple(word)
            near = not near
        raise MachineError(
            f"{self.machine.source}: found no string of length {length} that {self.machine.name} rejects "
            f"in {_NEGATIVE_TRIES} tries"
        )

    def _generate(self, rng: np.random.Generator, lengths: np.ndarray) -> Batch:
        B = len(lengths)
        n_pos = B // 2 + (int(rng.integers(2)) if B % 2 else 0)
        labels = np.zeros(B, dtype=np.int32)
        labels[rng.permutation(B)[:n_pos]] = 1
        words = [
            self.sample_member(rng, int(n)) if y else self.sample_nonmember(rng, int(n))
            for n, y in zip(lengths, labels, strict=True)
        ]
        return self.encode(words, labels)

    def encode(self, words, labels=None) -> Batch:
        """A batch of words (padded to the longest); ``labels`` default to running the machine."""
        words = [self.machine.check_word(w) for w in words]
        if labels is None:
            labels = [int(self.machine.accepts(w)) for w in words]
        lengths = np.array([len(w) for w in words], dtype=np.int64)
        T = int(lengths.max())
        ids = np.full((len(words), T), -1, dtype=np.int64)
        index = self.machine._sigma_index
        for b, w in enumerate(words):
            ids[b, : len(w)] = [index[s] for s in w]
        targets = np.asarray(labels, dtype=np.int32).reshape(len(words), 1)
        return Batch(one_hot(ids, self.input_size), step_mask(lengths, T), targets, np.ones((len(words), 1), bool))

    def example(self, word) -> Batch:
        """A one-example batch of ``word``, labelled by running the machine."""
        self.check_lengths(len(self.machine.check_word(word)), 1)
        return self.encode([word])

    # -------------------------------------------------------------- scoring

    def metrics(self, logits, batch: Batch) -> dict[str, Any]:
        return {"accuracy": _metrics.token_accuracy(logits, batch)}

    def decode(self, batch: Batch, index: int = 0) -> DecodedExample:
        ids = batch.inputs[index][batch.input_mask[index]].argmax(axis=-1)
        labels = batch.targets[index][batch.target_mask[index]]
        return DecodedExample([self.machine.input_alphabet[i] for i in ids], [self.labels[y] for y in labels])

    def describe(self) -> dict[str, Any]:
        row = super().describe()
        row["name"] = f"{self.name} ({self.machine.name})"
        return row


class TransductionTask(Task):
    """Write the tape a Turing machine leaves when it halts (module docstring).

    Options:
      machine: a shipped name (``"binary_increment"``, the default), a path to
        a TOML file, or a ``TuringMachine``.
      max_train_length: the longest training input (default 20).
      max_test_length: the longest test input (default 40).
    """

    name = "automaton_transduction"
    metric_names = ("sequence_accuracy", "token_accuracy")
    length_sampling = "per_example"

    _OPTIONS = ("machine", "max_train_length", "max_test_length")

    def __init__(
        self, machine="binary_increment", max_train_length: int = 20, max_test_length: int = 40, **unknown: Any
    ):
        check_option_names(self.name, unknown, self._OPTIONS)
        self.machine = cast(TuringMachine, _task_machine(self.name, machine, ("tm",)))
        L = check_int_option(self.name, "max_train_length", max_train_length, 1)
        T = check_int_option(self.name, "max_test_length", max_test_length, L + 1)
        self._options = {"machine": _option_value(machine), "max_train_length": L, "max_test_length": T}
        self.lengths = LengthRange(1, T)
        self.train_lengths = LengthRange(1, L)
        self.test_modes = {"test": LengthRange(L + 1, T)}
        self.input_size = len(self.machine.input_alphabet)
        self.output_size = len(self.machine.tape_alphabet)
        self._tape_index = {s: i for i, s in enumerate(self.machine.tape_alphabet)}

    def input_steps(self, length: int) -> int:
        return length

    def output_steps(self, length: int) -> int:
        return self.machine.output_steps(length)

    def sample_input(self, rng: np.random.Generator, length: int) -> tuple[str, ...]:
        """A uniform input of ``length`` symbols in the machine's domain (accepted, if it has accepting states)."""
        sigma, m = self.machine.input_alphabet, self.machine
        for _ in range(_DOMAIN_TRIES):
            word = tuple(sigma[i] for i in rng.integers(len(sigma), size=length))
            if not m.accepting or m.run(word).accepted:
                return word
        raise MachineError(
            f"{m.source}: found no input of length {length} that {m.name} accepts in {_DOMAIN_TRIES} tries"
        )

    def _generate(self, rng: np.random.Generator, lengths: np.ndarray) -> Batch:
        return self.encode([self.sample_input(rng, int(n)) for n in lengths])

    def encode(self, words) -> Batch:
        """A batch of input words with the machine's outputs as targets (padded to the longest)."""
        words = [self.machine.check_word(w) for w in words]
        lengths = np.array([len(w) for w in words], dtype=np.int64)
        T_in = int(lengths.max())
        T_out = self.output_steps(T_in)
        ids = np.full((len(words), T_in), -1, dtype=np.int64)
        targets = np.zeros((len(words), T_out), dtype=np.int32)
        for b, w in enumerate(words):
            ids[b, : len(w)] = [self.machine._sigma_index[s] for s in w]
            out = self.machine.transduce(w)
            targets[b, : len(out)] = [self._tape_index[s] for s in out]
        out_lengths = np.array([self.output_steps(int(n)) for n in lengths])
        return Batch(one_hot(ids, self.input_size), step_mask(lengths, T_in), targets, step_mask(out_lengths, T_out))

    def example(self, word) -> Batch:
        """A one-example batch of input ``word``."""
        self.check_lengths(len(self.machine.check_word(word)), 1)
        return self.encode([word])

    def metrics(self, logits, batch: Batch) -> dict[str, Any]:
        return {
            "sequence_accuracy": _metrics.sequence_accuracy(logits, batch),
            "token_accuracy": _metrics.token_accuracy(logits, batch),
        }

    def decode(self, batch: Batch, index: int = 0) -> DecodedExample:
        ids = batch.inputs[index][batch.input_mask[index]].argmax(axis=-1)
        tgt = batch.targets[index][batch.target_mask[index]]
        gamma = self.machine.tape_alphabet
        return DecodedExample([self.machine.input_alphabet[i] for i in ids], [gamma[i] for i in tgt])

    def describe(self) -> dict[str, Any]:
        row = super().describe()
        row["name"] = f"{self.name} ({self.machine.name})"
        return row
