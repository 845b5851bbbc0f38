"""Masked task metrics: pure ``jax.numpy`` functions of ``(logits, batch)``.

Every function takes ``logits`` ``[B, T_out, K]`` (pre-softmax class scores, or
pre-sigmoid multi-hot scores) and a ``Batch`` (only ``targets`` and
``target_mask`` are read), ignores steps where ``target_mask`` is false, and
returns a float32 scalar in [0, 1]. They are jit-able (no Python control flow on
values) and accept NumPy or JAX arrays.

A step is *correct* when
  * classes (``targets`` ``[B, T_out]`` int): ``argmax_k logits == target``;
  * multi-hot (``targets`` ``[B, T_out, K]``): every unit's thresholded sigmoid
    matches, ``sigmoid(logit) > 0.5`` (computed as ``logit > 0``, the same test
    without rounding) equals ``target > 0.5``, as in Suzgun et al. (2019) and
    Le et al. 2024 (Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural Memory, TMLR), §3.2.

The kind is read from the rank of ``targets`` (2 = classes, 3 = multi-hot).

Sequence-level metrics average over the sequences that have at least one scored
step (a batch padded with empty rows, e.g. for sharding, is not diluted).
"""

from __future__ import annotations

import jax.numpy as jnp

__all__ = [
    "coarse_accuracy",
    "fine_accuracy",
    "sequence_accuracy",
    "step_correct",
    "token_accuracy",
]


def step_correct(logits, targets):
    """``[B, T_out]`` bool: is each output step entirely right (see the module docstring)?"""
    logits = jnp.asarray(logits)
    targets = jnp.asarray(targets)
    if targets.ndim == logits.ndim:  # multi-hot [B, T, K]
        return jnp.all((logits > 0) == (targets > 0.5), axis=-1)
    return jnp.argmax(logits, axis=-1) == targets


def _masks(batch):
    return jnp.asarray(batch.target_mask, dtype=bool)


def _safe_mean(num, den):
    # den = 0 (no scored step at all) gives 0 rather than 0/0 = NaN.
    return (num / jnp.maximum(den, 1)).astype(jnp.float32)


def token_accuracy(logits, batch):
    """Share of scored output steps that are correct (for multi-hot: the whole vector).

    The algorithmic tasks' metric (Le et al. 2024, App. D.1: argmax equals the
    target; a random predictor scores about 1/K).
    """
    mask = _masks(batch)
    ok = step_correct(logits, batch.targets) & mask
    return _safe_mean(jnp.sum(ok), jnp.sum(mask))


def sequence_accuracy(logits, batch):
    """Share of sequences whose every scored step is correct (exact match).

    Dyck's metric (Le et al. 2024, §3.2: "sequence match") and, for classes, the
    transduction tasks' *coarse* accuracy.
    """
    mask = _masks(batch)
    ok = step_correct(logits, batch.targets) | ~mask
    has = jnp.any(mask, axis=1)
    whole = jnp.all(ok, axis=1) & has
    return _safe_mean(jnp.sum(whole), jnp.sum(has))


def coarse_accuracy(logits, batch):
    """Grefenstette et al. (2015) *coarse*: the share of sequences entirely correct."""
    return sequence_accuracy(logits, batch)


def fine_accuracy(logits, batch):
    """Grefenstette et al. (2015) *fine*: mean share of each sequence correct before its first error.

    For a sequence with ``m`` scored steps whose first wrong step is the
    ``j``-th (0-based), the score is ``j / m`` (``1`` when none is wrong).
    """
    mask = _masks(batch)
    ok = step_correct(logits, batch.targets) | ~mask
    prefix = jnp.cumprod(ok.astype(jnp.int32), axis=1).astype(bool)  # still right at step t
    before_error = jnp.sum(prefix & mask, axis=1)
    scored = jnp.sum(mask, axis=1)
    has = scored > 0
    share = jnp.where(has, before_error / jnp.maximum(scored, 1), 0.0)
    return _safe_mean(jnp.sum(share), jnp.sum(has))
