"""Padding batches to bucket lengths, so training over lengths 1..L compiles a few times.

A jitted step compiles once per input shape. Training draws a fresh length per
batch, which would give one shape (and one compilation) per length. Instead each
batch is padded, on both time axes, to the shapes the task has at a *bucket*
length: the smallest bucket ``b`` with ``input_steps(b) >= T_in`` and
``output_steps(b) >= T_out``. Buckets are powers of two by default
(``power_of_two_buckets``) or any ascending list from a config.

Padding is zeros with false masks, so masked metrics and losses are unchanged
(``tests/tasks/test_buckets.py``).

    buckets = power_of_two_buckets(task.train_lengths.hi, task.train_lengths.lo)  # (1, 2, 4, 8, 16) for 1..10
    batch = pad_to_bucket(task.train_batch(rng, 128), task, buckets)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from panm_jax import checks
from panm_jax.errors import UserError
from panm_jax.tasks.base import Batch, Task

__all__ = ["bucket_length", "pad_batch", "pad_to_bucket", "power_of_two_buckets"]


def power_of_two_buckets(max_length: int, min_length: int = 1) -> tuple[int, ...]:
    """Powers of two from the first ``>= min_length`` up to the first ``>= max_length``.

    ``power_of_two_buckets(10) == (1, 2, 4, 8, 16)``.
    """
    max_length = checks.positive_int("max_length", max_length)
    min_length = checks.integer("min_length", min_length, 1, max_length)
    b = 1
    while b < min_length:
        b *= 2
    out = [b]
    while out[-1] < max_length:
        out.append(out[-1] * 2)
    return tuple(out)


def _check_buckets(buckets: Sequence[int]) -> tuple[int, ...]:
    buckets = tuple(buckets)
    try:
        values = tuple(checks.nonnegative_int("buckets", b) for b in buckets)
    except UserError:
        values = ()
    if not values or any(a >= b for a, b in itertools.pairwise(values)):
        raise ValueError(
            f"buckets: expected a non-empty strictly ascending list of non-negative integers, got {buckets}"
        )
    return values


def bucket_length(task: Task, input_steps: int, output_steps: int, buckets: Sequence[int]) -> int:
    """The smallest bucket length whose task shapes hold ``input_steps`` x ``output_steps``."""
    buckets = _check_buckets(buckets)
    for b in buckets:
        if task.input_steps(b) >= input_steps and task.output_steps(b) >= output_steps:
            return b
    b = buckets[-1]
    raise ValueError(
        f"buckets: expected a bucket holding {input_steps} input and {output_steps} output steps "
        f"of task {task.name!r}; the largest, {b}, holds {task.input_steps(b)} and {task.output_steps(b)}"
    )


def pad_batch(batch: Batch, input_steps: int, output_steps: int) -> Batch:
    """Pad ``batch`` with zeros (false masks) to ``input_steps`` and ``output_steps`` time steps."""
    t_in = batch.inputs.shape[1]
    t_out = batch.targets.shape[1]
    if input_steps < t_in or output_steps < t_out:
        raise ValueError(
            f"input_steps, output_steps: expected at least the batch's ({t_in}, {t_out}), "
            f"got ({input_steps}, {output_steps})"
        )
    if (input_steps, output_steps) == (t_in, t_out):
        return batch

    def pad(x, steps):  # zeros and one copy: np.pad's general machinery cost more than the copy here
        out = np.zeros((x.shape[0], steps, *x.shape[2:]), dtype=x.dtype)
        out[:, : x.shape[1]] = x
        return out

    return Batch(
        inputs=pad(batch.inputs, input_steps),
        input_mask=pad(batch.input_mask, input_steps),
        targets=pad(batch.targets, output_steps),
        target_mask=pad(batch.target_mask, output_steps),
    )


def pad_to_bucket(batch: Batch, task: Task, buckets: Sequence[int]) -> Batch:
    """Pad ``batch`` (of ``task``) to the shapes of its bucket (see ``bucket_length``)."""
    b = bucket_length(task, batch.inputs.shape[1], batch.targets.shape[1], buckets)
    return pad_batch(batch, task.input_steps(b), task.output_steps(b))
