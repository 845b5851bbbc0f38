"""Masked metrics and losses with hand-made logits."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from panm_jax.tasks import Batch, get_task
from panm_jax.tasks.losses import sigmoid_cross_entropy, softmax_cross_entropy
from panm_jax.tasks.metrics import (
    coarse_accuracy,
    fine_accuracy,
    sequence_accuracy,
    step_correct,
    token_accuracy,
)

K = 5


def _class_batch(targets, mask):
    targets = np.asarray(targets, dtype=np.int32)
    B, T = targets.shape
    return Batch(np.zeros((B, 1, 1), np.float32), np.ones((B, 1), bool), targets, np.asarray(mask, bool))


def _perfect(targets, k=K):
    return 4.0 * jax.nn.one_hot(np.asarray(targets), k)  # argmax = target


def _with_errors(targets, errors, k=K):
    logits = np.array(_perfect(targets, k))
    for b, t in errors:
        logits[b, t] = 0.0
        logits[b, t, (targets[b][t] + 1) % k] = 4.0  # argmax now the wrong class
    return logits


# Two sequences of 4 scored steps; the second sequence's last step is padding.
TARGETS = [[1, 2, 3, 4], [0, 1, 2, 0]]
MASK = [[True, True, True, True], [True, True, True, False]]


def test_perfect_prediction_scores_one():
    batch = _class_batch(TARGETS, MASK)
    logits = _perfect(TARGETS)
    for f in (token_accuracy, sequence_accuracy, coarse_accuracy, fine_accuracy):
        assert float(f(logits, batch)) == 1.0


def test_one_token_error():
    batch = _class_batch(TARGETS, MASK)
    # Error at sequence 0, step 2 (0-based): 6 of 7 scored steps right; 1 of 2 sequences right;
    # fine = mean(2/4 correct before the first error, 3/3) = 0.75.
    logits = _with_errors(TARGETS, [(0, 2)])
    assert float(token_accuracy(logits, batch)) == pytest.approx(6 / 7)
    assert float(sequence_accuracy(logits, batch)) == 0.5
    assert float(coarse_accuracy(logits, batch)) == 0.5
    assert float(fine_accuracy(logits, batch)) == pytest.approx(0.75)


def test_padding_is_ignored():
    batch = _class_batch(TARGETS, MASK)
    # A wrong prediction on the padded step (sequence 1, step 3) changes nothing.
    logits = _with_errors(TARGETS, [(1, 3)])
    for f in (token_accuracy, sequence_accuracy, fine_accuracy):
        assert float(f(logits, batch)) == 1.0


def test_fine_counts_only_before_the_first_error():
    # Errors at steps 1 and 3 of sequence 0: one step right before the first error -> 1/4;
    # a later right step does not count. Sequence 1 perfect -> 1. Mean 0.625.
    batch = _class_batch(TARGETS, MASK)
    logits = _with_errors(TARGETS, [(0, 1), (0, 3)])
    assert float(fine_accuracy(logits, batch)) == pytest.approx(0.625)
    assert float(token_accuracy(logits, batch)) == pytest.approx(5 / 7)


def test_rows_without_scored_steps_do_not_dilute():
    batch = _class_batch(TARGETS + [[0, 0, 0, 0]], MASK + [[False] * 4])
    logits = _with_errors(TARGETS + [[0, 0, 0, 0]], [(0, 2)])
    assert float(sequence_accuracy(logits, batch)) == 0.5
    assert float(fine_accuracy(logits, batch)) == pytest.approx(0.75)
    empty = _class_batch([[0]], [[False]])
    assert float(token_accuracy(_perfect([[0]]), empty)) == 0.0  # 0/0 -> 0, not NaN


def test_multi_hot_threshold_and_exact_match():
    targets = np.array([[[1, 0, 1], [1, 1, 0]], [[1, 0, 0], [0, 0, 1]]], np.float32)  # [B=2, T=2, K=3]
    mask = np.ones((2, 2), bool)
    batch = Batch(np.zeros((2, 2, 3), np.float32), mask, targets, mask)
    logits = np.where(targets > 0.5, 2.0, -2.0)
    assert float(sequence_accuracy(logits, batch)) == 1.0
    # One unit of one step wrong: that step is wrong, its sequence is wrong.
    logits[1, 0, 2] = 2.0
    assert float(sequence_accuracy(logits, batch)) == 0.5
    assert float(token_accuracy(logits, batch)) == 0.75
    # A logit of exactly 0 is sigmoid 0.5, which is not above the 0.5 threshold: predicts 0.
    logits = np.where(targets > 0.5, 2.0, 0.0)
    assert float(sequence_accuracy(logits, batch)) == 1.0
    logits[0, 0, 0] = 0.0  # a target 1 predicted with sigmoid exactly 0.5 -> wrong
    assert bool(step_correct(logits, targets)[0, 0]) is False


def test_metrics_are_jittable_and_match():
    task = get_task("transduction_copy")
    batch = task.train_batch(np.random.default_rng(0), 4)
    logits = jax.random.normal(jax.random.PRNGKey(0), (*batch.targets.shape, task.output_size))
    eager = task.metrics(logits, batch)
    jitted = jax.jit(task.metrics)(logits, batch)
    assert set(eager) == set(task.metric_names)
    for k in eager:
        assert float(eager[k]) == pytest.approx(float(jitted[k]))


def test_losses():
    batch = _class_batch(TARGETS, MASK)
    uniform = jnp.zeros((2, 4, K))
    assert float(softmax_cross_entropy(uniform, batch)) == pytest.approx(np.log(K), rel=1e-6)
    assert float(softmax_cross_entropy(10 * _perfect(TARGETS), batch)) < 1e-6
    targets = np.array([[[1, 0], [0, 1]]], np.float32)
    mb = Batch(np.zeros((1, 2, 2), np.float32), np.ones((1, 2), bool), targets, np.array([[True, False]]))
    # One scored step with two units at logit 0: 2 * log 2.
    assert float(sigmoid_cross_entropy(jnp.zeros((1, 2, 2)), mb)) == pytest.approx(2 * np.log(2), rel=1e-6)
    assert float(get_task("dyck").loss(jnp.zeros((1, 2, 2)), mb)) == pytest.approx(2 * np.log(2), rel=1e-6)


def test_loss_arguments_that_do_not_fit_are_named():
    from panm_jax.tasks.losses import check_batch

    targets, mask = np.asarray(TARGETS, np.int32), np.asarray(MASK, bool)
    batch = _class_batch(targets, mask)  # targets [2, 4], K classes
    logits = jnp.zeros((2, 4, K))
    cases = [
        (logits[0], batch, r"logits: expected a real floating \[B, T_out, K\] array, got shape \(4, 5\)"),
        (logits.astype(jnp.int32), batch, r"logits: expected a real floating .* dtype int32"),
        (logits[:, :3], batch, r"target_mask: expected shape \[B, T_out\] = \(2, 3\) \(from logits\), got \(2, 4\)"),
        (
            logits,
            batch._replace(targets=targets[:, :3]),
            r"targets: expected class ids of shape \[B, T_out\] = \(2, 4\)",
        ),
        (
            logits,
            batch._replace(targets=targets.astype(np.float32)),
            r"targets: expected integer class ids, got dtype float32",
        ),
    ]
    for bad_logits, bad_batch, message in cases:
        with pytest.raises(ValueError, match=message):
            softmax_cross_entropy(bad_logits, bad_batch)
    # A class id >= K at a scored step would index past the logits (a NaN loss): named, eagerly
    # and on the host (check_batch, what the training loop runs before a compiled step).
    high = targets.copy()
    high[0, 0] = K
    assert mask[0, 0]
    for call in (
        lambda: softmax_cross_entropy(logits, batch._replace(targets=high)),
        lambda: check_batch(batch._replace(targets=high), K),
    ):
        with pytest.raises(ValueError, match=rf"targets: expected class ids in \[0, {K}\) .* got {K}"):
            call()
    negative = targets.copy()
    negative[0, 0] = -1
    with pytest.raises(ValueError, match=r"got -1"):
        check_batch(batch._replace(targets=negative), K)
    # The same id at a padded step is not read.
    padded = targets.copy()
    padded[~mask] = 99
    assert float(softmax_cross_entropy(logits, batch._replace(targets=padded))) == pytest.approx(np.log(K), rel=1e-6)
    # Under jit the values are unknown at trace time: the shapes are still checked.
    with pytest.raises(ValueError, match=r"target_mask: expected shape"):
        jax.jit(softmax_cross_entropy)(logits[:, :3], batch)
    mb = Batch(
        np.zeros((1, 2, 2), np.float32),
        np.ones((1, 2), bool),
        np.array([[[1, 0], [0, 2]]], np.float32),
        np.array([[True, True]]),
    )
    with pytest.raises(ValueError, match=r"targets: expected multi-hot values in \[0, 1\] at scored steps, got 2.0"):
        sigmoid_cross_entropy(jnp.zeros((1, 2, 2)), mb)
    with pytest.raises(ValueError, match=r"targets: expected multi-hot shape \[B, T_out, K\] = \(1, 2, 3\)"):
        sigmoid_cross_entropy(jnp.zeros((1, 2, 3)), mb)
