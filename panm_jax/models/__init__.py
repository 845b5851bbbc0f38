"""Whole sequence models behind one interface, and a name -> builder registry.

``build_model(name, input_size=..., output_size=..., **hparams)`` builds a model;
every model answers ``model(inputs [B, T_in, D], input_mask [B, T_in],
num_outputs, *, aligned, train, key, return_traces) -> logits [B, T_out, K]``
(see ``registry``; ``aligned=True``, one output per input step, only for the
causal recurrent models: ``supports_aligned(name)``). ``list_models()`` gives each registered name with a one-line
description, ``model_options(name)`` each option of its config with its type and
default; ``panm-jax models`` prints the card, ``panm-jax models show NAME`` the
options. Registered:

* ``panm``, ``panm_transformer``: Pointer-Augmented Neural Memory (Le et al. 2024,
  "Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural
  Memory") on an LSTM, bidirectional GRU or Transformer encoder, or with its
  Controller on a Transformer decoder;
* ``ntm``, ``dnc``: the Neural Turing Machine (Graves et al. 2014) and the
  Differentiable Neural Computer (Graves et al. 2016) with a feed-forward, LSTM,
  GRU or Transformer controller;
* ``stack_lstm``, ``queue_lstm``, ``deque_lstm``: an LSTM with a continuous
  neural Stack, Queue or DeQue (Grefenstette et al. 2015);
* ``stack_rnn``, ``tape_rnn``: the Stack-RNN (Joulin & Mikolov 2015) and the
  Tape-RNN (Delétang et al. 2023);
* ``lstm``, ``lstm_attention``, ``pointer_network``, ``transformer``,
  ``transformer_rpe``, ``universal_transformer``, ``universal_transformer_rpe``:
  the baselines Le et al. (2024) compare PANM with.

Modules: ``registry`` (the interface and the registry), ``panm``,
``panm_transformer``, ``memory_models``, ``lstm``, ``attention_models`` (the
models). A model's module is imported when ``build_model`` first builds it.
"""

from panm_jax.models.registry import (
    AlignedModeError,
    SequenceModel,
    aligned_models,
    build_model,
    get_config,
    list_models,
    model_options,
    register_model,
    supports_aligned,
)

__all__ = [
    "AlignedModeError",
    "SequenceModel",
    "aligned_models",
    "build_model",
    "get_config",
    "list_models",
    "model_options",
    "register_model",
    "supports_aligned",
]
