"""Whole sequence models behind one interface, and a name -> builder registry.

What goes here: ``build_model(name, **hparams)`` and every model answering
``model(inputs [B, T_in, D], input_mask [B, T_in], num_outputs) -> logits
[B, T_out, K]`` (plus optional traces). (Empty until the PANM issue.)
"""
