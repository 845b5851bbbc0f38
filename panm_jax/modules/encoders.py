"""Sequence encoders that turn a padded input batch into a memory of slots."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax.kernels.scan import scan
from panm_jax.modules.controllers import GRUCell, LSTMCell, LSTMState

__all__ = ["BiGRUEncoder", "LSTMEncoder"]


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


class BiGRUEncoder(nnx.Module):
    """A masked bidirectional GRU, its two directions summed: one slot per input step.

    The encoder of the PANM authors' public code (a bidirectional GRU whose
    forward and backward outputs are added), offered beside seed 001's LSTM
    (§3.1) so the two can be compared. Two ``GRUCell``s with their own
    parameters: the forward one reads steps ``1..T``, the backward one reads
    them in reverse, each through the ``scan`` wrapper with the input mask, so
    padding steps carry the state and output zeros in both directions; the
    backward direction of an example therefore starts at its last real step,
    wherever its padding is.

        out_t = GRU_fwd(x_1..x_t) + GRU_bwd(x_T..x_t)

    Call: ``(inputs [B, T, I], mask [B, T]) -> (outputs [B, T, D], (h_fwd, h_bwd))``
    with the final hidden state of each direction, ``[B, D]`` each.
    """

    def __init__(self, in_features: int, hidden: int, *, remat: bool = False, rngs: nnx.Rngs):
        self.hidden = hidden
        self.remat = remat  # recompute each step in the backward pass (jax.checkpoint)
        self.forward_cell = GRUCell(in_features, hidden, rngs=rngs)
        self.backward_cell = GRUCell(in_features, hidden, rngs=rngs)

    def __call__(self, inputs: jax.Array, mask: jax.Array) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
        g_fwd = self.forward_cell.project_inputs(inputs)  # [B, T, 3D]: one matmul for all steps
        g_bwd = self.backward_cell.project_inputs(inputs)
        h0 = self.forward_cell.init_carry(inputs.shape[:1], g_fwd.dtype)

        def run(h_fwd, h_bwd, g_fwd, g_bwd, mask):  # one example: g [T, 3D], mask [T]
            h_fwd, out_fwd = scan(self.forward_cell.step_projected, h_fwd, g_fwd, mask, remat=self.remat)
            h_bwd, out_bwd = scan(self.backward_cell.step_projected, h_bwd, g_bwd[::-1], mask[::-1], remat=self.remat)
            return (h_fwd, h_bwd), out_fwd + out_bwd[::-1]

        finals, outputs = jax.vmap(run)(h0, h0, g_fwd, g_bwd, jnp.asarray(mask))
        return outputs, finals
