"""Masked training losses matching each task's ``target_kind``: pure ``jax.numpy``.

* ``softmax_cross_entropy`` for class targets ``[B, T_out]`` (the algorithmic
  tasks, M10AE, transduction);
* ``sigmoid_cross_entropy`` for multi-hot targets ``[B, T_out, K]`` (Dyck:
  Suzgun et al. 2019 train the next-bracket set with a sigmoid per unit);
* ``sigmoid_mean_squared_error`` for multi-hot targets: the loss of Suzgun et al.'s
  code (Dyck's option ``loss="mse"``).

Each averages over scored steps (``target_mask``), so padding contributes
nothing and a bucket-padded batch has the same loss as the unpadded one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "check_batch",
    "check_loss_arguments",
    "sigmoid_cross_entropy",
    "sigmoid_mean_squared_error",
    "softmax_cross_entropy",
]


def _concrete(x) -> bool:
    """Whether ``x`` holds values now (NumPy or a committed JAX array), not a tracer under ``jit``."""
    return not isinstance(x, jax.core.Tracer)


def check_loss_arguments(logits, batch, kind: str) -> None:
    """Named ``ValueError``s for a loss call whose arrays do not fit together.

    Shapes and dtypes are checked at trace time: ``logits`` a real floating
    ``[B, T_out, K]``; ``targets`` ``[B, T_out]`` integer class ids (``kind ==
    "classes"``) or ``[B, T_out, K]`` (``"multi_hot"``); ``target_mask`` ``[B, T_out]``.
    Target values are checked only where they are concrete (an eager call, or
    ``check_batch`` on the host before a compiled step): under ``jit`` they are
    not known until the step runs.
    """
    shape = tuple(jnp.shape(logits))
    if len(shape) != 3 or not jnp.issubdtype(jnp.result_type(logits), jnp.floating):
        raise ValueError(
            f"logits: expected a real floating [B, T_out, K] array, got shape {shape} dtype {jnp.result_type(logits)}"
        )
    targets, target_mask = batch.targets, batch.target_mask
    if tuple(jnp.shape(target_mask)) != shape[:2]:
        raise ValueError(
            f"target_mask: expected shape [B, T_out] = {shape[:2]} (from logits), got {jnp.shape(target_mask)}"
        )
    if kind == "multi_hot":
        if tuple(jnp.shape(targets)) != shape:
            raise ValueError(
                f"targets: expected multi-hot shape [B, T_out, K] = {shape} (from logits), got {jnp.shape(targets)}"
            )
    else:
        if tuple(jnp.shape(targets)) != shape[:2]:
            raise ValueError(
                f"targets: expected class ids of shape [B, T_out] = {shape[:2]} (from logits), got {jnp.shape(targets)}"
            )
        if not jnp.issubdtype(jnp.result_type(targets), jnp.integer):
            raise ValueError(f"targets: expected integer class ids, got dtype {jnp.result_type(targets)}")
    if _concrete(targets) and _concrete(target_mask):
        check_batch(batch, shape[-1], kind)


def check_batch(batch, num_classes: int, kind: str = "classes") -> None:
    """Named ``ValueError`` unless every scored target is a valid class (host values).

    ``classes``: ``0 <= targets < num_classes`` at every step with ``target_mask``
    true (an id out of range would index past the logits and give a NaN loss);
    ``multi_hot``: every scored unit in ``[0, 1]``. Padded steps are not read.
    """
    targets = np.asarray(batch.targets)
    scored = np.asarray(batch.target_mask, bool)
    if kind == "multi_hot":
        values = targets[scored]
        bad = ~((values >= 0) & (values <= 1))
        if bad.any():
            raise ValueError(
                f"targets: expected multi-hot values in [0, 1] at scored steps, got {float(values[bad][0])}"
            )
        return
    values = targets[scored]
    bad = (values < 0) | (values >= num_classes)
    if bad.any():
        raise ValueError(
            f"targets: expected class ids in [0, {num_classes}) (K = {num_classes} output classes) "
            f"at scored steps, got {int(values[bad][0])}"
        )


def _mean_over_mask(per_step, mask):
    mask = jnp.asarray(mask, bool)
    # where, not a product: a padded step's value (even NaN) reaches neither the loss nor
    # its gradient; max(., 1): an all-padding batch gives 0, not 0/0.
    total = jnp.sum(jnp.where(mask, per_step, 0.0))
    return total / jnp.maximum(jnp.sum(mask, dtype=per_step.dtype), 1.0)


def softmax_cross_entropy(logits, batch):
    """Mean over scored steps of ``-log softmax(logits)[target]``."""
    check_loss_arguments(logits, batch, "classes")
    logp = jax.nn.log_softmax(jnp.asarray(logits, jnp.float32), axis=-1)
    targets = jnp.where(
        jnp.asarray(batch.target_mask, bool), jnp.asarray(batch.targets, jnp.int32), 0
    )  # padding: any id
    nll = -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
    return _mean_over_mask(nll, batch.target_mask)


def sigmoid_cross_entropy(logits, batch):
    """Mean over scored steps of the summed binary cross-entropy of each unit.

    Uses ``log_sigmoid`` on both sides, stable for large ``|logits|``.
    """
    check_loss_arguments(logits, batch, "multi_hot")
    logits = jnp.asarray(logits, jnp.float32)
    y = jnp.asarray(batch.targets, jnp.float32)
    bce = -(y * jax.nn.log_sigmoid(logits) + (1.0 - y) * jax.nn.log_sigmoid(-logits))
    return _mean_over_mask(jnp.sum(bce, axis=-1), batch.target_mask)


def sigmoid_mean_squared_error(logits, batch):
    """Mean over scored steps of the mean over units of ``(sigmoid(logits) - targets)^2``.

    For one string this is PyTorch's ``nn.MSELoss()`` of the sigmoid outputs ``[T, K]`` against the
    multi-hot targets, the loss of Suzgun et al.'s code (github.com/suzgunmirac/marnns, ``main.py``).
    """
    check_loss_arguments(logits, batch, "multi_hot")
    y = jnp.asarray(batch.targets, jnp.float32)
    error = jnp.square(jax.nn.sigmoid(jnp.asarray(logits, jnp.float32)) - y)
    return _mean_over_mask(jnp.mean(error, axis=-1), batch.target_mask)
