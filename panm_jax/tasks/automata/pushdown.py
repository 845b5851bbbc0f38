"""The pushdown automaton (Q, Sigma, Gamma, delta, q0, gamma0, F), accepting by final state.

Its breadth-first acceptance search and its member generator (a randomised
depth-first search pruned by an over-approximation) are described in
``panm_jax.tasks.automata``.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, NamedTuple

import numpy as np

from panm_jax.tasks.automata.base import (
    _PYTHON,
    MachineFormatError,
    MachineLimitError,
    _check_accepting,
    _check_count,
    _check_member,
    _check_name_list,
    _check_transitions,
    _Machine,
    _set,
)

__all__ = ["PDATransition", "PushdownAutomaton"]


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
        """``(H, feasible)``: the stack bound and the over-approximation of ``panm_jax.tasks.automata``.

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
        """A member of exactly ``length`` symbols (``panm_jax.tasks.automata``), or ``None`` if the search finds none.

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
