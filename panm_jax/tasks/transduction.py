"""Transduction tasks of Grefenstette et al. (2015), "Learning to Transduce with Unbounded Memory".

Specified in docs/tasks.md (transduction tasks). Five tasks: ``transduction_copy``, ``transduction_reversal``,
``bigram_flip`` (random strings over 128 source symbols) and ``svo_sov``,
``gender_conjugation`` (the inversion transduction grammars of the paper's
Table 1, ``panm_jax.tasks.itg``; option ``grammar="library"``: the library's
earlier grammars).

**Format.** The paper trains on one joint sequence
``<s> source ||| target </s>``, predicting the target part. In this project's
interface (``output_mode = "after_input"``) that sequence is cut at the
separator:

    inputs  = <s> a_1 ... a_n |||          (T_in  = n + 2 rows, one-hot)
    targets = b_1 ... b_m </s>             (T_out = m + 1 steps, classes)

the model reads the inputs, then emits ``T_out`` outputs with a zero decoder
input (no teacher forcing: Grefenstette et al. feed back the model's own
prediction at test time; a model that wants that can feed back its argmax).
The end symbol is a scored target, so a model must also say where the target
stops. Inputs and outputs share one vocabulary, ``vocabulary`` (the three
specials, then the words), so ``D_in = K``. All five transductions keep the
length (``m = n``).

Tasks:
  * ``transduction_copy``: ``b = a``;
  * ``transduction_reversal``: ``b_t = a_{n+1-t}``;
  * ``bigram_flip``: swap each adjacent pair, ``a_1 a_2 a_3 a_4 -> a_2 a_1 a_4 a_3``
    (even lengths only);
  * ``svo_sov``: the ``PAPER_SVO_SOV`` grammar (the main verb moves after its
    object);
  * ``gender_conjugation``: the ``PAPER_GENDER`` grammar (genderless articles
    become the articles of their noun's gender).

Lengths are per example: training source lengths ``~ U{8..64}``, test
``~ U{65..128}`` (even only, for bigram flipping: 8..64 and 66..128). Metrics
(on all scored steps, the end symbol included): *coarse*, the share of
sequences entirely correct, and *fine*, the mean share of each sequence correct
before its first error; token accuracy as well.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np

from panm_jax import checks
from panm_jax.options import option
from panm_jax.tasks import itg as _itg
from panm_jax.tasks import metrics as _metrics
from panm_jax.tasks.base import (
    Batch,
    DecodedExample,
    LengthRange,
    Task,
    TaskOptionError,
    TaskOptions,
    check_int_option,
    check_option,
    one_hot,
    step_mask,
)

__all__ = [
    "BigramFlipTask",
    "GenderConjugationTask",
    "SPECIALS",
    "SVOToSOVTask",
    "TransductionCopyTask",
    "TransductionReversalTask",
    "TransductionTask",
]

SPECIALS = ("<s>", "|||", "</s>")
BOS, SEP, EOS = 0, 1, 2
NUM_SPECIALS = len(SPECIALS)


class TransductionTask(Task):
    """Shared format, options and metrics (module docstring). Its options: ``TransductionTask.Options``
    (and a subclass's own: ``vocab_size``, ``grammar``)."""

    @dataclasses.dataclass(frozen=True)
    class Options(TaskOptions):
        min_train_length: int = option(8, checks.positive_int, doc="the shortest training source")
        max_train_length: int = option(
            64, checks.positive_int, doc="the training source lengths are min_train_length .. max_train_length"
        )
        max_test_length: int = option(
            128, checks.integer, 2, doc="the test source lengths are max_train_length + 1 .. max_test_length"
        )
        max_length: int = option(1024, checks.integer, 2, doc="the longest source that sample() accepts")

    metric_names = ("coarse_accuracy", "fine_accuracy", "token_accuracy")
    length_sampling = "per_example"
    length_step: ClassVar[int] = 1  # 2: even lengths only
    min_length: int = 1  # the shortest source (a grammar task: its grammar's, set per instance)

    def __init__(self, **options: Any):
        o = self.take_options(options)
        self._take_own_options(o)
        # The bounds that depend on the task's shortest source, its length step and the other lengths.
        step = self.length_step
        lo = check_int_option(self.name, "min_train_length", o.min_train_length, self.min_length)
        hi = check_int_option(self.name, "max_train_length", o.max_train_length, lo)
        test_hi = check_int_option(self.name, "max_test_length", o.max_test_length, hi + step)
        max_length = check_int_option(self.name, "max_length", o.max_length, test_hi)
        self._options = {f.name: getattr(o, f.name) for f in dataclasses.fields(o)}

        def even_up(n):  # the first admissible length >= n
            return n + (n - self.min_length) % step

        def even_down(n):
            return n - (n - self.min_length) % step

        self.lengths = LengthRange(self.min_length, even_down(max_length), step)
        self.train_lengths = LengthRange(even_up(lo), even_down(hi), step)
        self.test_modes = {"test": LengthRange(even_up(hi + 1), even_down(test_hi), step)}
        for what, r in (("train", self.train_lengths), ("test", self.test_modes["test"])):
            if r.lo > r.hi:
                raise TaskOptionError(f"{self.name}: the {what} length range holds no admissible length: {r}")
        self.vocabulary = SPECIALS + self._words()
        self._index = {w: i for i, w in enumerate(self.vocabulary)}
        self.input_size = self.output_size = len(self.vocabulary)

    def _take_own_options(self, o: Any) -> None:
        """Read a subclass's own options from ``o`` (its ``Options``), before the lengths (which may depend
        on them, through ``min_length``) and the vocabulary (``_words``) are made."""

    def _words(self) -> tuple[str, ...]:
        raise NotImplementedError

    def input_steps(self, length: int) -> int:
        return length + 2

    def output_steps(self, length: int) -> int:
        return length + 1

    def encode_ids(self, src: np.ndarray, tgt: np.ndarray, lengths: np.ndarray) -> Batch:
        """A batch from word ids ``src``, ``tgt`` ``[B, n_max]`` (vocabulary indices; padding ignored)."""
        B, n_max = src.shape
        valid = step_mask(lengths, n_max)
        ar = np.arange(B)
        in_ids = np.full((B, n_max + 2), -1, dtype=np.int64)
        in_ids[:, 0] = BOS
        in_ids[:, 1:-1] = np.where(valid, src, -1)
        in_ids[ar, lengths + 1] = SEP
        targets = np.zeros((B, n_max + 1), dtype=np.int32)
        targets[:, :-1] = np.where(valid, tgt, 0)
        targets[ar, lengths] = EOS
        return Batch(
            one_hot(in_ids, self.input_size),
            step_mask(lengths + 2, n_max + 2),
            targets,
            step_mask(lengths + 1, n_max + 1),
        )

    def example(self, source) -> Batch:
        """A one-example batch from given source words (for hand checks and reading)."""
        words = source.split() if isinstance(source, str) else list(source)
        unknown = [w for w in words if w not in self._index or w in SPECIALS]
        if unknown:
            raise ValueError(f"source: expected words of the task's vocabulary, got {unknown[0]!r}")
        lengths = self.check_lengths(len(words), 1)
        target = self.transduce(words)
        src = np.array([[self._index[w] for w in words]])
        tgt = np.array([[self._index[w] for w in target]])
        return self.encode_ids(src, tgt, lengths)

    def transduce(self, words: list[str]) -> list[str]:
        """The target sentence of source ``words``."""
        raise NotImplementedError

    def metrics(self, logits, batch: Batch) -> dict[str, Any]:
        return {
            "coarse_accuracy": _metrics.coarse_accuracy(logits, batch),
            "fine_accuracy": _metrics.fine_accuracy(logits, batch),
            "token_accuracy": _metrics.token_accuracy(logits, batch),
        }

    def decode(self, batch: Batch, index: int = 0) -> DecodedExample:
        ids = batch.inputs[index][batch.input_mask[index]].argmax(axis=-1)
        tgt = batch.targets[index][batch.target_mask[index]]
        return DecodedExample([self.vocabulary[i] for i in ids], [self.vocabulary[i] for i in tgt])


class _RandomStringTask(TransductionTask):
    """Sources are uniform strings over ``vocab_size`` symbols ``s0 .. s{V-1}``. Its options:
    ``_RandomStringTask.Options``."""

    @dataclasses.dataclass(frozen=True)
    class Options(TransductionTask.Options):
        vocab_size: int = option(128, checks.integer, 2, doc="source symbols of the random strings, s0 .. s{V-1}")

    def _take_own_options(self, o: Any) -> None:
        self.vocab_size = o.vocab_size

    def _words(self):
        return tuple(f"s{i}" for i in range(self.vocab_size))

    def _generate(self, rng: np.random.Generator, lengths: np.ndarray) -> Batch:
        n_max = int(lengths.max())
        src = NUM_SPECIALS + rng.integers(0, self.vocab_size, size=(len(lengths), n_max))
        positions = self._source_positions(lengths, n_max)
        return self.encode_ids(src, np.take_along_axis(src, positions, axis=1), lengths)

    def _source_positions(self, lengths: np.ndarray, n_max: int) -> np.ndarray:
        """``[B, n_max]``: target step ``t`` copies source position ``positions[b, t]`` (0-based)."""
        raise NotImplementedError

    def transduce(self, words):
        positions = self._source_positions(np.array([len(words)]), len(words))[0]
        return [words[i] for i in positions]


class TransductionCopyTask(_RandomStringTask):
    """Copy: ``b = a``."""

    name = "transduction_copy"

    def _source_positions(self, lengths, n_max):
        return np.broadcast_to(np.arange(n_max), (len(lengths), n_max))


class TransductionReversalTask(_RandomStringTask):
    """Reversal: ``b_t = a_{n+1-t}``."""

    name = "transduction_reversal"

    def _source_positions(self, lengths, n_max):
        return np.clip(lengths[:, None] - 1 - np.arange(n_max)[None, :], 0, None)


class BigramFlipTask(_RandomStringTask):
    """Bigram flipping: ``a_1 a_2 a_3 a_4 ... -> a_2 a_1 a_4 a_3 ...`` (even lengths)."""

    name = "bigram_flip"
    length_step = 2
    min_length = 2

    def _source_positions(self, lengths, n_max):
        return np.broadcast_to(np.arange(n_max) ^ 1, (len(lengths), n_max))  # 0<->1, 2<->3, ...


class _GrammarTask(TransductionTask):
    """Source/target pairs from an ITG (``panm_jax.tasks.itg``). Its options: ``_GrammarTask.Options``.

    The ``"library"`` grammar of a transduction (docs/tasks.md) is the one the
    transduction results recorded before the paper's grammars were implemented
    were trained on.
    """

    @dataclasses.dataclass(frozen=True)
    class Options(TransductionTask.Options):
        grammar: str = option(
            "paper",
            checks.one_of,
            ("paper", "library"),
            doc="paper: Grefenstette et al. 2015's Table 1 grammar; library: this library's earlier one",
        )

    grammars: ClassVar[dict[str, _itg.ITG]]

    def _take_own_options(self, o: Any) -> None:
        grammar = check_option(self.name, "grammar", checks.one_of, o.grammar, tuple(self.grammars))
        self.grammar = self.grammars[grammar]
        self.min_length = self.grammar.min_length()

    def _words(self):
        return tuple(sorted(set(self.grammar.source_words()) | set(self.grammar.target_words())))

    def transduce(self, words):
        return self.grammar.translate(words)

    def _generate(self, rng: np.random.Generator, lengths: np.ndarray) -> Batch:
        B, n_max = len(lengths), int(lengths.max())
        src = np.zeros((B, n_max), dtype=np.int64)
        tgt = np.zeros((B, n_max), dtype=np.int64)
        index = self._index
        for b, n in enumerate(lengths.tolist()):
            s, t = self.grammar.sample(rng, n)
            src[b, :n] = [index[w] for w in s]
            tgt[b, :n] = [index[w] for w in t]
        return self.encode_ids(src, tgt, lengths)


class SVOToSOVTask(_GrammarTask):
    """SVO -> SOV reordering (``itg.PAPER_SVO_SOV``; ``grammar="library"``: ``itg.SVO_SOV``)."""

    name = "svo_sov"
    grammars = {"paper": _itg.PAPER_SVO_SOV, "library": _itg.SVO_SOV}


class GenderConjugationTask(_GrammarTask):
    """Gender conjugation (``itg.PAPER_GENDER``; ``grammar="library"``: ``itg.GENDER``)."""

    name = "gender_conjugation"
    grammars = {"paper": _itg.PAPER_GENDER, "library": _itg.GENDER}
