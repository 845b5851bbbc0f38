"""Teacher forcing and greedy decoding for the models whose decoder reads its previous outputs.

Le et al. 2024 (Plug, Play, and Generalize: Length Extrapolation with
Pointer-Augmented Neural Memory, TMLR), App. D.3, train the SCAN and Mathematics
models "with teacher forcing as in Csordás et al. (2021)": the decoder's input at
output step ``t`` is the embedding of the previous target token ``y_{t-1}``, with a
start token (BOS) at ``t = 0``. At evaluation the model decodes greedily: the
input at step ``t`` is its own argmax at ``t - 1``.

A model with ``teacher_forcing=True`` (``transformer``, ``transformer_rpe``,
``universal_transformer``, ``universal_transformer_rpe``, ``panm_transformer``)
takes ``targets`` (``[B, T_out]`` class ids) in its call; the train step passes
them, so training is teacher-forced in one parallel pass, and the eval step does
not, so evaluation is free-running. With ``targets=None`` the model runs
``greedy_tokens`` and then one pass on the tokens it chose. Its decoder is causal,
so the logits at step ``t`` of that last pass are exactly those of the pass in
which token ``t + 1`` was chosen.

Tokens are class ids ``0..K-1`` and ``BOS = K``, so the decoder's token table has
``K + 1`` rows. Target positions past an example's length (``target_mask`` false)
only feed later positions, which are also past it, so their content never reaches a
scored logit.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from panm_jax.errors import UserError

__all__ = ["check_targets", "decoder_tokens", "greedy_tokens", "previous_tokens"]


def check_targets(targets, batch: int, num_outputs: int, num_classes: int) -> jax.Array:
    """``targets`` as int32 ``[B, T_out]``; a ``UserError`` naming it for a wrong shape or dtype (trace time)."""
    shape = tuple(jnp.shape(targets))
    if shape != (batch, num_outputs):
        raise UserError(
            f"targets: expected class ids of shape [B, T_out] = {(batch, num_outputs)} for teacher forcing, got {shape}"
        )
    if not jnp.issubdtype(jnp.result_type(targets), jnp.integer):
        raise UserError(
            f"targets: expected integer class ids in 0..{num_classes - 1} for teacher forcing "
            f"(a task with class targets), got {jnp.result_type(targets)}"
        )
    return jnp.asarray(targets, jnp.int32)


def previous_tokens(targets: jax.Array, bos: int) -> jax.Array:
    """The decoder's input tokens ``[B, T_out]``: ``BOS, y_0, ..., y_{T_out - 2}`` (targets shifted right)."""
    start = jnp.full(targets.shape[:-1] + (1,), bos, targets.dtype)
    return jnp.concatenate([start, targets[..., :-1]], axis=-1)


def greedy_tokens(logits_of: Callable[[jax.Array], jax.Array], batch: int, num_outputs: int, bos: int) -> jax.Array:
    """The decoder's input tokens when each step reads the previous step's argmax.

    ``logits_of(tokens [B, T_out]) -> logits [B, T_out, K]`` must be causal (the
    logits at ``t`` read tokens ``0..t`` only). Starting from ``BOS`` at step 0,
    step ``t`` sets token ``t + 1`` to ``argmax logits[:, t]``; ``T_out - 1`` passes
    in one ``lax.scan`` (no gradient flows through the argmax). Returns
    ``[B, T_out]`` int32 tokens; ``logits_of`` of them gives the greedy logits.
    """
    tokens = jnp.full((batch, num_outputs), bos, jnp.int32)

    def step(tokens, t):
        logits = logits_of(tokens)  # [B, T_out, K]
        choice = jnp.argmax(jax.lax.dynamic_index_in_dim(logits, t, axis=1, keepdims=False), axis=-1)
        return jax.lax.dynamic_update_index_in_dim(tokens, choice.astype(jnp.int32), t + 1, axis=1), None

    tokens, _ = jax.lax.scan(step, tokens, jnp.arange(num_outputs - 1))
    return jax.lax.stop_gradient(tokens)


def decoder_tokens(config, num_classes: int, targets, batch: int, num_outputs: int, logits_of):
    """The decoder's input tokens ``[B, T_out]``, or ``None`` for a model without teacher forcing.

    Teacher-forced (``config.teacher_forcing``): the targets shifted right behind
    BOS when ``targets`` are given, else the greedy tokens of ``logits_of``
    (``models.teacher_forcing``). Without teacher forcing ``targets`` are ignored.
    """
    if not config.teacher_forcing:
        return None
    if targets is not None:
        return previous_tokens(check_targets(targets, batch, num_outputs, num_classes), num_classes)
    return greedy_tokens(logits_of, batch, num_outputs, num_classes)
