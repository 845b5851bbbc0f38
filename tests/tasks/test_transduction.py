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
    task = get_task("svo_sov", grammar="library")
    assert task.decode(task.example("the dog sees a cat")).targets[:-1] == "the dog a cat sees".split()
    assert SVO_SOV.translate("the man says that the dog sees a big cat".split()) == (
        "the man that the dog a big cat sees says".split()
    )


def test_gender_conjugation_by_hand():
    # dog -> Hund (masculine): subject "der", object "den"; cat -> Katze (feminine): "die";
    # the article agrees with a noun that comes two adjectives later.
    task = get_task("gender_conjugation", grammar="library")
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
    assert get_task("svo_sov", grammar="library").lengths.lo == 5  # "the dog sees a cat"
    assert get_task("svo_sov").lengths.lo == 3  # Table 1(a): "si1 vi1 oi1"


def test_unknown_source_word():
    with pytest.raises(ValueError, match="source: expected words of the task's vocabulary, got 'zebra'"):
        get_task("svo_sov", grammar="library").example("the zebra sees a cat")
    with pytest.raises(ValueError, match="source: expected a sentence with one target, got no derivation"):
        SVO_SOV.translate("the dog a cat sees".split())


# The grammars, pinned: any change to a rule, a weight or a word list fails here (docs/tasks.md states how they
# relate to the grammars of the paper's appendix C, Table 1, and must be updated with them).
SVO_SOV_RULES = [
    ("S", "NP", "VP", False, 1),
    ("VP", "V", "NP", True, 1),
    ("VP", "VC", "CP", True, 100),
    ("CP", "THAT", "S", False, 1),
    ("NP", "DET", "NOM", False, 1),
    ("NOM", "ADJ", "NOM", False, 1),
]
GENDER_RULES = [
    ("S", "NPN", "VP", False, 1),
    ("VP", "V", "NPA", False, 1),
    ("VP", "VC", "CP", False, 100),
    ("CP", "THAT", "S", False, 1),
    *((np_, f"{d}_{g}", f"NOM_{g}", False, 1) for g in "mfn" for np_, d in (("NPN", "DN"), ("NPA", "DA"))),
    *((f"NOM_{g}", "ADJ", f"NOM_{g}", False, 1) for g in "mfn"),
]
GENDER_ARTICLES = {
    "DN_m": (("the", "der"), ("a", "ein")),
    "DN_f": (("the", "die"), ("a", "eine")),
    "DN_n": (("the", "das"), ("a", "ein")),
    "DA_m": (("the", "den"), ("a", "einen")),
    "DA_f": (("the", "die"), ("a", "eine")),
    "DA_n": (("the", "das"), ("a", "ein")),
}


def test_the_grammars_have_not_drifted():
    assert list(SVO_SOV.binary) == SVO_SOV_RULES and list(GENDER.binary) == GENDER_RULES
    sizes = {x: len(pairs) for x, pairs in SVO_SOV.lexical.items()}
    assert sizes == {"DET": 2, "NOM": 18, "ADJ": 12, "V": 10, "VC": 4, "THAT": 1}
    assert all(e == f for pairs in SVO_SOV.lexical.values() for e, f in pairs)  # SVO -> SOV only reorders
    assert {x: GENDER.lexical[x] for x in GENDER_ARTICLES} == GENDER_ARTICLES
    assert {x: len(GENDER.lexical[x]) for x in ("NOM_m", "NOM_f", "NOM_n", "V", "VC", "ADJ")} == {
        "NOM_m": 6,
        "NOM_f": 6,
        "NOM_n": 6,
        "V": 10,
        "VC": 4,
        "ADJ": 12,
    }
    library = {"grammar": "library"}
    assert len(get_task("svo_sov", **library).vocabulary) == 3 + 47
    assert len(get_task("gender_conjugation", **library).vocabulary) == 3 + 54


def test_the_grammars_do_what_the_paper_describes():
    # Grefenstette et al. 2015, Section 4.2: SVO -> SOV moves each verb over its object to the end of its
    # clause, with recursive embeddings; the genderless -> gendered grammar gives each noun the article of
    # its gender.
    nouns = {
        g: {e for e, _ in GENDER.lexical[f"NOM_{g}"]} for g in "mfn"
    }  # the gender of each noun's German translation
    verbs = {e for e, _ in SVO_SOV.lexical["V"]} | {e for e, _ in SVO_SOV.lexical["VC"]}
    rng = np.random.default_rng(3)
    for n in (8, 33, 64, 65, 128):
        src, tgt = SVO_SOV.sample(rng, n)
        assert tgt[-1] in verbs  # the main verb ends the sentence
        for i, w in enumerate(src):
            if w in verbs:  # in the source a verb is followed by its object or clause ...
                assert src[i + 1] in ("the", "a", "that")
        for i, w in enumerate(tgt[:-1]):
            if w in verbs:  # ... in the target by the end of a clause: another verb (nesting) only
                assert tgt[i + 1] in verbs
        src, tgt = GENDER.sample(rng, n)
        for i, (e, f) in enumerate(zip(src, tgt, strict=True)):
            if e in ("the", "a"):
                noun = next(w for w in src[i + 1 :] if any(w in ns for ns in nouns.values()))
                gender = next(g for g, ns in nouns.items() if noun in ns)
                allowed = {t for x in (f"DN_{gender}", f"DA_{gender}") for s, t in GENDER_ARTICLES[x] if s == e}
                assert f in allowed


# ------------------------------------------------------------------ options


@pytest.mark.parametrize("name", NAMES)
def test_options_are_declared_with_a_default_allowed_values_and_a_meaning(name):
    from panm_jax.options import declared
    from panm_jax.tasks import task_options
    from panm_jax.tasks.registry import TASKS

    own = {"grammar": "paper"} if name in ("svo_sov", "gender_conjugation") else {"vocab_size": 128}
    shared = {"min_train_length": 8, "max_train_length": 64, "max_test_length": 128, "max_length": 1024}
    options = task_options(name)
    assert {k: p.default for k, p in options.items()} == {**shared, **own}  # the shared ones first
    assert all(p.annotation is (str if k == "grammar" else int) for k, p in options.items())
    for entry in declared(TASKS[name].Options).values():
        assert entry.allowed and entry.doc and "\n" not in entry.doc, entry
    assert get_task(name).options() == {**shared, **own}


def test_the_task_s_shortest_source_bounds_the_length_options():
    from panm_jax.tasks import TaskOptionError
    from panm_jax.tasks.transduction import BigramFlipTask

    # Past the declared bounds (a positive integer, an integer >= 2), the bounds of the class and the other lengths.
    for name, options, message in (
        ("svo_sov", {"min_train_length": 2}, "option min_train_length: expected an integer >= 3, got 2"),
        ("svo_sov", {"min_train_length": 0}, "option min_train_length: expected a positive integer, got 0"),
        ("bigram_flip", {"max_test_length": 64}, "option max_test_length: expected an integer >= 66, got 64"),
        ("bigram_flip", {"max_length": 1}, "option max_length: expected an integer >= 2, got 1"),
        ("transduction_copy", {"vocab_size": 1}, "option vocab_size: expected an integer >= 2, got 1"),
    ):
        with pytest.raises(TaskOptionError) as err:
            get_task(name, **options)
        assert str(err.value) == f"{name}: {message}"
    with pytest.raises(TaskOptionError) as err:
        get_task("svo_sov", vocab_size=4)
    assert str(err.value).startswith("svo_sov: unknown option(s) ['vocab_size']; expected some of [")
    with pytest.raises(TypeError):
        BigramFlipTask(64)  # type: ignore[misc]
