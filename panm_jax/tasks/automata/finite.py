"""The deterministic finite automaton (Q, Sigma, delta, q0, F), with exact member counts and uniform members.

Definitions and the generation of members: ``panm_jax.tasks.automata``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, ClassVar, NamedTuple

import numpy as np

from panm_jax.tasks.automata.base import (
    _PYTHON,
    MachineFormatError,
    _check_accepting,
    _check_member,
    _check_name_list,
    _check_transitions,
    _Machine,
    _set,
)

__all__ = ["FATransition", "FiniteAutomaton"]


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
