"""Evaluation over a task's length modes.

Each mode's examples are fixed by a seed (the validation and test sets use
different seeds, so the set that selects the checkpoint is not the one that is
reported) and padded to the mode's longest shape, so every mode compiles once.
The seed of a mode's set (and of the PRNG keys of its batches) is a hash of the
base seed, the task, the mode and its lengths (``mode_seed``), not of the
mode's place in a list: evaluating any subset of modes, in any order, gives
each mode the numbers of the full table.
Metrics are aggregated over the whole set: token accuracy weighted by scored
tokens, sequence-level metrics (sequence match, coarse, fine) by sequences.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from panm_jax.tasks.base import Batch, Task
from panm_jax.tasks.buckets import pad_batch
from panm_jax.tasks.losses import check_batch
from panm_jax.train.interrupt import stop_if_asked

__all__ = ["TEST_SEED", "VALIDATION_SEED", "eval_sets", "evaluate", "mode_seed", "split_seeds"]

VALIDATION_SEED = 1_000_003  # the examples that select the best checkpoint
TEST_SEED = 2_000_003  # the examples that are reported


def mode_length(task: Task, mode: str) -> str:
    """The mode's length as the tables print it (``"21"`` or ``"65..128"``)."""
    return task.mode_range(mode).describe()


def mode_seed(task: Task, mode: str, seed: int) -> int:
    """The seed of ``mode``'s evaluation set: a stable hash (SHA-256, the same in every process,
    unlike ``hash()``) of ``seed``, the task's name, the mode and its lengths, in ``[0, 2**31)``."""
    text = f"{seed}|{task.name}|{mode}|{mode_length(task, mode)}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little") & 0x7FFF_FFFF


def eval_sets(
    task: Task, modes: Sequence[str], num_examples: int, batch_size: int, seed: int
) -> dict[str, list[Batch]]:
    """Fixed evaluation batches per mode (seeded by ``mode_seed``), padded to the mode's longest shape."""
    out = {}
    for mode in modes:
        hi = task.mode_range(mode).hi
        batches = list(task.eval_batches(mode, num_examples, batch_size, seed=mode_seed(task, mode, seed)))
        for b in batches:
            try:
                check_batch(b, task.output_size, task.target_kind)
            except ValueError as err:
                raise ValueError(f"task {task.name!r}, evaluation set {mode}: {err}") from None
        out[mode] = [pad_batch(b, task.input_steps(hi), task.output_steps(hi)) for b in batches]
    return out


def evaluate(
    eval_step, params, task: Task, sets: dict[str, list[Batch]], seed: int, shard=None
) -> dict[str, dict[str, Any]]:
    """``{mode: {"length": ..., metric: value, "examples": n}}`` over fixed evaluation sets.

    ``eval_step(params, batch, key) -> metrics`` (jitted; with a leading seed axis on ``params`` and on
    each metric for a seed-batched step, whose results ``split_seeds`` splits); ``shard(batch)`` places a
    batch on the mesh when given. ``key`` is fixed by ``seed`` (the sets' seed),
    the mode (``mode_seed``) and the batch's index, for models that draw something at evaluation
    (PANM with ``random_base_at_eval``): an evaluation stays a deterministic
    function of the parameters.
    """
    results = {}
    for mode, batches in sets.items():
        sums: dict[str, float] = {}
        weights: dict[str, float] = {}
        examples = 0
        for j, batch in enumerate(batches):
            if jax.process_count() == 1:  # with several processes the training loop's agreed points alone
                stop_if_asked()
            key = jax.random.fold_in(jax.random.key(mode_seed(task, mode, seed)), j)
            metrics = jax.device_get(eval_step(params, shard(batch) if shard else batch, key))
            n_seq = int(batch.inputs.shape[0])
            n_tok = float(np.sum(batch.target_mask))
            examples += n_seq
            for name in task.metric_names:
                w = n_tok if name == "token_accuracy" else n_seq
                sums[name] = sums.get(name, 0.0) + np.asarray(metrics[name], np.float64) * w
                weights[name] = weights.get(name, 0.0) + w
            sums["loss"] = sums.get("loss", 0.0) + np.asarray(metrics["loss"], np.float64) * n_seq
            weights["loss"] = weights.get("loss", 0.0) + n_seq
        row: dict[str, Any] = {"length": mode_length(task, mode), "examples": examples}
        row.update({k: _plain(sums[k] / max(weights[k], 1e-12)) for k in sums})
        results[mode] = row
    return results


def _plain(value):
    """A float for one run's metric; a list of floats, one per seed, for a seed-batched step's."""
    value = np.asarray(value, np.float64)
    return float(value) if value.ndim == 0 else [float(v) for v in value]


def split_seeds(results: dict[str, dict[str, Any]], num_seeds: int) -> list[dict[str, dict[str, Any]]]:
    """``evaluate``'s results of a seed-batched ``eval_step`` (each metric a list over seeds) -> one
    results dict per seed, each what ``evaluate`` gives for that seed's parameters alone."""
    return [
        {mode: {k: (v[i] if isinstance(v, list) else v) for k, v in row.items()} for mode, row in results.items()}
        for i in range(num_seeds)
    ]
