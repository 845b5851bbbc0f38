"""Every registered task: shapes, masks, dtypes, determinism, registry and bad-input errors."""

from __future__ import annotations

import numpy as np
import pytest

from panm_jax.tasks import Batch, TaskOptionError, UnknownTaskError, get_task, list_tasks

ALL = list_tasks()
# Mathematics draws batches from generated pools (50,000 and 10,000 questions by default, 20 s to
# generate); the interface is the same with smaller ones.
SMALL_POOLS = {"mathematics": dict(train_pool_size=4000, test_pool_size=1000)}


def _task(name):
    return get_task(name, **SMALL_POOLS.get(name, {}))


def _lengths(task):
    """A short admissible length and a longer one (the first test mode, capped)."""
    short = task.train_lengths.values()[min(2, len(task.train_lengths.values()) - 1)]
    long_ = task.mode_range(next(iter(task.test_modes))).lo
    return int(short), int(long_)


def test_registry_lists_every_task():
    assert set(ALL) == {
        "copy",
        "reverse",
        "mix",
        "dynamic_recall",
        "priority_sort",
        "id_sort",
        "dyck",
        "m10ae",
        "transduction_copy",
        "transduction_reversal",
        "bigram_flip",
        "svo_sov",
        "gender_conjugation",
        "even_pairs",
        "modular_arithmetic",
        "parity_check",
        "cycle_navigation",
        "modular_arithmetic_brackets",
        "reverse_string",
        "solve_equation",
        "stack_manipulation",
        "duplicate_string",
        "missing_duplicate",
        "odds_first",
        "binary_addition",
        "binary_multiplication",
        "compute_sqrt",
        "bucket_sort",
        "scan",
        "mathematics",
        "automaton_acceptance",
        "automaton_transduction",
    }


def test_unknown_name_lists_known_ones():
    with pytest.raises(UnknownTaskError, match=r"name: expected one of \['copy'.*got 'copi'"):
        get_task("copi")
    assert issubclass(UnknownTaskError, ValueError)


@pytest.mark.parametrize("name", ALL)
def test_unknown_option_is_named(name):
    with pytest.raises(TaskOptionError, match="unknown option.*'bogus'"):
        get_task(name, bogus=1)


@pytest.mark.parametrize("name", ALL)
def test_shapes_masks_and_dtypes(name):
    task = _task(name)
    rng = np.random.default_rng(0)
    for n in _lengths(task):
        b = task.sample(rng, 3, n)
        assert isinstance(b, Batch)
        t_in, t_out = task.input_steps(n), task.output_steps(n)
        assert b.inputs.shape == (3, t_in, task.input_size) and b.inputs.dtype == np.float32
        assert b.input_mask.shape == (3, t_in) and b.input_mask.dtype == bool
        assert b.target_mask.shape == (3, t_out) and b.target_mask.dtype == bool
        if task.target_kind == "classes":
            assert b.targets.shape == (3, t_out) and b.targets.dtype == np.int32
            assert ((0 <= b.targets) & (b.targets < task.output_size)).all()
        else:
            assert b.targets.shape == (3, t_out, task.output_size) and b.targets.dtype == np.float32
            assert set(np.unique(b.targets)) <= {0.0, 1.0}
        # One length for the whole batch: every step is real.
        assert b.input_mask.all() and b.target_mask.all()
        # Every real input row is a one-hot (or delimiter / marker) row: never all zero.
        assert (np.abs(b.inputs).sum(-1) > 0).all()
        if task.output_mode == "aligned":
            assert t_in == t_out


@pytest.mark.parametrize("name", ALL)
def test_mixed_lengths_are_padded_with_masks(name):
    task = _task(name)
    rng = np.random.default_rng(1)
    lengths = task.sample_lengths(rng, 4, next(iter(task.test_modes)))
    lengths[0] = task.train_lengths.lo  # make sure the batch mixes lengths
    b = task.sample(rng, 4, lengths)
    n_max = lengths.max()
    assert b.inputs.shape[1] == task.input_steps(n_max)
    assert b.targets.shape[1] == task.output_steps(n_max)
    for i, n in enumerate(lengths):
        assert b.input_mask[i].sum() == task.input_steps(n)
        assert b.target_mask[i].sum() == task.output_steps(n)
        # Masks are prefixes, and padding is zero.
        assert b.input_mask[i, : task.input_steps(n)].all()
        assert not b.inputs[i, task.input_steps(n) :].any()
        assert not b.targets[i, task.output_steps(n) :].any()


@pytest.mark.parametrize("name", ALL)
def test_determinism_from_the_seed(name):
    task = _task(name)
    n = _lengths(task)[1]
    a = task.sample(np.random.default_rng(7), 4, n)
    b = task.sample(np.random.default_rng(7), 4, n)
    c = task.sample(np.random.default_rng(8), 4, n)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a.inputs, c.inputs)
    # The training stream too (lengths drawn from the same generator).
    ta = task.train_batch(np.random.default_rng(3), 4)
    tb = task.train_batch(np.random.default_rng(3), 4)
    for x, y in zip(ta, tb):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("name", ALL)
def test_sample_lengths_stay_in_the_mode(name):
    task = _task(name)
    rng = np.random.default_rng(0)
    for mode in ["train", *task.test_modes]:
        r = task.mode_range(mode)
        lengths = task.sample_lengths(rng, 64, mode)
        assert lengths.shape == (64,)
        assert all(r.contains(int(n)) for n in lengths)
        if task.length_sampling == "per_batch":
            assert len(set(lengths.tolist())) == 1


@pytest.mark.parametrize("name", ALL)
def test_bad_length_and_batch_size(name):
    task = _task(name)
    rng = np.random.default_rng(0)
    lo, hi = task.lengths.lo, task.lengths.hi
    with pytest.raises(ValueError, match=rf"length: expected .*in \[{lo}, {hi}\], got {lo - 1}"):
        task.sample(rng, 2, lo - 1)
    with pytest.raises(ValueError, match=rf"length: expected .*in \[{lo}, {hi}\], got {hi + 1}"):
        task.sample(rng, 2, hi + 1)
    for bad in (0, -3):
        with pytest.raises(ValueError, match=rf"batch_size: expected a positive integer, got {bad}"):
            task.sample(rng, bad, task.train_lengths.hi)
    with pytest.raises(ValueError, match=r"length: expected an integer or an integer vector of shape \(2,\)"):
        task.sample(rng, 2, np.array([task.train_lengths.hi] * 3))
    with pytest.raises(ValueError, match="mode: expected one of"):
        task.sample_lengths(rng, 2, "nope")


def test_parity_is_part_of_the_error():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"length: expected an even integer in \[2, 1024\], got 7"):
        get_task("dyck").sample(rng, 1, 7)
    with pytest.raises(ValueError, match=r"length: expected an odd integer in \[1, 1021\], got 4"):
        get_task("m10ae").sample(rng, 1, 4)
    with pytest.raises(ValueError, match=r"length: expected an even integer in \[2, 1024\], got 9"):
        get_task("bigram_flip").sample(rng, 1, 9)


def test_invalid_option_values_are_named():
    with pytest.raises(TaskOptionError, match=r"dyck: option n: expected an integer in \[1, 4\], got 5"):
        get_task("dyck", n=5)
    with pytest.raises(TaskOptionError, match="copy: option max_train_length"):
        get_task("copy", max_train_length=0)
    with pytest.raises(
        TaskOptionError,
        match=r"copy: option max_train_length: expected the longest test mode \(kL\+1: 1601\) <= max_length = 1022",
    ):
        get_task("copy", max_train_length=200)
    with pytest.raises(TaskOptionError, match="m10ae: option max_train_length: expected an odd positive integer"):
        get_task("m10ae", max_train_length=10)


@pytest.mark.parametrize("name", ALL)
def test_describe_and_eval_batches(name):
    task = _task(name)
    row = task.describe()
    assert row["input_size"] == task.input_size and row["metric"] == task.metric_names[0]
    mode = next(iter(task.test_modes))
    batches = list(task.eval_batches(mode, 5, 2, seed=0))
    assert [b.inputs.shape[0] for b in batches] == [2, 2, 1]
    again = list(task.eval_batches(mode, 5, 2, seed=0))
    for x, y in zip(batches[0], again[0]):
        np.testing.assert_array_equal(x, y)
