"""The six algorithmic tasks of PANM (Le et al. 2024, §3.1, App. D.1).

Copy, Reverse, Mix (content-free) and Dynamic Recall, Priority Sort, ID Sort
(content-based), as Le et al. 2024 (Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural
Memory, TMLR)
describes them and docs/tasks.md (algorithmic tasks) specifies.

Input layout (``D_in = 12 + extra`` channels, ``T_in = n + 2`` rows, or
``n + 3`` for Dynamic Recall)::

    row 0          start delimiter   channel 10 = 1
    rows 1..n      x_1 .. x_n        one-hot over channels 0..9 (+ task extras)
    row n + 1      end delimiter     channel 11 = 1
    row n + 2      (Dynamic Recall only) the query q: one-hot q on 0..9, channel 12 = 1

Tokens are drawn uniformly from the 10 symbols. Outputs are 10-class
predictions emitted after the whole input with a zero decoder input
(``output_mode = "after_input"``, no teacher forcing); the metric is token
accuracy. Training lengths are ``n ~ U{1..L}`` (``L = 10``), one fresh length
per batch; the test modes are ``L, L+1, 2L+1, 4L+1, 8L+1`` (the authors' code
evaluates at ``k L + 1``). Option ``min_train_length`` raises the shortest
training length: ``min_train_length=20, max_train_length=30`` trains on
``n ~ U{20..30}``, the long-to-short Mix of Le et al. 2024 (App. D.6, Fig. 7 left).
Option ``test_lengths`` also takes the test lengths themselves, ``"10,61"`` (or
one length, ``10``): the modes are then ``L`` and ``L+1`` and one mode per listed
length, named by it, ascending (``"10", "L", "L+1", "61"`` at ``L = 30``), so a
test length may be shorter than every training length while selection stays on
``L+1``, never on a test length. Le et al. 2024 state the test lengths two other ways:
§3.1 says ``L+1, 2(L+1), 4(L+1), 8(L+1)``, and the headers of their Tables 13-16
print ``9 (L), 10 (L+1), 20, 40, 80`` (Table 17, Priority Sort, prints 10, 11, 21,
41, 81). Option ``test_lengths="k(L+1)"`` gives the modes ``L, L+1, 2(L+1),
4(L+1), 8(L+1)``; with ``max_train_length=9`` they are the headers' lengths.

Targets (1-indexed as in the paper):

* Copy: ``y = x`` (``n`` outputs).
* Reverse: ``y_t = x_{n+1-t}``.
* Mix: ``n`` outputs, ``y_t = x_{ceil(n/2)}`` for odd ``t`` and ``y_t = x_1`` for
  even ``t``: Mix of ``[3 1 4 1 5]`` is ``[4 3 4 3 4]``. Le et al. 2024, §3.1,
  print ``x_{ceil(L/2)}``: we read ``L`` as the example's length ``n`` (the
  middle moves with the length). Option ``middle="fixed"`` reads it as the
  training maximum: ``y_t = x_{min(ceil(L/2), n)}`` (a fixed position; an example
  shorter than ``ceil(L/2)`` points at its last token). Option ``t_from=0``
  counts ``t`` from 0, so the odd steps are the second, fourth, ... outputs:
  ``[3 4 3 4 3]``.
* Dynamic Recall: one output, the token right *after* the first occurrence of the
  query ``q`` in ``x`` if ``n`` is odd, right *before* it if ``n`` is even (our
  reading of App. D.1 and of the App. D.5 prompt "E V y D m I e V u f _ V" ->
  "E": ``n = 10`` is even, the first V is at position 2, the token before it is
  E). Edge cases, our rule: the query is the token at a position ``j`` drawn
  uniformly among the positions whose token's *first* occurrence has the needed
  neighbour (so a token that first occurs at position ``n`` is never a query
  when ``n`` is odd, nor one first occurring at position 1 when ``n`` is even);
  a sequence with no such position (``n = 2`` with ``x_1 = x_2``, or all tokens
  equal for even ``n``) is redrawn, so ``x`` is uniform conditioned on
  admitting a query. ``n = 1`` admits none: the minimum length is 2 and the
  training range ``U{2..L}``. App. D.1 also says the first target token is
  the neighbour "following its succeeding tokens in the input": option
  ``answer="onwards"`` reads that as ``n - s + 1`` outputs, the neighbour
  ``x_s`` and every token after it (``x_s, x_{s+1}, ..., x_n``).
* Priority Sort: each token carries a priority ``~ N(0, 1)`` on channel 12
  (zero on delimiter rows); ``y`` is ``x`` sorted by ascending priority. Options
  ``priority="uniform"`` (``U[-1, 1]``) and ``order="descending"``: the Priority
  Sort of the same authors' earlier memory models (their public SAM code),
  which sorts uniform priorities in ``[-1, 1]`` highest first. Option ``keep``
  outputs only the first ``ceil(keep * n)`` tokens of the sorted sequence: that
  code outputs the 16 highest of 20 (``keep=0.8``), as the Priority Sort of
  Graves et al. 2014 (Neural Turing Machines, §4.5) does.
* ID Sort: positions are paired at random (a random permutation, consecutive
  entries paired; an odd ``n`` leaves its last one paired with itself), each
  pair shares an id ``~ N(0, I_8)`` on channels 12..19; ``y_i`` is the token that
  shares token ``i``'s id (itself when self-paired).

Generation is vectorised over the batch (fancy indexing and ``argsort``; the
only Python loop is Dynamic Recall's redraw of the rare rows without a query).
A batch of mixed per-example lengths is padded with masks.

The longest length is bounded by PANM's address space: with ``A = 10`` address
bits (Le et al. 2024, §3) the memory has ``2**10 = 1024`` slots, one per input row,
so ``max_length = 1024 - (T_in - n)`` by default (option ``max_length``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np

from panm_jax import checks
from panm_jax.errors import UserError
from panm_jax.options import option
from panm_jax.tasks import metrics as _metrics
from panm_jax.tasks.base import (
    Batch,
    DecodedExample,
    LengthRange,
    Task,
    TaskOptionError,
    TaskOptions,
    check_int_option,
    check_option_names,
    step_mask,
)

__all__ = [
    "ADDRESS_SLOTS",
    "AlgorithmicTask",
    "CopyTask",
    "DynamicRecallTask",
    "IDSortTask",
    "MixTask",
    "NUM_SYMBOLS",
    "PrioritySortTask",
    "ReverseTask",
]

NUM_SYMBOLS = 10  # tokens 0..9
START_CHANNEL = 10  # start delimiter (row 0)
END_CHANNEL = 11  # end delimiter (row n + 1)
EXTRA_CHANNEL = 12  # first task-specific channel
ID_WIDTH = 8  # ID Sort's id vectors ~ N(0, I_8)
ADDRESS_SLOTS = 2**10  # PANM memory slots with A = 10 address bits (Le et al. 2024, §3)

# The test modes of each convention, name -> length, for a longest training length L (module docstring).
TEST_LENGTHS = {
    "kL+1": lambda L: {"L": L, "L+1": L + 1, "2L+1": 2 * L + 1, "4L+1": 4 * L + 1, "8L+1": 8 * L + 1},
    "k(L+1)": lambda L: {"L": L, "L+1": L + 1, "2(L+1)": 2 * (L + 1), "4(L+1)": 4 * (L + 1), "8(L+1)": 8 * (L + 1)},
}


def _listed_lengths(value) -> list[int]:
    """The lengths of a ``test_lengths`` list, ``"10, 61"``, ``(10, 61)`` or ``10`` -> ``[10, 61]``; ``[]`` if it
    is not one."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, (list, tuple)):
        ints = all(isinstance(n, int) and not isinstance(n, bool) for n in value)
        return list(value) if ints else []
    if not isinstance(value, str):
        return []
    parts = [p.strip() for p in value.split(",")]
    if not all(p.isdigit() for p in parts):  # "".isdigit() is false: an empty item is not a length
        return []
    return [int(p) for p in parts]


# What option ``test_lengths`` accepts, before the bounds of a task's lengths (``_test_modes``).
_TEST_LENGTHS_WORDS = f"one of {list(TEST_LENGTHS)} or test lengths ('10,61' or 10)"


def _test_lengths(name: str, value) -> str | int | tuple[int, ...]:
    """Option ``test_lengths``: a convention of ``TEST_LENGTHS``, or positive test lengths (``"10,61"``, ``10``,
    ``(10, 61)``; a list is kept as a tuple). Each task bounds the lengths further (``_test_modes``)."""
    if isinstance(value, str) and value in TEST_LENGTHS:
        return value
    listed = _listed_lengths(value)
    if not listed or min(listed) < 1:
        raise UserError(f"{name}: expected {_TEST_LENGTHS_WORDS}, each a positive integer, got {value!r}")
    return tuple(value) if isinstance(value, (list, tuple)) else value


class AlgorithmicTask(Task):
    """Shared layout, options and metric of the six tasks (see the module docstring).

    Their options: ``AlgorithmicTask.Options`` (a task with options of its own extends it). Training draws
    ``n ~ U{min_train_length..L}``; the shortest length is the task's (``min_length``: 1, or 2 for Dynamic
    Recall), which bounds ``max_train_length``, ``min_train_length`` and ``max_length`` from below.
    """

    @dataclasses.dataclass(frozen=True)
    class Options(TaskOptions):
        max_train_length: int = option(10, checks.integer, 1, doc="L, the longest training length")
        min_train_length: int | None = option(
            None, checks.optional_integer, 1, doc="the shortest training length (None: the task's shortest)"
        )
        max_length: int | None = option(
            None,
            checks.optional_integer,
            1,
            doc="the longest length sample accepts (None: what fits 1024 PANM address slots)",
        )
        test_lengths: str | int | tuple[int, ...] = option(
            "kL+1",
            _test_lengths,
            allowed=f"{_TEST_LENGTHS_WORDS}, each a positive integer",
            doc="the test modes beside L and L+1: kL+1 or k(L+1) for k = 2, 4, 8, or one per listed length",
        )

    extra_channels: ClassVar[int] = 0
    extra_rows: ClassVar[int] = 0  # rows after the end delimiter
    min_length: ClassVar[int] = 1
    output_size = NUM_SYMBOLS

    def __init__(self, **options: Any):
        o = self.take_options(options)
        # The bounds that depend on the task's shortest length and on L.
        L = check_int_option(self.name, "max_train_length", o.max_train_length, self.min_length)
        min_train_length = self.min_length if o.min_train_length is None else o.min_train_length
        lo = check_int_option(self.name, "min_train_length", min_train_length, self.min_length, L)
        fixed = 2 + self.extra_rows
        max_length = ADDRESS_SLOTS - fixed if o.max_length is None else o.max_length
        max_length = check_int_option(self.name, "max_length", max_length, self.min_length)
        self.lengths = LengthRange(self.min_length, max_length)
        test_lengths, modes = self._test_modes(o.test_lengths, L)
        if max(modes.values()) > max_length:
            raise TaskOptionError(
                f"{self.name}: option max_train_length: expected the longest test mode "
                f"({test_lengths}: {max(modes.values())}) <= max_length = {max_length}, got L = {L}"
            )
        self.max_train_length = L
        self._options: dict[str, Any] = {
            "max_train_length": L,
            "min_train_length": lo,
            "max_length": max_length,
            "test_lengths": test_lengths,
        }
        self.input_size = NUM_SYMBOLS + 2 + self.extra_channels
        self.train_lengths = LengthRange(lo, L)
        self.test_modes = {name: LengthRange(n, n) for name, n in modes.items()}
        self._take_own_options(o)

    def _take_own_options(self, o: Any) -> None:
        """Read the options a subclass adds to ``AlgorithmicTask.Options`` from ``o`` (its ``Options``, checked)
        and record them in ``_options``; none here."""

    def _test_modes(self, test_lengths, L: int) -> tuple[str | int, dict[str, int]]:
        """``(the option as recorded, {mode: length})`` of option ``test_lengths`` (see the module docstring)."""
        if isinstance(test_lengths, str) and test_lengths in TEST_LENGTHS:
            return test_lengths, TEST_LENGTHS[test_lengths](L)
        listed = _listed_lengths(test_lengths)
        if not listed or not all(self.lengths.contains(n) for n in listed):
            raise TaskOptionError(
                f"{self.name}: option test_lengths: expected {_TEST_LENGTHS_WORDS}, "
                f"each {self.lengths.expected()}, got {test_lengths!r}"
            )
        named = {L: "L", L + 1: "L+1"}
        modes = {named.get(n, str(n)): n for n in sorted({*listed, L, L + 1})}
        recorded = ",".join(map(str, sorted(set(listed))))
        return recorded, modes

    def input_steps(self, length: int) -> int:
        return length + 2 + self.extra_rows

    def output_steps(self, length: int) -> int:
        return length

    # ----------------------------------------------------------- generation

    def _generate(self, rng: np.random.Generator, lengths: np.ndarray) -> Batch:
        n_max = int(lengths.max())
        x = rng.integers(0, NUM_SYMBOLS, size=(len(lengths), n_max))
        valid = step_mask(lengths, n_max)  # [B, n_max]
        x, extras = self._draw(rng, x, lengths, valid)
        return self._build(x, lengths, valid, extras)

    def _draw(self, rng, x, lengths, valid) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Draw the task's random extras (and redraw rows of ``x`` if the task must)."""
        return x, {}

    def _targets(self, x, lengths, valid, **extras):
        """Return ``(extra channels [B, n, E] or None, targets [B, T_out], target_mask [B, T_out])``."""
        raise NotImplementedError

    def _build(self, x, lengths, valid, extras) -> Batch:
        channels, targets, target_mask = self._targets(x, lengths, valid, **extras)
        inputs, input_mask = self._encode(x, lengths, valid, channels)
        return Batch(inputs, input_mask, targets.astype(np.int32), target_mask)

    def example(self, tokens, **extras) -> Batch:
        """A one-example batch from given tokens (and the task's extras), for hand checks.

        ``tokens``: the sequence ``x`` (ints 0..9). Extras: Dynamic Recall
        ``query`` (a token of ``x``); Priority Sort ``priority`` (one float per
        token); ID Sort ``partner`` (``partner[i]`` is the 0-based position
        sharing ``i``'s id; an involution) with optional ``ids`` (``[n, 8]``;
        drawn from ``default_rng(0)`` per pair when left out).
        """
        x = np.asarray(tokens, dtype=np.int64)
        if x.ndim != 1 or not ((0 <= x) & (x < NUM_SYMBOLS)).all():
            raise ValueError(f"tokens: expected a sequence of integers in [0, {NUM_SYMBOLS - 1}], got {tokens!r}")
        lengths = self.check_lengths(len(x), 1)
        return self._build(x[None, :], lengths, np.ones((1, len(x)), dtype=bool), self._example_extras(x, **extras))

    def _example_extras(self, x, **extras) -> dict[str, np.ndarray]:
        check_option_names(f"{self.name}.example", extras, ())
        return {}

    def _encode(self, x, lengths, valid, extra):
        """One-hot tokens between the delimiters, plus the task's extra channels."""
        B, n_max = x.shape
        T = self.input_steps(n_max)
        inputs = np.zeros((B, T, self.input_size), dtype=np.float32)
        inputs[:, 0, START_CHANNEL] = 1.0
        token_rows = inputs[:, 1 : n_max + 1, :NUM_SYMBOLS]  # a view: writes land in `inputs`
        np.put_along_axis(token_rows, x[..., None], valid[..., None].astype(np.float32), axis=-1)
        if extra is not None:
            inputs[:, 1 : n_max + 1, EXTRA_CHANNEL : EXTRA_CHANNEL + extra.shape[-1]] = extra * valid[..., None]
        inputs[np.arange(B), lengths + 1, END_CHANNEL] = 1.0
        input_mask = step_mask(lengths + 2 + self.extra_rows, T)
        return inputs, input_mask

    # --------------------------------------------------------------- scoring

    def metrics(self, logits, batch: Batch) -> dict[str, Any]:
        return {"token_accuracy": _metrics.token_accuracy(logits, batch)}

    # --------------------------------------------------------------- reading

    def _token_label(self, row: np.ndarray, group: dict) -> str:
        return str(int(np.argmax(row[:NUM_SYMBOLS])))

    def decode(self, batch: Batch, index: int = 0) -> DecodedExample:
        rows = batch.inputs[index][batch.input_mask[index]]
        group: dict = {}
        symbols = []
        for row in rows:
            if row[START_CHANNEL] > 0.5:
                symbols.append("<s>")
            elif row[END_CHANNEL] > 0.5:
                symbols.append("</s>")
            else:
                symbols.append(self._token_label(row, group))
        targets = [str(int(t)) for t in batch.targets[index][batch.target_mask[index]]]
        return DecodedExample(symbols, targets)


class CopyTask(AlgorithmicTask):
    """Copy: ``y = x`` (first in, first out)."""

    name = "copy"

    def _targets(self, x, lengths, valid):  # type: ignore[override]  # takes its task's own extras (from _draw) by name
        return None, np.where(valid, x, 0), valid


class ReverseTask(AlgorithmicTask):
    """Reverse: ``y_t = x_{n+1-t}`` (last in, first out)."""

    name = "reverse"

    def _targets(self, x, lengths, valid):  # type: ignore[override]
        t = np.arange(x.shape[1])[None, :]
        src = np.clip(lengths[:, None] - 1 - t, 0, None)
        return None, np.where(valid, np.take_along_axis(x, src, axis=1), 0), valid


class MixTask(AlgorithmicTask):
    """Mix: ``y_t = x_{ceil(n/2)}`` at odd ``t``, ``x_1`` at even ``t`` (1-indexed).

    Its options: ``MixTask.Options``, the shared ones and two of its own (the module docstring says why).
    """

    @dataclasses.dataclass(frozen=True)
    class Options(AlgorithmicTask.Options):
        middle: str = option(
            "own",
            checks.one_of,
            ("own", "fixed"),
            doc="the middle's position: own, ceil(n/2) of the example's length n; fixed, min(ceil(L/2), n)",
        )
        t_from: int = option(
            1, checks.integer, 0, 1, doc="the number of the first output step (1: it is the middle; 0: it is x_1)"
        )

    name = "mix"

    def _take_own_options(self, o: Any) -> None:
        self.middle, self.t_from = o.middle, o.t_from
        self._options.update(middle=self.middle, t_from=self.t_from)

    def _targets(self, x, lengths, valid):  # type: ignore[override]
        B = x.shape[0]
        if self.middle == "own":
            position = (lengths - 1) // 2  # 1-indexed ceil(n/2) is 0-indexed (n-1)//2
        else:
            position = np.minimum((self.max_train_length + 1) // 2, lengths) - 1
        middle = x[np.arange(B), position]
        first = x[:, 0]
        t = np.arange(x.shape[1]) + self.t_from  # the step number of each output
        y = np.where((t % 2 == 1)[None, :], middle[:, None], first[:, None])
        return None, np.where(valid, y, 0), valid


def _first_occurrence(x, valid):
    """``[B, 10]``: the first position of each symbol in each row (``n`` when absent)."""
    hits = (x[..., None] == np.arange(NUM_SYMBOLS)) & valid[..., None]  # [B, n, 10]
    return np.where(hits.any(axis=1), hits.argmax(axis=1), x.shape[1])


def _has_neighbour(first, lengths):
    """Does a first occurrence at ``first`` have the neighbour the parity of ``n`` asks for?"""
    n = lengths.reshape(lengths.shape + (1,) * (first.ndim - 1))
    return np.where(n % 2 == 1, first + 1 < n, (first >= 1) & (first < n))


class DynamicRecallTask(AlgorithmicTask):
    """Dynamic Recall: recall the neighbour of the query's first occurrence (see the module docstring).

    Its options: ``DynamicRecallTask.Options``, the shared ones and ``answer`` (the module docstring says why).
    """

    @dataclasses.dataclass(frozen=True)
    class Options(AlgorithmicTask.Options):
        answer: str = option(
            "neighbour",
            checks.one_of,
            ("neighbour", "onwards"),
            doc="neighbour: one output, the neighbour; onwards: the neighbour and every token after it",
        )

    name = "dynamic_recall"
    extra_channels = 1  # channel 12 marks the query row
    extra_rows = 1  # the query row, after the end delimiter
    min_length = 2

    def _take_own_options(self, o: Any) -> None:
        self.answer = o.answer
        self._options["answer"] = self.answer

    def output_steps(self, length: int) -> int:
        return 1 if self.answer == "neighbour" else length

    def _candidates(self, x, lengths, valid):
        """``[B, n]`` bool: positions whose token's first occurrence has the needed neighbour."""
        f = np.take_along_axis(_first_occurrence(x, valid), x, axis=1)  # first occurrence of x_j
        return valid & _has_neighbour(f, lengths)

    def _draw(self, rng, x, lengths, valid):
        B, n_max = x.shape
        cand = self._candidates(x, lengths, valid)
        bad = ~cand.any(axis=1)
        while bad.any():  # redraw the rare rows that admit no query (see the module docstring)
            rows = np.flatnonzero(bad)
            x[rows] = rng.integers(0, NUM_SYMBOLS, size=(len(rows), n_max))
            cand[rows] = self._candidates(x[rows], lengths[rows], valid[rows])
            bad = ~cand.any(axis=1)
        # j uniform over the candidate positions: the argmax of uniform keys on them.
        j = np.where(cand, rng.random((B, n_max)), -1.0).argmax(axis=1)
        return x, {"query": x[np.arange(B), j]}

    def _targets(self, x, lengths, valid, query):  # type: ignore[override]
        B = x.shape[0]
        ar = np.arange(B)
        first = _first_occurrence(x, valid)[ar, query]
        ok = _has_neighbour(first, lengths)
        if not ok.all():
            raise ValueError(
                f"query: expected a token whose first occurrence has a neighbour "
                f"{'after' if lengths[~ok][0] % 2 else 'before'} it, got {int(query[~ok][0])}"
            )
        neighbour = np.where(lengths % 2 == 1, first + 1, first - 1)  # odd n: after, even n: before
        if self.answer == "neighbour":
            return None, x[ar, neighbour][:, None], np.ones((B, 1), dtype=bool)
        # "onwards": x_s, x_{s+1}, ..., x_n from the neighbour s on, padded to n_max outputs.
        t = np.arange(x.shape[1])[None, :]
        source = neighbour[:, None] + t
        mask = source < lengths[:, None]
        y = np.take_along_axis(x, np.minimum(source, x.shape[1] - 1), axis=1)
        return None, np.where(mask, y, 0), mask

    def _build(self, x, lengths, valid, extras):
        batch = super()._build(x, lengths, valid, extras)
        ar = np.arange(x.shape[0])
        query_row = lengths + 2  # after the end delimiter
        batch.inputs[ar, query_row, extras["query"]] = 1.0
        batch.inputs[ar, query_row, EXTRA_CHANNEL] = 1.0
        return batch

    def _example_extras(self, x, query=None, **extras):
        check_option_names(f"{self.name}.example", extras, ("query",))
        if query is None or int(query) not in x.tolist():
            raise ValueError(f"query: expected a token of {x.tolist()}, got {query!r}")
        return {"query": np.array([int(query)])}

    def _token_label(self, row, group):
        label = super()._token_label(row, group)
        return f"?{label}" if row[EXTRA_CHANNEL] > 0.5 else label


class PrioritySortTask(AlgorithmicTask):
    """Priority Sort: tokens sorted by ascending priority ``~ N(0, 1)`` (channel 12).

    Its options: ``PrioritySortTask.Options``, the shared ones and three of its own (the module docstring
    says why).
    """

    @dataclasses.dataclass(frozen=True)
    class Options(AlgorithmicTask.Options):
        priority: str = option(
            "normal",
            checks.one_of,
            ("normal", "uniform"),
            doc="the priorities' distribution: normal N(0, 1) or uniform U[-1, 1]",
        )
        order: str = option(
            "ascending", checks.one_of, ("ascending", "descending"), doc="sort by ascending or descending priority"
        )
        keep: float = option(
            1.0,
            checks.number,
            0.0,
            1.0,
            lo_open=True,
            doc="the share of the sorted sequence output: its first ceil(keep * n) tokens (1: all n)",
        )

    name = "priority_sort"
    extra_channels = 1

    def _take_own_options(self, o: Any) -> None:
        self.priority, self.order, self.keep = o.priority, o.order, o.keep
        self._options.update(priority=self.priority, order=self.order, keep=self.keep)

    def _kept(self, lengths):
        """``ceil(keep * n)`` per length (rounded first, so ``0.8 * 20`` is 16 and not 17)."""
        return np.ceil(np.round(self.keep * np.asarray(lengths, dtype=np.float64), 9)).astype(np.int64)

    def output_steps(self, length: int) -> int:
        return int(self._kept(length))

    def _draw(self, rng, x, lengths, valid):
        if self.priority == "normal":
            return x, {"priority": rng.standard_normal(x.shape, dtype=np.float32)}
        return x, {"priority": rng.uniform(-1.0, 1.0, size=x.shape).astype(np.float32)}

    def _targets(self, x, lengths, valid, priority):  # type: ignore[override]
        key = priority if self.order == "ascending" else -priority
        order = np.argsort(np.where(valid, key, np.inf), axis=1, kind="stable")
        y = np.take_along_axis(x, order, axis=1)
        width = self.output_steps(x.shape[1])  # n_max when keep = 1, and the mask is then `valid`
        mask = np.arange(width)[None, :] < self._kept(lengths)[:, None]
        return priority[..., None], np.where(mask, y[:, :width], 0), mask

    def _example_extras(self, x, priority=None, **extras):
        check_option_names(f"{self.name}.example", extras, ("priority",))
        p = np.asarray(priority, dtype=np.float32)
        if p.shape != x.shape:
            raise ValueError(f"priority: expected {len(x)} numbers, got {priority!r}")
        return {"priority": p[None, :]}

    def _token_label(self, row, group):
        return f"{super()._token_label(row, group)}@{row[EXTRA_CHANNEL]:+.2f}"


class IDSortTask(AlgorithmicTask):
    """ID Sort: ``y_i`` = the token sharing token ``i``'s id ``~ N(0, I_8)`` (channels 12..19)."""

    name = "id_sort"
    extra_channels = ID_WIDTH

    def _draw(self, rng, x, lengths, valid):
        B, n_max = x.shape
        ar = np.arange(B)[:, None]
        # A random order of each row's valid positions (padding sorts last).
        perm = np.argsort(np.where(valid, rng.random((B, n_max)), 2.0), axis=1)
        rank = np.empty_like(perm)
        rank[ar, perm] = np.arange(n_max)[None, :]
        # Consecutive ranks (2k, 2k+1) form a pair; an odd n's last rank pairs with itself.
        partner_rank = rank ^ 1
        partner_rank = np.where(partner_rank < lengths[:, None], partner_rank, rank)
        partner = np.take_along_axis(perm, partner_rank, axis=1)
        ids = rng.standard_normal((B, (n_max + 1) // 2, ID_WIDTH), dtype=np.float32)
        token_ids = ids[ar, rank // 2]  # [B, n, 8]: pair k = ranks (2k, 2k+1) shares ids[:, k]
        return x, {"partner": partner, "ids": token_ids}

    def _targets(self, x, lengths, valid, partner, ids):  # type: ignore[override]
        y = np.take_along_axis(x, partner, axis=1)
        return ids, np.where(valid, y, 0), valid

    def _example_extras(self, x, partner=None, ids=None, **extras):
        check_option_names(f"{self.name}.example", extras, ("partner", "ids"))
        n = len(x)
        p = np.asarray(partner if partner is not None else [], dtype=np.int64)
        if p.shape != (n,) or not ((0 <= p) & (p < n)).all() or not (p[p] == np.arange(n)).all():
            raise ValueError(
                f"partner: expected an involution of range({n}) (partner[partner[i]] == i), got {partner!r}"
            )
        if ids is None:
            pair_ids = np.random.default_rng(0).standard_normal((n, ID_WIDTH), dtype=np.float32)
            ids = pair_ids[np.minimum(np.arange(n), p)]  # both members take the id of the smaller position
        ids = np.asarray(ids, dtype=np.float32)
        if ids.shape != (n, ID_WIDTH):
            raise ValueError(f"ids: expected shape ({n}, {ID_WIDTH}), got {ids.shape}")
        return {"partner": p[None, :], "ids": ids[None]}

    def _token_label(self, row, group):
        key = tuple(np.round(row[EXTRA_CHANNEL : EXTRA_CHANNEL + ID_WIDTH], 5))
        tag = group.setdefault(key, chr(ord("a") + len(group) % 26))
        return f"{super()._token_label(row, group)}#{tag}"
