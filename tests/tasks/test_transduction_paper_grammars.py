"""The SVO -> SOV and gender conjugation grammars of Grefenstette et al. 2015, appendix C, Table 1
(``itg.PAPER_SVO_SOV``, ``itg.PAPER_GENDER``, the default ``grammar`` of ``svo_sov`` and ``gender_conjugation``).

Checked: the paper's own SVO -> SOV example (Section 4.2) and hand-derived ones; that the integer rule weights
are the table's probabilities (each nonterminal's rules sum to one, and the weighted derivation counts equal
the probability of each length computed from the table's rules as written, unbinarised); and, on sampled
sentences, the transductions the paper describes, by rules written independently of the grammar.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from panm_jax.tasks import get_task
from panm_jax.tasks.base import TaskOptionError
from panm_jax.tasks.itg import PAPER_GENDER, PAPER_SVO_SOV


def test_the_papers_svo_sov_example():
    # Section 4.2's sample: the main verb vi28 moves past the whole object; the relative clause keeps its order.
    source = "si1 vi28 oi5 oi7 si15 rpi si19 vi16 oi10 oi24"
    target = "so1 oo5 oo7 so15 rpo so19 vo16 oo10 oo24 vo28"
    assert PAPER_SVO_SOV.translate(source.split()) == target.split()
    task = get_task("svo_sov")
    assert task.decode(task.example(source)).targets == [*target.split(), "</s>"]


@pytest.mark.parametrize(
    "source, target",
    [
        ("si1 vi2 oi3", "so1 oo3 vo2"),  # A -> S VT O | S O VT, the shortest sentence
        ("si1 si2 vi3 oi4 oi5", "so1 so2 oo4 oo5 vo3"),
        ("si1 rpi si2 vi3 vi4 oi5", "so1 rpo so2 vo3 oo5 vo4"),  # the subject's relative clause keeps its verb
        ("si4 vi1 si2 rpi si3 rpi si5 vi6 vi7", "so4 so2 rpo so3 rpo so5 vo6 vo7 vo1"),  # a nested one in the object
    ],
)
def test_svo_sov_by_hand(source, target):
    assert PAPER_SVO_SOV.translate(source.split()) == target.split()


@pytest.mark.parametrize(
    "source, target",
    [
        ("the me3 and a fe7", "der mg3 und eine fg7"),  # B -> S and S: a sentence without a verb
        ("the me3 and a fe7 we2 the ne5 and the me1", "der mg3 und eine fg7 wg2 das ng5 und der mg1"),
        ("a ne1 and the fe2 or a me3 and a me4 we5", "ein ng1 und die fg2 oder ein mg3 und ein mg4 wg5"),
    ],
)
def test_gender_by_hand(source, target):
    assert PAPER_GENDER.translate(source.split()) == target.split()


def test_ungrammatical_sources_have_no_derivation():
    with pytest.raises(ValueError, match="got no derivation"):
        PAPER_SVO_SOV.translate("si1 oi3 vi2".split())  # the source is SVO
    with pytest.raises(ValueError, match="got no derivation"):
        PAPER_GENDER.translate("the me3 we2".split())  # a noun phrase is at least "S and S"


def _sums(grammar):
    """Each nonterminal's total weight: its binary rules' plus its lexical pairs'."""
    total: dict[str, int] = {}
    for lhs, *_, weight in grammar.binary:
        total[lhs] = total.get(lhs, 0) + weight
    for x, pairs in grammar.lexical.items():
        total[x] = total.get(x, 0) + grammar.lexical_weights.get(x, 1) * len(pairs)
    return total


def test_every_nonterminals_rules_sum_to_one_in_units_of_its_grammar():
    assert set(_sums(PAPER_SVO_SOV).values()) == {165}
    assert set(_sums(PAPER_GENDER).values()) == {300}


def _length_probabilities(rules, start, n_max):
    """``P(start derives n words)``, n = 0..n_max, from rules ``lhs -> [(p, items)]`` (an item: a nonterminal
    or ``1``, one terminal word; a class of terminals counts as one word of total probability 1)."""
    p = {x: [F(0)] * (n_max + 1) for x in rules}

    def seq(items, n):  # P(the items derive n words in all)
        if not items:
            return F(int(n == 0))
        head, rest = items[0], items[1:]
        if head == 1:
            return seq(rest, n - 1) if n >= 1 else F(0)
        return sum((p[head][a] * seq(rest, n - a) for a in range(1, n + 1)), F(0))

    for n in range(1, n_max + 1):
        for x, expansions in rules.items():
            p[x][n] = sum((q * seq(items, n) for q, items in expansions), F(0))
    return p[start]


def test_svo_sov_weights_are_the_tables_probabilities():
    # Table 1(a) as written: the terminal classes ST, OT and VT each one word of probability 1 in total.
    rules = {
        "A": [(F(1), ["S", 1, "O"])],
        "S": [(F(1, 5), ["S", "S"]), (F(1, 5), ["S", 1, "S", 1]), (F(3, 5), [1])],
        "O": [(F(1, 5), ["O", "O"]), (F(1, 5), ["S", 1, "S", 1]), (F(3, 5), [1])],
    }
    probability = _length_probabilities(rules, "A", 12)
    for n in range(1, 13):
        assert F(PAPER_SVO_SOV.count("A", n), 165 ** (2 * n - 1)) == probability[n], n


def test_gender_weights_are_the_tables_probabilities():
    # Table 1(b) as written: B -> B or B | S and S | B V, V -> W B | W, S -> article noun.
    rules = {
        "B": [(F(1, 4), ["B", 1, "B"]), (F(1, 4), ["S", 1, "S"]), (F(1, 2), ["B", "V"])],
        "V": [(F(3, 4), [1, "B"]), (F(1, 4), [1])],
        "S": [(F(1), [1, 1])],
    }
    probability = _length_probabilities(rules, "B", 14)
    for n in range(1, 15):
        assert F(PAPER_GENDER.count("B", n), 300 ** (2 * n - 1)) == probability[n], n


def _svo_rule(source):
    """The target by the rule Section 4.2 states: every word to its output form, the main verb (the first verb
    that closes no relative clause) moved to the end."""
    depth, main = 0, None
    for i, w in enumerate(source):
        if w == "rpi":
            depth += 1
        elif w.startswith("vi"):
            if depth == 0:
                main = i
                break
            depth -= 1
    out = [w.replace("i", "o", 1) for w in source]
    return out[:main] + out[main + 1 :] + [out[main]]


ARTICLES = {("the", "m"): "der", ("the", "f"): "die", ("the", "n"): "das", ("a", "m"): "ein", ("a", "f"): "eine"}
ARTICLES[("a", "n")] = "ein"


def _gender_rule(source):
    """The target by the rule Section 4.2 states: each article agrees with the gender of its noun (the next
    word); nouns and verbs to their German forms; the conjunctions translated."""
    words = {"and": "und", "or": "oder"}
    out = []
    for i, w in enumerate(source):
        if w in ("the", "a"):
            out.append(ARTICLES[(w, source[i + 1][0])])
        else:
            out.append(words.get(w, w[0] + "g" + w[2:]))
    return out


@pytest.mark.parametrize("n", [8, 40, 64, 65, 128])
def test_sampled_pairs_follow_the_papers_description(n):
    rng = np.random.default_rng(n)
    for _ in range(3):
        source, target = PAPER_SVO_SOV.sample(rng, n)
        assert len(source) == n and target == _svo_rule(source)
        source, target = PAPER_GENDER.sample(rng, n)
        assert len(source) == n and target == _gender_rule(source)


def test_the_tasks_default_to_the_papers_grammars():
    svo, gender = get_task("svo_sov"), get_task("gender_conjugation")
    assert svo.grammar is PAPER_SVO_SOV and gender.grammar is PAPER_GENDER
    # 33 subjects, objects and verbs and the relative pronoun, each side; 25 verbs and 25 nouns per gender
    # each side, the, a, and, or and their seven German forms; the three specials.
    assert svo.input_size == svo.output_size == 3 + 2 * (3 * 33 + 1)
    assert gender.input_size == 3 + 2 * 4 * 25 + 4 + 7
    assert (svo.train_lengths.lo, svo.train_lengths.hi, svo.test_modes["test"].hi) == (8, 64, 128)
    with pytest.raises(
        TaskOptionError, match=r"svo_sov: option grammar: expected one of \['paper', 'library'\], got 'x'"
    ):
        get_task("svo_sov", grammar="x")
