"""Additive (Bahdanau) attention, shared by the attention baselines and PANM's controller-attention option."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax.modules.transformer import masked_softmax

__all__ = ["AdditiveAttention"]


class AdditiveAttention(nnx.Module):
    """Additive ("concat") attention: ``e_j = v^T tanh(W_q s + W_k h_j)``, ``a = softmax(e)``.

    Bahdanau et al. 2014 (App. A.1.2: ``e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j)``)
    and the pointer of Vinyals et al. 2015 (Eq. 3: ``u^i_j = v^T tanh(W_1 e_j +
    W_2 d_i)``). The key projection ``W_k h_j`` is computed once for all steps
    (``project_keys``), outside the decoder loop.
    """

    def __init__(self, query_features: int, key_features: int, width: int, *, rngs: nnx.Rngs):
        self.key_proj = nnx.Linear(key_features, width, use_bias=False, rngs=rngs)  # U_a / W_1 [D_k, A]
        self.query_proj = nnx.Linear(query_features, width, rngs=rngs)  # W_a / W_2 [D_q, A]
        self.score = nnx.Linear(width, 1, use_bias=False, rngs=rngs)  # v [A, 1]

    def project_keys(self, keys: jax.Array) -> jax.Array:
        """``[B, T, D_k] -> [B, T, A]``."""
        return self.key_proj(keys)

    def __call__(self, query: jax.Array, projected_keys: jax.Array, mask: jax.Array) -> jax.Array:
        """``query [B, D_q]``, ``projected_keys [B, T, A]``, ``mask [B, T]`` -> weights ``[B, T]``."""
        scores = self.score(jnp.tanh(projected_keys + self.query_proj(query)[:, None, :]))[..., 0]  # [B, T]
        return masked_softmax(scores, mask)
