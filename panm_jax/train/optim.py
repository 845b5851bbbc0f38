"""Optimisers from config: every optimiser, schedule and clip comes from optax.

The learning rate may be given apart from the config, as a traced scalar
(``make_optimizer(config, num_steps, learning_rate=lr)`` inside a jitted step):
the transformation then has the same state structure and the same arithmetic
for every rate, so runs at several rates are one compiled program, ``vmap``
over their rates (``train/seeds.py``).
"""

from __future__ import annotations

import jax
import optax

from panm_jax import checks
from panm_jax.errors import UserError
from panm_jax.train.config import OptimizerConfig

__all__ = ["make_optimizer", "paper_optimizer"]


def make_schedule(
    config: OptimizerConfig, num_steps: int, learning_rate: float | jax.Array | None = None
) -> optax.Schedule:
    """``config``'s schedule over ``num_steps`` peaking at ``learning_rate`` (a float, or a [] float32 array that
    may be traced; ``None``: ``config.learning_rate``)."""
    lr = config.learning_rate if learning_rate is None else learning_rate
    if config.schedule == "constant":
        if config.warmup_steps:
            return optax.join_schedules(
                [optax.linear_schedule(0.0, lr, config.warmup_steps), optax.constant_schedule(lr)],
                [config.warmup_steps],
            )
        return optax.constant_schedule(lr)
    if config.schedule == "cosine":
        return optax.cosine_decay_schedule(lr, max(num_steps, 1))
    # optax.warmup_cosine_decay_schedule(0.0, lr, warmup, steps), written out: it compares its peak with 0.0 in
    # Python, which a traced rate cannot answer.
    warmup, steps = max(config.warmup_steps, 1), max(num_steps, 2)
    return optax.join_schedules(
        [optax.linear_schedule(0.0, lr, warmup), optax.cosine_decay_schedule(lr, steps - warmup)], [warmup]
    )


def make_optimizer(
    config: OptimizerConfig, num_steps: int, learning_rate: float | jax.Array | None = None
) -> optax.GradientTransformation:
    """Clip (values, then global norm, if set), then the optimiser with its schedule over ``num_steps``, at
    ``learning_rate`` (``None``: ``config.learning_rate``; a [] float32 array, possibly traced: module docstring).

    Raises ``UserError`` for a ``config`` that is not an ``OptimizerConfig``, a ``num_steps`` that is not a
    positive integer, and a warmup longer than the run (as ``TrainConfig`` does).
    """
    if not isinstance(config, OptimizerConfig):
        raise UserError(f"config: expected an OptimizerConfig, got {type(config).__name__}")
    checks.positive_int("num_steps", num_steps)
    if config.warmup_steps > num_steps:
        raise UserError(f"optimizer.warmup_steps: expected at most num_steps ({num_steps}), got {config.warmup_steps}")
    schedule = make_schedule(config, num_steps, learning_rate)
    if config.name == "rmsprop":
        # PyTorch's RMSprop (eps_in_sqrt false): v = a v + (1 - a) g^2; b = m b + g / (sqrt(v) + eps);
        # theta -= lr b. optax scales by the learning rate before its momentum trace, the same
        # update under a constant learning rate.
        opt = optax.rmsprop(
            schedule,
            decay=config.decay,
            eps=config.eps,
            eps_in_sqrt=config.eps_in_sqrt,
            momentum=config.momentum or None,
        )
    elif config.name == "adam":
        opt = optax.adam(schedule)
    elif config.name == "adamw":
        opt = optax.adamw(schedule, weight_decay=config.weight_decay)
    else:
        opt = optax.sgd(schedule, momentum=config.momentum or None)
    parts = []
    if config.clip_value is not None:
        parts.append(optax.clip(config.clip_value))
    if config.clip_norm is not None:
        parts.append(optax.clip_by_global_norm(config.clip_norm))
    return optax.chain(*parts, opt)


def paper_optimizer(learning_rate: float = 1e-4, clip_value: float = 10.0) -> optax.GradientTransformation:
    """The optimiser of the PANM authors' code (Le et al. 2024, the algorithmic tasks' protocol).

    PyTorch's RMSprop (epsilon 1e-8 outside the square root) with learning rate
    1e-4, momentum 0.9 and decay 0.95, after clipping every gradient value to
    ``[-10, 10]``: ``make_optimizer(OptimizerConfig())``.
    """
    return make_optimizer(OptimizerConfig(learning_rate=learning_rate, clip_value=clip_value), 1)
