"""The context-sensitive tasks of Delétang et al. (2023).

Duplicate string, missing duplicate, odds first, binary addition and
multiplication, square root, bucket sort: beyond a stack (a linear bounded
automaton); the protocol is described in ``panm_jax.tasks.chomsky``.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from panm_jax.tasks.chomsky.base import _BINARY, _DIGITS, MODULUS, ChomskyTask, EndedAnswerTask

__all__ = [
    "BinaryAdditionTask",
    "BinaryMultiplicationTask",
    "BucketSortTask",
    "ComputeSqrtTask",
    "DuplicateStringTask",
    "MissingDuplicateTask",
    "OddsFirstTask",
]


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


class _BinaryOperationTask(EndedAnswerTask):
    """Two little-endian binary numbers and an operator -> the result, little-endian, then ``END``.

    The input ``n_1 op n_2`` has ``N`` tokens: as in the paper, the first number
    has ``l ~ U{1..N-2}`` bits and the second ``N - 1 - l``; each number is uniform
    over ``1 .. 2^bits - 1`` written on exactly its bit count, least significant
    bit first (so it may end in zeros). The result is written least significant
    bit first without leading zeros, followed by ``END`` and padded as the option ``padding`` says
    (``EndedAnswerTask``: ``END`` by default). ``N >= 3`` (the library's choice: two numbers of at least one bit and the
    operator). ``T_in = N``.
    """

    min_length = 3
    input_vocab: ClassVar[tuple[str, ...]] = ("0", "1")  # + the operator, set by subclasses
    output_vocab = ("0", "1", "END")
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
