"""Dyck languages ``D_n``: next-legal-bracket prediction (Suzgun et al. 2019; Le et al. 2024 §3.2).

Grammar (Le et al. 2024 (Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural Memory, TMLR),
§3.2;
docs/tasks.md, Dyck)::

    S -> (_i S )_i   with probability p / n for each of the n bracket types
    S -> S S         with probability q
    S -> epsilon     with probability 1 - p - q          (p = 0.5, q = 0.25)

over the pairs ``() [] {} <>`` (the first ``n``; ``n`` = 2 or 3 in the paper).

Sequence prediction: the input is one bracket per step (one-hot, ``2n`` wide:
channels ``0..n-1`` the opening brackets, ``n..2n-1`` the matching closing ones);
the target at step ``t``, read after input ``t`` (``output_mode = "aligned"``), is
the multi-hot set of brackets that may legally come next: every opening
bracket, plus the closing bracket matching the top of the stack when the stack
is non-empty. When the stack is empty (after a complete prefix, and so at the
last step of every string) the target is the opening brackets alone: the end of
the string is not modelled as a symbol, exactly as in Suzgun et al.'s code
(``output_generator``), which the paper follows. Outputs are sigmoids; a string
counts as correct only if every step's thresholded (0.5) vector matches
(``sequence_accuracy``, the headline metric).

**Length bound: exact conditioning, equivalent to rejection.** The grammar is
critical (``p + 2q = 1``: its expected length is infinite), so lengths must be
bounded. We do it by rejection in effect, computed exactly: the probability
``P(k)`` that ``S`` derives a string of length ``2k`` obeys

    P(0) = r + q P(0)^2                                        (r = 1 - p - q)
    P(k) = p P(k-1) + q sum_{j=0..k} P(j) P(k-j)               (k >= 1)

A length is drawn from ``P`` restricted to the allowed range, then a string of
exactly that length is derived top-down, each ``S`` of length ``2k`` choosing
``(_i S_{k-1} )_i`` with weight ``(p/n) P(k-1)`` or ``S_j S_{k-j}`` (``1 <= j < k``)
with weight ``q P(j) P(k-j)`` (the splits with an empty half, ``j = 0`` or
``k``, give back the same string and cancel out). The result has exactly the
distribution of "draw from the grammar, reject if the length is outside the
range", without the wasted draws (``tests/tasks/test_dyck.py`` compares the two).
The sampler uses an explicit stack (no recursion), so long strings are safe.

Datasets (the paper's protocol): a fixed set of ``num_train`` *unique* training
strings of lengths ``2..L`` (``L = 10`` for ``D_2``, 20 for ``D_3``) and, per test
mode, ``num_test`` unique strings in a bin near ``L+2, 2L, 4L, 8L``: the bin
of centre ``m`` holds the even lengths ``m .. m + 2 floor(m / 10)`` (e.g. 12..14,
20..24, 40..48, 80..96 for ``D_2``). Both are generated from ``data_seed``.
``train_batch`` draws from the fixed training set, ``eval_batches`` walks a fixed
test set; ``sample`` draws fresh strings of given lengths. When a range holds
fewer distinct strings than requested (``D_2`` has only 1,618 strings of length
2..10, so the paper's 5,000 unique strings cannot exist), the set is every
string of the range, enumerated and shuffled; ``dataset_size(split)`` reports
the size.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from panm_jax import checks
from panm_jax.tasks import metrics as _metrics
from panm_jax.tasks.base import (
    Batch,
    DecodedExample,
    LengthRange,
    Task,
    TaskOptionError,
    check_batch_size,
    check_int_option,
    check_option,
    check_option_names,
    check_rng,
    one_hot,
    step_mask,
)

__all__ = ["BRACKET_PAIRS", "DyckGrammar", "DyckTask", "count_dyck_strings", "next_bracket_targets"]

BRACKET_PAIRS = ("()", "[]", "{}", "<>")
# Enumerating a whole length range is only done when it is this small (it is
# then also no larger than the requested set).
_MAX_ENUMERATE = 1_000_000


def count_dyck_strings(n: int, length: int) -> int:
    """The number of strings of ``D_n`` of exactly ``length`` symbols: ``Catalan(k) n^k``, ``k = length/2``."""
    if length % 2:
        return 0
    k = length // 2
    return math.comb(2 * k, k) // (k + 1) * n**k


class DyckGrammar:
    """The probabilistic grammar of ``D_n`` and its length-conditioned sampler (module docstring)."""

    def __init__(self, n: int, p: float = 0.5, q: float = 0.25):
        self.n, self.p, self.q = n, p, q
        self.r = 1.0 - p - q
        # P(0) is the smaller root of q x^2 - x + r = 0 (the extinction probability).
        self._P = [self.r if q == 0 else (1.0 - math.sqrt(1.0 - 4.0 * q * self.r)) / (2.0 * q)]
        self._choices: dict[int, list[float]] = {}

    def length_probability(self, k: int) -> float:
        """``P(k)``: the probability that ``S`` derives a string of length ``2k``."""
        P, p, q = self._P, self.p, self.q
        while len(P) <= k:
            m = len(P)
            inner = sum(P[j] * P[m - j] for j in range(1, m))
            # P(m) (1 - 2 q P(0)) = p P(m-1) + q sum_{j=1}^{m-1} P(j) P(m-j)
            P.append((p * P[m - 1] + q * inner) / (1.0 - 2.0 * q * P[0]))
        return P[k]

    def _cumulative(self, k: int) -> list[float]:
        """Cumulative weights of the choices of an ``S`` of length ``2k`` (k >= 1).

        Choice ``i < n``: bracket type ``i`` around ``S_{k-1}``; choice ``n + j - 1``:
        the split ``S_j S_{k-j}`` (``1 <= j < k``).
        """
        cached = self._choices.get(k)
        if cached is not None:
            return cached
        self.length_probability(k)
        P = self._P
        weights = [self.p / self.n * P[k - 1]] * self.n + [self.q * P[j] * P[k - j] for j in range(1, k)]
        total = sum(weights)
        cum, acc = [], 0.0
        for w in weights:
            acc += w / total
            cum.append(acc)
        cum[-1] = 1.0
        self._choices[k] = cum
        return cum

    def sample_length(self, rng: np.random.Generator, lengths: LengthRange, size: int) -> np.ndarray:
        """``size`` even lengths from the grammar's length distribution restricted to ``lengths``."""
        ks = np.arange((lengths.lo + 1) // 2, lengths.hi // 2 + 1)
        w = np.array([self.length_probability(int(k)) for k in ks])
        return 2 * ks[rng.choice(len(ks), size=size, p=w / w.sum())]

    def sample(self, rng: np.random.Generator, length: int) -> list[int]:
        """One string of exactly ``length`` (even) symbols: ids ``0..n-1`` open, ``n..2n-1`` close."""
        n = self.n
        out: list[int] = []
        # One uniform per non-empty S node: k bracket nodes plus at most k - 1 splits, k = length / 2.
        uniforms = iter(rng.random(max(length - 1, 1)).tolist())
        stack = [length // 2]  # >= 0: a pending S of that half-length; < 0: a pending closing bracket -(id+1)
        while stack:
            item = stack.pop()
            if item < 0:
                out.append(-item - 1)
                continue
            if item == 0:
                continue
            choice = bisect.bisect_left(self._cumulative(item), next(uniforms))
            if choice < n:
                out.append(choice)
                stack.append(-(choice + n) - 1)
                stack.append(item - 1)
            else:
                j = choice - n + 1
                stack.append(item - j)
                stack.append(j)
        return out

    def enumerate(self, length: int) -> list[tuple[int, ...]]:
        """Every string of exactly ``length`` symbols, in a fixed order."""
        words: list[list[tuple[int, ...]]] = [[()]]
        for k in range(1, length // 2 + 1):
            level = []
            for j in range(k):  # first return: ( w1 ) w2 with |w1| = 2j
                for i in range(self.n):
                    for w1 in words[j]:
                        for w2 in words[k - 1 - j]:
                            level.append((i, *w1, i + self.n, *w2))
            words.append(level)
        return words[length // 2]


def next_bracket_targets(ids: np.ndarray, lengths: np.ndarray, n: int) -> np.ndarray:
    """``[B, T, 2n]`` multi-hot legal next brackets after each step (module docstring).

    Vectorised over the batch: one pass over time with an array stack per example.
    """
    B, T = ids.shape
    targets = np.zeros((B, T, 2 * n), dtype=np.float32)
    targets[:, :, :n] = 1.0
    stack = np.zeros((B, T + 1), dtype=np.int64)  # stack[b, d] = open type at depth d (1-based)
    depth = np.zeros(B, dtype=np.int64)
    ar = np.arange(B)
    for t in range(T):
        live = t < lengths
        tok = ids[:, t]
        opening = tok < n
        depth = np.where(live, depth + np.where(opening, 1, -1), depth)
        write = live & opening
        stack[ar[write], depth[write]] = tok[write]
        nonempty = live & (depth > 0)
        targets[ar[nonempty], t, stack[ar[nonempty], depth[nonempty]] + n] = 1.0
    return targets * step_mask(lengths, T)[..., None]


class DyckTask(Task):
    """``D_n`` next-bracket prediction with the paper's fixed datasets (module docstring).

    Options:
      n: the number of bracket types, 1..4 (default 2; the paper uses 2 and 3).
      p, q: grammar probabilities (default 0.5, 0.25).
      max_train_length: ``L`` (default 10 for ``n = 2``, 20 otherwise).
      num_train: unique training strings (default 5000).
      num_test: unique strings per test bin (default 5000).
      data_seed: the seed of the fixed datasets (default 0).
      max_length: the longest string ``sample`` accepts (default 1024).
    """

    name = "dyck"
    target_kind = "multi_hot"
    output_mode = "aligned"
    metric_names = ("sequence_accuracy", "step_accuracy")
    length_sampling = "per_example"

    _OPTIONS = ("n", "p", "q", "max_train_length", "num_train", "num_test", "data_seed", "max_length")

    def __init__(
        self,
        n: int = 2,
        p: float = 0.5,
        q: float = 0.25,
        max_train_length: int | None = None,
        num_train: int = 5000,
        num_test: int = 5000,
        data_seed: int = 0,
        max_length: int = 1024,
        **unknown: Any,
    ):
        check_option_names(self.name, unknown, self._OPTIONS)
        n = check_int_option(self.name, "n", n, 1, len(BRACKET_PAIRS))
        p = check_option(self.name, "p", checks.probability, p)
        q = check_option(self.name, "q", checks.probability, q)
        if not (p > 0 and p + q < 1.0 and p + 2 * q <= 1.0):
            raise TaskOptionError(
                f"{self.name}: options p, q: expected p > 0, p + q < 1 and p + 2q <= 1 "
                f"(a grammar that terminates and can derive every length), got p = {p}, q = {q}"
            )
        if max_train_length is None:
            max_train_length = 10 if n <= 2 else 20  # the paper's L for D_2 and D_3
        L = check_int_option(self.name, "max_train_length", max_train_length, 2)
        num_train = check_int_option(self.name, "num_train", num_train, 1)
        num_test = check_int_option(self.name, "num_test", num_test, 1)
        data_seed = check_int_option(self.name, "data_seed", data_seed, 0)
        max_length = check_int_option(self.name, "max_length", max_length, 2)
        L -= L % 2  # strings have even length
        self._options: dict[str, Any] = {
            "n": n,
            "p": p,
            "q": q,
            "max_train_length": L,
            "num_train": num_train,
            "num_test": num_test,
            "data_seed": data_seed,
            "max_length": max_length,
        }
        self.n = n
        self._datasets: dict[str, tuple[tuple[int, ...], ...]] = {}
        self.grammar = DyckGrammar(n, p, q)
        self.input_size = self.output_size = 2 * n
        self.lengths = LengthRange(2, max_length - max_length % 2, 2)
        self.train_lengths = LengthRange(2, L, 2)
        self.test_modes = {}
        for mode, m in (("L+2", L + 2), ("2L", 2 * L), ("4L", 4 * L), ("8L", 8 * L)):
            hi = m + 2 * (m // 10)
            if hi > self.lengths.hi:
                raise TaskOptionError(
                    f"{self.name}: option max_length: expected at least {hi} (the test bin {mode}), got {max_length}"
                )
            self.test_modes[mode] = LengthRange(m, hi, 2)
        self.symbols = tuple(pair[0] for pair in BRACKET_PAIRS[:n]) + tuple(pair[1] for pair in BRACKET_PAIRS[:n])

    def input_steps(self, length: int) -> int:
        return length

    def output_steps(self, length: int) -> int:
        return length

    # ----------------------------------------------------------- generation

    def sample_lengths(self, rng: np.random.Generator, batch_size: int, mode: str = "train") -> np.ndarray:
        """Per-example lengths from the grammar's own length distribution, restricted to ``mode``'s range."""
        check_rng(rng)
        batch_size = check_batch_size(batch_size)
        return self.grammar.sample_length(rng, self.mode_range(mode), batch_size)

    def _generate(self, rng: np.random.Generator, lengths: np.ndarray) -> Batch:
        return self.encode([self.grammar.sample(rng, int(m)) for m in lengths])

    def encode(self, strings) -> Batch:
        """A batch of bracket-id strings (``0..n-1`` open, ``n..2n-1`` close), padded to the longest."""
        lengths = np.array([len(s) for s in strings], dtype=np.int64)
        T = int(lengths.max())
        ids = np.full((len(strings), T), -1, dtype=np.int64)
        for b, s in enumerate(strings):
            ids[b, : len(s)] = s
        mask = step_mask(lengths, T)
        targets = next_bracket_targets(ids, lengths, self.n)
        return Batch(one_hot(ids, 2 * self.n), mask, targets, mask.copy())

    # -------------------------------------------------------------- datasets

    def _unique(self, rng: np.random.Generator, lengths: LengthRange, count: int) -> list[tuple[int, ...]]:
        available = sum(count_dyck_strings(self.n, int(m)) for m in lengths.values())
        if available <= count:
            if available > _MAX_ENUMERATE:
                raise TaskOptionError(
                    f"{self.name}: options num_train, num_test: expected fewer than the {available} strings "
                    f"of lengths {lengths.describe()}, or at most {_MAX_ENUMERATE} to enumerate them all"
                )
            every = [s for m in lengths.values() for s in self.grammar.enumerate(int(m))]
            return [every[i] for i in rng.permutation(len(every))]
        seen: dict[tuple[int, ...], None] = {}
        while len(seen) < count:
            for m in self.grammar.sample_length(rng, lengths, count - len(seen)):
                seen.setdefault(tuple(self.grammar.sample(rng, int(m))), None)
                if len(seen) == count:
                    break
        return list(seen)

    def dataset(self, split: str) -> tuple[tuple[int, ...], ...]:
        """The fixed unique strings of ``split`` (``"train"`` or a test mode), from ``data_seed``.

        Built on first use and kept; each split has its own generator
        ``default_rng([data_seed, split index])``, so one split does not depend
        on whether another was built first.
        """
        if split not in self._datasets:
            lengths = self.mode_range(split)
            count = self._options["num_train" if split == "train" else "num_test"]
            names = ["train", *self.test_modes]
            rng = np.random.default_rng([self._options["data_seed"], names.index(split)])
            self._datasets[split] = tuple(self._unique(rng, lengths, count))
        return self._datasets[split]

    def dataset_size(self, split: str) -> int:
        return len(self.dataset(split))

    def train_batch(self, rng: np.random.Generator, batch_size: int) -> Batch:
        """``batch_size`` strings drawn uniformly (with replacement) from the fixed training set."""
        check_rng(rng)
        batch_size = check_batch_size(batch_size)
        data = self.dataset("train")
        return self.encode([data[i] for i in rng.integers(len(data), size=batch_size)])

    def eval_batches(
        self, mode: str, num_examples: int | None = None, batch_size: int = 128, seed: int = 0
    ) -> Iterator[Batch]:
        """The fixed test set of ``mode`` in order (its first ``num_examples``; all by default).

        ``seed`` is unused: the test sets are fixed by ``data_seed``.
        """
        data = self.dataset(mode)
        batch_size = check_batch_size(batch_size)
        stop = len(data) if num_examples is None else min(check_batch_size(num_examples, "num_examples"), len(data))
        for i in range(0, stop, batch_size):
            yield self.encode(data[i : min(i + batch_size, stop)])

    # --------------------------------------------------------------- scoring

    def metrics(self, logits, batch: Batch) -> dict[str, Any]:
        return {
            "sequence_accuracy": _metrics.sequence_accuracy(logits, batch),
            "step_accuracy": _metrics.token_accuracy(logits, batch),
        }

    def decode(self, batch: Batch, index: int = 0) -> DecodedExample:
        mask = batch.input_mask[index]
        ids = batch.inputs[index][mask].argmax(axis=-1)
        sets = batch.targets[index][batch.target_mask[index]] > 0.5
        return DecodedExample(
            [self.symbols[i] for i in ids],
            ["".join(s for s, on in zip(self.symbols, row, strict=True) if on) for row in sets],
        )

    def describe(self) -> dict[str, Any]:
        row = super().describe()
        row["name"] = f"dyck (n={self.n})"
        return row
