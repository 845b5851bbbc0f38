"""Query, key, value and output projections around an attention read, one set per head.

PANM's option ``attention_projections`` (off by default; not in Le et al. 2024, "Plug,
Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural Memory").
The authors' public PyTorch code reads Mode 1 and Mode 2 through
``torch.nn.MultiheadAttention`` with one head, which wraps the attention of Eq. 2 / 5
in four affine maps::

    q' = W_q q + b_q,   K' = K W_k + b_k,   V' = V W_v + b_v      (per slot)
    w  = softmax(tau score(q', K'))
    r  = W_o (w V') + b_o

Heads are stacked on a leading axis (one batched matmul serves every head), each
head with its own parameters, as ``PointerUnits`` does. ``keys`` and ``values`` are
applied to the whole memory once per sequence; ``queries`` and ``output`` once per
decoding step. The initialisation is ``nnx.Linear``'s (LeCun normal kernels, zero
biases); ``modules.pytorch_init`` gives PyTorch's instead.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

__all__ = ["AttentionProjections"]


class AttentionProjections(nnx.Module):
    """``H`` heads' ``W_q, W_k, W_v, W_o`` (with biases), stacked on a leading head axis.

    Args:
      heads: ``H``.
      query_features, key_features, value_features: the widths of what each projects.
      width: ``D``, the width of the projected queries, keys and values and of the output.
    """

    def __init__(
        self, heads: int, query_features: int, key_features: int, value_features: int, width: int, *, rngs: nnx.Rngs
    ):
        init = nnx.initializers.lecun_normal(batch_axis=(0,))  # the head axis is not fan-in
        self.heads = heads
        self.width = width
        shapes = {"query": query_features, "key": key_features, "value": value_features, "output": width}
        for name, features in shapes.items():
            setattr(self, f"{name}_kernel", nnx.Param(init(rngs.params(), (heads, features, width))))  # [H, I, D]
            setattr(self, f"{name}_bias", nnx.Param(jnp.zeros((heads, width))))  # [H, D]

    def queries(self, x: jax.Array) -> jax.Array:
        """``[B, H, I_q] -> [B, H, D]``: ``W_q q + b_q``, each head its own query."""
        return jnp.einsum("bhi,hid->bhd", x, self.query_kernel[...]) + self.query_bias[...]

    def keys(self, x: jax.Array) -> jax.Array:
        """``[B, N, I_k] -> [B, H, N, D]``: every head's projection of the same keys."""
        return jnp.einsum("bni,hid->bhnd", x, self.key_kernel[...]) + self.key_bias[...][None, :, None, :]

    def values(self, x: jax.Array) -> jax.Array:
        """``[B, L, I_v] -> [B, H, L, D]``: every head's projection of the same values."""
        return jnp.einsum("bli,hid->bhld", x, self.value_kernel[...]) + self.value_bias[...][None, :, None, :]

    def output(self, x: jax.Array) -> jax.Array:
        """``[B, H, D] -> [B, H, D]``: ``W_o r + b_o`` per head."""
        return jnp.einsum("bhi,hid->bhd", x, self.output_kernel[...]) + self.output_bias[...]
