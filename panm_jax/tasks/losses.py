"""Masked training losses matching each task's ``target_kind``: pure ``jax.numpy``.

* ``softmax_cross_entropy`` for class targets ``[B, T_out]`` (the algorithmic
  tasks, M10AE, transduction);
* ``sigmoid_cross_entropy`` for multi-hot targets ``[B, T_out, K]`` (Dyck:
  Suzgun et al. 2019 train the next-bracket set with a sigmoid per unit).

Both average over scored steps (``target_mask``), so padding contributes
nothing and a bucket-padded batch has the same loss as the unpadded one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["sigmoid_cross_entropy", "softmax_cross_entropy"]


def _mean_over_mask(per_step, mask):
    mask = jnp.asarray(mask, dtype=per_step.dtype)
    # max(., 1): an all-padding batch gives 0, not 0/0.
    return jnp.sum(per_step * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def softmax_cross_entropy(logits, batch):
    """Mean over scored steps of ``-log softmax(logits)[target]``."""
    logp = jax.nn.log_softmax(jnp.asarray(logits, jnp.float32), axis=-1)
    nll = -jnp.take_along_axis(logp, jnp.asarray(batch.targets)[..., None].astype(jnp.int32), axis=-1)[..., 0]
    return _mean_over_mask(nll, batch.target_mask)


def sigmoid_cross_entropy(logits, batch):
    """Mean over scored steps of the summed binary cross-entropy of each unit.

    Uses ``log_sigmoid`` on both sides, stable for large ``|logits|``.
    """
    logits = jnp.asarray(logits, jnp.float32)
    y = jnp.asarray(batch.targets, jnp.float32)
    bce = -(y * jax.nn.log_sigmoid(logits) + (1.0 - y) * jax.nn.log_sigmoid(-logits))
    return _mean_over_mask(jnp.sum(bce, axis=-1), batch.target_mask)
