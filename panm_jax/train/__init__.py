"""Training and evaluation: optax steps, orbax checkpoints, sharding, reports, CLI.

What goes here: a pure jitted ``train_step(state, batch)`` per length bucket, the
optimiser from a typed config, exact-resume checkpoints, data parallelism over a
``jax.sharding.Mesh`` and evaluation over length modes. (Empty until the training
issue.)
"""
