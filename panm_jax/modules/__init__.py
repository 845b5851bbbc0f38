"""Flax NNX modules: parameters and projections only.

These modules hold the parameters: they project a controller's output into a
kernel's ``XxxControls`` (through each kernel's ``controls_from_interface``),
``jax.vmap`` the one-example kernels of ``panm_jax.kernels`` over the batch (the
Stack, Queue and DeQue kernels take it natively), and provide the controllers
and encoders the models are built from. No memory mathematics lives here.

Modules:

* ``controllers``: feed-forward, LSTM and GRU controllers, ``make_controller``.
* ``encoders``: LSTM, bidirectional GRU and Transformer encoders.
* ``layers``: the ``MLP``.
* ``memory``: the NTM, DNC, Stack / Queue / DeQue, Stack-RNN and Tape-RNN memory
  modules (each a ``MemoryModule``) and their traces.
* ``panm``: PANM's Pointer Units and decoder (Le et al. 2024, "Plug, Play, and
  Generalize: Length Extrapolation with Pointer-Augmented Neural Memory");
  ``panm_extensions``: this library's own options of that decoder;
  ``panm_authors``: the choices of the authors' public code, as options.
* ``haiku_init``, ``pytorch_init``: dm-haiku's and torch.nn's default
  initialisations, re-drawn over a built model (the options ``init="haiku"``
  and ``init="pytorch"``).
* ``transformer``: attention with absolute or relative positions, encoder and
  decoder layers, the causal Transformer controller.

The classes and functions listed in ``__all__`` can be imported from here
(``from panm_jax.modules import NTMMemory``); each module loads on first use.
"""

from __future__ import annotations

from panm_jax._lazy import lazy_exports

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

# name -> the module that defines it.
_EXPORTS = {
    **dict.fromkeys(
        ["FeedForwardController", "GRUCell", "LSTMCell", "LSTMState", "make_controller"],
        "panm_jax.modules.controllers",
    ),
    **dict.fromkeys(["BiGRUEncoder", "LSTMEncoder", "TransformerEncoder"], "panm_jax.modules.encoders"),
    "MLP": "panm_jax.modules.layers",
    **dict.fromkeys(
        [
            "DNCMemory",
            "DNCTrace",
            "MemoryModule",
            "NTMMemory",
            "NTMTrace",
            "StackMemory",
            "StackRNNMemory",
            "StackRNNTrace",
            "StackTrace",
            "TapeRNNMemory",
            "TapeRNNTrace",
        ],
        "panm_jax.modules.memory",
    ),
    **dict.fromkeys(
        ["DecoderCarry", "DecoderConfig", "DecoderContext", "PANMDecoder", "PANMTraces", "PointerUnits"],
        "panm_jax.modules.panm",
    ),
    **dict.fromkeys(["ExtendedDecoder", "Ours"], "panm_jax.modules.panm_extensions"),
    **dict.fromkeys(["AuthorsCode", "AuthorsDecoder"], "panm_jax.modules.panm_authors"),
    **dict.fromkeys(
        [
            "DecoderLayer",
            "EncoderLayer",
            "LayerNorm",
            "MultiHeadAttention",
            "TransformerCache",
            "TransformerController",
            "causal_mask",
            "masked_softmax",
            "sinusoidal_encoding",
        ],
        "panm_jax.modules.transformer",
    ),
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from typing import Any

    from panm_jax.modules.controllers import FeedForwardController, GRUCell, LSTMCell, LSTMState, make_controller
    from panm_jax.modules.encoders import BiGRUEncoder, LSTMEncoder, TransformerEncoder
    from panm_jax.modules.layers import MLP
    from panm_jax.modules.memory import (
        DNCMemory,
        DNCTrace,
        MemoryModule,
        NTMMemory,
        NTMTrace,
        StackMemory,
        StackRNNMemory,
        StackRNNTrace,
        StackTrace,
        TapeRNNMemory,
        TapeRNNTrace,
    )
    from panm_jax.modules.panm import (
        DecoderCarry,
        DecoderConfig,
        DecoderContext,
        PANMDecoder,
        PANMTraces,
        PointerUnits,
    )
    from panm_jax.modules.panm_authors import AuthorsCode, AuthorsDecoder
    from panm_jax.modules.panm_extensions import ExtendedDecoder, Ours
    from panm_jax.modules.transformer import (
        DecoderLayer,
        EncoderLayer,
        LayerNorm,
        MultiHeadAttention,
        TransformerCache,
        TransformerController,
        causal_mask,
        masked_softmax,
        sinusoidal_encoding,
    )


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
