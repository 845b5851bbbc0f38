"""Inversion transduction grammars (ITGs) as data, an exact-length sampler, and the grammars of the tasks.

Grefenstette et al. (2015, "Learning to Transduce with Unbounded Memory",
NeurIPS) test two linguistically inspired transductions built from ITGs:
SVO -> SOV reordering and gender conjugation, their appendix C (Table 1)
giving the grammars. ``PAPER_SVO_SOV`` and ``PAPER_GENDER`` are those grammars
(the tasks' default); ``SVO_SOV`` and ``GENDER`` are this library's earlier
grammars of the same transductions, our design after the paper's Section 4.2
(task option ``grammar="library"``; docs/tasks.md compares them).

An ITG in normal form has
  * binary rules ``X -> [Y Z]`` (straight: the target is ``t(Y) t(Z)``) or
    ``X -> <Y Z>`` (inverted: the target is ``t(Z) t(Y)``), and
  * lexical rules ``X -> e / f``: source word ``e``, target word ``f``.

A derivation yields a source sentence and its target at once. Every grammar
here gives each source sentence one target (the paper's have sources with
several derivations, all yielding that target), so the task is a function.

**The paper's grammars** (Table 1; ``p``: rule probability, ``|`` separates
the source side from the target side, equal indices link the two sides)::

    (a) SVO -> SOV                               (b) English -> German conjugation
    1     A -> S1 VT2 O3 | S1 O3 VT2             1    A -> B1 | B1
    1/5   S -> S1 S2 | S1 S2                     1/4  B -> B1 or B2 | B1 oder B2
    1/5   S -> S1 rpi S2 VT3 | S1 rpo S2 VT3     1/4  B -> S1 and S2 | S1 und S2
    3/5   S -> ST1 | ST1                         1/2  B -> B1 V1 | B1 V1
    1/5   O -> O1 O2 | O1 O2                     3/4  V -> W1 B2 | W1 B2
    1/5   O -> S1 rpi S2 VT3 | S1 rpo S2 VT3     1/4  V -> W1 | W1
    3/5   O -> OT1 | OT1                         1/6  S -> the M1 | der M1   (and the F/die,
    1/33  ST_i -> si_i | so_i                         the N/das, a M/ein, a F/eine, a N/ein)
    1/33  OT_i -> oi_i | oo_i                    1/25 W_i -> we_i | wg_i   (M_i -> me_i | mg_i,
    1/33  VT_i -> vi_i | vo_i                         F_i -> fe_i | fg_i, N_i -> ne_i | ng_i)

(a) moves the main verb past its object, however long (the object and the
subject can be sequences of nouns and hold nested relative clauses, whose
own verbs stay in place): the paper's example ``si1 vi28 oi5 oi7 si15 rpi si19
vi16 oi10 oi24 -> so1 oo5 oo7 so15 rpo so19 vo16 oo10 oo24 vo28``. (b) puts
before each noun the article of its gender: ``the me3 and a fe7 we2 the ne5 and
the me1 -> der mg3 und eine fg7 wg2 das ng5 und der mg1``.

How they are built, and what the paper leaves unstated:

* Normal form: rules with more than two symbols are split through helper
  nonterminals of probability 1 (``VO``, ``REL``, ``SV``, ``OR_B``, ``AND_S``,
  and one nonterminal per article), terminals inside rules (``rpi``, ``or``,
  ``and``, the articles) become lexical rules, and the unary rules are folded
  into the lexical rules below them (``S -> ST1`` then ``ST_i``: each subject
  word has probability 3/5 * 1/33; ``V -> W1``: each verb 1/4 * 1/25;
  ``A -> B1``: the start symbol is ``B``). This maps the table's derivations
  one to one onto ours with the same probabilities.
* Weights: every rule's integer weight is its probability times one constant
  per grammar (165 for (a), 300 for (b)), so a derivation's weight is its
  probability times ``constant^(2n - 1)`` (a normal-form derivation of ``n``
  words has ``2n - 1`` nodes) and the sampler draws derivations of a given
  length with the table's probabilities.
* Vocabulary: the table's 1/33 and 1/25 give 33 words per class in (a) and 25
  in (b) (Section 4.2 says about 128/k words for k classes, appendix C about
  100/k; we follow the table). Words are named as in the table; the paper's
  gender example names nouns ``en19``/``gn19`` and starts with a verb, which
  the table cannot derive.
* (b) is read as the table prints it: ``A -> B`` and ``B -> B V``, with no
  rule ``B -> S``, so a noun phrase is at least ``S and S``, a sentence may
  have no verb, and the shortest sentence has 5 words.
* Lengths: the paper samples top-down and rejects sentences outside the
  length range (its probabilities tuned by hand for "relatively uniform"
  lengths); we draw the length uniformly from the range, then a sentence of
  exactly that length with the table's probabilities given the length. The
  sentences of one length are drawn as the paper's are; the lengths differ.

**The library's grammars.**

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
among all derivations of that length (lexical choices included, each lexical
pair weighing its nonterminal's ``lexical_weights``, 1 by default; with all
weights 1 this is uniform over derivations), using exact weighted derivation
counts (Python integers) per nonterminal and length; explicit stacks, no
recursion. The library's grammars weight the clausal-complement rule by
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

__all__ = ["GENDER", "ITG", "PAPER_GENDER", "PAPER_SVO_SOV", "SVO_SOV"]

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
      lexical_weights: nonterminal -> the positive integer weight of each of its
        lexical pairs (1 where not given).
    """

    start: str
    binary: tuple[tuple[str, str, str, bool, int], ...]
    lexical: Mapping[str, tuple[tuple[str, str], ...]]
    lexical_weights: Mapping[str, int] = dataclasses.field(default_factory=dict)

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
        for x, weight in self.lexical_weights.items():
            if x not in self.lexical or isinstance(weight, bool) or not isinstance(weight, int) or weight < 1:
                raise ValueError(
                    f"grammar: lexical weight of {x!r}: expected a positive integer for a nonterminal with "
                    f"lexical rules, got {weight!r}"
                )
        object.__setattr__(
            self, "_counts", {x: [0, self._lexical_weight(x) * len(self.lexical.get(x, ()))] for x in nonterminals}
        )
        object.__setattr__(self, "_choices", {})

    def _lexical_weight(self, symbol: str) -> int:
        return self.lexical_weights.get(symbol, 1)

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
                weights.append(self._lexical_weight(symbol))
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
        """One (source, target) pair with exactly ``n`` source words, drawn by derivation weight (module docstring)."""
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
        together): tests parse sampled sources and compare. A source may have
        several derivations (the paper's grammars join subjects, objects and
        noun phrases by rules that can nest either way) as long as they all
        yield one target. Raises ``ValueError`` if ``source`` has no derivation,
        or derivations with different targets.
        """
        n = len(source)
        if n == 0:
            raise ValueError("source: expected at least one word, got none")
        # chart[(i, j)][X] = the distinct targets of X over source[i:j], at most 2 kept
        chart: dict[tuple[int, int], dict[str, list[tuple[str, ...]]]] = {}
        for i, word in enumerate(source):
            cell: dict[str, list[tuple[str, ...]]] = {}
            for x, pairs in self.lexical.items():
                for e, f in pairs:
                    if e == word and (f,) not in cell.setdefault(x, []):
                        cell[x].append((f,))
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
                            targets = cell.setdefault(lhs, [])
                            for tl in left_cell[left]:
                                for tr in right_cell[right]:
                                    target = tr + tl if inverted else tl + tr
                                    if len(targets) < 2 and target not in targets:
                                        targets.append(target)
                chart[(i, j)] = cell
        targets = chart[(0, n)].get(self.start, [])
        if len(targets) != 1:
            what = "no derivation" if not targets else "derivations with different targets"
            raise ValueError(f"source: expected a sentence with one target, got {what}: {' '.join(source)!r}")
        return list(targets[0])

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


# ------------------------------------------------------------------------------------------------------------
# The grammars of Grefenstette et al. 2015, appendix C, Table 1 (module docstring: how they are read).


def _indexed(source: str, target: str, k: int) -> tuple[tuple[str, str], ...]:
    """``k`` lexical pairs ``source1 / target1 .. sourcek / targetk`` (the table's ``X_i -> x_i | y_i``)."""
    return tuple((f"{source}{i}", f"{target}{i}") for i in range(1, k + 1))


PAPER_SVO_WORDS = 33  # Table 1(a): p(ST_i) = p(OT_i) = p(VT_i) = 1/33
PAPER_SVO_SOV = ITG(
    start="A",
    binary=(  # rule weight = 165 * p (165: the least common multiple of the table's denominators, 5 and 33)
        ("A", "S", "VO", STRAIGHT, 165),  # 1    A -> S1 VT2 O3 | S1 O3 VT2
        ("VO", "VT", "O", INVERTED, 165),  #      (its second half: the verb moves after the object)
        ("S", "S", "S", STRAIGHT, 33),  # 1/5  S -> S1 S2 | S1 S2
        ("S", "S", "REL", STRAIGHT, 33),  # 1/5  S -> S1 rpi S2 VT3 | S1 rpo S2 VT3
        ("O", "O", "O", STRAIGHT, 33),  # 1/5  O -> O1 O2 | O1 O2
        ("O", "S", "REL", STRAIGHT, 33),  # 1/5  O -> S1 rpi S2 VT3 | S1 rpo S2 VT3
        ("REL", "RP", "SV", STRAIGHT, 165),  #      (the relative clause's rpi S2 VT3)
        ("SV", "S", "VT", STRAIGHT, 165),
    ),
    lexical={
        "S": _indexed("si", "so", PAPER_SVO_WORDS),  # 3/5 S -> ST1, then 1/33 ST_i -> si_i | so_i
        "O": _indexed("oi", "oo", PAPER_SVO_WORDS),  # 3/5 O -> OT1, then 1/33 OT_i -> oi_i | oo_i
        "VT": _indexed("vi", "vo", PAPER_SVO_WORDS),  # 1/33 VT_i -> vi_i | vo_i
        "RP": (("rpi", "rpo"),),
    },
    lexical_weights={"S": 3, "O": 3, "VT": 5, "RP": 165},  # 165 * (3/5 * 1/33), 165 * 1/33, 165 * 1
)

PAPER_GENDER_WORDS = 25  # Table 1(b): p(W_i) = p(M_i) = p(F_i) = p(N_i) = 1/25
_PAPER_ARTICLES = {  # Table 1(b)'s six rules S -> the/a X1 | der/die/das/ein/eine X1, p = 1/6 each
    "M": (("DEF_M", ("the", "der")), ("INDEF_M", ("a", "ein"))),
    "F": (("DEF_F", ("the", "die")), ("INDEF_F", ("a", "eine"))),
    "N": (("DEF_N", ("the", "das")), ("INDEF_N", ("a", "ein"))),
}
PAPER_GENDER = ITG(
    start="B",  # 1 A -> B1 | B1: the start symbol derives what B derives
    binary=(  # rule weight = 300 * p (300: the least common multiple of the table's denominators, 4, 6, 25, 100)
        ("B", "B", "OR_B", STRAIGHT, 75),  # 1/4  B -> B1 or B2 | B1 oder B2
        ("OR_B", "OR", "B", STRAIGHT, 300),
        ("B", "S", "AND_S", STRAIGHT, 75),  # 1/4  B -> S1 and S2 | S1 und S2
        ("AND_S", "AND", "S", STRAIGHT, 300),
        ("B", "B", "V", STRAIGHT, 150),  # 1/2  B -> B1 V1 | B1 V1
        ("V", "W", "B", STRAIGHT, 225),  # 3/4  V -> W1 B2 | W1 B2
        *(("S", article, noun, STRAIGHT, 50) for noun, pairs in _PAPER_ARTICLES.items() for article, _ in pairs),
    ),
    lexical={
        "OR": (("or", "oder"),),
        "AND": (("and", "und"),),
        "V": _indexed("we", "wg", PAPER_GENDER_WORDS),  # 1/4 V -> W1, then 1/25 W_i -> we_i | wg_i
        "W": _indexed("we", "wg", PAPER_GENDER_WORDS),
        "M": _indexed("me", "mg", PAPER_GENDER_WORDS),
        "F": _indexed("fe", "fg", PAPER_GENDER_WORDS),
        "N": _indexed("ne", "ng", PAPER_GENDER_WORDS),
        **{article: (pair,) for pairs in _PAPER_ARTICLES.values() for article, pair in pairs},
    },
    lexical_weights={  # 300 * p of each word
        "OR": 300,
        "AND": 300,
        "V": 3,  # 300 * (1/4 * 1/25)
        "W": 12,  # 300 * 1/25
        "M": 12,
        "F": 12,
        "N": 12,
        **{article: 300 for pairs in _PAPER_ARTICLES.values() for article, _ in pairs},
    },
)
