"""The deterministic one-tape Turing machine (Q, Sigma, Gamma, delta, q0, B, F) and its output window.

Definitions: ``panm_jax.tasks.automata``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, ClassVar, NamedTuple

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

__all__ = ["TMResult", "TMTransition", "TuringMachine"]

_MOVES = ("L", "R")


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
    """A deterministic one-tape Turing machine (Q, Sigma, Gamma, delta, q0, B, F) (``panm_jax.tasks.automata``)."""

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
