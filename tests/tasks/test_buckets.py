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
    # Lengths 20..30: the default buckets (panm_jax.train.loop.default_buckets) are one, 30; the powers of two
    # from the shortest training length are one, 32. Every batch pads to that one shape.
    from panm_jax.train.loop import default_buckets

    task = get_task("mix", min_train_length=20, max_train_length=30)
    assert default_buckets(task) == (30,)
    assert power_of_two_buckets(task.train_lengths.hi, task.train_lengths.lo) == (32,)
    rng = np.random.default_rng(2)
    batches = [task.train_batch(rng, 2) for _ in range(100)]
    assert len({b.targets.shape for b in batches}) == 11  # unpadded: one shape per length 20..30
    for buckets, n in ((default_buckets(task), 30), ((32,), 32)):
        shapes = {pad_to_bucket(b, task, buckets).inputs.shape for b in batches}
        assert shapes == {(2, n + 2, 12)}
