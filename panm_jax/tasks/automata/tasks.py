"""The tasks built on a machine: ``AcceptanceTask`` and ``TransductionTask``.

``AcceptanceTask`` classifies strings with a finite or pushdown automaton,
``TransductionTask`` writes what a Turing machine leaves on its tape.

Their lengths, the generation of members and verified non-members, and their
input and output format are described in ``panm_jax.tasks.automata``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
from typing import Any, cast

import numpy as np

from panm_jax import checks
from panm_jax.options import option
from panm_jax.tasks import metrics as _metrics
from panm_jax.tasks.automata.base import MachineError
from panm_jax.tasks.automata.finite import FiniteAutomaton
from panm_jax.tasks.automata.loader import _KINDS, Machine, load_machine
from panm_jax.tasks.automata.pushdown import PushdownAutomaton
from panm_jax.tasks.automata.turing import TuringMachine
from panm_jax.tasks.base import (
    Batch,
    DecodedExample,
    LengthRange,
    Task,
    TaskOptionError,
    TaskOptions,
    check_int_option,
    one_hot,
    step_mask,
)

__all__ = ["AcceptanceTask", "TransductionTask"]

_NEGATIVE_TRIES = 64
_DOMAIN_TRIES = 100
_ENUMERATE_NONMEMBERS = 4096


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


class AcceptanceTask(Task):
    """Accept or reject a string (a finite or pushdown automaton; ``panm_jax.tasks.automata``).

    Its options: ``AcceptanceTask.Options``.
    """

    @dataclasses.dataclass(frozen=True)
    class Options(TaskOptions):
        # Loaded and checked by the task itself (``_task_machine``): the machine is built once.
        machine: str | os.PathLike | FiniteAutomaton | PushdownAutomaton = option(
            "anbn",
            doc="the automaton: a shipped machine's name, a TOML file, or a machine object",
            allowed="a shipped name or a path to a TOML file, or a finite automaton or a pushdown automaton",
        )
        max_train_length: int = option(20, checks.positive_int, doc="the longest training string")
        max_test_length: int = option(
            40, checks.integer, 2, doc="the longest test string; test strings are longer than max_train_length"
        )

    name = "automaton_acceptance"
    metric_names = ("accuracy",)
    length_sampling = "per_example"
    labels = ("reject", "accept")

    def __init__(self, **options: Any):
        o = self.take_options(options)
        machine = _task_machine(self.name, o.machine, ("dfa", "pda"))
        self.machine = cast("FiniteAutomaton | PushdownAutomaton", machine)
        L = o.max_train_length
        T = check_int_option(self.name, "max_test_length", o.max_test_length, L + 1)
        self._options = {"machine": _option_value(o.machine), "max_train_length": L, "max_test_length": T}
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
        """A rejected string of ``length`` symbols: a near miss or a random string (``panm_jax.tasks.automata``)."""
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
    """Write the tape a Turing machine leaves when it halts (``panm_jax.tasks.automata``).

    Its options: ``TransductionTask.Options``.
    """

    @dataclasses.dataclass(frozen=True)
    class Options(TaskOptions):
        # Loaded and checked by the task itself (``_task_machine``): the machine is built once.
        machine: str | os.PathLike | TuringMachine = option(
            "binary_increment",
            doc="the Turing machine: a shipped machine's name, a TOML file, or a machine object",
            allowed="a shipped name or a path to a TOML file, or a Turing machine",
        )
        max_train_length: int = option(20, checks.positive_int, doc="the longest training input")
        max_test_length: int = option(
            40, checks.integer, 2, doc="the longest test input; test inputs are longer than max_train_length"
        )

    name = "automaton_transduction"
    metric_names = ("sequence_accuracy", "token_accuracy")
    length_sampling = "per_example"

    def __init__(self, **options: Any):
        o = self.take_options(options)
        self.machine = cast(TuringMachine, _task_machine(self.name, o.machine, ("tm",)))
        L = o.max_train_length
        T = check_int_option(self.name, "max_test_length", o.max_test_length, L + 1)
        self._options = {"machine": _option_value(o.machine), "max_train_length": L, "max_test_length": T}
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
