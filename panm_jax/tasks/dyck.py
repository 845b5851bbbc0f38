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

**Datasets: Suzgun et al.'s generator, computed exactly.** Suzgun et al.'s public code
(``DyckLanguage.generate(current_size, max_size)``, github.com/suzgunmirac/marnns) bounds the
critical grammar (``p + 2q = 1``: its expected length is infinite) by truncating the derivation,
not by rejecting whole strings: an ``S`` at depth ``c`` (``c`` = twice the number of brackets
around it) with ``c >= M`` derives ``epsilon``; ``(_i S )_i`` derives its inner ``S`` at depth
``c + 2``; ``S S`` derives both halves at depth ``c``; and a bracket pair or a concatenation longer
than ``M`` is replaced by ``epsilon``. A set of lengths ``lo..hi`` is drawn with ``M = hi`` and
strings shorter than ``lo`` rejected (their ``generate_list``). Subtrees that overflow collapse to
``epsilon`` inside the strings that are kept, so this is not the grammar conditioned on the length
range: its lengths (and its strings of one length) are distributed differently. Its length
distribution is computed exactly here:
``F_c(2k)``, the probability that an ``S`` at depth ``c`` returns a string of length ``2k``, obeys

    F_c = delta_0                                                          (c >= M)
    F_c(2k) (1 - 2 q F_c(0)) = p F_{c+2}(2k - 2) + q sum_{j=1..k-1} F_c(2j) F_c(2k - 2j)   (1 <= k <= M/2)
    F_c(0) = 1 - sum_{k >= 1} F_c(2k)                                      (every truncation returns epsilon)

(``F_c(0)`` is the one root of the last equation, found by Newton's method safeguarded by
bisection). A length is drawn from ``F_0`` restricted to ``lo..hi``, then a string of exactly that
length top-down: an ``S`` at depth ``c`` returning ``2k >= 2`` symbols chooses ``(_i S_{k-1} )_i``
with weight ``(p/n) F_{c+2}(2k - 2)`` or ``S_j S_{k-j}`` (``1 <= j < k``) with weight
``q F_c(2j) F_c(2k - 2j)`` (a split with an empty half gives back the same string and cancels
out). This is exactly Suzgun et al.'s generator with rejection below ``lo``, without the rejected
draws or the recursion (``tests/tasks/test_dyck.py`` compares a literal transcription of their
generator with these tables).

**Strings of a given length** (``sample``, and batches drawn for explicit lengths): no bound
``M`` is given, so a string of exactly the requested length is drawn from the grammar
itself conditioned on that length. The probability ``P(k)`` that ``S`` derives ``2k`` symbols obeys

    P(0) = r + q P(0)^2                                        (r = 1 - p - q)
    P(k) = p P(k-1) + q sum_{j=0..k} P(j) P(k-j)               (k >= 1)

and the derivation goes top-down as above with ``P`` in place of ``F_c``. The sampler uses an
explicit stack (no recursion), so long strings are safe.

Datasets (the paper's protocol): a fixed set of ``num_train`` *unique* training
strings of lengths ``2..L`` (``L = 10`` for ``D_2``, 20 for ``D_3``; Suzgun et al.'s generator
with ``M = L``) and, per test mode, ``num_test`` unique strings in a bin near ``L+2, 2L, 4L, 8L``: the bin
of centre ``m`` holds the even lengths ``m .. m + 2 floor(m / 10)`` (e.g. 12..14,
20..24, 40..48, 80..96 for ``D_2``; generated with ``M`` the bin's upper end). Both are
generated from ``data_seed``.
``train_batch`` draws from the fixed training set, ``eval_batches`` walks a fixed
test set; ``sample`` draws fresh strings of given lengths. When a range holds
fewer distinct strings than requested (``D_2`` has only 1,618 strings of length
2..10, so the paper's 5,000 unique strings cannot exist), the set is every
string of the range, enumerated and shuffled; ``dataset_size(split)`` reports
the size.

Two options follow Suzgun et al.'s code where the defaults do not: ``loss="mse"`` trains with the
mean squared error of the sigmoid outputs (``losses.sigmoid_mean_squared_error``; default
``"bce"``, the sigmoid cross-entropy), and ``train_set="sampled"`` makes the training set
``num_train`` strings of their generator with repeats kept (default ``"distinct"``, the unique
strings above).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from panm_jax import checks
from panm_jax.options import option
from panm_jax.tasks import losses as _losses
from panm_jax.tasks import metrics as _metrics
from panm_jax.tasks.base import (
    Batch,
    DecodedExample,
    LengthRange,
    Task,
    TaskOptionError,
    TaskOptions,
    check_batch_size,
    check_rng,
    one_hot,
    step_mask,
)

__all__ = ["BRACKET_PAIRS", "DyckGrammar", "DyckTask", "count_dyck_strings", "next_bracket_targets"]

BRACKET_PAIRS = ("()", "[]", "{}", "<>")
_LOSSES = ("bce", "mse")  # option loss (module docstring)
_TRAIN_SETS = ("distinct", "sampled")  # option train_set
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
    """The probabilistic grammar of ``D_n``, Suzgun et al.'s truncated generator and their samplers
    (module docstring)."""

    def __init__(self, n: int, p: float = 0.5, q: float = 0.25):
        self.n, self.p, self.q = n, p, q
        self.r = 1.0 - p - q
        # P(0) is the smaller root of q x^2 - x + r = 0 (the extinction probability).
        self._P = [self.r if q == 0 else (1.0 - math.sqrt(1.0 - 4.0 * q * self.r)) / (2.0 * q)]
        self._tables: dict[int, np.ndarray] = {}  # M -> F [M/2 + 1 depths c/2, M/2 + 1 lengths k]
        self._choices: dict[tuple[int | None, int, int], list[float]] = {}

    # ---- the grammar itself (strings of a given length) ----------------------------------

    def length_probability(self, k: int) -> float:
        """``P(k)``: the probability that ``S`` derives a string of length ``2k``."""
        P, p, q = self._P, self.p, self.q
        while len(P) <= k:
            m = len(P)
            inner = sum(P[j] * P[m - j] for j in range(1, m))
            # P(m) (1 - 2 q P(0)) = p P(m-1) + q sum_{j=1}^{m-1} P(j) P(m-j)
            P.append((p * P[m - 1] + q * inner) / (1.0 - 2.0 * q * P[0]))
        return P[k]

    # ---- Suzgun et al.'s generator, truncated at M (datasets) ----------------------------

    def truncated_lengths(self, cap: int) -> np.ndarray:
        """``F [M/2 + 1, M/2 + 1]``: ``F[d, k]`` is the probability that Suzgun et al.'s ``generate(2d, M)``
        returns ``2k`` symbols (``M = cap``, even; module docstring). Computed once per ``M``."""
        table = self._tables.get(cap)
        if table is None:
            K = cap // 2
            table = np.zeros((K + 1, K + 1))
            table[K, 0] = 1.0  # c >= M: epsilon
            for d in range(K - 1, -1, -1):
                table[d] = self._truncated_row(table[d + 1])
            self._tables[cap] = table
        return table

    def _truncated_row(self, inner: np.ndarray) -> np.ndarray:
        # F_c from F_{c+2} (inner): the recurrence for a given F_c(0) = x, and x from sum_k F_c(2k) = 1.
        p, q = self.p, self.q
        K = len(inner) - 1

        def row(x):  # (F_c, dF_c/dx) for F_c(0) = x
            a, da = np.zeros(K + 1), np.zeros(K + 1)
            a[0], da[0] = x, 1.0
            y = 1.0 / (1.0 - 2.0 * q * x)
            dy = 2.0 * q * y * y
            for k in range(1, K + 1):
                t = p * inner[k - 1] + q * float(np.dot(a[1:k], a[k - 1 : 0 : -1]))
                dt = 2.0 * q * float(np.dot(a[1:k], da[k - 1 : 0 : -1]))
                a[k], da[k] = y * t, dy * t + y * dt
            return a, da

        lo, hi = 0.0, 1.0  # the root of x + sum_{k>=1} F_c(2k; x) - 1, increasing in x
        x = self.r
        for _ in range(200):
            a, da = row(x)
            excess = float(a.sum()) - 1.0
            if excess > 0:
                hi = x
            else:
                lo = x
            if abs(excess) <= 1e-15 or hi - lo <= 1e-17:
                break
            step = x - excess / float(da.sum())
            x = step if lo < step < hi else 0.5 * (lo + hi)
        return a

    def sample_length(self, rng: np.random.Generator, lengths: LengthRange, size: int) -> np.ndarray:
        """``size`` even lengths from Suzgun et al.'s generator with ``M = lengths.hi``, those below
        ``lengths.lo`` rejected (``F_0`` restricted to the range)."""
        ks = np.arange((lengths.lo + 1) // 2, lengths.hi // 2 + 1)
        w = self.truncated_lengths(lengths.hi - lengths.hi % 2)[0, ks]
        return 2 * ks[rng.choice(len(ks), size=size, p=w / w.sum())]

    # ---- top-down derivation of a string of a given length --------------------------------

    def _cumulative(self, cap: int | None, d: int, k: int) -> list[float]:
        """Cumulative weights of the choices of an ``S`` returning ``2k >= 2`` symbols at depth ``2d``.

        Choice ``i < n``: bracket type ``i`` around an ``S`` of ``2k - 2`` symbols; choice ``n + j - 1``:
        the split ``S_j S_{k-j}`` (``1 <= j < k``). ``cap = None``: the grammar (``P``, no depth);
        else Suzgun et al.'s generator truncated at ``M = cap`` (``F``).
        """
        cached = self._choices.get((cap, d, k))
        if cached is not None:
            return cached
        if cap is None:
            self.length_probability(k)
            here = there = self._P
        else:
            table = self.truncated_lengths(cap)
            here, there = table[d], table[d + 1]
        weights = [self.p / self.n * there[k - 1]] * self.n + [self.q * here[j] * here[k - j] for j in range(1, k)]
        total = sum(weights)
        cum, acc = [], 0.0
        for w in weights:
            acc += w / total
            cum.append(acc)
        cum[-1] = 1.0
        self._choices[(cap, d, k)] = cum
        return cum

    def sample(self, rng: np.random.Generator, length: int, cap: int | None = None) -> list[int]:
        """One string of exactly ``length`` (even) symbols: ids ``0..n-1`` open, ``n..2n-1`` close.

        ``cap = None``: from the grammar conditioned on the length; ``cap = M`` (``>= length``, even):
        from Suzgun et al.'s generator truncated at ``M``, conditioned on the length.
        """
        n = self.n
        depth_step = 0 if cap is None else 1  # the grammar's choices do not depend on the depth
        out: list[int] = []
        # One uniform per non-empty S node: k bracket nodes plus at most k - 1 splits, k = length / 2.
        uniforms = iter(rng.random(max(length - 1, 1)).tolist())
        # Pending items: (d, k >= 0) an S at depth 2d returning 2k symbols; (-1, id) a closing bracket.
        stack = [(0, length // 2)]
        while stack:
            d, item = stack.pop()
            if d < 0:
                out.append(item)
                continue
            if item == 0:
                continue
            choice = bisect.bisect_left(self._cumulative(cap, d, item), next(uniforms))
            if choice < n:
                out.append(choice)
                stack.append((-1, choice + n))
                stack.append((d + depth_step, item - 1))
            else:
                j = choice - n + 1
                stack.append((d, item - j))
                stack.append((d, j))
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

    Its options: ``DyckTask.Options``.
    """

    @dataclasses.dataclass(frozen=True)
    class Options(TaskOptions):
        n: int = option(
            2, checks.integer, 1, len(BRACKET_PAIRS), doc="the number of bracket types (the paper uses 2 and 3)"
        )
        p: float = option(0.5, checks.probability, doc="the grammar's probability of S -> (_i S )_i, over all i")
        q: float = option(0.25, checks.probability, doc="the grammar's probability of S -> S S")
        max_train_length: int | None = option(
            None,
            checks.optional_integer,
            2,
            doc="L, the longest training string (None: the paper's, 10 for n <= 2, else 20)",
        )
        num_train: int = option(5000, checks.positive_int, doc="the number of training strings")
        num_test: int = option(5000, checks.positive_int, doc="the number of unique strings per test bin")
        data_seed: int = option(0, checks.nonnegative_int, doc="the seed of the fixed datasets")
        max_length: int = option(1024, checks.integer, 2, doc="the longest string sample accepts")
        loss: str = option(
            "bce", checks.one_of, _LOSSES, doc="bce: sigmoid cross-entropy; mse: Suzgun et al.'s code's squared error"
        )
        train_set: str = option(
            "distinct", checks.one_of, _TRAIN_SETS, doc="distinct: unique training strings; sampled: repeats kept"
        )

    name = "dyck"
    target_kind = "multi_hot"
    output_mode = "aligned"
    metric_names = ("sequence_accuracy", "step_accuracy")
    length_sampling = "per_example"

    LOSSES = _LOSSES
    TRAIN_SETS = _TRAIN_SETS

    def __init__(self, **options: Any):
        o = self.take_options(options)
        n, p, q = o.n, o.p, o.q
        if not (p > 0 and p + q < 1.0 and p + 2 * q <= 1.0):
            raise TaskOptionError(
                f"{self.name}: options p, q: expected p > 0, p + q < 1 and p + 2q <= 1 "
                f"(a grammar that terminates and can derive every length), got p = {p}, q = {q}"
            )
        L = o.max_train_length
        if L is None:
            L = 10 if n <= 2 else 20  # the paper's L for D_2 and D_3
        L -= L % 2  # strings have even length
        max_length = o.max_length
        self._options: dict[str, Any] = {
            "n": n,
            "p": p,
            "q": q,
            "max_train_length": L,
            "num_train": o.num_train,
            "num_test": o.num_test,
            "data_seed": o.data_seed,
            "max_length": max_length,
            "loss": o.loss,
            "train_set": o.train_set,
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
        """Per-example lengths from Suzgun et al.'s generator truncated at the top of ``mode``'s range,
        lengths below the range rejected (``DyckGrammar.sample_length``)."""
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
                seen.setdefault(tuple(self.grammar.sample(rng, int(m), cap=lengths.hi)), None)
                if len(seen) == count:
                    break
        return list(seen)

    def _sampled(self, rng: np.random.Generator, lengths: LengthRange, count: int) -> list[tuple[int, ...]]:
        """``count`` strings of Suzgun et al.'s generator over ``lengths``, repeats kept."""
        return [
            tuple(self.grammar.sample(rng, int(m), cap=lengths.hi))
            for m in self.grammar.sample_length(rng, lengths, count)
        ]

    def dataset(self, split: str) -> tuple[tuple[int, ...], ...]:
        """The fixed unique strings of ``split`` (``"train"`` or a test mode), from ``data_seed`` (the training
        strings keep their repeats with ``train_set="sampled"``).

        Built on first use and kept; each split has its own generator
        ``default_rng([data_seed, split index])``, so one split does not depend
        on whether another was built first.
        """
        if split not in self._datasets:
            lengths = self.mode_range(split)
            count = self._options["num_train" if split == "train" else "num_test"]
            names = ["train", *self.test_modes]
            rng = np.random.default_rng([self._options["data_seed"], names.index(split)])
            if split == "train" and self._options["train_set"] == "sampled":
                self._datasets[split] = tuple(self._sampled(rng, lengths, count))
            else:
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

    def loss(self, logits, batch: Batch):
        """The option ``loss``: sigmoid cross-entropy (``"bce"``) or mean squared error of the sigmoids (``"mse"``)."""
        if self._options["loss"] == "mse":
            return _losses.sigmoid_mean_squared_error(logits, batch)
        return super().loss(logits, batch)

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
