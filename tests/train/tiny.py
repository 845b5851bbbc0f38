"""The tiny run every training test uses: PANM of width 8 on Copy with training lengths 1..3.

Small enough that a whole run (steps, evaluation, checkpoints, results) takes
seconds, and shared by the tests so that the persistent compilation cache
serves one set of shapes.
"""

from __future__ import annotations

from panm_jax.train.config import TrainConfig, load_config

TINY = [
    "task_options.max_train_length=3",
    "model_options.hidden=8",
    "model_options.mlp_hidden=8",
    "model_options.address_bits=5",
    "batch_size=8",
    "eval_examples=8",
    "eval_batch_size=8",
    'eval_modes=["L", "2L+1"]',
    'select_mode="L"',
    "optimizer.name=adam",
    "optimizer.learning_rate=0.003",
    "log_every=1",
]


# The finished run of the ``finished_run`` fixture: checkpoints/4, checkpoints/8 and best/8.
FINISHED = {"num_steps": 8, "eval_every": 8}


def tiny_config(**changes) -> TrainConfig:
    config = load_config(None, TINY + ["num_steps=12", "eval_every=6", "checkpoint_every=4"])
    return config.replace(**changes)
