"""The regular tasks of Delétang et al. (2023): even pairs, modular arithmetic, parity check, cycle navigation.

Solvable with finite memory (a finite automaton); the protocol is described in
``panm_jax.tasks.chomsky``.
"""

from __future__ import annotations

import numpy as np

from panm_jax.tasks.chomsky.base import _BINARY, _DIGITS, MODULUS, ChomskyTask

__all__ = ["CycleNavigationTask", "EvenPairsTask", "ModularArithmeticTask", "ParityCheckTask"]


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
