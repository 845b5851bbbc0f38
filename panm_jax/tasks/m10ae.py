"""M10AE: modulo-10 arithmetic expressions, labelled by a shift-reduce stack evaluator.

Task (docs/tasks.md, M10AE; App. B, "Deterministic algorithm for evaluating
samples in M10AE", of the M10AE appendix, a paper whose authors and title we
could not establish, see docs/references.md; our specification where the
source paper's lengths and splits are not available): an expression
over the digits ``0..9``, ``+ - *`` and parentheses, with the usual precedence
(``*`` before ``+ -``) and left associativity; the label is its value mod 10,
one 10-class output after the expression (``output_mode = "after_input"``).
``/`` is undefined mod 10 and left out.

Length = the number of tokens. Every expression has an odd number of tokens
(``d`` digits, ``d - 1`` operators, pairs of parentheses), so lengths are odd:
training ``n ~ U{1, 3, ..., L}`` with ``L = 19``, one length per batch; test modes
``L, L+2, 2L+1, 4L+1, 8L+1`` = 19, 21, 39, 77, 153.

Input layout (``D_in = 17``, ``T_in = n + 2``)::

    row 0        start delimiter   channel 15
    rows 1..n    tokens            one-hot over 0..9, + - *, ( )   (channels 0..14)
    row n + 1    end delimiter     channel 16

Generator (``generate_expression``): an expression of ``n`` tokens at
parenthesis depth ``d`` is a digit if ``n = 1``; otherwise, with probability
``paren_prob`` while ``d < max_depth``, ``( E_{n-2} )`` one level deeper, else
``E_{n1} op E_{n-1-n1}`` with ``n1`` odd and uniform and ``op`` uniform. Explicit
stack, no recursion. ``max_depth`` bounds the nesting depth (``0``: no parentheses).

Labels come from ``evaluate_mod10``, a transcription of Algorithms 1-3 of the
M10AE appendix with a real stack, and the three slips of its printed text
corrected as docs/tasks.md (M10AE) says:

1. Algorithm 1 reads "each input x_t and its next x_t" and "return l_0": the
   look-ahead is ``x_{t+1}`` (nothing after the last token) and the result is
   the top of the stack, ``S[0]``;
2. Algorithm 2's last branch tests ``S[1][1] is '('``: it is ``S[1]`` itself that is
   ``'('`` (a bare parenthesis, not a pair);
3. Algorithm 3 lacks the case ``S[0] = ')'`` over the pair ``('(', n)``, which
   returns ``n`` (Algorithm 2's third branch makes it reducible, but Algorithm 3
   had no rule for it).

The evaluator is checked against Python's own evaluation (``eval`` then ``% 10``)
on 10,000 random expressions (``tests/tasks/test_m10ae.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from panm_jax import checks
from panm_jax.options import option
from panm_jax.tasks import metrics as _metrics
from panm_jax.tasks.base import (
    Batch,
    DecodedExample,
    LengthRange,
    Task,
    TaskOptionError,
    TaskOptions,
    step_mask,
)

__all__ = ["M10AETask", "SYMBOLS", "evaluate_mod10", "generate_expression", "nesting_depth", "tokenize"]

SYMBOLS = ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "+", "-", "*", "(", ")")
PLUS, MINUS, TIMES, LPAREN, RPAREN = 10, 11, 12, 13, 14
START_CHANNEL, END_CHANNEL = 15, 16
_OPERATORS = (PLUS, MINUS, TIMES)

# Stack item kinds. An item is a tuple (kind, value):
NUM = 0  # a numeral, value in 0..9 (kept mod 10: + - * commute with mod 10)
OP = 1  # an operator, value in (PLUS, MINUS, TIMES)
LP = 2  # '('
RP = 3  # ')'
NUM_OP = 4  # the pair (numeral, operator) = Algorithm 3's (S[1], S[0]); value (n, op)
LP_NUM = 5  # the pair ('(', numeral); value n


def tokenize(expression: str) -> list[int]:
    """``"3+(4*2)"`` -> token ids (``SYMBOLS`` order); spaces are ignored."""
    try:
        return [SYMBOLS.index(c) for c in expression if not c.isspace()]
    except ValueError:
        bad = next(c for c in expression if not c.isspace() and c not in SYMBOLS)
        raise ValueError(f"expression: expected only the symbols {''.join(SYMBOLS)}, got {bad!r}") from None


def _apply(op: int, a: int, b: int) -> int:
    if op == PLUS:
        return (a + b) % 10
    if op == MINUS:
        return (a - b) % 10
    return (a * b) % 10


def _reducible(S: list, x: int | None) -> bool:
    """Algorithm 2, ``REDUCIBLE(S, x)``: ``S[-1]`` is the printed algorithm's ``S[0]`` (top), ``x`` the look-ahead."""
    if len(S) < 2:
        return False
    (k0, _v0), (k1, v1) = S[-1], S[-2]
    # if S[0] is an operator and S[1] is a numeral
    if k0 == OP and k1 == NUM:
        return True
    # else if S[0] is a numeral and S[1] = (numeral, operator)
    if k0 == NUM and k1 == NUM_OP:
        if v1[1] in (PLUS, MINUS) and x != TIMES:  # "x not in {*, /}"
            return True
        if v1[1] == TIMES:
            return True
        return False
    # else if S[0] is ')' and S[1] = ('(', numeral)
    if k0 == RP and k1 == LP_NUM:
        return True
    # else if S[0] is a numeral and S[1] is '(' and x is ')'   (slip 2: S[1] itself, not S[1][1])
    if k0 == NUM and k1 == LP and x == RPAREN:
        return True
    return False


def _reduce(S: list) -> tuple[int, Any]:
    """Algorithm 3, ``REDUCE(S)``: pop the top two items and return the reduced one."""
    (k0, v0) = S.pop()
    (k1, v1) = S.pop()
    # if S[0] is an operator and S[1] is a numeral: return (S[1], S[0])
    if k0 == OP and k1 == NUM:
        return (NUM_OP, (v1, v0))
    # else if S[0] is a numeral and S[1] = (numeral, operator): return eval(S[1][1], S[1][0], S[0])
    if k0 == NUM and k1 == NUM_OP:
        return (NUM, _apply(v1[1], v1[0], v0))
    # else if S[0] is a numeral and S[1] is '(': return (S[1], S[0])
    if k0 == NUM and k1 == LP:
        return (LP_NUM, v0)
    # slip 3: S[0] is ')' over ('(', n): return n
    if k0 == RP and k1 == LP_NUM:
        return (NUM, v1)
    raise AssertionError("REDUCE called on an irreducible stack")  # pragma: no cover


def _shift(token: int) -> tuple[int, Any]:
    if token < 10:
        return (NUM, token)
    if token in _OPERATORS:
        return (OP, token)
    return (LP, None) if token == LPAREN else (RP, None)


def evaluate_mod10(tokens: Sequence[int] | str) -> int:
    """The value mod 10 of an expression, by Algorithm 1 of the M10AE appendix (slips corrected).

    Algorithm 1: for each input ``x_t`` and its next ``x_{t+1}``: push ``x_t``;
    while ``REDUCIBLE(S, x_{t+1})``: ``r <- REDUCE(S)``, push ``r``. Return ``S[0]``.

    Args:
      tokens: token ids (``SYMBOLS`` order) or the expression as a string.

    Raises:
      ValueError: the tokens are not a well-formed expression (the stack does
        not end as a single numeral).
    """
    if isinstance(tokens, str):
        tokens = tokenize(tokens)
    tokens = list(tokens)
    S: list = []  # a real stack; S[-1] is the printed algorithm's S[0]
    last = len(tokens) - 1
    for t, x in enumerate(tokens):
        nxt = tokens[t + 1] if t < last else None  # slip 1: the next input is x_{t+1}
        S.append(_shift(x))
        while _reducible(S, nxt):
            S.append(_reduce(S))
    if len(S) != 1 or S[0][0] != NUM:
        shown = "".join(SYMBOLS[i] for i in tokens)
        raise ValueError(f"tokens: expected a well-formed expression, got {shown!r}")
    return S[0][1]  # slip 1: the result is S[0]


def nesting_depth(tokens: Sequence[int] | str) -> int:
    """The deepest parenthesis nesting of an expression: ``"3+4"`` -> 0, ``"(3+(4*2))"`` -> 2.

    Raises ``ValueError`` when the parentheses do not balance.
    """
    if isinstance(tokens, str):
        tokens = tokenize(tokens)
    depth = deepest = 0
    for t in tokens:
        if t == LPAREN:
            depth += 1
            deepest = max(deepest, depth)
        elif t == RPAREN:
            depth -= 1
            if depth < 0:
                break
    if depth != 0:
        raise ValueError(f"tokens: expected balanced parentheses, got {''.join(SYMBOLS[i] for i in tokens)!r}")
    return deepest


def generate_expression(
    rng: np.random.Generator, num_tokens: int, max_depth: int = 4, paren_prob: float = 0.25
) -> list[int]:
    """A random expression of exactly ``num_tokens`` (odd) tokens, nesting at most ``max_depth``.

    See the module docstring for the distribution. Returns token ids.
    """
    num_tokens = checks.odd_int("num_tokens", num_tokens)
    u = rng.random((num_tokens, 3)).tolist()  # one row per expression node (at most num_tokens nodes)
    node = 0
    out: list[int] = []
    stack: list = [(num_tokens, 0)]  # (tokens, depth) pending sub-expression, or an int literal token
    while stack:
        item = stack.pop()
        if isinstance(item, int):
            out.append(item)
            continue
        n, d = item
        a, b, c = u[node]
        node += 1
        if n == 1:
            out.append(int(a * 10))
        elif d < max_depth and a < paren_prob:
            out.append(LPAREN)
            stack.append(RPAREN)
            stack.append((n - 2, d + 1))
        else:
            n1 = 1 + 2 * int(b * ((n - 1) // 2))  # odd, uniform in 1..n-2
            stack.append((n - 1 - n1, d))
            stack.append(_OPERATORS[int(c * 3)])
            stack.append((n1, d))
    return out


class M10AETask(Task):
    """Modulo-10 arithmetic expressions (module docstring).

    Its options: ``M10AETask.Options``.
    """

    @dataclasses.dataclass(frozen=True)
    class Options(TaskOptions):
        max_train_length: int = option(19, checks.odd_int, doc="L, the longest training expression (in tokens)")
        max_depth: int = option(4, checks.nonnegative_int, doc="the deepest parenthesis nesting (0: no parentheses)")
        paren_prob: float = option(0.25, checks.probability, doc="the chance that a sub-expression is parenthesised")
        max_length: int = option(
            1021, checks.positive_int, doc="the longest expression sample accepts (an even value is taken one lower)"
        )

    name = "m10ae"
    output_size = 10

    def __init__(self, **options: Any):
        o = self.take_options(options)
        L, max_depth, paren_prob, max_length = o.max_train_length, o.max_depth, o.paren_prob, o.max_length
        max_length -= 1 - max_length % 2  # odd
        if 8 * L + 1 > max_length:
            raise TaskOptionError(
                f"{self.name}: option max_train_length: expected 8 * L + 1 <= max_length = {max_length}, got L = {L}"
            )
        self._options = {
            "max_train_length": L,
            "max_depth": max_depth,
            "paren_prob": paren_prob,
            "max_length": max_length,
        }
        self.max_depth, self.paren_prob = max_depth, paren_prob
        self.input_size = len(SYMBOLS) + 2
        self.lengths = LengthRange(1, max_length, 2)
        self.train_lengths = LengthRange(1, L, 2)
        self.test_modes = {
            "L": LengthRange(L, L, 2),
            "L+2": LengthRange(L + 2, L + 2, 2),
            "2L+1": LengthRange(2 * L + 1, 2 * L + 1, 2),
            "4L+1": LengthRange(4 * L + 1, 4 * L + 1, 2),
            "8L+1": LengthRange(8 * L + 1, 8 * L + 1, 2),
        }

    def input_steps(self, length: int) -> int:
        return length + 2

    def output_steps(self, length: int) -> int:
        return 1

    def _generate(self, rng: np.random.Generator, lengths: np.ndarray) -> Batch:
        exprs = [generate_expression(rng, int(n), self.max_depth, self.paren_prob) for n in lengths]
        labels = np.array([[evaluate_mod10(e)] for e in exprs], dtype=np.int32)
        return self.encode(exprs, labels)

    def encode(self, exprs: Sequence[Sequence[int]], labels: np.ndarray | None = None) -> Batch:
        """A batch of token-id expressions (labels computed when not given)."""
        if labels is None:
            labels = np.array([[evaluate_mod10(e)] for e in exprs], dtype=np.int32)
        lengths = np.array([len(e) for e in exprs], dtype=np.int64)
        B, n_max = len(exprs), int(lengths.max())
        T = n_max + 2
        ids = np.full((B, n_max), -1, dtype=np.int64)
        for b, e in enumerate(exprs):
            ids[b, : len(e)] = e
        inputs = np.zeros((B, T, self.input_size), dtype=np.float32)
        inputs[:, 0, START_CHANNEL] = 1.0
        valid = ids >= 0
        np.put_along_axis(
            inputs[:, 1 : n_max + 1, : len(SYMBOLS)],
            np.maximum(ids, 0)[..., None],
            valid[..., None].astype(np.float32),
            axis=-1,
        )
        inputs[np.arange(B), lengths + 1, END_CHANNEL] = 1.0
        return Batch(inputs, step_mask(lengths + 2, T), labels, np.ones((B, 1), dtype=bool))

    def batches_by_depth(self, rng: np.random.Generator, length: int, num_examples: int) -> dict[int, Batch]:
        """``num_examples`` expressions of ``length`` tokens drawn as ``sample`` draws them, grouped by their
        nesting depth (``nesting_depth``): ``{depth: batch}``, depths ascending.

        For reading accuracy by depth: the generator does not set the depth, so each group's size is how often
        that depth comes up at this length (none past ``max_depth``).
        """
        (length,) = self.check_lengths(length, 1).tolist()
        num_examples = checks.positive_int("num_examples", num_examples)
        groups: dict[int, list[list[int]]] = {}
        for _ in range(num_examples):
            expr = generate_expression(rng, length, self.max_depth, self.paren_prob)
            groups.setdefault(nesting_depth(expr), []).append(expr)
        return {d: self.encode(groups[d]) for d in sorted(groups)}

    def metrics(self, logits, batch: Batch) -> dict[str, Any]:
        return {"token_accuracy": _metrics.token_accuracy(logits, batch)}

    def decode(self, batch: Batch, index: int = 0) -> DecodedExample:
        out = []
        for row in batch.inputs[index][batch.input_mask[index]]:
            if row[START_CHANNEL] > 0.5:
                out.append("<s>")
            elif row[END_CHANNEL] > 0.5:
                out.append("</s>")
            else:
                out.append(SYMBOLS[int(np.argmax(row[: len(SYMBOLS)]))])
        return DecodedExample(out, [str(int(batch.targets[index, 0]))])
