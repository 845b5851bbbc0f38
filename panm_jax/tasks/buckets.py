"""Padding batches to bucket lengths, so training over lengths 1..L compiles a few times.

A jitted step compiles once per input shape. Training draws a fresh length per
batch, which would give one shape (and one compilation) per length. Instead each
batch is padded, on both time axes, to the shapes the task has at a *bucket*
length: the smallest bucket ``b`` with ``input_steps(b) >= T_in`` and
``output_steps(b) >= T_out``. Buckets are any ascending list (a config's
``buckets``), powers of two (``power_of_two_buckets``), or *fitted* to the lengths
that occur (``fitted_buckets``, the default of training and of range evaluation).

Padded steps cost what real steps cost, so the buckets trade programs against
work. ``padding_efficiency`` is that work's measure: real / computed time steps
(``input_steps + output_steps``) averaged over a length distribution, 1 without
padding. ``fitted_buckets`` places the fewest buckets whose efficiency reaches
``1 / max_overhead`` (at most ``MAX_OVERHEAD`` = 1.10 more steps computed than
real), each set placed optimally for the distribution by dynamic programming, so
the buckets crowd where the probability and the lengths are high: Copy's 1..10 gets
(2, 4, 6, 8, 10) at 0.93, a Chomsky task's 1..40 ten buckets at 0.92 where powers
of two (1, 2, 4, ..., 32, 40) gave 0.82.

Padding is zeros with false masks, so masked metrics and losses are unchanged
(``tests/tasks/test_buckets.py``).

    buckets = fitted_buckets(task, *training_length_distribution(task, 128))  # (2, 4, 6, 8, 10) for Copy
    batch = pad_to_bucket(task.train_batch(rng, 128), task, buckets)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from panm_jax import checks
from panm_jax.errors import UserError
from panm_jax.tasks.base import Batch, Task

__all__ = [
    "MAX_BUCKETS",
    "MAX_OVERHEAD",
    "bucket_length",
    "fitted_buckets",
    "pad_batch",
    "pad_to_bucket",
    "padding_efficiency",
    "power_of_two_buckets",
    "training_length_distribution",
]

MAX_OVERHEAD = 1.10  # fitted buckets compute at most this many time steps per real one, on average
MAX_BUCKETS = 16  # ... with at most this many buckets (programs); beyond, the best 16 are used
_DRAWS = 4096  # batches drawn to estimate the length distribution of a task with its own sampler


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


def _steps(task: Task, lengths: np.ndarray) -> np.ndarray:
    """The time steps (``input_steps + output_steps``) of each length: what one example of it computes."""
    return np.array([task.input_steps(int(n)) + task.output_steps(int(n)) for n in lengths], dtype=np.float64)


def _distribution(lengths, weights) -> tuple[np.ndarray, np.ndarray]:
    values = np.asarray(list(lengths), dtype=np.int64)
    if values.ndim != 1 or values.size == 0 or np.any(np.diff(values) <= 0):
        raise ValueError(f"lengths: expected a non-empty strictly ascending list of lengths, got {values.tolist()}")
    if weights is None:
        return values, np.full(values.size, 1.0 / values.size)
    p = np.asarray(list(weights), dtype=np.float64)
    if p.shape != values.shape or not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
        raise ValueError(
            f"weights: expected {values.size} non-negative finite numbers with a positive sum, got {p.tolist()}"
        )
    return values, p / p.sum()


def training_length_distribution(
    task: Task, batch_size: int, *, seeds: int = 1, draws: int = _DRAWS, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``(lengths, probabilities)`` of a training batch's longest length, which sets its shape; with
    ``seeds`` > 1, of the longest of that many independent batches (seeds trained together in one program
    pad their batches to the longest: ``P(max <= v) = F(v)^seeds``).

    Exact for the base sampler (``Task.sample_lengths``): uniform over ``train_lengths`` when a batch has
    one length (``per_batch``), and the law of the largest of ``batch_size`` uniform draws when each
    example has its own (``per_example``: ``P(max <= v_k) = (k / n)^B``). A task with a sampler of its
    own (Dyck, SCAN, Mathematics) is estimated from ``draws`` batches' lengths at a fixed ``seed``.
    Every admissible training length is listed, with probability 0 where none was drawn.
    """
    values = task.train_lengths.values().astype(np.int64)
    batch_size = checks.positive_int("batch_size", batch_size)
    seeds = checks.positive_int("seeds", seeds)
    if type(task).sample_lengths is Task.sample_lengths:
        below = np.arange(values.size + 1) / values.size  # F(v_{k-1}) = P(length <= v_{k-1}), k = 0..n
        if task.length_sampling == "per_example":
            below = below**batch_size
    else:
        rng = np.random.default_rng(seed)
        longest = np.array([task.sample_lengths(rng, batch_size, "train").max() for _ in range(draws)])
        below = np.concatenate([[0.0], np.cumsum([(longest == v).sum() for v in values]) / draws])
    return values, np.diff(below**seeds)


def padding_efficiency(task: Task, buckets: Sequence[int] | str, lengths, weights=None, *, seeds: int = 1) -> float:
    """Real over computed time steps (``input_steps + output_steps``) of batches whose lengths follow
    ``weights`` over ``lengths`` (uniform without), each padded to its bucket (``bucket_length``); 1 is no
    padding, and ``buckets="per-length"`` pads nothing. With ``seeds`` > 1, that many independent batches
    are padded to the bucket of the longest (seeds trained together in one program): the real steps are
    each batch's own, the computed ones those of the longest's bucket (``P(max <= v) = F(v)^seeds``)."""
    values, p = _distribution(lengths, weights)
    seeds = checks.positive_int("seeds", seeds)
    real = _steps(task, values)
    if isinstance(buckets, str):
        padded = real
    else:
        padded = np.array(
            [
                task.input_steps(b) + task.output_steps(b)
                for b in (
                    bucket_length(task, task.input_steps(int(n)), task.output_steps(int(n)), buckets) for n in values
                )
            ],
            dtype=np.float64,
        )
    longest = np.diff(np.concatenate([[0.0], np.cumsum(p)]) ** seeds)
    return float(p @ real / (longest @ padded))


def fitted_buckets(
    task: Task,
    lengths,
    weights=None,
    *,
    max_overhead: float = MAX_OVERHEAD,
    max_buckets: int = MAX_BUCKETS,
) -> tuple[int, ...]:
    """The fewest buckets, each one of ``lengths``, whose padded batches compute at most ``max_overhead``
    times the real time steps on average over ``weights`` (uniform without); ``max_buckets`` where no fewer
    reach it. The longest length is always the last bucket, so every length has one.

    Each count ``K`` is placed optimally: the buckets ``b_1 < ... < b_K`` minimise
    ``sum_n p(n) c(bucket(n))``, ``c(n) = input_steps(n) + output_steps(n)``, by dynamic programming over
    the sorted lengths (the lengths ``b_{k-1} < n <= b_k`` share bucket ``b_k``; ``O(K n^2)``). The task's
    ``input_steps`` and ``output_steps`` must not decrease with the length (every task's do), which makes a
    length's bucket the smallest bucket at or above it.
    """
    values, p = _distribution(lengths, weights)
    checks.number("max_overhead", max_overhead, 1)
    max_buckets = checks.positive_int("max_buckets", max_buckets)
    cost = _steps(task, values)
    ins = np.array([task.input_steps(int(n)) for n in values])
    outs = np.array([task.output_steps(int(n)) for n in values])
    if np.any(np.diff(ins) < 0) or np.any(np.diff(outs) < 0):
        raise ValueError(f"task {task.name!r}: fitted buckets need input and output steps that grow with the length")
    n = values.size
    mass = np.concatenate([[0.0], np.cumsum(p)])  # mass[i]: the probability of the first i lengths
    target = max_overhead * float(p @ cost) * (1 + 1e-12)
    # best[j]: the least expected cost of lengths 0..j with k buckets, the last at length j; choices[k - 1][j]:
    # the last length of the k - 1 buckets below (k = 1: none). Splitting a group never costs more, so the
    # optimum falls as k grows and the first k that reaches the target is the fewest.
    best = cost * mass[1:]  # one bucket, at length j, for lengths 0..j
    choices = [np.full(n, -1)]
    upper = np.tri(n, k=-1, dtype=bool).T  # [i, j]: i < j
    while best[-1] > target and len(choices) < min(max_buckets, n):
        total = best[:, None] + cost[None, :] * (mass[None, 1:] - mass[1:, None])  # [i, j]: lengths i+1..j at j
        total = np.where(upper, total, np.inf)
        choice = np.argmin(total, axis=0)
        best = total[choice, np.arange(n)]
        choices.append(choice)
    buckets, j = [], n - 1
    for choice in reversed(choices):
        buckets.append(int(values[j]))
        j = int(choice[j])
    return tuple(reversed(buckets))
