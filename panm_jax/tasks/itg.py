"""Inversion transduction grammars (ITGs) as data, and an exact-length sampler.

Grefenstette et al. (2015, "Learning to Transduce with Unbounded Memory",
NeurIPS) test two linguistically inspired transductions built
from ITGs: SVO -> SOV reordering and gender conjugation, their appendix C
(Table 1) giving the grammars. The two grammars below are **our design** after the
paper's Section 4.2, not those of its Table 1 (docs/tasks.md lists where they
differ); this docstring says what they generate.

An ITG in normal form has
  * binary rules ``X -> [Y Z]`` (straight: the target is ``t(Y) t(Z)``) or
    ``X -> <Y Z>`` (inverted: the target is ``t(Z) t(Y)``), and
  * lexical rules ``X -> e / f``: source word ``e``, target word ``f``.

A derivation yields a source sentence and its target at once. Both grammars
below are unambiguous (each source sentence has one derivation), so the target
is a function of the source and the task is learnable.

``SVO_SOV`` (English-like subject-verb-object to a verb-final language)::

    S  -> [NP VP]
    VP -> <V NP>          the object moves before its verb
    VP -> <VC CP>         a clausal complement moves before its verb
    CP -> [THAT S]
    NP -> [DET NOM]
    NOM -> [ADJ NOM]  |  noun
    DET -> the | a      ADJ, V (transitive), VC (says, thinks, ...), THAT -> that

  "the dog sees a cat" -> "the dog a cat sees";
  "the man says that the dog sees a big cat" ->
  "the man that the dog a big cat sees says" (clauses nest: the target's verbs
  come out in the reverse order of the source's, a stack's order).

``GENDER`` (English-like source to a German-like target whose articles agree in
gender and case with their noun)::

    S   -> [NPN VP]                     NPN: a subject (nominative) noun phrase
    VP  -> [V NPA]  |  [VC CP]          NPA: an object (accusative) noun phrase
    CP  -> [THAT S]
    NPN -> [DN_g NOM_g],  NPA -> [DA_g NOM_g]      for g in m, f, n
    NOM_g -> [ADJ NOM_g]  |  noun of gender g
    DN_m -> the/der | a/ein     DN_f -> the/die | a/eine    DN_n -> the/das | a/ein
    DA_m -> the/den | a/einen  DA_f -> the/die | a/eine    DA_n -> the/das | a/ein

  Every other word is copied. "the big old dog sees the cat" ->
  "der big old dog sees die cat": the article depends on the noun that comes
  any number of adjectives *later* and on whether the phrase is a subject or an
  object, so a left-to-right reader must look ahead (the nouns carry German
  genders: dog = Hund m, cat = Katze f, house = Haus n, ...).

Sampling (``ITG.sample``): a derivation with exactly ``n`` source words, drawn
with probability proportional to the product of its rules' integer weights
among all derivations of that length (lexical choices included; with all
weights 1 this is uniform over derivations), using exact weighted derivation
counts (Python integers) per nonterminal and length; explicit stacks, no
recursion. Both grammars weight the clausal-complement rule by
``CLAUSE_WEIGHT = 100`` so that long sentences nest clauses rather than being
mostly adjectives.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from panm_jax import checks
from panm_jax.errors import UserError

__all__ = ["GENDER", "ITG", "SVO_SOV"]

STRAIGHT = False
INVERTED = True


@dataclasses.dataclass(frozen=True, eq=False)
class ITG:
    """An inversion transduction grammar in normal form (module docstring).

    Attributes:
      start: the start nonterminal.
      binary: ``(lhs, left, right, inverted, weight)`` rules; ``weight`` is a
        positive integer multiplying the rule's derivations (1 for all rules:
        uniform over derivations; a larger weight makes the rule more common).
      lexical: nonterminal -> ``(source word, target word)`` pairs.
    """

    start: str
    binary: tuple[tuple[str, str, str, bool, int], ...]
    lexical: Mapping[str, tuple[tuple[str, str], ...]]

    if TYPE_CHECKING:  # caches set by ``__post_init__``; for the type checker only, not dataclass fields
        _counts: dict[str, list[int]] = dataclasses.field(init=False)
        _choices: dict[tuple[str, int], tuple[list[float], list[tuple]]] = dataclasses.field(init=False)

    def __post_init__(self):
        nonterminals = {r[0] for r in self.binary} | set(self.lexical)
        for lhs, left, right, _, weight in self.binary:
            try:
                checks.positive_int("weight", weight)
            except UserError:
                raise ValueError(
                    f"grammar: rule {lhs} -> {left} {right}: expected a positive integer weight, got {weight!r}"
                ) from None
            for sym in (left, right):
                if sym not in nonterminals:
                    raise ValueError(f"grammar: rule {lhs} -> {left} {right} uses undefined {sym!r}")
        object.__setattr__(self, "_counts", {x: [0, len(self.lexical.get(x, ()))] for x in nonterminals})
        object.__setattr__(self, "_choices", {})

    # ------------------------------------------------------------- vocabulary

    def source_words(self) -> tuple[str, ...]:
        return tuple(sorted({e for pairs in self.lexical.values() for e, _ in pairs}))

    def target_words(self) -> tuple[str, ...]:
        return tuple(sorted({f for pairs in self.lexical.values() for _, f in pairs}))

    # ----------------------------------------------------------------- counts

    def count(self, symbol: str, n: int) -> int:
        """The weighted number of derivations of ``symbol`` with exactly ``n`` source words."""
        counts = self._counts
        while len(counts[self.start]) <= n:
            m = len(counts[self.start])
            new = {x: 0 for x in counts}
            for lhs, left, right, _, weight in self.binary:
                cl, cr = counts[left], counts[right]
                new[lhs] += weight * sum(cl[a] * cr[m - a] for a in range(1, m))
            for x in counts:
                counts[x].append(new[x])
        return counts[symbol][n]

    def min_length(self, symbol: str | None = None, limit: int = 64) -> int:
        """The fewest source words ``symbol`` (default: start) can derive."""
        symbol = symbol or self.start
        for n in range(1, limit + 1):
            if self.count(symbol, n):
                return n
        raise ValueError(f"grammar: {symbol!r} derives nothing of length <= {limit}")

    def _options(self, symbol: str, n: int):
        """Cumulative probabilities and outcomes of expanding ``symbol`` over ``n`` words."""
        key = (symbol, n)
        cached = self._choices.get(key)
        if cached is not None:
            return cached
        self.count(symbol, n)
        counts = self._counts
        outcomes: list[tuple] = []  # (source, target) word pairs, or (left, a, right, n - a, inverted) splits
        weights: list[int] = []
        if n == 1:
            for pair in self.lexical.get(symbol, ()):
                outcomes.append(pair)
                weights.append(1)
        for lhs, left, right, inverted, weight in self.binary:
            if lhs != symbol:
                continue
            for a in range(1, n):
                w = weight * counts[left][a] * counts[right][n - a]
                if w:
                    outcomes.append((left, a, right, n - a, inverted))
                    weights.append(w)
        total = sum(weights)
        if total == 0:
            raise ValueError(f"length: {symbol!r} derives no sentence of {n} words")
        cum, acc = [], 0
        for w in weights:
            acc += w
            cum.append(acc / total)  # exact integer ratio, rounded once to float
        cum[-1] = 1.0
        self._choices[key] = (cum, outcomes)
        return cum, outcomes

    # --------------------------------------------------------------- sampling

    def sample(self, rng: np.random.Generator, n: int) -> tuple[list[str], list[str]]:
        """One (source, target) pair with exactly ``n`` source words, uniform over derivations."""
        if self.count(self.start, n) == 0:
            raise ValueError(f"length: the grammar derives no sentence of {n} words")
        u = iter(rng.random(2 * n).tolist())  # a derivation of n words has 2n - 1 nodes
        # Build the tree: node = [pair] for a leaf or [left, right, inverted] for a binary node.
        nodes: list[list] = []
        pending = [(self.start, n, -1, 0)]  # (symbol, length, parent index, child slot)
        while pending:
            symbol, m, parent, slot = pending.pop()
            cum, outcomes = self._options(symbol, m)
            outcome = outcomes[bisect.bisect_left(cum, next(u))]
            index = len(nodes)
            if len(outcome) == 2:
                nodes.append([outcome])
            else:
                left, a, right, b, inverted = outcome
                nodes.append([None, None, inverted])
                pending.append((right, b, index, 1))
                pending.append((left, a, index, 0))
            if parent >= 0:
                nodes[parent][slot] = index
        return self._yield(nodes, target=False), self._yield(nodes, target=True)

    def translate(self, source: Sequence[str]) -> list[str]:
        """The target of ``source``, by parsing it (CYK over the binary rules; ``O(n^3)``).

        An independent route to the target (the sampler builds source and target
        together): tests parse sampled sources and compare. Raises
        ``ValueError`` if ``source`` has no derivation or more than one.
        """
        n = len(source)
        if n == 0:
            raise ValueError("source: expected at least one word, got none")
        # chart[(i, j)][X] = (number of derivations capped at 2, one target yield)
        chart: dict[tuple[int, int], dict[str, tuple[int, list[str]]]] = {}
        for i, word in enumerate(source):
            cell: dict[str, tuple[int, list[str]]] = {}
            for x, pairs in self.lexical.items():
                for e, f in pairs:
                    if e == word:
                        count, _ = cell.get(x, (0, []))
                        cell[x] = (min(count + 1, 2), [f])
            chart[(i, i + 1)] = cell
        for span in range(2, n + 1):
            for i in range(n - span + 1):
                j = i + span
                cell = {}
                for k in range(i + 1, j):
                    left_cell, right_cell = chart[(i, k)], chart[(k, j)]
                    if not left_cell or not right_cell:
                        continue
                    for lhs, left, right, inverted, _ in self.binary:
                        if left in left_cell and right in right_cell:
                            (cl, tl), (cr, tr) = left_cell[left], right_cell[right]
                            count, _ = cell.get(lhs, (0, []))
                            cell[lhs] = (min(count + cl * cr, 2), tr + tl if inverted else tl + tr)
                chart[(i, j)] = cell
        count, target = chart[(0, n)].get(self.start, (0, []))
        if count != 1:
            what = "no derivation" if count == 0 else "more than one derivation"
            raise ValueError(f"source: expected a sentence with one derivation, got {what}: {' '.join(source)!r}")
        return target

    @staticmethod
    def _yield(nodes: list[list], target: bool) -> list[str]:
        out: list[str] = []
        stack = [0]
        while stack:
            node = nodes[stack.pop()]
            if len(node) == 1:
                out.append(node[0][1] if target else node[0][0])
                continue
            left, right, inverted = node
            first, second = (right, left) if (target and inverted) else (left, right)
            stack.append(second)
            stack.append(first)
        return out


def _lex(words: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """Lexical pairs that copy the word."""
    return tuple((w, w) for w in words)


ADJECTIVES = ("big", "small", "old", "young", "red", "green", "happy", "sad", "quick", "slow", "loud", "quiet")
TRANSITIVE_VERBS = ("sees", "likes", "finds", "follows", "helps", "knows", "calls", "hears", "paints", "visits")
CLAUSE_VERBS = ("says", "thinks", "believes", "hopes")
# English nouns with the gender of their German translation.
MASCULINE_NOUNS = ("dog", "man", "tree", "garden", "teacher", "river")  # Hund, Mann, Baum, Garten, Lehrer, Fluss
FEMININE_NOUNS = ("cat", "woman", "flower", "city", "door", "street")  # Katze, Frau, Blume, Stadt, Tür, Straße
NEUTER_NOUNS = ("house", "child", "book", "horse", "car", "boat")  # Haus, Kind, Buch, Pferd, Auto, Boot
NOUNS = MASCULINE_NOUNS + FEMININE_NOUNS + NEUTER_NOUNS
# Weight of the clausal-complement rule. With weight 1 (uniform derivations) a
# sentence is nearly all adjectives (12 choices per word) and has about one
# embedded clause in 300 words; weight 100 gives about one clause per 8 words at
# the lengths used (3 in 32 words, 16 in 128), adjective runs making up the rest.
CLAUSE_WEIGHT = 100

SVO_SOV = ITG(
    start="S",
    binary=(
        ("S", "NP", "VP", STRAIGHT, 1),
        ("VP", "V", "NP", INVERTED, 1),
        ("VP", "VC", "CP", INVERTED, CLAUSE_WEIGHT),
        ("CP", "THAT", "S", STRAIGHT, 1),
        ("NP", "DET", "NOM", STRAIGHT, 1),
        ("NOM", "ADJ", "NOM", STRAIGHT, 1),
    ),
    lexical={
        "DET": _lex(("the", "a")),
        "NOM": _lex(NOUNS),
        "ADJ": _lex(ADJECTIVES),
        "V": _lex(TRANSITIVE_VERBS),
        "VC": _lex(CLAUSE_VERBS),
        "THAT": _lex(("that",)),
    },
)

_GENDERS = {"m": MASCULINE_NOUNS, "f": FEMININE_NOUNS, "n": NEUTER_NOUNS}
_ARTICLES = {  # (nominative, accusative) of (definite, indefinite)
    "m": ((("the", "der"), ("a", "ein")), (("the", "den"), ("a", "einen"))),
    "f": ((("the", "die"), ("a", "eine")), (("the", "die"), ("a", "eine"))),
    "n": ((("the", "das"), ("a", "ein")), (("the", "das"), ("a", "ein"))),
}

GENDER = ITG(
    start="S",
    binary=(
        ("S", "NPN", "VP", STRAIGHT, 1),
        ("VP", "V", "NPA", STRAIGHT, 1),
        ("VP", "VC", "CP", STRAIGHT, CLAUSE_WEIGHT),
        ("CP", "THAT", "S", STRAIGHT, 1),
        *((np_, f"{d}_{g}", f"NOM_{g}", STRAIGHT, 1) for g in _GENDERS for np_, d in (("NPN", "DN"), ("NPA", "DA"))),
        *((f"NOM_{g}", "ADJ", f"NOM_{g}", STRAIGHT, 1) for g in _GENDERS),
    ),
    lexical={
        "V": _lex(TRANSITIVE_VERBS),
        "VC": _lex(CLAUSE_VERBS),
        "THAT": _lex(("that",)),
        "ADJ": _lex(ADJECTIVES),
        **{f"NOM_{g}": _lex(nouns) for g, nouns in _GENDERS.items()},
        **{f"DN_{g}": _ARTICLES[g][0] for g in _GENDERS},
        **{f"DA_{g}": _ARTICLES[g][1] for g in _GENDERS},
    },
)
