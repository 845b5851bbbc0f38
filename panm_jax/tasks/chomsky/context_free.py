"""The deterministic context-free tasks of Delétang et al. (2023) (level ``context_free``).

Modular arithmetic with brackets, reverse string, solve equation, stack
manipulation: solvable with a stack (a deterministic pushdown automaton); the
protocol is described in ``panm_jax.tasks.chomsky``.
"""

from __future__ import annotations

import numpy as np

from panm_jax.tasks.chomsky.base import _BINARY, _DIGITS, MODULUS, ChomskyTask, EndedAnswerTask

__all__ = [
    "ModularArithmeticBracketsTask",
    "ReverseStringTask",
    "SolveEquationTask",
    "StackManipulationTask",
]

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


class StackManipulationTask(EndedAnswerTask):
    """Stack Manipulation: a stack (bottom to top) and actions -> the final stack, top to bottom.

    Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
    2023), appendix task descriptions, "Stack Manipulation" (deterministic
    context-free). The input is an initial stack ``s in {a, b}^k`` given bottom to
    top, then ``N - k`` actions ``~ U{POP, PUSH a, PUSH b}``, run left to right (a
    ``POP`` on an empty stack does nothing); the target is the final stack read
    from the top, then ``END``. As in the paper, ``k ~ U{1..N-1}`` (``N = 1``: a
    one-symbol stack and no action).

    ``T_in = N``; ``T_out = N + 1`` (the paper's output length: the final stack
    holds at most ``N`` symbols). The answer is padded to ``T_out`` as the option
    ``padding`` says (``EndedAnswerTask``: ``END`` by default, ``"zero"`` as the
    paper's released code pads); the loss covers every step, the metrics stop at
    the first ``END`` (module docstring).
    """

    name = "stack_manipulation"
    level = "context_free"
    input_vocab = ("a", "b", "POP", "PUSH a", "PUSH b")
    output_vocab = ("a", "b", "END")
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
