"""Small feed-forward building blocks."""

from __future__ import annotations

import jax
from flax import nnx

__all__ = ["MLP"]


class MLP(nnx.Module):
    """A one-hidden-layer perceptron: ``Linear -> ReLU -> Linear``.

    PANM's ``g^a`` (address embedding), ``g^c`` (Mode-2 query) and ``g^o``
    (output) are of this form, 128 hidden units by default (Le et al. 2024 (Plug, Play, and Generalize: Length
    Extrapolation with Pointer-Augmented Neural Memory, TMLR), §3).
    """

    def __init__(self, in_features: int, hidden: int, out_features: int, *, rngs: nnx.Rngs):
        self.hidden_layer = nnx.Linear(in_features, hidden, rngs=rngs)
        self.output_layer = nnx.Linear(hidden, out_features, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.output_layer(jax.nn.relu(self.hidden_layer(x)))
