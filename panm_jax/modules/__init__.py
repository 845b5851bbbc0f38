"""Flax NNX modules: parameters and projections only.

What goes here: modules that hold parameters, project a controller's output into a
kernel's ``XxxControls`` with the seeds' activations (through each kernel's
``controls_from_interface``), ``jax.vmap`` the one-example kernels over the batch,
and the controllers (feed-forward, LSTM, GRU, Transformer). No memory mathematics
lives here: that is ``panm_jax.kernels``. (Empty until the PANM and models issues.)
"""
