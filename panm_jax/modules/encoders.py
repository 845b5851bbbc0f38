"""Sequence encoders that turn a padded input batch into a memory of slots."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax import checks
from panm_jax.kernels.scan import scan
from panm_jax.modules.controllers import GRUCell, LSTMCell, LSTMState
from panm_jax.modules.transformer import EncoderLayer, LayerNorm, sinusoidal_encoding

__all__ = ["BiGRUEncoder", "LSTMEncoder", "TransformerEncoder"]


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
    forward and backward outputs are added), offered beside the LSTM of Le et al. 2024 ("Plug, Play, and Generalize:
    Length
    Extrapolation with Pointer-Augmented Neural Memory")
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


class TransformerEncoder(nnx.Module):
    """A pre-LN Transformer encoder over the real input steps: one slot per input step.

    The encoder half of ``models.attention_models.TransformerSeq2Seq`` (the same
    operations in the same order, so with the same weights its slots are that
    model's ``memory``), offered as a backbone that writes PANM's memory
    ``M = Encoder(X)`` (Le et al. 2024, "Plug, Play, and Generalize: Length
    Extrapolation with Pointer-Augmented Neural Memory", §2 and §3.3, where the
    Transformer of Csordás et al. 2021 is the encoder):

        x_j    = W_e inputs_j (+ PE(j) when relative=False: sinusoidal positions)
        x      = EncoderLayer_l(x)  for l = 1..N_l  (self-attention over the real steps;
                                                      Transformer-XL RPE when relative=True)
        out_j  = LN(x_j) at real steps, 0 at padding steps

    Padding steps are never attended (key mask) and output zeros, so trailing
    padding changes no real slot. Any length works: the sinusoid and the relative
    distances are defined at every position.

    Call: ``(inputs [B, T, I], mask [B, T]) -> (outputs [B, T, D], weights [B, T, N_l, H, T])``,
    the second the self-attention weights of each layer (rows of padding queries 0),
    in place of a recurrent encoder's final state.
    """

    def __init__(
        self,
        in_features: int,
        d_model: int,
        *,
        num_layers: int = 1,
        num_heads: int = 8,
        ffn_hidden: int | None = None,
        relative: bool = False,
        rngs: nnx.Rngs,
    ):
        ffn_hidden = d_model if ffn_hidden is None else ffn_hidden
        num_layers = checks.positive_int("num_layers", num_layers)
        num_heads = checks.positive_int("num_heads", num_heads)
        ffn_hidden = checks.positive_int("ffn_hidden", ffn_hidden)
        if d_model % num_heads:
            raise ValueError(f"num_heads: expected a divisor of d_model = {d_model}, got {num_heads}")
        self.hidden = d_model
        self.relative = relative
        self.embed = nnx.Linear(in_features, d_model, rngs=rngs)  # W_e [I, D]
        self.layers = nnx.List(
            [EncoderLayer(d_model, num_heads, ffn_hidden, relative=relative, rngs=rngs) for _ in range(num_layers)]
        )
        self.norm = LayerNorm(d_model, rngs=rngs)

    def __call__(self, inputs: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
        mask = jnp.asarray(mask, bool)
        x = self.embed(inputs)  # [B, T, D]
        if not self.relative:
            x = x + sinusoidal_encoding(jnp.arange(inputs.shape[-2]), self.hidden).astype(x.dtype)
        key_mask = mask[:, None, None, :]  # [B, 1(H), 1(T_q), T]
        weights = []
        for layer in self.layers:
            x, w = layer(x, key_mask)
            weights.append(w)
        outputs = jnp.where(mask[..., None], self.norm(x), 0.0)
        weights = jnp.moveaxis(jnp.stack(weights, axis=1), 3, 1) * mask[:, :, None, None, None]  # [B, T, N_l, H, T]
        return outputs, weights
