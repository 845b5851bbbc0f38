"""The Mathematics task (Saxton et al. 2019): answers checked independently, splits, batches, errors.

Most tests need the optional package ``mathematics-dataset`` (``pip install
'panm_jax[math]'``); they skip only when it cannot be imported. The error
raised without it is tested with the import blocked.
"""

from __future__ import annotations

import decimal
import functools
import json
import random
import re
import string
import sys
import warnings
from fractions import Fraction

import numpy as np
import pytest

from panm_jax._cache import CACHE_ENV
from panm_jax.tasks import TASKS, TaskOptionError
from panm_jax.tasks import mathematics as M
from panm_jax.tasks.mathematics import (
    INPUT_VOCABULARY,
    OUTPUT_VOCABULARY,
    MathematicsTask,
    MathematicsUnavailableError,
)
from tests.tasks import test_interface as interface

try:
    with warnings.catch_warnings():  # newer mpmath warns on sympy 1.5.1's imports
        warnings.simplefilter("ignore", DeprecationWarning)
        import mathematics_dataset.modules.arithmetic  # noqa: F401

    HAVE_PACKAGE, WHY = True, ""
except Exception as err:  # ImportError, or sympy errors on a newer sympy
    HAVE_PACKAGE, WHY = False, f"mathematics-dataset not importable ({type(err).__name__}: {err})"

needs_package = pytest.mark.skipif(not HAVE_PACKAGE, reason=f"{WHY}; install the extra: pip install 'panm_jax[math]'")

# Small pools keep the file fast; the defaults are 50,000 and 10,000.
SMALL = dict(train_pool_size=2000, test_pool_size=1000)


def _task(module="add_or_sub", **options):
    return MathematicsTask(module=module, **{**SMALL, **options})


# ---------------------------------------------- independent answer checking

_NUM = r"(-?\d+(?:\.\d+)?)"
# (pattern, operation): "add" p + q, "sub" p - q (groups in the order p, q), "rsub" q - p
# (the question names q first), "dist" |p - q|.
_ADD_SUB_PATTERNS = [
    (rf"{_NUM} ?\+ ?{_NUM}", "add"),
    (rf"(?:Work out|Calculate) {_NUM} \+ {_NUM}\.", "add"),
    (rf"What is {_NUM} (?:\+|plus) {_NUM}\?", "add"),
    (rf"(?:Add|Put together|Sum|Total of|Add together) {_NUM} and {_NUM}\.", "add"),
    (rf"{_NUM} - {_NUM}", "sub"),
    (rf"(?:Work out|Calculate) {_NUM} - {_NUM}\.", "sub"),
    (rf"What is {_NUM} (?:-|minus|take away) {_NUM}\?", "sub"),
    (rf"What is {_NUM} less than {_NUM}\?", "rsub"),
    (rf"Subtract {_NUM} from {_NUM}\.", "rsub"),
    (rf"What is the (?:distance|difference) between {_NUM} and {_NUM}\?", "dist"),
]


def _canonical(value: Fraction) -> str:
    """A terminating decimal as the shortest plain string (no exponent, no trailing zeros)."""
    with decimal.localcontext() as ctx:
        ctx.prec = 200
        d = decimal.Decimal(value.numerator) / decimal.Decimal(value.denominator)
    text = format(d, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _add_or_sub_answer(question: str) -> str | None:
    """The answer of an add_or_sub question computed from its text, or None if no template matches."""
    for pattern, op in _ADD_SUB_PATTERNS:
        m = re.fullmatch(pattern, question)
        if m:
            a, b = Fraction(m.group(1)), Fraction(m.group(2))
            value = {"add": a + b, "sub": a - b, "rsub": b - a, "dist": abs(a - b)}[op]
            return _canonical(value)
    return None


_GROUPS = [
    "thousands",
    "millions",
    "billions",
    "trillions",
    "quadrillions",
    "quintillions",
    "sextillions",
    "septillions",
    "octillions",
    "nonillions",
    "decillions",
]


def _place_power(name: str) -> int:
    """``"units"`` -> 0, ``"ten thousands"`` -> 4, ``"hundred millions"`` -> 8."""
    small = {"units": 0, "tens": 1, "hundreds": 2}
    if name in small:
        return small[name]
    words = name.split(" ")
    extra = {1: 0, 2: {"ten": 1, "hundred": 2}.get(words[0], -99)}[len(words)]
    return 3 * (_GROUPS.index(words[-1]) + 1) + extra


def _place_value_answer(question: str) -> str | None:
    m = re.fullmatch(r"What is the ([a-z ]+) digit of (\d+)\?", question)
    if not m:
        return None
    power, number = _place_power(m.group(1)), int(m.group(2))
    assert 0 <= power < len(m.group(2)), question
    return str(number // 10**power % 10)


def test_reference_checkers_on_hand_examples():
    assert _add_or_sub_answer("What is -5 - 110911?") == "-110916"
    assert _add_or_sub_answer("Total of 0.06 and -1.2.") == "-1.14"
    assert _add_or_sub_answer("What is 540.598 less than 1107740?") == "1107199.402"
    assert _add_or_sub_answer("Subtract -2 from -69551008115479.8.") == "-69551008115477.8"
    assert _add_or_sub_answer("What is the distance between 0.27852 and -9571881?") == "9571881.27852"
    assert _add_or_sub_answer("5323 - -0.4") == "5323.4"
    assert _add_or_sub_answer("0.5+-0.5") == "0"
    assert _add_or_sub_answer("What is 2 times 3?") is None
    assert _place_value_answer("What is the ten thousands digit of 722313613789?") == "1"
    assert _place_value_answer("What is the hundred millions digit of 321531360149?") == "5"
    assert _place_value_answer("What is the units digit of 45944?") == "4"
    assert _place_value_answer("What is the billions digit of 147331157499?") == "7"


@needs_package
@pytest.mark.parametrize("split", ["train", "extrapolate"])
def test_every_add_or_sub_answer_is_right(split):
    task = _task("add_or_sub")
    p = task.pool(split)
    parsed = 0
    for q, a in zip(p.questions, p.answers):
        want = _add_or_sub_answer(q)
        if want is not None:
            parsed += 1
            assert a == want, (q, a, want)
    # Every one of the generator's 19 question templates is parsed.
    assert parsed == len(p.questions)


@needs_package
@pytest.mark.parametrize("split", ["train", "extrapolate"])
def test_every_place_value_answer_is_right(split):
    p = _task("place_value").pool(split)
    for q, a in zip(p.questions, p.answers):
        assert _place_value_answer(q) == a, (q, a)


@needs_package
def test_the_encoded_targets_are_the_answers():
    for module in M.MODULES:
        task = _task(module)
        b = task.eval_batches("extrapolate", 50, 50).__next__()
        for i in range(50):
            q, a = task.decode_text(b, i)
            want = _add_or_sub_answer(q) if module == "add_or_sub" else _place_value_answer(q)
            assert a == want


# ------------------------------------------------------------ the two splits


def _operand_digits(question: str) -> int:
    return sum(len(re.sub(r"\D", "", x)) for x in re.findall(_NUM, question))


@needs_package
def test_extrapolation_has_bigger_numbers_and_longer_questions():
    add = _task("add_or_sub")
    tr, ex = add.pool("train"), add.pool("extrapolate")
    d_tr = np.array([_operand_digits(q) for q in tr.questions])
    d_ex = np.array([_operand_digits(q) for q in ex.questions])
    a_tr = np.array([len(a) for a in tr.answers])
    a_ex = np.array([len(a) for a in ex.answers])
    assert d_ex.mean() > 1.5 * d_tr.mean()  # about 18 vs 10 digits
    assert a_ex.mean() > a_tr.mean() + 4  # about 15.8 vs 9.4 characters
    assert np.median(ex.num_chars) > np.median(tr.num_chars)
    assert a_ex.max() > a_tr.max()
    assert not set(tr.questions) & set(ex.questions)

    pv = _task("place_value")
    tr, ex = pv.pool("train"), pv.pool("extrapolate")
    n_tr = np.array([len(re.search(r"\d+", q).group()) for q in tr.questions])
    n_ex = np.array([len(re.search(r"\d+", q).group()) for q in ex.questions])
    assert n_tr.max() <= 10 and np.mean(n_ex == 12) > 0.8  # the _big numbers have about 12 digits
    assert n_ex.mean() > n_tr.mean() + 4
    assert ex.num_chars.mean() > tr.num_chars.mean() + 5
    assert pv.test_modes["extrapolate"].hi > pv.train_lengths.hi
    assert not set(tr.questions) & set(ex.questions)


# ----------------------------------------------------------- batches, shapes


@needs_package
@pytest.mark.parametrize("module", M.MODULES)
def test_batch_layout(module):
    task = _task(module)
    assert task.input_size == 96 == len(INPUT_VOCABULARY)
    assert task.output_size == 13 == len(OUTPUT_VOCABULARY)
    b = task.train_batch(np.random.default_rng(0), 16)
    n = b.input_mask.sum(axis=1) - 1  # question characters
    assert b.inputs.shape == (16, n.max() + 1, 96) and b.inputs.dtype == np.float32
    assert b.targets.shape == (16, task.max_answer_length + 1) and b.targets.dtype == np.int32
    assert b.target_mask.all()
    for i in range(16):
        rows = b.inputs[i, : n[i] + 1]
        assert (rows.sum(-1) == 1).all() and rows[n[i], M.IN_EOS] == 1
        assert not b.inputs[i, n[i] + 1 :].any()
        q, a = task.decode_text(b, i)
        assert len(q) == n[i]
        # The answer, then <eos> on every remaining step.
        assert (b.targets[i, len(a) :] == M.OUT_EOS).all()
        assert M.OUT_EOS not in b.targets[i, : len(a)]
    assert task.output_steps(7) == task.max_answer_length + 1 and task.input_steps(7) == 8


@needs_package
def test_sample_draws_questions_of_the_asked_length():
    task = _task("add_or_sub")
    rng = np.random.default_rng(0)
    lengths = np.array([task.train_lengths.lo + 3, 20, 30, task.test_modes["extrapolate"].hi])
    b = task.sample(rng, 4, lengths)
    for i, n in enumerate(lengths):
        q, a = task.decode_text(b, i)
        assert len(q) == n and _add_or_sub_answer(q) == a
    assert b.inputs.shape[1] == lengths.max() + 1


@needs_package
def test_decode_round_trip_and_hand_pairs():
    task = _task("add_or_sub")
    pairs = [("What is -5 - 110911?", "-110916"), ("Add 2 and 3.", "5")]
    b = task.batch_from_pairs(pairs)
    assert [task.decode_text(b, i) for i in range(2)] == pairs
    ex = task.decode(b, 1)
    assert "".join(ex.inputs) == "Add 2 and 3.<eos>" and ex.targets[:2] == ["5", "<eos>"]
    assert len(ex.targets) == 31
    with pytest.raises(ValueError, match="question: expected characters of INPUT_VOCABULARY"):
        task.batch_from_pairs([("What is 2 ÷ 1?", "2")])
    with pytest.raises(ValueError, match="answer: expected characters of OUTPUT_VOCABULARY"):
        task.batch_from_pairs([("What is 1/2?", "1/2")])
    # Pool rows come back unchanged through a batch.
    p = task.pool("train")
    b = next(task.eval_batches("train", 8, 8, seed=3))
    perm = np.random.default_rng(3).permutation(len(p.questions))[:8]
    assert [task.decode_text(b, i) for i in range(8)] == [(p.questions[r], p.answers[r]) for r in perm]


@needs_package
def test_eval_batches_walk_the_whole_extrapolation_pool_once():
    task = _task("place_value")
    seen = [task.decode_text(b, i) for b in task.eval_batches("extrapolate", 1000, 128) for i in range(len(b.inputs))]
    p = task.pool("extrapolate")
    assert sorted(seen) == sorted(zip(p.questions, p.answers))


@needs_package
def test_metrics_exact_match_and_tokens():
    task = _task("place_value")
    b = task.batch_from_pairs([("What is the tens digit of 31859?", "5"), ("What is the units digit of 7?", "7")])
    logits = np.eye(13, dtype=np.float32)[b.targets] * 10
    m = task.metrics(logits, b)
    assert float(m["sequence_accuracy"]) == 1.0 and float(m["token_accuracy"]) == 1.0
    logits[0, 0] = np.eye(13)[4] * 10  # "4" instead of "5"
    m = task.metrics(logits, b)
    assert float(m["sequence_accuracy"]) == 0.5 and float(m["token_accuracy"]) == 0.75


# -------------------------------------------------------------- determinism


@needs_package
def test_generation_is_fixed_by_the_rng_and_leaves_global_state_alone():
    random.seed(123)
    np.random.seed(123)
    expect_py, expect_np = random.random(), np.random.random()
    random.seed(123)
    np.random.seed(123)
    a = M.generate("add_or_sub", "train", 30, np.random.default_rng(5))
    assert (random.random(), np.random.random()) == (expect_py, expect_np)
    M.generate("place_value", "extrapolate", 10, np.random.default_rng(9))  # in between
    assert M.generate("add_or_sub", "train", 30, np.random.default_rng(5)) == a
    assert M.generate("add_or_sub", "train", 30, np.random.default_rng(6)) != a


@needs_package
def test_pools_are_fixed_by_their_seed_and_nest():
    small = M.pool("place_value", "train", 1500, 0)
    big = M.pool("place_value", "train", 2000, 0)
    assert big.questions[:1500] == small.questions
    other = M.pool("place_value", "train", 1500, 1)
    assert other.questions != small.questions
    a, b = _task("place_value"), _task("place_value", pool_seed=1)
    assert a.pool("extrapolate").questions != b.pool("extrapolate").questions
    x = a.train_batch(np.random.default_rng(4), 8)
    y = _task("place_value").train_batch(np.random.default_rng(4), 8)
    for u, v in zip(x, y):
        np.testing.assert_array_equal(u, v)


# ------------------------------------------------------------------ options


@needs_package
def test_options_and_their_errors():
    task = _task("add_or_sub", max_answer_length=18)
    assert task.options() == {"module": "add_or_sub", **SMALL, "pool_seed": 0, "max_answer_length": 18}
    assert task.output_steps(10) == 19
    assert max(len(a) for a in task.pool("extrapolate").answers) <= 18
    assert _task("place_value").max_answer_length == 1 and _task("add_or_sub").max_answer_length == 30
    assert repr(_task("place_value")).startswith("MathematicsTask(module='place_value'")
    with pytest.raises(
        TaskOptionError, match=r"mathematics: option module: expected one of \['add_or_sub', 'place_value'\], got 'mul'"
    ):
        MathematicsTask(module="mul")
    with pytest.raises(
        TaskOptionError, match="mathematics: option train_pool_size: expected a positive integer, got 0"
    ):
        MathematicsTask(train_pool_size=0)
    with pytest.raises(
        TaskOptionError, match=r"option max_answer_length: expected an integer in \[1, 30\] or None, got 31"
    ):
        MathematicsTask(max_answer_length=31)
    with pytest.raises(TaskOptionError, match="unknown option.*'bogus'"):
        MathematicsTask(bogus=1)
    with pytest.raises(ValueError, match=r"mode: expected one of \['train', 'extrapolate'\]"):
        task.test_batch(np.random.default_rng(0), 2, "interpolate")


@needs_package
def test_lengths_no_pooled_question_has_are_rejected():
    task = _task("add_or_sub")
    counts = np.bincount(np.concatenate([task.pool(m).num_chars for m in ("train", "extrapolate")]))
    gaps = [n for n in task.lengths.values() if counts[n] == 0]
    if gaps:
        with pytest.raises(
            ValueError, match=f"length: expected a question length that some pooled question has .*got {gaps[0]}"
        ):
            task.sample(np.random.default_rng(0), 1, gaps[0])
    with pytest.raises(ValueError, match=rf"length: expected an integer in \[{task.lengths.lo}, {task.lengths.hi}\]"):
        task.sample(np.random.default_rng(0), 1, task.lengths.hi + 1)


@needs_package
def test_vocabulary_is_the_generators():
    from mathematics_dataset import generate_settings

    assert list(INPUT_VOCABULARY[:-1]) == [c for c in generate_settings.QUESTION_CHARS if c]
    assert set(string.digits + "-.") == set(OUTPUT_VOCABULARY[:-1])


def test_options_are_declared_with_a_default_allowed_values_and_a_meaning():
    # Read from the declaration: nothing is built, so the package is not needed.
    from panm_jax.options import declared
    from panm_jax.tasks import task_options

    options = task_options("mathematics")
    assert {k: p.default for k, p in options.items()} == {
        "module": "add_or_sub",
        "train_pool_size": 50_000,
        "test_pool_size": 10_000,
        "pool_seed": 0,
        "max_answer_length": None,  # 30 for add_or_sub, 1 for place_value
    }
    assert options["max_answer_length"].annotation == int | None and options["module"].annotation is str
    entries = declared(MathematicsTask.Options)
    for entry in entries.values():
        assert entry.allowed and entry.doc and "\n" not in entry.doc, entry
    assert entries["max_answer_length"].allowed == "an integer in [1, 30] or None"
    with pytest.raises(TypeError):
        MathematicsTask("place_value")  # type: ignore[misc]


def test_without_the_package_the_error_names_the_extra(monkeypatch):
    # Block the import (as if the package were not installed); nothing else is needed.
    monkeypatch.setitem(sys.modules, "mathematics_dataset", None)
    monkeypatch.setitem(sys.modules, "mathematics_dataset.modules", None)
    with pytest.raises(
        MathematicsUnavailableError, match=r"mathematics-dataset .*sympy==1\.5\.1.*pip install 'panm_jax\[math\]'"
    ):
        MathematicsTask()
    assert issubclass(MathematicsUnavailableError, ImportError)
    # Option errors still come first, named as for every task.
    with pytest.raises(TaskOptionError, match="unknown option.*'bogus'"):
        MathematicsTask(bogus=1)


def test_without_the_package_the_cli_and_config_name_the_extra(monkeypatch, capsys):
    # `panm-jax tasks` still lists every task (this one as not available), and `tasks show` / a training
    # config name the extra in one line instead of a traceback.
    from panm_jax.cli import main
    from panm_jax.train.config import ConfigError, load_config

    monkeypatch.setitem(sys.modules, "mathematics_dataset", None)
    monkeypatch.setitem(sys.modules, "mathematics_dataset.modules", None)
    assert main(["tasks"]) == 0
    listing = capsys.readouterr().out
    # the cell may wrap at the terminal's width: compare with whitespace collapsed
    flat = " ".join(listing.replace("│", " ").split()).lower()
    assert "mathematics" in flat and "not available" in flat and "copy" in flat
    assert main(["tasks", "show", "mathematics"]) == 2
    assert "pip install 'panm_jax[math]'" in capsys.readouterr().err
    with pytest.raises(ConfigError, match=r"^task: .*pip install 'panm_jax\[math\]'"):
        load_config(None, ['task="mathematics"', 'model="lstm"'])


# ---------------------------------------------------- interface conformance

INTERFACE_CHECKS = [
    interface.test_unknown_option_is_named,
    interface.test_shapes_masks_and_dtypes,
    interface.test_mixed_lengths_are_padded_with_masks,
    interface.test_determinism_from_the_seed,
    interface.test_sample_lengths_stay_in_the_mode,
    interface.test_bad_length_and_batch_size,
    interface.test_describe_and_eval_batches,
]


@needs_package
@pytest.mark.parametrize("module", M.MODULES)
@pytest.mark.parametrize("check", INTERFACE_CHECKS, ids=lambda f: f.__name__)
def test_interface_checks_pass(monkeypatch, check, module):
    # The shared interface tests, run on MathematicsTask registered under a temporary name.
    monkeypatch.setitem(TASKS, "mathematics_under_test", functools.partial(MathematicsTask, module=module, **SMALL))
    check("mathematics_under_test")


@needs_package
def test_pool_chunks_are_kept_on_disk_and_regenerated_when_damaged(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    first = M._chunk("place_value", "train", 20, 7, 0, 1)
    files = sorted((tmp_path / "mathematics").glob("*.json"))
    assert len(files) == 1 and "place_value-train-" in files[0].name
    record = json.loads(files[0].read_text())
    assert [tuple(p) for p in record["pairs"]] == first

    def fail(*args, **kwargs):
        raise AssertionError("generated again although the chunk is on disk")

    monkeypatch.setattr(M, "generate", fail)
    assert M._chunk("place_value", "train", 20, 7, 0, 1) == first  # read back, not generated
    record["pairs"][0][1] = "9" if record["pairs"][0][1] != "9" else "8"  # damaged: the checksum no longer holds
    files[0].write_text(json.dumps(record))
    monkeypatch.undo()
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    assert M._chunk("place_value", "train", 20, 7, 0, 1) == first  # regenerated, the same pairs
    assert [tuple(p) for p in json.loads(files[0].read_text())["pairs"]] == first  # and rewritten
