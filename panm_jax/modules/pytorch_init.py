"""PyTorch's default initialisation of the layers a model shares with PyTorch, for measuring it.

PANM's option ``init="pytorch"`` (``models.panm.PANMConfig``; off by default): the
authors' public PyTorch code keeps ``torch.nn``'s default initialisations, which differ
from this library's (``nnx.Linear``'s LeCun normal kernels and zero biases). This
module re-draws a built model's parameters by PyTorch's rules, layer by layer:

==============================  ===================================================================
this library                    PyTorch's default (``torch.nn``), ``U(b)`` = uniform on ``[-b, b]``
==============================  ===================================================================
``nnx.Linear(I, O)``            ``nn.Linear``: kernel and bias ``U(1 / sqrt(I))`` (Kaiming uniform
                                with ``a = sqrt(5)``: ``sqrt(6 / ((1 + 5) I)) = 1 / sqrt(I)``)
``GRUCell``, ``LSTMCell``,      ``nn.GRU`` / ``nn.LSTM`` of hidden size ``D``: every weight and bias
``PointerUnits`` (width ``D``)  ``U(1 / sqrt(D))``
``AttentionProjections``        ``nn.MultiheadAttention(E, kdim, vdim)``: ``W_q, W_k, W_v`` Xavier
(width ``E``)                   uniform, as one ``[3E, E]`` matrix (``U(sqrt(6 / 4E))``) when
                                ``kdim = vdim = E``, else each ``U(sqrt(6 / (I + E)))``; their
                                biases 0; ``W_o`` as ``nn.Linear(E, E)``'s weight, its bias 0
``AdditiveAttention``           the authors' ``Attention``: one ``nn.Linear`` over
(widths ``D_q, D_k -> A``)      ``[query; key]`` (``W_q``, its bias and ``W_k`` ``U(1 / sqrt(D_q +
                                D_k))``) and ``v`` ``U(1 / sqrt(A))``
``nnx.Embed``                   ``nn.Embedding``: ``N(0, 1)``
==============================  ===================================================================

Parameters of no such layer (PANM's inverse temperatures, layer norms) keep their
values. Every parameter of a layer above is re-drawn, from ``key`` alone, so the
result depends only on the model's structure and ``key``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
from flax import nnx

from panm_jax.modules.additive_attention import AdditiveAttention
from panm_jax.modules.attention_projections import AttentionProjections
from panm_jax.modules.controllers import GRUCell, LSTMCell
from panm_jax.modules.panm import PointerUnits

__all__ = ["pytorch_init"]


Init = Callable[[jax.Array, tuple[int, ...], Any], jax.Array]  # (key, shape, dtype) -> values
_ZERO: Init = jax.nn.initializers.zeros
_NORMAL: Init = jax.nn.initializers.normal(1.0)


def _uniform(bound: float) -> Init:
    """``U(-bound, bound)``."""
    return lambda key, shape, dtype: jax.random.uniform(key, shape, dtype, -bound, bound)


def _recurrent(module) -> list[tuple[nnx.Param, Init]]:
    # nn.GRU / nn.LSTM: every weight and bias U(1 / sqrt(D)), D the hidden size.
    draw = _uniform(1.0 / math.sqrt(module.hidden))
    return [(node, draw) for _, node in nnx.iter_graph(module) if isinstance(node, nnx.Param)]


def _projections(module: AttentionProjections) -> list[tuple[nnx.Param, Init]]:
    # nn.MultiheadAttention: Xavier-uniform in-projections (one [3E, E] matrix when kdim = vdim = E),
    # zero in-projection biases, out_proj as nn.Linear(E, E)'s weight with a zero bias.
    width = module.width
    inputs = {name: getattr(module, f"{name}_kernel")[...].shape[1] for name in ("query", "key", "value")}
    joint = inputs["key"] == width and inputs["value"] == width
    rules = []
    for name, features in inputs.items():
        bound = math.sqrt(6.0 / (4 * width)) if joint else math.sqrt(6.0 / (features + width))
        rules += [(getattr(module, f"{name}_kernel"), _uniform(bound)), (getattr(module, f"{name}_bias"), _ZERO)]
    return rules + [(module.output_kernel, _uniform(1.0 / math.sqrt(width))), (module.output_bias, _ZERO)]


def _additive(module: AdditiveAttention) -> list[tuple[nnx.Param, Init]]:
    # The authors' Attention: attn = nn.Linear(D_q + D_k, A) over [query; key], v ~ U(1 / sqrt(A)).
    draw = _uniform(1.0 / math.sqrt(module.query_proj.in_features + module.key_proj.in_features))
    linear = [(p, draw) for p in (module.query_proj.kernel, module.query_proj.bias, module.key_proj.kernel)]
    return linear + [(module.score.kernel, _uniform(1.0 / math.sqrt(module.score.in_features)))]


def _linear(module: nnx.Linear) -> list[tuple[nnx.Param, Init]]:
    draw = _uniform(1.0 / math.sqrt(module.in_features))
    return [(p, draw) for p in (module.kernel, module.bias) if p is not None]


def pytorch_init(module: nnx.Module, key: jax.Array) -> None:
    """Re-draw, in place, every parameter of ``module`` that lies in a layer with a PyTorch default.

    The rules are the module docstring's table. A layer inside a recurrent cell,
    an ``AttentionProjections`` or an ``AdditiveAttention`` takes that layer's
    rule, not ``nnx.Linear``'s; each parameter is drawn from its own key, folded
    from ``key`` in the module graph's order.
    """
    rules: list[tuple[nnx.Param, Init]] = []
    modules = [node for _, node in nnx.iter_graph(module) if isinstance(node, nnx.Module)]
    for node in modules:  # the composite layers first: they claim their own Linears
        if isinstance(node, (GRUCell, LSTMCell, PointerUnits)):
            rules += _recurrent(node)
        elif isinstance(node, AttentionProjections):
            rules += _projections(node)
        elif isinstance(node, AdditiveAttention):
            rules += _additive(node)
    claimed = {id(p) for p, _ in rules}
    for node in modules:
        if isinstance(node, nnx.Linear) and id(node.kernel) not in claimed:
            rules += _linear(node)
        elif isinstance(node, nnx.Embed):
            rules.append((node.embedding, _NORMAL))
    for index, (param, draw) in enumerate(rules):
        value = param[...]
        param[...] = draw(jax.random.fold_in(key, index), value.shape, value.dtype)
