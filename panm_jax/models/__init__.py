"""Whole sequence models behind one interface, and a name -> builder registry.

``build_model(name, input_size=..., output_size=..., **hparams)`` builds a model;
every model answers ``model(inputs [B, T_in, D], input_mask [B, T_in],
num_outputs, *, train, key, return_traces) -> logits [B, T_out, K]`` (see
``registry``). Registered (``panm-jax models`` prints the card):

* ``panm``: Pointer-Augmented Neural Memory (seed 001);
* ``ntm``, ``dnc``: memory models with a feed-forward, LSTM, GRU or Transformer
  controller (seeds 002, 003);
* ``stack_lstm``, ``queue_lstm``, ``deque_lstm``: Grefenstette et al. 2015 (seed 004);
* ``lstm``, ``lstm_attention``, ``pointer_network``, ``transformer``,
  ``transformer_rpe``: the baselines of seed 001.
"""

from panm_jax.models.registry import SequenceModel, build_model, get_config, list_models, register_model

__all__ = ["SequenceModel", "build_model", "get_config", "list_models", "register_model"]
