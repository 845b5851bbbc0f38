"""Range evaluation: every test length scored on its own, compiled once per length bucket.

The protocol of Delétang et al. (2023), *Neural Networks and the Chomsky
Hierarchy* (ICLR 2023): a model trained on lengths ``1..40`` is tested at EVERY
length ``41..500`` separately, and its score is the headline metric (token
accuracy) averaged over those lengths, each length weighing the same; the
report is accuracy against length, one line per model.

Evaluating 460 lengths one shape at a time would compile 460 programs. Here
each length's batches are padded (zeros, false masks: inert, see
``panm_jax/tasks/buckets.py``) to the shapes of its *bucket*, so the jitted eval
step compiles once per bucket: by default the fewest buckets that compute at most
10 % more time steps than the lengths' own (``"fitted"``, ``tasks.buckets.fitted_buckets``;
``41..500`` -> nine buckets every 51 lengths, 91 .. 500, 0.92 of the steps real),
``"powers-of-two"`` (``64, 128, 256, 512``: four programs, 0.74 real), any
ascending list, or ``"per-length"`` (no padding, one program per length). A last batch
smaller than ``batch_size`` is filled up with copies of its first row whose
targets are masked out (scored nowhere, and no dilution of the sequence-level
metrics, which average over rows with a scored step), so the batch axis adds no
shape either.

    result = range_evaluate(run, params, range(41, 501), examples_per_length=64, batch_size=64)
    result.score, result.compiles, result.wall_seconds, result.per_length[41]["token_accuracy"]

The examples of length ``n`` (and the PRNG keys of their batches) are fixed by a
stable hash of ``(seed, task, n)`` (``length_seed``, like ``mode_seed`` in
``evaluate.py``), so any subset of lengths, in any order, with any buckets,
scores each length as the full range does. Metrics are aggregated per length as
``evaluate.evaluate`` aggregates a mode: token accuracy weighted by target
steps, sequence metrics and the loss by sequences.

Compilations are counted, not assumed: while the evaluation runs, a
``jax.monitoring`` listener counts the backend compilations (XLA compiling, or
loading from the persistent compilation cache) of programs of the eval step's
name (``CompileCounter``). A shape the step had already compiled earlier in the
process costs nothing and counts nothing.
"""

from __future__ import annotations

import hashlib
import operator
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import jax
import numpy as np

from panm_jax import checks
from panm_jax.tasks.base import Batch, Task
from panm_jax.tasks.buckets import (
    bucket_length,
    fitted_buckets,
    pad_batch,
    padding_efficiency,
    power_of_two_buckets,
)
from panm_jax.tasks.losses import check_batch
from panm_jax.train.evaluate import TEST_SEED
from panm_jax.train.interrupt import stop_if_asked

__all__ = [
    "FITTED",
    "POWERS_OF_TWO",
    "PER_LENGTH",
    "CompileCounter",
    "EvalPieces",
    "RangeResult",
    "length_batches",
    "length_seed",
    "range_buckets",
    "range_evaluate",
]

FITTED = "fitted"  # the fewest buckets within 10 % of the lengths' own time steps (tasks.buckets.fitted_buckets)
POWERS_OF_TWO = "powers-of-two"  # buckets 2^k from the first >= the shortest length to the first >= the longest
PER_LENGTH = "per-length"  # no padding: each length its own shape (and its own compilation)

_BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


class EvalPieces(NamedTuple):
    """What a range evaluation needs of a run (``Run`` has all of it; ``range_evaluate`` accepts either)."""

    task: Task
    eval_step: Callable  # jitted ``eval_step(params, batch, key) -> metrics`` (``steps.make_eval_step``)
    shard: Callable | None = None  # places a batch on the mesh; None: as it is
    model: str = "model"  # the model's name, for tables and plot labels
    num_devices: int = 1  # devices the batch axis is split over (batch_size must be a multiple)


@dataclass(frozen=True)
class RangeResult:
    """One range evaluation.

    ``rows`` holds one dict per length, ascending: ``{"length": n, "bucket": b, <metric>: value, ...,
    "loss": value, "examples": E}`` (``bucket`` is ``n`` itself with ``"per-length"``); ``score`` is the mean of
    the headline ``metric`` over the rows.
    """

    task: str
    model: str
    metric: str  # the headline metric (token_accuracy for the Chomsky tasks)
    rows: tuple[dict[str, Any], ...]
    score: float
    compiles: int  # backend compilations of the eval step during the evaluation
    compile_seconds: float  # their time (XLA, or reading the persistent cache)
    wall_seconds: float  # the whole evaluation: data, padding, compilations, steps
    train_lengths: tuple[int, int]  # the task's training range (lo, hi), shaded in plots
    examples_per_length: int
    batch_size: int
    buckets: tuple[int, ...] | str  # the bucket lengths, or "per-length"
    seed: int
    step: int | None = None  # the checkpoint's training step, when known
    padding_efficiency: float | None = None  # real / computed time steps over the lengths (tasks.buckets)
    extra: dict[str, Any] = field(default_factory=dict)  # config, environment: carried into the record as they are

    @property
    def lengths(self) -> tuple[int, ...]:
        return tuple(int(r["length"]) for r in self.rows)

    @property
    def per_length(self) -> dict[int, dict[str, Any]]:
        """``{length: row}``."""
        return {int(r["length"]): r for r in self.rows}

    @property
    def buckets_used(self) -> tuple[int, ...]:
        return tuple(sorted({int(r["bucket"]) for r in self.rows}))

    def with_step(self, step: int | None) -> RangeResult:
        return replace(self, step=step)

    def to_record(self) -> dict[str, Any]:
        """A JSON-able dict (``range.json``); ``from_record`` reads it back."""
        lengths = self.lengths
        return {
            "task": self.task,
            "model": self.model,
            "metric": self.metric,
            "step": self.step,
            "lengths": f"{min(lengths)}-{max(lengths)}" if lengths else "",
            "num_lengths": len(lengths),
            "score": self.score,
            "compiles": self.compiles,
            "compile_seconds": self.compile_seconds,
            "wall_seconds": self.wall_seconds,
            "train_lengths": list(self.train_lengths),
            "examples_per_length": self.examples_per_length,
            "batch_size": self.batch_size,
            "buckets": self.buckets if isinstance(self.buckets, str) else list(self.buckets),
            "buckets_used": list(self.buckets_used),
            "padding_efficiency": self.padding_efficiency,
            "seed": self.seed,
            "rows": [dict(r) for r in self.rows],
            **self.extra,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> RangeResult:
        known = {
            "task",
            "model",
            "metric",
            "step",
            "lengths",
            "num_lengths",
            "score",
            "compiles",
            "compile_seconds",
            "wall_seconds",
            "train_lengths",
            "examples_per_length",
            "batch_size",
            "buckets",
            "buckets_used",
            "padding_efficiency",
            "seed",
            "rows",
        }
        buckets = record["buckets"]
        return cls(
            task=record["task"],
            model=record["model"],
            metric=record["metric"],
            rows=tuple(dict(r) for r in record["rows"]),
            score=float(record["score"]),
            compiles=int(record["compiles"]),
            compile_seconds=float(record["compile_seconds"]),
            wall_seconds=float(record["wall_seconds"]),
            train_lengths=tuple(record["train_lengths"]),
            examples_per_length=int(record["examples_per_length"]),
            batch_size=int(record["batch_size"]),
            buckets=buckets if isinstance(buckets, str) else tuple(buckets),
            seed=int(record["seed"]),
            step=record.get("step"),
            padding_efficiency=record.get("padding_efficiency"),
            extra={k: v for k, v in record.items() if k not in known},
        )


class CompileCounter:
    """Counts backend compilations of jitted functions named ``name`` while the block runs.

    A ``jax.monitoring`` duration listener on ``/jax/core/compile/backend_compile_duration`` (recorded for every
    program XLA compiles or loads from the persistent compilation cache; a call that hits ``jit``'s in-memory
    cache records nothing). ``count`` and ``seconds`` cover the programs of ``name`` (``"eval_step"`` matches
    ``jit(eval_step)``); ``all_count`` every program compiled meanwhile, in any thread (small programs of eager
    operations included, e.g. deriving PRNG keys) and ``all_seconds`` their time.

        with CompileCounter("eval_step") as counter:
            ...
        counter.count
    """

    def __init__(self, name: str):
        self.names = {name, f"jit({name})", f"jit_{name}"}  # jax spells a jitted program's name these ways
        self.count = 0
        self.seconds = 0.0
        self.all_count = 0
        self.all_seconds = 0.0

    def _listen(self, event: str, duration: float, **kwargs) -> None:
        if event != _BACKEND_COMPILE_EVENT:
            return
        self.all_count += 1
        self.all_seconds += float(duration)
        if kwargs.get("fun_name") in self.names:
            self.count += 1
            self.seconds += float(duration)

    def __enter__(self) -> CompileCounter:
        jax.monitoring.register_event_duration_secs_listener(self._listen)
        return self

    def __exit__(self, *exc) -> None:
        unregister = getattr(jax.monitoring, "unregister_event_duration_listener", None)
        if unregister is not None:
            unregister(self._listen)
        else:  # older jax: no public way out; the listener stays but counts into a finished counter
            from jax._src import monitoring as _monitoring

            remove = getattr(_monitoring, "_unregister_event_duration_listener_by_callback", None)
            if remove is not None:
                remove(self._listen)


def length_seed(task: Task, length: int, seed: int) -> int:
    """The seed of length ``length``'s examples: a stable hash (SHA-256, the same in every process) of ``seed``,
    the task's name and the length, in ``[0, 2**31)``."""
    text = f"{seed}|{task.name}|length {int(length)}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little") & 0x7FFF_FFFF


def range_buckets(lengths: Iterable[int]) -> tuple[int, ...]:
    """Powers of two covering ``lengths``: ``(64, 128, 256, 512)`` for ``41..500``."""
    lengths = list(lengths)
    return power_of_two_buckets(max(lengths), min(lengths))


def _fill_rows(batch: Batch, rows: int) -> Batch:
    """``batch`` with ``rows`` rows: the missing ones copy its first row, with every target step masked out."""
    n = batch.inputs.shape[0]
    if n == rows:
        return batch
    idx = np.concatenate([np.arange(n), np.zeros(rows - n, dtype=np.int64)])
    target_mask = np.asarray(batch.target_mask)[idx].copy()
    target_mask[n:] = False
    return Batch(
        np.asarray(batch.inputs)[idx], np.asarray(batch.input_mask)[idx], np.asarray(batch.targets)[idx], target_mask
    )


def length_batches(task: Task, length: int, num_examples: int, batch_size: int, seed: int) -> list[Batch]:
    """The ``num_examples`` examples of length ``length`` (fixed by ``length_seed``), in batches of
    ``batch_size`` rows ``[batch_size, input_steps(length), ...]``, the last one filled up (``_fill_rows``)."""
    rng = np.random.default_rng(length_seed(task, length, seed))
    out, done = [], 0
    while done < num_examples:
        b = min(batch_size, num_examples - done)
        batch = task.sample(rng, b, int(length))
        try:
            check_batch(batch, task.output_size, task.target_kind)
        except ValueError as err:
            raise ValueError(f"task {task.name!r}, evaluation at length {length}: {err}") from None
        out.append(_fill_rows(batch, batch_size))
        done += b
    return out


def _pieces(run_or_pieces) -> EvalPieces:
    if isinstance(run_or_pieces, EvalPieces):
        return run_or_pieces
    run = run_or_pieces  # a train.loop.Run
    return EvalPieces(
        task=run.task,
        eval_step=run.eval_step,
        shard=run.shard,
        model=run.config.model,
        num_devices=int(run.mesh.devices.size),
    )


def _check_lengths(task: Task, lengths) -> tuple[int, ...]:
    try:
        values = sorted({operator.index(n) for n in lengths})
    except TypeError:
        raise ValueError(f"lengths: expected integers, got {lengths!r}") from None
    if not values:
        raise ValueError("lengths: expected at least one length, got none")
    bad = [n for n in values if not task.lengths.contains(n)]
    if bad:
        raise ValueError(f"lengths: expected lengths of task {task.name!r} ({task.lengths.expected()}), got {bad[0]}")
    return tuple(values)


def _step_name(eval_step) -> str:
    fn = getattr(eval_step, "__wrapped__", eval_step)
    return getattr(fn, "__name__", "eval_step")


def range_evaluate(
    run_or_pieces,
    params,
    lengths: Iterable[int],
    examples_per_length: int = 64,
    batch_size: int = 64,
    buckets: Sequence[int] | str = FITTED,
    seed: int = TEST_SEED,
) -> RangeResult:
    """Evaluate ``params`` at every length of ``lengths`` separately; one compiled program per bucket.

    Args:
      run_or_pieces: a ``train.loop.Run`` (its jitted ``eval_step``, task and sharding) or ``EvalPieces``.
      params: the model's parameters (on the run's mesh, ``replicate``d).
      lengths: the test lengths (any order; duplicates count once), each a length the task can draw.
      examples_per_length: ``E`` examples per length.
      batch_size: rows per step ``B`` (capped at ``E``; a multiple of the devices the batch is split over).
      buckets: ``"fitted"`` (``tasks.buckets.fitted_buckets`` over the lengths, each weighing the same),
        ``"powers-of-two"`` (``range_buckets``), an ascending list of bucket lengths, or ``"per-length"``
        (no padding).
      seed: the base seed of the examples (``length_seed``); the test sets' by default.

    Returns:
      a ``RangeResult``: per-length metrics, the score (the headline metric's mean over lengths), the number of
      eval-step compilations and the wall time.
    """
    pieces = _pieces(run_or_pieces)
    task = pieces.task
    values = _check_lengths(task, lengths)
    examples = checks.positive_int("examples_per_length", examples_per_length)
    rows_per_step = min(checks.positive_int("batch_size", batch_size), examples)
    if rows_per_step % pieces.num_devices:
        raise ValueError(
            f"batch_size: expected a multiple of the {pieces.num_devices} devices, got {rows_per_step}"
            + (f" (examples_per_length {examples} caps it)" if rows_per_step < batch_size else "")
        )
    if isinstance(buckets, str):
        if buckets == FITTED:
            buckets = fitted_buckets(task, values)
        elif buckets == POWERS_OF_TWO:
            buckets = range_buckets(values)
        elif buckets != PER_LENGTH:
            raise ValueError(
                f"buckets: expected {FITTED!r}, {POWERS_OF_TWO!r}, {PER_LENGTH!r} or a list of lengths, got {buckets!r}"
            )
    else:
        buckets = tuple(int(b) for b in buckets)
    headline = task.metric_names[0]

    start = time.perf_counter()
    pending = []  # (length, bucket, [(metrics on device, sequences, target steps)])
    with CompileCounter(_step_name(pieces.eval_step)) as counter:
        for n in values:
            if jax.process_count() == 1:  # Ctrl-C or SIGTERM stops before the next length (train/interrupt.py)
                stop_if_asked()
            if buckets == PER_LENGTH:
                bucket = n
            else:
                try:
                    bucket = bucket_length(task, task.input_steps(n), task.output_steps(n), buckets)
                except ValueError as err:
                    raise ValueError(f"{err} (length {n})") from None
            base = jax.random.key(length_seed(task, n, seed))
            outs = []
            done = 0
            for j, batch in enumerate(length_batches(task, n, examples, rows_per_step, seed)):
                real = min(rows_per_step, examples - done)
                done += real
                n_tok = float(np.sum(batch.target_mask))
                if buckets != PER_LENGTH:
                    batch = pad_batch(batch, task.input_steps(bucket), task.output_steps(bucket))
                key = jax.random.fold_in(base, j)
                placed = pieces.shard(batch) if pieces.shard else batch
                outs.append((pieces.eval_step(params, placed, key), real, n_tok))  # dispatched, not waited for
            pending.append((n, bucket, outs))
        fetched = jax.device_get([[m for m, _, _ in outs] for _, _, outs in pending])
    rows = []
    for (n, bucket, outs), metrics in zip(pending, fetched, strict=True):
        sums: dict[str, float] = {}
        weights: dict[str, float] = {}
        for m, (_, n_seq, n_tok) in zip(metrics, outs, strict=True):
            for name in task.metric_names:
                w = n_tok if name == "token_accuracy" else n_seq
                sums[name] = sums.get(name, 0.0) + float(m[name]) * w
                weights[name] = weights.get(name, 0.0) + w
            sums["loss"] = sums.get("loss", 0.0) + float(m["loss"]) * n_seq
            weights["loss"] = weights.get("loss", 0.0) + n_seq
        row: dict[str, Any] = {"length": n, "bucket": bucket}
        row.update({k: sums[k] / max(weights[k], 1e-12) for k in sums})
        row["examples"] = examples
        rows.append(row)
    wall = time.perf_counter() - start
    return RangeResult(
        task=task.name,
        model=pieces.model,
        metric=headline,
        rows=tuple(rows),
        score=float(np.mean([r[headline] for r in rows])),
        compiles=counter.count,
        compile_seconds=counter.seconds,
        wall_seconds=wall,
        train_lengths=(int(task.train_lengths.lo), int(task.train_lengths.hi)),
        examples_per_length=examples,
        batch_size=rows_per_step,
        buckets=buckets if isinstance(buckets, str) else tuple(buckets),
        seed=int(seed),
        padding_efficiency=round(padding_efficiency(task, buckets, values), 4),
    )
