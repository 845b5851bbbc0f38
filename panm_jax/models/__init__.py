"""Whole sequence models behind one interface, and a name -> builder registry.

``build_model(name, input_size=..., output_size=..., **hparams)`` builds a model;
every model answers ``model(inputs [B, T_in, D], input_mask [B, T_in],
num_outputs, *, train, key, return_traces) -> logits [B, T_out, K]`` (see
``registry``). Registered: ``panm`` (PANM, seed 001) and ``lstm`` (the LSTM
encoder-decoder baseline).
"""

from panm_jax.models.registry import SequenceModel, build_model, get_config, list_models, register_model

__all__ = ["SequenceModel", "build_model", "get_config", "list_models", "register_model"]
