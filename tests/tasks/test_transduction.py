"""Transduction tasks (Grefenstette et al. 2015): format, hand examples, the two ITGs."""

from __future__ import annotations

import numpy as np
import pytest

from panm_jax.tasks import get_task
from panm_jax.tasks.itg import GENDER, SVO_SOV
from panm_jax.tasks.transduction import EOS, SEP

NAMES = ["transduction_copy", "transduction_reversal", "bigram_flip", "svo_sov", "gender_conjugation"]


def test_joint_sequence_format():
    # inputs = <s> source |||, targets = target </s>
    task = get_task("transduction_copy")
    b = task.example("s5 s0 s127")
    ex = task.decode(b)
    assert ex.inputs == ["<s>", "s5", "s0", "s127", "|||"]
    assert ex.targets == ["s5", "s0", "s127", "</s>"]
    assert b.inputs.shape == (1, 5, 131) and b.targets.shape == (1, 4)
    assert b.inputs[0, 4, SEP] == 1 and b.targets[0, 3] == EOS


def test_reversal_and_bigram_flip_by_hand():
    # Reversal reads the source backwards; bigram flipping swaps each adjacent pair.
    assert get_task("transduction_reversal").decode(get_task("transduction_reversal").example("s1 s2 s3")).targets == [
        "s3",
        "s2",
        "s1",
        "</s>",
    ]
    bf = get_task("bigram_flip")
    assert bf.decode(bf.example("s1 s2 s3 s4 s5 s6")).targets == ["s2", "s1", "s4", "s3", "s6", "s5", "</s>"]
    with pytest.raises(ValueError, match=r"length: expected an even integer in \[2, 1024\], got 3"):
        bf.example("s1 s2 s3")


def test_svo_sov_by_hand():
    # The object moves before its verb; an embedded clause moves before its verb too,
    # so verbs come out innermost first.
    task = get_task("svo_sov")
    assert task.decode(task.example("the dog sees a cat")).targets[:-1] == "the dog a cat sees".split()
    assert SVO_SOV.translate("the man says that the dog sees a big cat".split()) == (
        "the man that the dog a big cat sees says".split()
    )


def test_gender_conjugation_by_hand():
    # dog -> Hund (masculine): subject "der", object "den"; cat -> Katze (feminine): "die";
    # the article agrees with a noun that comes two adjectives later.
    task = get_task("gender_conjugation")
    assert task.decode(task.example("the big old dog sees the cat")).targets[:-1] == (
        "der big old dog sees die cat".split()
    )
    assert GENDER.translate("a cat finds a small dog".split()) == "eine cat finds einen small dog".split()
    assert GENDER.translate("the child says that the man sees a book".split()) == (
        "das child says that der man sees ein book".split()
    )


@pytest.mark.parametrize("grammar", [SVO_SOV, GENDER], ids=["svo_sov", "gender"])
def test_sampled_pairs_match_an_independent_parse(grammar):
    # The sampler builds source and target together; CYK parsing of the source alone
    # (which also checks the derivation is unique) must give the same target.
    rng = np.random.default_rng(0)
    for n in range(5, 31):
        for _ in range(3):
            src, tgt = grammar.sample(rng, n)
            assert len(src) == len(tgt) == n
            assert grammar.translate(src) == tgt


def test_svo_sov_target_is_a_permutation_and_gender_only_changes_articles():
    rng = np.random.default_rng(1)
    for n in (8, 40, 100):
        src, tgt = SVO_SOV.sample(rng, n)
        assert sorted(src) == sorted(tgt) and src[0] == tgt[0]
        src, tgt = GENDER.sample(rng, n)
        changed = [(s, t) for s, t in zip(src, tgt) if s != t]
        assert all(s in ("the", "a") for s, _ in changed)
        assert len(changed) == sum(w in ("the", "a") for w in src)


def test_long_sentences_nest_clauses():
    rng = np.random.default_rng(2)
    clauses = [SVO_SOV.sample(rng, 128)[0].count("that") for _ in range(20)]
    assert np.mean(clauses) > 5  # CLAUSE_WEIGHT keeps long sentences from being all adjectives


@pytest.mark.parametrize("name", NAMES)
def test_sampled_targets_follow_the_rule(name):
    task = get_task(name)
    b = task.test_batch(np.random.default_rng(5), 4, "test")
    for i in range(4):
        ex = task.decode(b, i)
        assert ex.inputs[0] == "<s>" and ex.inputs[-1] == "|||" and ex.targets[-1] == "</s>"
        src = ex.inputs[1:-1]
        assert 65 <= len(src) <= 128
        assert ex.targets[:-1] == task.transduce(src)


def test_lengths_follow_tasks_md():
    for name in NAMES:
        task = get_task(name)
        assert (task.train_lengths.lo, task.train_lengths.hi) == (8, 64)
        assert task.test_modes["test"].hi == 128
    assert get_task("transduction_copy").input_size == 131  # 128 symbols + <s> ||| </s>
    assert get_task("bigram_flip").test_modes["test"].lo == 66
    assert get_task("svo_sov").lengths.lo == 5  # "the dog sees a cat"


def test_unknown_source_word():
    with pytest.raises(ValueError, match="source: expected words of the task's vocabulary, got 'zebra'"):
        get_task("svo_sov").example("the zebra sees a cat")
    with pytest.raises(ValueError, match="source: expected a sentence with one derivation, got no derivation"):
        SVO_SOV.translate("the dog a cat sees".split())
