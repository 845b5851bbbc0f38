"""Sequence encoders that turn a padded input batch into a memory of slots."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax.kernels.scan import scan
from panm_jax.modules.controllers import LSTMCell, LSTMState

__all__ = ["LSTMEncoder"]


class LSTMEncoder(nnx.Module):
    """A masked LSTM over the input: one output (memory slot) per input step.

    The input projection of every step is computed at once, outside the time
    loop; the recurrence runs through the kernels' ``scan`` wrapper with the
    input mask, so padding steps carry the state unchanged and output zeros.
    Trailing padding therefore changes neither the real slots nor the final state.

    Call: ``(inputs [B, T, I], mask [B, T]) -> (outputs [B, T, D], final LSTMState)``.
    """

    def __init__(self, in_features: int, hidden: int, *, remat: bool = False, rngs: nnx.Rngs):
        self.hidden = hidden
        self.remat = remat  # recompute each step in the backward pass (jax.checkpoint)
        self.cell = LSTMCell(in_features, hidden, rngs=rngs)

    def __call__(self, inputs: jax.Array, mask: jax.Array) -> tuple[jax.Array, LSTMState]:
        gx = self.cell.project_inputs(inputs)  # [B, T, 4D]: one matmul for all steps
        carry = self.cell.init_carry(inputs.shape[:1], gx.dtype)

        def run(carry, gx, mask):  # one example: gx [T, 4D], mask [T]
            return scan(self.cell.step_projected, carry, gx, mask, remat=self.remat)

        final, outputs = jax.vmap(run)(carry, gx, jnp.asarray(mask))
        return outputs, final
