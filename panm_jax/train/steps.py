"""Pure train and eval steps over a split NNX model.

The functional loop of Flax's "Performance considerations" guide: the model is
``nnx.split`` once into a static ``graphdef`` and a ``State`` of parameters, and
the steps are plain functions of arrays that ``jax.jit`` compiles once per batch
shape (one shape per length bucket). ``nnx.jit`` would walk the object graph in
Python on every call, which shows at CPU step sizes.

    graphdef, state = init_train_state(model, optimizer, seed)
    train_step = jax.jit(make_train_step(graphdef, optimizer, task))
    state, metrics = train_step(state, batch)

The number of decoder steps is read from ``batch.targets.shape[1]`` (static
under ``jit``), so a bucket's shape fixes it.

Mixed precision (``compute_dtype="bfloat16"``): the parameters and the optimiser
state stay float32; each forward pass casts the floating parameters and the
inputs to bfloat16, so activations, controller states and memories are bfloat16,
and the logits are cast back to float32 before the loss. Gradients reach the
float32 parameters through the casts. Several kernels step their 16-bit states in
float32 and round the new state back (the NTM, the Stack, Queue and DeQue, PANM's
pointer scores; each kernel's docstring says so); the DNC steps in bfloat16, and
its allocation then drifts from float64's over long rollouts
(``tests/kernels/test_bf16_rollouts.py``). bfloat16 keeps float32's exponent
range, so no loss scaling is needed; float16, which would need it, is not offered.

Checks of a step's arguments (``check_step_arguments``), each a ``ValueError``
naming the argument, what was expected and what was given. At trace time, free
under ``jit``: ``state`` is a ``TrainState`` whose ``step`` is an integer
scalar and whose ``key`` a raw ``uint32 [2]`` key (or a typed key ``[]``); the
learning rate of ``train_step_at`` a real scalar. Where the values are concrete
(an eager call; under ``jit`` nothing is known, and the training loop checks
every step's loss, gradient norm and parameters' norm, ``train.engine.LossWatch``):
the parameters are all finite, the learning rate finite and positive. The
batch is checked by the model (shapes, dtypes; NaN at a real input step) and
the loss (targets' shapes, dtypes and class ids).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from panm_jax import checks
from panm_jax.errors import UserError
from panm_jax.train.config import COMPUTE_DTYPES  # the dtypes a forward pass may compute in

__all__ = [
    "COMPUTE_DTYPES",
    "ModelDef",
    "ModelStateError",
    "TrainState",
    "cast_floating",
    "check_step_arguments",
    "init_train_state",
    "make_eval_step",
    "make_train_step",
    "merge_model",
    "split_model",
]


class TrainState(NamedTuple):
    """Everything a training run carries between steps (arrays only)."""

    params: Any  # nnx.State of the model's parameters
    opt_state: Any  # optax state
    step: jax.Array  # [] int32, steps taken
    key: jax.Array  # [2] uint32 PRNG key for training randomness (PANM's base addresses)


class ModelDef(NamedTuple):
    """A model split for training that holds random-number streams besides its parameters (e.g. Flax's
    ``nnx.RNN``): its static graph and those streams (``nnx.RngState``), kept as built: not trained, not
    checkpointed (the same model built again has them again), not advanced by a forward pass. A model
    with parameters only is split into a plain ``nnx.GraphDef``; ``merge_model`` takes either."""

    graph: Any  # nnx.GraphDef
    fixed: Any  # nnx.State of the model's nnx.RngState variables


class ModelStateError(UserError):
    """A model holds state that the trainer would hold fixed although the model means it to change."""


def split_model(model: nnx.Module):
    """``(graphdef, params)``: the model's ``nnx.Param`` state and the rest of it (``ModelDef``).

    Raises ``ModelStateError`` naming each variable that is neither a parameter nor a random-number
    stream (e.g. ``nnx.BatchNorm``'s ``BatchStat``): the train step is a pure function of the parameters
    and would silently never update it.
    """
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    flat = list(nnx.to_flat_state(rest))
    other = [f"{'.'.join(map(str, path))} ({type(v).__name__})" for path, v in flat if not isinstance(v, nnx.RngState)]
    if other:
        raise ModelStateError(
            f"model: expected its state to be nnx.Param variables (trained) and random-number streams (kept as "
            f"built), got {', '.join(other)}: the trainer would never update these"
        )
    return (ModelDef(graphdef, rest) if flat else graphdef), params


def merge_model(graphdef, params) -> nnx.Module:
    """The model of ``split_model``'s ``graphdef`` with ``params``."""
    if isinstance(graphdef, ModelDef):
        # New variables in this trace: a stream drawn from in the forward pass (nnx.RNN's carry) advances
        # its own copy, discarded after the call.
        return nnx.merge(graphdef.graph, params, jax.tree_util.tree_map(lambda x: x, graphdef.fixed))
    return nnx.merge(graphdef, params)


def init_train_state(model: nnx.Module, optimizer: optax.GradientTransformation, seed: int = 0):
    """Split ``model`` once (``split_model``); returns ``(graphdef, TrainState)``."""
    graphdef, params = split_model(model)
    return graphdef, TrainState(
        params=params,
        opt_state=optimizer.init(params),
        step=jnp.zeros((), jnp.int32),
        key=jax.random.PRNGKey(seed),  # raw uint32 [2]: a plain array, checkpointed as such
    )


def is_aligned(task) -> bool:
    """Whether ``task`` wants one output per input step (``output_mode == "aligned"``: the models' ``aligned``)."""
    return getattr(task, "output_mode", "after_input") == "aligned"


def is_teacher_forced(model) -> bool:
    """Whether ``model``'s decoder reads the previous target token (``teacher_forcing``, ``models.teacher_forcing``)."""
    return bool(getattr(getattr(model, "config", None), "teacher_forcing", False))


def _compute_dtype(name: str):
    if name not in COMPUTE_DTYPES:
        raise ValueError(f"compute_dtype: expected one of {', '.join(COMPUTE_DTYPES)}, got {name!r}")
    return jnp.dtype(name)


def _concrete(tree) -> bool:
    """Whether every leaf of ``tree`` holds values (no tracer of ``jit``, ``grad`` or ``vmap``)."""
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tree))


def check_step_arguments(state, learning_rate=None) -> None:
    """Raise ``ValueError`` naming the argument unless ``state`` (and ``learning_rate``, where given) fit a
    train step (module docstring): shapes and dtypes at trace time, values where they are concrete."""
    if not isinstance(state, TrainState):
        raise ValueError(f"state: expected a TrainState (init_train_state), got {type(state).__name__}")
    step, key = (x if hasattr(x, "dtype") else np.asarray(x) for x in (state.step, state.key))
    if jnp.shape(step) != () or not jnp.issubdtype(step.dtype, jnp.integer):
        raise ValueError(f"state.step: expected an integer scalar [], got shape {jnp.shape(step)} {step.dtype}")
    typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
    if (typed and jnp.shape(key) != ()) or (not typed and (jnp.shape(key) != (2,) or key.dtype != jnp.uint32)):
        raise ValueError(
            f"state.key: expected a raw PRNG key uint32 [2] (jax.random.PRNGKey) or a typed key [], got shape "
            f"{jnp.shape(key)} {key.dtype}"
        )
    if learning_rate is not None:
        dtype = jnp.result_type(learning_rate)
        if jnp.shape(learning_rate) != () or not (
            jnp.issubdtype(dtype, jnp.floating) or jnp.issubdtype(dtype, jnp.integer)
        ):
            raise ValueError(f"learning_rate: expected a real scalar [], got shape {jnp.shape(learning_rate)} {dtype}")
        if _concrete(learning_rate):
            checks.positive_number("learning_rate", float(learning_rate))
    if _concrete(state.params):  # NaN or infinite parameters: every loss and gradient after them is NaN
        leaves = jax.tree_util.tree_leaves_with_path(state.params)
        for path, leaf in leaves:
            values = np.asarray(leaf)
            if np.issubdtype(values.dtype, np.inexact) and not np.isfinite(values).all():
                bad = int(values.size - np.count_nonzero(np.isfinite(values)))
                raise ValueError(
                    f"state.params: expected finite values, got {bad} NaN or infinite of {values.size} in "
                    f"{jax.tree_util.keystr(path)}"
                )


def cast_floating(tree, dtype):
    """``tree`` with every floating leaf cast to ``dtype`` (integer and boolean leaves unchanged)."""
    return jax.tree_util.tree_map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, tree)


def _forward(graphdef, params, batch, *, aligned: bool, train: bool, key, compute_dtype="float32"):
    """The model's float32 logits on ``batch``, computed in ``compute_dtype`` (module docstring). A
    teacher-forced model gets the targets in training and decodes greedily (its own previous outputs)
    in evaluation."""
    dtype = _compute_dtype(compute_dtype)
    inputs = batch.inputs
    if dtype != jnp.float32:
        params, inputs = cast_floating(params, dtype), jnp.asarray(inputs).astype(dtype)
    model = merge_model(graphdef, params)
    num_outputs = batch.targets.shape[1]
    extra = {"targets": batch.targets} if train and is_teacher_forced(model) else {}
    logits = model(inputs, batch.input_mask, num_outputs, aligned=aligned, train=train, key=key, **extra)
    return logits.astype(jnp.float32)


def make_train_step(
    graphdef,
    optimizer: optax.GradientTransformation | Callable[[jax.Array], optax.GradientTransformation],
    task,
    *,
    skip_nonfinite: bool = False,
    compute_dtype: str = "float32",
):
    """``train_step(state, batch) -> (state, metrics)``: forward, loss, backward, update.

    ``metrics`` holds ``loss``, the task's metrics on this (training) batch,
    the global gradient norm before clipping (``grad_norm``) and the global norm
    of the parameters after the update (``param_norm``: not finite when a
    parameter is not, or when the parameters are too large for their squares to
    sum in float32). With ``skip_nonfinite`` a batch whose loss, gradient norm or
    updated parameters' norm is NaN or infinite leaves the parameters and the
    optimiser state as they were (selected on device, no host sync); the step
    counter and the PRNG key advance as for any batch, so the data stream goes
    on to the next batch. ``compute_dtype``: the forward pass's dtype (``COMPUTE_DTYPES``; module
    docstring); the loss, the gradients and the update are float32.

    ``optimizer`` is an optax transformation, or a function of a learning rate that makes one
    (``lambda lr: make_optimizer(config.optimizer, num_steps, learning_rate=lr)``). With a function the step
    is ``train_step(state, batch, learning_rate) -> (state, metrics)``, the rate a [] float32 array: runs at
    several rates are then one program, ``vmap`` over their rates (``train/seeds.py``).

    Each call first checks its ``state`` and learning rate (``check_step_arguments``; ``ValueError``).
    """

    aligned = is_aligned(task)
    _compute_dtype(compute_dtype)

    def step(state: TrainState, batch, optimizer: optax.GradientTransformation):
        key, step_key = jax.random.split(state.key)

        def loss_fn(params):
            logits = _forward(
                graphdef, params, batch, aligned=aligned, train=True, key=step_key, compute_dtype=compute_dtype
            )
            return task.loss(logits, batch), logits

        (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = {
            "loss": loss,
            "grad_norm": optax.tree_utils.tree_norm(grads),
            "param_norm": optax.tree_utils.tree_norm(params),
            **task.metrics(logits, batch),
        }
        if skip_nonfinite:
            finite = jnp.isfinite(loss) & jnp.isfinite(metrics["grad_norm"]) & jnp.isfinite(metrics["param_norm"])
            params, opt_state = jax.tree_util.tree_map(
                lambda new, old: jnp.where(finite, new, old), (params, opt_state), (state.params, state.opt_state)
            )
        return TrainState(params, opt_state, state.step + 1, key), metrics

    if isinstance(optimizer, optax.GradientTransformation):

        def train_step(state: TrainState, batch):
            check_step_arguments(state)
            return step(state, batch, optimizer)

        return train_step

    def train_step_at(state: TrainState, batch, learning_rate: jax.Array):
        check_step_arguments(state, learning_rate)
        return step(state, batch, optimizer(learning_rate))

    return train_step_at


def make_eval_step(graphdef, task, *, compute_dtype: str = "float32"):
    """``eval_step(params, batch, key) -> metrics`` (``train=False``: a_B = 0 for PANM, or drawn from ``key``
    with ``random_base_at_eval``), the forward pass in ``compute_dtype``."""

    aligned = is_aligned(task)
    _compute_dtype(compute_dtype)

    def eval_step(params, batch, key=None):
        logits = _forward(graphdef, params, batch, aligned=aligned, train=False, key=key, compute_dtype=compute_dtype)
        return {"loss": task.loss(logits, batch), **task.metrics(logits, batch)}

    return eval_step
