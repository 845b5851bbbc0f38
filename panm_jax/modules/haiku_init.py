"""Haiku's default initialisation of the layers a model shares with Haiku, for measuring it.

The option ``init="haiku"`` of the blank-step baselines (``models.blank_step_rnn``; off by
default): Delétang et al. 2023's released code builds its RNN and LSTM with dm-haiku's
defaults, which differ from this library's (``nnx.Linear``'s LeCun normal kernels, a
fan-in of its own for each of an LSTM's two projections). This module re-draws a built
model's parameters by Haiku's rules (dm-haiku 0.0.12), layer by layer:

================  ===========================================================================
this library      Haiku's default; ``TN(s)`` = a normal truncated to ``[-2, 2]``, times ``s``
================  ===========================================================================
``nnx.Linear``    ``hk.Linear``: kernel ``TN(1 / sqrt(I))``, ``I`` its fan-in; bias 0
(``I -> O``)
``LSTMCell``      ``hk.LSTM(D)``: ONE ``hk.Linear(4D)`` over ``[x; h]``, so both kernels
(``I -> D``)      ``TN(1 / sqrt(I + D))``; biases 0 (Haiku adds a constant 1 to the forget
                  gate; a model matching that sets its forget bias after this)
================  ===========================================================================

``TN(s)`` is Haiku's ``TruncatedNormal(stddev=s)``: the truncated draw scaled by ``s``
without Flax's correction for the truncation, so its standard deviation is about
``0.88 s``. A ``VanillaRNNCell`` (``hk.VanillaRNN``: two ``hk.Linear``) takes the
``nnx.Linear`` rule for each of its projections. Parameters of no such layer keep their
values. Every parameter of a layer above is re-drawn, from ``key`` alone, so the result
depends only on the model's structure and ``key``.
"""

from __future__ import annotations

import math

import jax
from flax import nnx

from panm_jax.modules.controllers import LSTMCell

__all__ = ["haiku_init"]


# Haiku's ``TruncatedNormal(stddev=s)`` is JAX's: a standard normal truncated to [-2, 2], times ``s``.
_truncated = jax.nn.initializers.truncated_normal


def haiku_init(module: nnx.Module, key: jax.Array) -> None:
    """Re-draw, in place, every parameter of ``module`` that lies in a layer with a Haiku default.

    The rules are the module docstring's table. An LSTM cell's two ``nnx.Linear`` take the
    cell's rule (one fan-in over ``[x; h]``), not ``nnx.Linear``'s; each parameter is drawn
    from its own key, folded from ``key`` in the module graph's order.
    """
    rules = []
    modules = [node for _, node in nnx.iter_graph(module) if isinstance(node, nnx.Module)]
    claimed: set[int] = set()
    for node in modules:  # the LSTM cells first: they claim their own Linears
        if isinstance(node, LSTMCell):
            draw = _truncated(1.0 / math.sqrt(node.in_features + node.hidden))
            for layer in (node.input_proj, node.hidden_proj):
                rules += [(layer.kernel, draw), (layer.bias, jax.nn.initializers.zeros)]
                claimed.add(id(layer.kernel))
    for node in modules:
        if isinstance(node, nnx.Linear) and id(node.kernel) not in claimed:
            rules.append((node.kernel, _truncated(1.0 / math.sqrt(node.in_features))))
            if node.bias is not None:
                rules.append((node.bias, jax.nn.initializers.zeros))
    for index, (param, draw) in enumerate(rules):
        value = param[...]
        param[...] = draw(jax.random.fold_in(key, index), value.shape, value.dtype)
