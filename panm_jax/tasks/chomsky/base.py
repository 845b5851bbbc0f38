"""What the 15 Chomsky-hierarchy tasks share: ``ChomskyTask`` (options, lengths, layout, metrics, decoding).

Each level's module (``regular``, ``context_free``, ``context_sensitive``)
defines its tasks as subclasses that draw ``b`` examples of one length; the
protocol they follow is described in ``panm_jax.tasks.chomsky``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax.numpy as jnp
import numpy as np

from panm_jax import checks
from panm_jax.options import option
from panm_jax.tasks import metrics as _metrics
from panm_jax.tasks.base import (
    Batch,
    DecodedExample,
    LengthRange,
    Task,
    TaskOptions,
    check_int_option,
    one_hot,
    step_mask,
)

__all__ = ["MAX_LENGTH", "MODULUS", "PADDINGS", "ChomskyTask", "EndedAnswerTask"]

MAX_LENGTH = 4096  # the longest N ``sample`` accepts
MODULUS = 5  # the arithmetic tasks' modulus and the cycle's length
PADDINGS = ("end", "zero")  # what fills a variable-length answer's steps after its END (``EndedAnswerTask``)

_DIGITS = tuple(str(d) for d in range(MODULUS))
_BINARY = ("a", "b")


class ChomskyTask(Task):
    """Shared options, layout, metrics and decoding (see the module docstring).

    Subclasses set ``name``, ``level``, ``input_vocab``, ``output_vocab`` (and
    ``min_length``, ``end_symbol`` where needed), ``input_steps`` /
    ``output_steps``, and ``_draw(rng, b, n)``, which returns the input ids
    ``[b, input_steps(n)]`` and target ids ``[b, output_steps(n)]`` of ``b``
    examples of length ``n``. Their options: ``ChomskyTask.Options``.
    """

    @dataclasses.dataclass(frozen=True)
    class Options(TaskOptions):
        max_train_length: int = option(
            40, checks.integer, 1, MAX_LENGTH - 1, doc="L: the training lengths are the task's shortest .. L"
        )
        max_test_length: int = option(
            500, checks.integer, 2, MAX_LENGTH, doc="the test mode holds the lengths L + 1 .. max_test_length"
        )

    level: ClassVar[str]
    input_vocab: ClassVar[tuple[str, ...]]
    output_vocab: ClassVar[tuple[str, ...]]
    min_length: ClassVar[int] = 1
    end_symbol: ClassVar[int | None] = None  # output id that ends a variable-length answer
    metric_names = ("token_accuracy", "sequence_accuracy")
    length_sampling = "per_batch"

    def __init__(self, **options: Any):
        o = self.take_options(options)
        # The bounds that depend on the task's shortest length and on L.
        L = check_int_option(self.name, "max_train_length", o.max_train_length, self.min_length, MAX_LENGTH - 1)
        M = check_int_option(self.name, "max_test_length", o.max_test_length, L + 1, MAX_LENGTH)
        self._options = {**dataclasses.asdict(o), "max_train_length": L, "max_test_length": M}  # a subclass's too
        self.input_size = len(self.input_vocab)
        self.output_size = len(self.output_vocab)
        self.lengths = LengthRange(self.min_length, MAX_LENGTH)
        self.train_lengths = LengthRange(self.min_length, L)
        # The test range first; then the training range, an in-distribution validation mode
        # (fresh examples) that picks a run's checkpoint without looking at the test lengths.
        self.test_modes = {
            f"{L + 1}-{M}": LengthRange(L + 1, M),
            f"{self.min_length}-{L}": LengthRange(self.min_length, L),
        }

    @property
    def validation_mode(self) -> str:
        """The mode at the training lengths: checkpoints are selected without looking at the test lengths."""
        return list(self.test_modes)[1]

    # ---------------------------------------------------------------- shapes

    def input_steps(self, length: int) -> int:
        return int(length)

    def output_steps(self, length: int) -> int:
        return 1

    # ------------------------------------------------------------ generation

    def _draw(self, rng: np.random.Generator, b: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``b`` examples of length ``n``: input ids ``[b, input_steps(n)]``, target ids ``[b, output_steps(n)]``."""
        raise NotImplementedError

    def _generate(self, rng: np.random.Generator, lengths: np.ndarray) -> Batch:
        B = len(lengths)
        n_max = int(lengths.max())
        t_in, t_out = self.input_steps(n_max), self.output_steps(n_max)
        in_ids = np.full((B, t_in), -1, dtype=np.int64)
        out_ids = np.zeros((B, t_out), dtype=np.int32)
        in_steps = np.empty(B, dtype=np.int64)
        out_steps = np.empty(B, dtype=np.int64)
        for n in np.unique(lengths).tolist():  # ascending: the same rng state gives the same batch
            rows = np.flatnonzero(lengths == n)
            x, y = self._draw(rng, len(rows), n)
            ti, to = self.input_steps(n), self.output_steps(n)
            assert x.shape == (len(rows), ti) and y.shape == (len(rows), to), (self.name, n, x.shape, y.shape)
            in_ids[rows, :ti] = x
            out_ids[rows, :to] = y
            in_steps[rows], out_steps[rows] = ti, to
        return Batch(
            one_hot(in_ids, self.input_size),
            step_mask(in_steps, t_in),
            out_ids,
            step_mask(out_steps, t_out),
        )

    # --------------------------------------------------------------- scoring

    def scored_mask(self, batch: Batch):
        """``[B, T_out]`` bool: the steps the metrics score.

        ``target_mask``, cut after the first end symbol of the target for the
        tasks whose answers end with one (the paper's accuracy mask).
        """
        mask = jnp.asarray(batch.target_mask, dtype=bool)
        if self.end_symbol is None:
            return mask
        is_end = (jnp.asarray(batch.targets) == self.end_symbol) & mask
        steps = mask.shape[1]
        first = jnp.where(is_end.any(axis=1), jnp.argmax(is_end, axis=1), steps)
        return mask & (jnp.arange(steps)[None, :] <= first[:, None])

    def metrics(self, logits, batch: Batch) -> dict[str, Any]:
        scored = batch._replace(target_mask=self.scored_mask(batch))
        return {
            "token_accuracy": _metrics.token_accuracy(logits, scored),
            "sequence_accuracy": _metrics.sequence_accuracy(logits, scored),
        }

    # --------------------------------------------------------------- reading

    def decode(self, batch: Batch, index: int = 0) -> DecodedExample:
        ids = np.asarray(batch.inputs[index])[np.asarray(batch.input_mask[index])].argmax(axis=-1)
        tgt = np.asarray(batch.targets[index])[np.asarray(batch.target_mask[index])]
        return DecodedExample([self.input_vocab[i] for i in ids], [self.output_vocab[i] for i in tgt])


class EndedAnswerTask(ChomskyTask):
    """A task whose answer varies in length: the answer, ``END``, then padding up to ``T_out``.

    Subclasses' ``_draw`` returns targets whose steps after the first ``END`` hold ``END``; the option
    ``padding`` says what those steps hold in the batches:

    * ``"end"`` (the default): ``END`` again, so the answer's end is a state the model keeps;
    * ``"zero"``: output id 0, as Delétang et al.'s released code pads (its ``stack_manipulation.py``,
      ``binary_addition.py`` and ``binary_multiplication.py``: "padded with 0s").

    The metrics score the steps up to and including the first ``END`` in both cases (``scored_mask``) and the
    inputs are the same draws, so the padding changes the loss's targets alone, and through them what a model
    that has not learned where an answer ends writes past the lengths it was trained on.
    """

    end_symbol = 2

    @dataclasses.dataclass(frozen=True)
    class Options(ChomskyTask.Options):
        padding: str = option(
            "end",
            checks.one_of,
            PADDINGS,
            doc="what follows the answer's END: END again, or output 0 as Delétang et al.'s released code pads",
        )

    def _generate(self, rng: np.random.Generator, lengths: np.ndarray) -> Batch:
        batch = super()._generate(rng, lengths)
        if self._options["padding"] == "end":
            return batch
        targets = np.asarray(batch.targets)
        is_end = targets == self.end_symbol
        after_end = np.cumsum(is_end, axis=1) - is_end > 0  # every step after the first END
        return batch._replace(targets=np.where(after_end, 0, targets).astype(targets.dtype))
