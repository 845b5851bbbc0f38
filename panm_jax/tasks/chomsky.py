"""The 15 length-generalisation tasks of Delétang et al. (2023), *Neural Networks and the Chomsky Hierarchy*.

Source: Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
2023; arXiv 2207.02098), the task descriptions of its appendix. The definitions
and the length conventions below were checked against the task descriptions
the authors published with the benchmark; every generator here is written
independently, in NumPy, behind this project's ``Task`` interface.

Tasks, by level of the hierarchy (registry name, then the map):

* regular: ``even_pairs`` (is the number of ``ab`` and ``ba`` pairs even?),
  ``modular_arithmetic`` (``+ - *`` over 0..4 with precedence, mod 5),
  ``parity_check`` (is the number of ``b`` even?), ``cycle_navigation`` (final
  position on a cycle of 5 after ``stay``/``+1``/``-1`` moves from 0);
* deterministic context-free: ``modular_arithmetic_brackets`` (bracketed
  ``+ - *`` expressions with unary minus, mod 5), ``reverse_string``
  (``w -> reverse(w)``), ``solve_equation`` (the value of ``x`` in a bracketed
  ``+ -`` equation mod 5), ``stack_manipulation`` (a stack and ``POP`` / ``PUSH a``
  / ``PUSH b`` actions -> the final stack, top first);
* context-sensitive: ``duplicate_string`` (``w -> ww``), ``missing_duplicate``
  (``ww`` with one token hidden -> the hidden token), ``odds_first``
  (``w_1 w_3 w_5 ... w_2 w_4 ...``), ``binary_addition``,
  ``binary_multiplication`` (little-endian binary), ``compute_sqrt``
  (``floor(sqrt(n))``, big-endian binary), ``bucket_sort`` (sort over 5 symbols).

Protocol (the paper's):

* ``length`` is the paper's input length ``N``: the number of input tokens. The
  input is ``N`` one-hot rows over the task's input vocabulary (no delimiter
  rows: ``input_size`` = the vocabulary size), except where a class docstring
  says how its input is derived from ``N`` (``modular_arithmetic`` drops one
  token at even ``N``).
* ``output_mode = "after_input"``: the model reads the input, then emits
  ``T_out = output_steps(N)`` outputs on blank steps; targets are class ids
  over the output vocabulary (softmax cross-entropy). ``T_out`` is 1 for the
  six single-answer tasks and a function of ``N`` alone for the others, so a
  batch of one length has one shape.
* Variable-length answers (``stack_manipulation``, ``binary_addition``,
  ``binary_multiplication``) are followed by the end symbol ``END`` and padded
  with ``END`` up to ``T_out``. The loss covers every output step, padding
  included (as the benchmark's released training does); the metrics, as its
  accuracy does, score the steps up to and including the first ``END`` of the
  target (``scored_mask``).
  ``compute_sqrt`` writes its answer with leading zeros on exactly
  ``ceil(N / 2)`` bits, so it needs no end symbol.
* Metrics: ``token_accuracy`` (the headline: the paper's score is a per-token
  accuracy) then ``sequence_accuracy`` (exact match).
* Lengths: training ``N ~ U{1..40}`` (``max_train_length``), one length per
  batch; test mode ``"41-500"``: ``N ~ U{41..500}`` (``max_train_length + 1
  .. max_test_length``); mode ``"1-40"`` (``min .. max_train_length``) draws fresh
  examples at the training lengths, the in-distribution validation set that
  selects checkpoints (``select_mode``) without looking at the test lengths.
  Tasks with no instance at small ``N`` start higher (``missing_duplicate`` at 2; ``solve_equation``,
  ``binary_addition`` and
  ``binary_multiplication`` at 3); ``sample`` accepts any ``N`` up to 4096.

Generation is vectorised over the batch where the task allows it (the string
tasks, the regular tasks, the stack and the binary tasks' bit layouts); the two
bracketed-expression grammars draw each expression with an explicit stack from
a block of pre-drawn uniforms, and the binary arithmetic uses Python integers
per example. A batch of mixed per-example lengths is generated length by length
and padded with masks.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import jax.numpy as jnp
import numpy as np

from panm_jax.tasks import metrics as _metrics
from panm_jax.tasks.base import (
    Batch,
    DecodedExample,
    LengthRange,
    Task,
    check_int_option,
    check_option_names,
    one_hot,
    step_mask,
)

__all__ = [
    "BinaryAdditionTask",
    "BinaryMultiplicationTask",
    "BucketSortTask",
    "CHOMSKY_TASKS",
    "ChomskyTask",
    "ComputeSqrtTask",
    "CycleNavigationTask",
    "DuplicateStringTask",
    "EvenPairsTask",
    "MAX_LENGTH",
    "MissingDuplicateTask",
    "ModularArithmeticBracketsTask",
    "ModularArithmeticTask",
    "OddsFirstTask",
    "ParityCheckTask",
    "ReverseStringTask",
    "SolveEquationTask",
    "StackManipulationTask",
]

MAX_LENGTH = 4096  # the longest N ``sample`` accepts
MODULUS = 5  # the arithmetic tasks' modulus and the cycle's length

_DIGITS = tuple(str(d) for d in range(MODULUS))
_BINARY = ("a", "b")


class ChomskyTask(Task):
    """Shared options, layout, metrics and decoding (see the module docstring).

    Subclasses set ``name``, ``level``, ``input_vocab``, ``output_vocab`` (and
    ``min_length``, ``end_symbol`` where needed), ``input_steps`` /
    ``output_steps``, and ``_draw(rng, b, n)``, which returns the input ids
    ``[b, input_steps(n)]`` and target ids ``[b, output_steps(n)]`` of ``b``
    examples of length ``n``.

    Options:
      max_train_length: training lengths are ``min_length .. max_train_length``
        (default 40).
      max_test_length: the test mode holds ``max_train_length + 1 ..
        max_test_length`` (default 500; at most 4096).
    """

    level: ClassVar[str]
    input_vocab: ClassVar[tuple[str, ...]]
    output_vocab: ClassVar[tuple[str, ...]]
    min_length: ClassVar[int] = 1
    end_symbol: ClassVar[int | None] = None  # output id that ends a variable-length answer
    metric_names = ("token_accuracy", "sequence_accuracy")
    length_sampling = "per_batch"

    def __init__(self, max_train_length: int = 40, max_test_length: int = 500, **unknown: Any):
        check_option_names(self.name, unknown, ("max_train_length", "max_test_length"))
        L = check_int_option(self.name, "max_train_length", max_train_length, self.min_length, MAX_LENGTH - 1)
        M = check_int_option(self.name, "max_test_length", max_test_length, L + 1, MAX_LENGTH)
        self._options = {"max_train_length": L, "max_test_length": M}
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


# ====================================================================== regular


class EvenPairsTask(ChomskyTask):
    """Even Pairs: is the number of ``ab`` plus ``ba`` pairs of ``w in {a, b}^N`` even?

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Even Pairs" (regular). The count of
    unequal adjacent pairs is even exactly when the first and last symbols are
    equal. Output classes ``even`` (0) and ``odd`` (1); ``N = 1`` has no pair
    (even). ``T_in = N``, ``T_out = 1``.
    """

    name = "even_pairs"
    level = "regular"
    input_vocab = _BINARY
    output_vocab = ("even", "odd")

    def _draw(self, rng, b, n):
        w = rng.integers(0, 2, size=(b, n))
        unequal = (w[:, 1:] != w[:, :-1]).sum(axis=1)
        return w, (unequal % 2)[:, None]


class ModularArithmeticTask(ChomskyTask):
    """Modular Arithmetic (simple): ``d_1 o_1 d_2 ... o_{k-1} d_k`` mod 5, ``*`` before ``+ -``.

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Modular Arithmetic" (regular). Numbers
    ``d_i ~ U{0..4}``, operators ``o_i ~ U{+, -, *}``; the value is taken with the
    usual precedence (``*`` binds tighter, left to right otherwise), mod 5:
    ``1 + 2 * 3 = 2``, ``1 - 1 - 1 = 4``. Output classes ``0..4``.

    An expression has an odd number of tokens: as in the paper, an even ``N``
    is lowered by one, so ``T_in = N`` for odd ``N`` and ``N - 1`` for even
    ``N`` (``N = 2`` gives a single number); ``T_out = 1``. Input vocabulary
    ``0..4 + - *`` (the paper's input also reserves an unused blank symbol; it is
    left out here).
    """

    name = "modular_arithmetic"
    level = "regular"
    input_vocab = _DIGITS + ("+", "-", "*")
    output_vocab = _DIGITS
    PLUS, MINUS, TIMES = MODULUS, MODULUS + 1, MODULUS + 2

    def input_steps(self, length):
        return int(length) - (1 - int(length) % 2)

    def _draw(self, rng, b, n):
        t = self.input_steps(n)
        k = (t + 1) // 2  # numbers
        nums = rng.integers(0, MODULUS, size=(b, k))
        ops = rng.integers(self.PLUS, self.TIMES + 1, size=(b, k - 1))
        x = np.empty((b, t), dtype=np.int64)
        x[:, 0::2], x[:, 1::2] = nums, ops
        # Left to right: `total` holds the closed additive terms, `term` the open product (signed).
        total = np.zeros(b, dtype=np.int64)
        term = nums[:, 0].copy()
        for i in range(k - 1):
            op, d = ops[:, i], nums[:, i + 1]
            times = op == self.TIMES
            total = np.where(times, total, (total + term) % MODULUS)
            term = np.where(times, term * d, np.where(op == self.PLUS, d, -d)) % MODULUS
        return x, ((total + term) % MODULUS)[:, None]


class ParityCheckTask(ChomskyTask):
    """Parity Check: is the number of ``b`` in ``w in {a, b}^N`` even?

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Parity Check" (regular). Output classes
    ``even`` (0) and ``odd`` (1). ``T_in = N``, ``T_out = 1``.
    """

    name = "parity_check"
    level = "regular"
    input_vocab = _BINARY
    output_vocab = ("even", "odd")

    def _draw(self, rng, b, n):
        w = rng.integers(0, 2, size=(b, n))
        return w, (w.sum(axis=1) % 2)[:, None]


class CycleNavigationTask(ChomskyTask):
    """Cycle Navigation: the final position on a cycle of 5 after ``N`` moves from position 0.

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Cycle Navigation" (regular). Moves
    ``~ U{stay, +1, -1}``; output classes: the positions ``0..4``
    (``+1 -1 stay -1 -1 -> 3``). ``T_in = N``, ``T_out = 1``.
    """

    name = "cycle_navigation"
    level = "regular"
    input_vocab = ("stay", "+1", "-1")
    output_vocab = _DIGITS
    MOVES = np.array([0, 1, -1])

    def _draw(self, rng, b, n):
        a = rng.integers(0, 3, size=(b, n))
        return a, (self.MOVES[a].sum(axis=1) % MODULUS)[:, None]


# ======================================================= deterministic context-free

# Token ids shared by the two bracketed-expression tasks (0..4 are the digits).
_PLUS, _MINUS, _TIMES, _LPAREN, _RPAREN, _X, _EQUALS = range(MODULUS, MODULUS + 7)


def bracket_expression(u: np.ndarray, n: int, num_ops: int) -> tuple[list[int], int]:
    """One bracketed expression of exactly ``n`` tokens and its value mod 5.

    The grammar of the paper: ``n = 1: d``, ``2: -d``, ``3: (d)``, ``4: (-d)``, and for
    ``n >= 5``: ``(E_l op E_r)`` with ``l ~ U{1..n-4}``, ``r = n - 3 - l`` and ``op``
    uniform over the first ``num_ops`` of ``+ - *`` (``d ~ U{0..4}``).

    Args:
      u: ``[>= n]`` uniforms in [0, 1), consumed in order (an expression of ``n``
        tokens draws at most ``n``).
      n: the number of tokens, >= 1.
      num_ops: 2 (``+ -``) or 3 (``+ - *``).

    Returns:
      the token ids (digits 0..4, then ``+ - * ( )`` as 5..9) and the value in 0..4.
    """
    tokens: list[int] = []
    values: list[int] = []
    work: list[tuple[int, int]] = [(0, n)]  # (0, n): expand; (1, tok): emit; (2, op): combine
    j = 0
    while work:
        kind, arg = work.pop()
        if kind == 0:
            if arg <= 4:
                d = int(u[j] * MODULUS)
                j += 1
                neg = arg in (2, 4)
                body = [_MINUS, d] if neg else [d]
                tokens.extend([_LPAREN, *body, _RPAREN] if arg >= 3 else body)
                values.append(-d % MODULUS if neg else d)
            else:
                left = 1 + int(u[j] * (arg - 4))
                op = _PLUS + int(u[j + 1] * num_ops)
                j += 2
                work += [(2, op), (1, _RPAREN), (0, arg - 3 - left), (1, op), (0, left), (1, _LPAREN)]
        elif kind == 1:
            tokens.append(arg)
        else:
            r, l_ = values.pop(), values.pop()
            values.append((l_ + r if arg == _PLUS else l_ - r if arg == _MINUS else l_ * r) % MODULUS)
    return tokens, values[0]


class ModularArithmeticBracketsTask(ChomskyTask):
    """Modular Arithmetic with brackets: a bracketed ``+ - *`` expression of ``N`` tokens, mod 5.

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Modular Arithmetic (Brackets)"
    (deterministic context-free). The grammar (``bracket_expression``): ``d``,
    ``-d``, ``(d)``, ``(-d)`` for ``N <= 4``, else ``(E_l op E_r)`` with a uniform split
    and ``op ~ U{+, -, *}`` (the paper's experiments include ``*``); every ``N >= 1``
    is reachable exactly. Output classes ``0..4``. ``T_in = N``, ``T_out = 1``.
    """

    name = "modular_arithmetic_brackets"
    level = "context_free"
    input_vocab = _DIGITS + ("+", "-", "*", "(", ")")
    output_vocab = _DIGITS

    def _draw(self, rng, b, n):
        u = rng.random((b, n))
        x = np.empty((b, n), dtype=np.int64)
        y = np.empty((b, 1), dtype=np.int64)
        for i in range(b):
            tokens, value = bracket_expression(u[i], n, 3)
            x[i], y[i, 0] = tokens, value
        return x, y


class ReverseStringTask(ChomskyTask):
    """Reverse String: ``w_1 ... w_N -> w_N ... w_1`` over ``{a, b}``.

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Reverse String" (deterministic
    context-free). ``T_in = T_out = N``.
    """

    name = "reverse_string"
    level = "context_free"
    input_vocab = _BINARY
    output_vocab = _BINARY

    def output_steps(self, length):
        return int(length)

    def _draw(self, rng, b, n):
        w = rng.integers(0, 2, size=(b, n))
        return w, w[:, ::-1]


class SolveEquationTask(ChomskyTask):
    """Solve Equation: the value of ``x`` in ``E(x) = v`` (mod 5), ``E`` a bracketed ``+ -`` expression.

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Solve Equation" (deterministic
    context-free). ``E`` is a ``modular_arithmetic_brackets`` expression of
    ``N - 2`` tokens over ``+ -`` only (no ``*``, so the solution is unique: ``x``
    enters with coefficient ``+1`` or ``-1``); one of its digits becomes ``x``, and
    ``= v`` follows, ``v`` the value of ``E``. The answer (classes ``0..4``) is the
    replaced digit. The library's choice: the replaced digit is uniform over the
    digits of ``E``. ``N >= 3``; ``T_in = N``, ``T_out = 1``.
    """

    name = "solve_equation"
    level = "context_free"
    min_length = 3
    input_vocab = _DIGITS + ("+", "-", "(", ")", "x", "=")
    output_vocab = _DIGITS
    # bracket_expression's ids (+ - * ( ) = 5..9) -> this vocabulary's (+ - ( ) = 5..8).
    _RENUMBER = np.array([0, 1, 2, 3, 4, 5, 6, -1, 7, 8])
    X, EQUALS = 9, 10

    def _draw(self, rng, b, n):
        u = rng.random((b, n - 2))
        pick = rng.random(b)
        x = np.empty((b, n), dtype=np.int64)
        y = np.empty((b, 1), dtype=np.int64)
        for i in range(b):
            tokens, value = bracket_expression(u[i], n - 2, 2)
            e = self._RENUMBER[tokens]
            digits = np.flatnonzero(e < MODULUS)
            at = digits[int(pick[i] * len(digits))]
            y[i, 0] = e[at]
            e[at] = self.X
            x[i, : n - 2], x[i, n - 2], x[i, n - 1] = e, self.EQUALS, value
        return x, y


class StackManipulationTask(ChomskyTask):
    """Stack Manipulation: a stack (bottom to top) and actions -> the final stack, top to bottom.

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Stack Manipulation" (deterministic
    context-free). The input is an initial stack ``s in {a, b}^k`` given bottom to
    top, then ``N - k`` actions ``~ U{POP, PUSH a, PUSH b}``, run left to right (a
    ``POP`` on an empty stack does nothing); the target is the final stack read
    from the top, then ``END``. As in the paper, ``k ~ U{1..N-1}`` (``N = 1``: a
    one-symbol stack and no action).

    ``T_in = N``; ``T_out = N + 1`` (the paper's output length: the final stack
    holds at most ``N`` symbols). The answer is padded with ``END`` to ``T_out``;
    the loss covers every step, the metrics stop at the first ``END`` (module
    docstring). The paper pads with symbol 0 instead; the padding it scores in
    neither case, so only the loss's padding target differs.
    """

    name = "stack_manipulation"
    level = "context_free"
    input_vocab = ("a", "b", "POP", "PUSH a", "PUSH b")
    output_vocab = ("a", "b", "END")
    end_symbol = 2
    POP, PUSH_A = 2, 3

    def output_steps(self, length):
        return int(length) + 1

    def _draw(self, rng, b, n):
        k = rng.integers(1, n, size=b) if n > 1 else np.ones(b, dtype=np.int64)
        t = np.arange(n)[None, :]
        in_stack = t < k[:, None]
        x = np.where(in_stack, rng.integers(0, 2, size=(b, n)), rng.integers(2, 5, size=(b, n)))
        # Run the stack: row i holds example i's stack bottom-first, `top` its height (at most n).
        stack = np.zeros((b, n + 1), dtype=np.int64)
        top = np.zeros(b, dtype=np.int64)
        rows = np.arange(b)
        for j in range(n):
            a = x[:, j]
            push = a != self.POP
            symbol = np.where(a >= self.PUSH_A, a - self.PUSH_A, a)  # a stack symbol, or the one PUSH a/b pushes
            stack[rows[push], top[push]] = symbol[push]
            top = np.where(push, top + 1, np.maximum(top - 1, 0))
        steps = np.arange(n + 1)[None, :]
        top_first = np.take_along_axis(stack, np.clip(top[:, None] - 1 - steps, 0, None), axis=1)
        return x, np.where(steps < top[:, None], top_first, self.end_symbol)


# ============================================================ context-sensitive


class DuplicateStringTask(ChomskyTask):
    """Duplicate String: ``w -> ww`` over ``{a, b}``.

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Duplicate String" (context-sensitive).
    ``T_in = N``, ``T_out = 2N``.
    """

    name = "duplicate_string"
    level = "context_sensitive"
    input_vocab = _BINARY
    output_vocab = _BINARY

    def output_steps(self, length):
        return 2 * int(length)

    def _draw(self, rng, b, n):
        w = rng.integers(0, 2, size=(b, n))
        return w, np.concatenate([w, w], axis=1)


class MissingDuplicateTask(ChomskyTask):
    """Missing Duplicate: ``ww`` with one token replaced by ``_`` -> the replaced token.

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Missing Duplicate" (context-sensitive).
    As in the paper, ``w ~ U{a, b}^{floor(N/2)}``, the hidden position is uniform
    over the ``2 floor(N/2)`` tokens of ``ww``, and an odd ``N`` ends with the empty
    symbol ``#`` (so the input is always ``N`` tokens). The library's choice:
    ``N >= 2`` (``N = 1`` holds no duplicated string). Output classes ``a``, ``b``.
    ``T_in = N``, ``T_out = 1``.
    """

    name = "missing_duplicate"
    level = "context_sensitive"
    min_length = 2
    input_vocab = ("a", "b", "_", "#")
    output_vocab = _BINARY
    MISSING, EMPTY = 2, 3

    def _draw(self, rng, b, n):
        h = n // 2
        w = rng.integers(0, 2, size=(b, h))
        x = np.full((b, n), self.EMPTY, dtype=np.int64)
        x[:, : 2 * h] = np.concatenate([w, w], axis=1)
        at = rng.integers(0, 2 * h, size=b)
        rows = np.arange(b)
        y = x[rows, at].copy()
        x[rows, at] = self.MISSING
        return x, y[:, None]


class OddsFirstTask(ChomskyTask):
    """Odds First: ``w_1 w_2 ... w_N -> w_1 w_3 w_5 ... w_2 w_4 ...`` (1-indexed) over ``{a, b}``.

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Odds First" (context-sensitive): the
    tokens at odd positions, then those at even positions (``aaabaa ->
    aaaaba``). ``T_in = T_out = N``.
    """

    name = "odds_first"
    level = "context_sensitive"
    input_vocab = _BINARY
    output_vocab = _BINARY

    def output_steps(self, length):
        return int(length)

    def _draw(self, rng, b, n):
        w = rng.integers(0, 2, size=(b, n))
        return w, np.concatenate([w[:, 0::2], w[:, 1::2]], axis=1)


def _bits_to_int(bits: np.ndarray) -> int:
    """Little-endian bits ``[k]`` (0/1) -> a Python int."""
    return int.from_bytes(np.packbits(bits.astype(np.uint8), bitorder="little").tobytes(), "little")


def _int_to_bits(value: int, width: int) -> np.ndarray:
    """A Python int -> its ``width`` lowest bits, little-endian ``[width]`` int64."""
    raw = value.to_bytes((width + 7) // 8 or 1, "little")
    return np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")[:width].astype(np.int64)


class _BinaryOperationTask(ChomskyTask):
    """Two little-endian binary numbers and an operator -> the result, little-endian, then ``END``.

    The input ``n_1 op n_2`` has ``N`` tokens: as in the paper, the first number
    has ``l ~ U{1..N-2}`` bits and the second ``N - 1 - l``; each number is uniform
    over ``1 .. 2^bits - 1`` written on exactly its bit count, least significant
    bit first (so it may end in zeros). The result is written least significant
    bit first without leading zeros, followed by ``END`` and padded with ``END``.
    ``N >= 3`` (the library's choice: two numbers of at least one bit and the
    operator). ``T_in = N``.
    """

    min_length = 3
    input_vocab: ClassVar[tuple[str, ...]] = ("0", "1")  # + the operator, set by subclasses
    output_vocab = ("0", "1", "END")
    end_symbol = 2
    OPERATOR = 2

    def _combine(self, p: int, q: int) -> int:
        raise NotImplementedError

    def _draw(self, rng, b, n):
        lens = rng.integers(1, n - 1, size=b)  # bits of the first number
        t = np.arange(n)[None, :]
        first, second = t < lens[:, None], t > lens[:, None]
        bits = rng.integers(0, 2, size=(b, n))
        while True:  # each number uniform on 1 .. 2^bits - 1: redraw the rows holding a zero
            zero = ~(bits.astype(bool) & first).any(axis=1) | ~(bits.astype(bool) & second).any(axis=1)
            if not zero.any():
                break
            bits[zero] = rng.integers(0, 2, size=(int(zero.sum()), n))
        x = np.where(t == lens[:, None], self.OPERATOR, bits)
        t_out = self.output_steps(n)
        y = np.full((b, t_out), self.end_symbol, dtype=np.int64)
        for i in range(b):
            value = self._combine(_bits_to_int(bits[i, : lens[i]]), _bits_to_int(bits[i, lens[i] + 1 :]))
            width = value.bit_length()
            y[i, :width] = _int_to_bits(value, width)
        return x, y


class BinaryAdditionTask(_BinaryOperationTask):
    """Binary Addition: ``n_1 + n_2`` in little-endian binary.

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Binary Addition" (context-sensitive).
    Layout, bit order and padding: ``_BinaryOperationTask`` (``01001+011 ->
    00011 END ...``: 18 + 6 = 24). ``T_out = N + 1`` (the paper's output length).
    """

    name = "binary_addition"
    level = "context_sensitive"
    input_vocab = ("0", "1", "+")

    def output_steps(self, length):
        return int(length) + 1

    def _combine(self, p, q):
        return p + q


class BinaryMultiplicationTask(_BinaryOperationTask):
    """Binary Multiplication: ``n_1 * n_2`` in little-endian binary.

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Binary Multiplication"
    (context-sensitive). Layout, bit order and padding:
    ``_BinaryOperationTask``. ``T_out = N`` (the paper's output length: the
    product has at most ``N - 1`` bits, then ``END``).
    """

    name = "binary_multiplication"
    level = "context_sensitive"
    input_vocab = ("0", "1", "*")

    def output_steps(self, length):
        return int(length)

    def _combine(self, p, q):
        return p * q


class ComputeSqrtTask(ChomskyTask):
    """Compute Sqrt: a binary number ``n`` -> ``floor(sqrt(n))``, both big-endian.

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Compute Sqrt" (context-sensitive). As
    in the paper, ``n ~ U{1 .. 2^N - 1}`` is written on exactly ``N`` bits (most
    significant first, leading zeros kept) and the root on exactly
    ``ceil(N / 2)`` bits with leading zeros (``100101 -> 110``: 37 -> 6).
    ``T_in = N``, ``T_out = ceil(N / 2)``; no end symbol is needed.
    """

    name = "compute_sqrt"
    level = "context_sensitive"
    input_vocab = ("0", "1")
    output_vocab = ("0", "1")

    def output_steps(self, length):
        return (int(length) + 1) // 2

    def _draw(self, rng, b, n):
        bits = rng.integers(0, 2, size=(b, n))
        zero = ~bits.any(axis=1)
        while zero.any():  # n uniform on 1 .. 2^N - 1
            bits[zero] = rng.integers(0, 2, size=(int(zero.sum()), n))
            zero = ~bits.any(axis=1)
        m = self.output_steps(n)
        y = np.empty((b, m), dtype=np.int64)
        for i in range(b):
            root = math.isqrt(_bits_to_int(bits[i, ::-1]))
            y[i] = _int_to_bits(root, m)[::-1]
        return bits, y


class BucketSortTask(ChomskyTask):
    """Bucket Sort: a string over ``{0..4}`` -> the same symbols in ascending order.

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Bucket Sort" (context-sensitive).
    ``10204112 -> 00111224``. ``T_in = T_out = N``.
    """

    name = "bucket_sort"
    level = "context_sensitive"
    input_vocab = _DIGITS
    output_vocab = _DIGITS

    def output_steps(self, length):
        return int(length)

    def _draw(self, rng, b, n):
        w = rng.integers(0, MODULUS, size=(b, n))
        return w, np.sort(w, axis=1)


CHOMSKY_TASKS: dict[str, type[Task]] = {
    # regular
    "even_pairs": EvenPairsTask,
    "modular_arithmetic": ModularArithmeticTask,
    "parity_check": ParityCheckTask,
    "cycle_navigation": CycleNavigationTask,
    # deterministic context-free
    "modular_arithmetic_brackets": ModularArithmeticBracketsTask,
    "reverse_string": ReverseStringTask,
    "solve_equation": SolveEquationTask,
    "stack_manipulation": StackManipulationTask,
    # context-sensitive
    "duplicate_string": DuplicateStringTask,
    "missing_duplicate": MissingDuplicateTask,
    "odds_first": OddsFirstTask,
    "binary_addition": BinaryAdditionTask,
    "binary_multiplication": BinaryMultiplicationTask,
    "compute_sqrt": ComputeSqrtTask,
    "bucket_sort": BucketSortTask,
}
