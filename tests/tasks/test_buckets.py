"""Padding to bucket lengths: a handful of shapes, and masked metrics unchanged."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from panm_jax.tasks import bucket_length, get_task, pad_batch, pad_to_bucket, power_of_two_buckets


def test_power_of_two_buckets():
    assert power_of_two_buckets(10) == (1, 2, 4, 8, 16)
    assert power_of_two_buckets(16) == (1, 2, 4, 8, 16)
    assert power_of_two_buckets(100, min_length=8) == (8, 16, 32, 64, 128)
    with pytest.raises(ValueError, match="max_length: expected a positive integer, got 0"):
        power_of_two_buckets(0)


@pytest.mark.parametrize("buckets", [power_of_two_buckets(10), (4, 10)])
def test_shapes_over_1000_training_batches_equal_buckets_hit(buckets):
    task = get_task("copy")
    rng = np.random.default_rng(0)
    shapes, hit = set(), set()
    for _ in range(1000):
        batch = task.train_batch(rng, 2)
        n = batch.targets.shape[1]
        hit.add(next(b for b in buckets if b >= n))
        padded = pad_to_bucket(batch, task, buckets)
        shapes.add((padded.inputs.shape, padded.targets.shape))
    assert len(hit) == len(buckets)  # lengths 1..10 reach every bucket
    assert len(shapes) == len(hit)


@pytest.mark.parametrize("name", ["dynamic_recall", "m10ae", "dyck", "bigram_flip"])
def test_other_layouts_bucket_too(name):
    task = get_task(name)
    buckets = power_of_two_buckets(task.train_lengths.hi)
    rng = np.random.default_rng(1)
    shapes = {tuple(pad_to_bucket(task.train_batch(rng, 2), task, buckets).inputs.shape) for _ in range(200)}
    assert len(shapes) <= len(buckets)


def test_padding_keeps_masked_metrics_and_loss():
    task = get_task("priority_sort")
    batch = task.sample(np.random.default_rng(0), 4, 5)
    padded = pad_to_bucket(batch, task, (8, 16))
    assert padded.inputs.shape == (4, 10, 13) and padded.targets.shape == (4, 8)
    assert not padded.input_mask[:, 7:].any() and not padded.target_mask[:, 5:].any()
    logits = jax.random.normal(jax.random.PRNGKey(1), (4, 8, 10))
    a = task.metrics(logits[:, :5], batch)["token_accuracy"]
    b = task.metrics(logits, padded)["token_accuracy"]
    assert float(a) == float(b)
    assert float(task.loss(logits[:, :5], batch)) == pytest.approx(float(task.loss(logits, padded)))


def test_bucket_errors():
    task = get_task("copy")
    batch = task.sample(np.random.default_rng(0), 2, 20)
    with pytest.raises(ValueError, match="buckets: expected a bucket holding 22 input and 20 output steps"):
        pad_to_bucket(batch, task, (8, 16))
    with pytest.raises(ValueError, match="buckets: expected a non-empty strictly ascending list"):
        bucket_length(task, 3, 1, (8, 4))
    with pytest.raises(ValueError, match=r"input_steps, output_steps: expected at least the batch's \(22, 20\)"):
        pad_batch(batch, 10, 10)


@pytest.mark.parametrize("name", ["copy", "priority_sort", "scan"])
def test_padding_appends_zeros_and_keeps_the_rest(name):
    """Every leaf keeps its values, dtype and trailing axes; the new steps are zeros (false in the masks)."""
    task = get_task(name)
    batch = task.train_batch(np.random.default_rng(3), 3)
    t_in, t_out = batch.inputs.shape[1], batch.targets.shape[1]
    padded = pad_batch(batch, t_in + 5, t_out + 2)
    for field, extra in (("inputs", 5), ("input_mask", 5), ("targets", 2), ("target_mask", 2)):
        x, y = getattr(batch, field), getattr(padded, field)
        want = np.concatenate([x, np.zeros((x.shape[0], extra, *x.shape[2:]), x.dtype)], axis=1)
        assert y.dtype == x.dtype and y.shape == want.shape, field
        np.testing.assert_array_equal(y, want, err_msg=field)


def test_a_training_range_above_one_compiles_once_per_bucket_it_reaches():
    # Lengths 20..30: the default buckets (panm_jax.train.loop.default_buckets) are 24 and 30 (one bucket, 30,
    # would compute 1.18 times the real steps); the powers of two from the shortest training length are one, 32.
    # Every batch pads to one of those shapes.
    from panm_jax.train.loop import default_buckets

    task = get_task("mix", min_train_length=20, max_train_length=30)
    assert default_buckets(task) == (24, 30)
    assert power_of_two_buckets(task.train_lengths.hi, task.train_lengths.lo) == (32,)
    rng = np.random.default_rng(2)
    batches = [task.train_batch(rng, 2) for _ in range(100)]
    assert len({b.targets.shape for b in batches}) == 11  # unpadded: one shape per length 20..30
    for buckets, steps in ((default_buckets(task), {26, 32}), ((32,), {34})):
        shapes = {pad_to_bucket(b, task, buckets).inputs.shape for b in batches}
        assert shapes == {(2, n, 12) for n in steps}


# ---- fitted buckets --------------------------------------------------------------------------------------


def _expected_cost(task, buckets, values, p):
    """sum_n p(n) (input_steps + output_steps) of n's bucket: the smallest bucket >= n, written out here."""
    total = 0.0
    for n, w in zip(values, p, strict=True):
        b = min(x for x in buckets if x >= n)
        total += w * (task.input_steps(b) + task.output_steps(b))
    return total


@pytest.mark.parametrize(
    ("name", "options", "weights"),
    [
        ("copy", {}, None),
        ("m10ae", {}, None),
        ("reverse_string", {"max_train_length": 12}, None),
        ("copy", {}, [0.02, 0.02, 0.3, 0.02, 0.02, 0.3, 0.02, 0.02, 0.2, 0.08]),
    ],
)
def test_fitted_buckets_are_the_fewest_and_the_cheapest_by_brute_force(name, options, weights):
    """Every bucket set that holds the longest length, tried one by one: no fewer buckets reach the target, and
    none of as many computes less than the dynamic programme's."""
    import itertools

    from panm_jax.tasks.buckets import MAX_OVERHEAD, fitted_buckets

    task = get_task(name, **options)
    values = [int(v) for v in task.train_lengths.values()]
    p = np.full(len(values), 1 / len(values)) if weights is None else np.asarray(weights) / np.sum(weights)
    real = sum(w * (task.input_steps(n) + task.output_steps(n)) for n, w in zip(values, p, strict=True))
    got = fitted_buckets(task, values, None if weights is None else weights)
    assert got[-1] == values[-1] and list(got) == sorted(set(got)) and set(got) <= set(values)
    k = len(got)
    assert _expected_cost(task, got, values, p) <= MAX_OVERHEAD * real * (1 + 1e-9)
    best = {}
    for size in (k - 1, k):
        if size < 1:
            continue
        best[size] = min(
            _expected_cost(task, (*rest, values[-1]), values, p)
            for rest in itertools.combinations(values[:-1], size - 1)
        )
    if k - 1 in best:
        assert best[k - 1] > MAX_OVERHEAD * real  # one bucket fewer cannot reach the target
    assert _expected_cost(task, got, values, p) == pytest.approx(best[k], rel=1e-12)


def test_fitted_buckets_on_copy_and_on_the_chomsky_range():
    from panm_jax.tasks.buckets import fitted_buckets, padding_efficiency

    copy = get_task("copy")
    assert fitted_buckets(copy, range(1, 11)) == (2, 4, 6, 8, 10)
    # Copy: input n + 2 and output n steps; real 2n + 2 summed over 1..10 is 130, padded (2, 4, 6, 8, 10) is 140.
    assert padding_efficiency(copy, (2, 4, 6, 8, 10), range(1, 11)) == pytest.approx(130 / 140)
    assert padding_efficiency(copy, (1, 2, 4, 8, 10), range(1, 11)) == pytest.approx(130 / 146)
    assert padding_efficiency(copy, "per-length", range(1, 11)) == pytest.approx(1.0)
    chomsky = get_task("reverse_string")
    lengths = range(41, 501)
    fitted = fitted_buckets(chomsky, lengths)
    assert len(fitted) == 9 and fitted[-1] == 500
    assert padding_efficiency(chomsky, fitted, lengths) >= 1 / 1.10
    assert padding_efficiency(chomsky, power_of_two_buckets(500, 41), lengths) < 0.75
    assert len(fitted_buckets(chomsky, lengths, max_overhead=1.0)) == 16  # exact lengths need 460: the cap
    assert fitted_buckets(chomsky, lengths, max_overhead=2.0) == (500,)


def test_training_length_distribution():
    from panm_jax.tasks.buckets import padding_efficiency, training_length_distribution

    copy = get_task("copy")  # one length per batch, uniform over 1..10
    values, p = training_length_distribution(copy, 128)
    assert values.tolist() == list(range(1, 11)) and np.allclose(p, 0.1)
    _, p3 = training_length_distribution(copy, 128, seeds=3)  # the longest of three batches
    assert np.allclose(p3, [(k / 10) ** 3 - ((k - 1) / 10) ** 3 for k in range(1, 11)])
    # Three seeds padded to the longest of their batches: the real steps are each batch's own.
    buckets = (2, 4, 6, 8, 10)
    computed = sum(q * (2 * b + 2) for q, b in zip(p3, (2, 2, 4, 4, 6, 6, 8, 8, 10, 10), strict=True))
    assert padding_efficiency(copy, buckets, values, p, seeds=3) == pytest.approx(13 / computed)
    # Each example its own length: the largest of the batch's lengths, estimated against draws.
    task = get_task("m10ae")
    values, p = training_length_distribution(task, 4)
    rng = np.random.default_rng(0)
    drawn = np.array([task.sample_lengths(rng, 4).max() for _ in range(20_000)])
    freq = np.array([(drawn == v).mean() for v in values])
    assert np.abs(freq - p).max() < 0.015 and p.sum() == pytest.approx(1.0)
    # A task with a sampler of its own (Dyck): estimated from its draws, summing to one.
    values, p = training_length_distribution(get_task("dyck"), 8)
    assert p.sum() == pytest.approx(1.0) and (p >= 0).all()


def test_fitted_bucket_errors():
    from panm_jax.tasks.buckets import fitted_buckets

    task = get_task("copy")
    with pytest.raises(
        ValueError, match=r"lengths: expected a non-empty strictly ascending list of lengths, got \[3, 2\]"
    ):
        fitted_buckets(task, [3, 2])
    with pytest.raises(ValueError, match=r"weights: expected 2 non-negative finite numbers with a positive sum"):
        fitted_buckets(task, [2, 3], [1.0, -1.0])
    with pytest.raises(ValueError, match="max_overhead: expected"):
        fitted_buckets(task, [2, 3], max_overhead=0.5)
