"""Recurrent controllers behind one small interface.

Every controller answers ``init_carry(batch_shape)`` and
``__call__(carry, x) -> (carry, h)``, so a model runs it inside the kernels'
``scan`` wrapper. The recurrent cells also split their work in two so that a
model can hoist the input projection out of the time loop when the inputs are
known in advance (an encoder): ``project_inputs(x)`` for all steps at once (one
large matmul), then ``step_projected(carry, gx_t)`` inside the loop.

Shapes: ``x [..., I]`` inputs, ``h [..., D]`` hidden states; leading axes (batch,
heads) are free.

Both cells fuse their gates into one matmul per operand (``[I, 3D]`` for the GRU,
``[I, 4D]`` for the LSTM) and follow the PyTorch conventions (GRU reset gate
applied to the projected hidden state; LSTM gate order i, f, g, o), so parameter
counts match ``torch.nn.GRU`` / ``torch.nn.LSTM`` (two bias vectors each).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

__all__ = ["GRUCell", "LSTMCell", "LSTMState"]


class GRUCell(nnx.Module):
    """A gated recurrent unit (Cho et al. 2014), the Pointer Unit and Controller of PANM.

    ``r = s(W_ir x + b_ir + W_hr h + b_hr)``, ``z = s(W_iz x + b_iz + W_hz h + b_hz)``,
    ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, ``h' = (1 - z) n + z h``.
    """

    def __init__(self, in_features: int, hidden: int, *, rngs: nnx.Rngs):
        self.in_features = in_features
        self.hidden = hidden
        self.input_proj = nnx.Linear(in_features, 3 * hidden, rngs=rngs)  # [I, 3D]: r, z, n
        self.hidden_proj = nnx.Linear(hidden, 3 * hidden, rngs=rngs)  # [D, 3D]: r, z, n

    def init_carry(self, batch_shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
        return jnp.zeros((*batch_shape, self.hidden), dtype)

    def project_inputs(self, x: jax.Array) -> jax.Array:
        """``[..., I] -> [..., 3D]``: the input half of the gates, for all steps at once."""
        return self.input_proj(x)

    def step_projected(self, h: jax.Array, gx: jax.Array) -> tuple[jax.Array, jax.Array]:
        gh = self.hidden_proj(h)
        d = self.hidden
        r = jax.nn.sigmoid(gx[..., :d] + gh[..., :d])
        z = jax.nn.sigmoid(gx[..., d : 2 * d] + gh[..., d : 2 * d])
        n = jnp.tanh(gx[..., 2 * d :] + r * gh[..., 2 * d :])
        h = (1.0 - z) * n + z * h
        return h, h

    def __call__(self, h: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        return self.step_projected(h, self.project_inputs(x))


class LSTMState(tuple):
    """``(h, c)``: hidden and cell states, each ``[..., D]``."""

    __slots__ = ()

    def __new__(cls, h, c):
        return super().__new__(cls, (h, c))

    h = property(lambda self: self[0])
    c = property(lambda self: self[1])


jax.tree_util.register_pytree_node(LSTMState, lambda s: (tuple(s), None), lambda _, xs: LSTMState(*xs))


class LSTMCell(nnx.Module):
    """A long short-term memory cell (Hochreiter & Schmidhuber 1997), gates i, f, g, o.

    ``c' = f * c + i * g``, ``h' = o * tanh(c')`` with ``i, f, o`` sigmoid and ``g``
    tanh of ``W_x x + b_x + W_h h + b_h``.
    """

    def __init__(self, in_features: int, hidden: int, *, rngs: nnx.Rngs):
        self.in_features = in_features
        self.hidden = hidden
        self.input_proj = nnx.Linear(in_features, 4 * hidden, rngs=rngs)  # [I, 4D]: i, f, g, o
        self.hidden_proj = nnx.Linear(hidden, 4 * hidden, rngs=rngs)  # [D, 4D]: i, f, g, o

    def init_carry(self, batch_shape: tuple[int, ...], dtype=jnp.float32) -> LSTMState:
        zeros = jnp.zeros((*batch_shape, self.hidden), dtype)
        return LSTMState(zeros, zeros)

    def project_inputs(self, x: jax.Array) -> jax.Array:
        """``[..., I] -> [..., 4D]``: the input half of the gates, for all steps at once."""
        return self.input_proj(x)

    def step_projected(self, carry: LSTMState, gx: jax.Array) -> tuple[LSTMState, jax.Array]:
        h, c = carry
        gates = gx + self.hidden_proj(h)
        d = self.hidden
        i = jax.nn.sigmoid(gates[..., :d])
        f = jax.nn.sigmoid(gates[..., d : 2 * d])
        g = jnp.tanh(gates[..., 2 * d : 3 * d])
        o = jax.nn.sigmoid(gates[..., 3 * d :])
        c = f * c + i * g
        h = o * jnp.tanh(c)
        return LSTMState(h, c), h

    def __call__(self, carry: LSTMState, x: jax.Array) -> tuple[LSTMState, jax.Array]:
        return self.step_projected(carry, self.project_inputs(x))
