"""The one model interface and the name -> builder registry.

Every model in panm_jax is a Flax NNX module answering

    model(inputs [B, T_in, D_in], input_mask [B, T_in], num_outputs, *,
          aligned=False, train=False, key=None, return_traces=False)
        -> logits [B, T_out, K]                    (T_out = num_outputs)
        -> (logits, traces)                        with return_traces=True

``num_outputs`` is a static Python int (one compilation per output length);
``aligned`` picks how outputs line up with inputs, the task's ``output_mode``
(``panm_jax.tasks.base``): ``False`` (``"after_input"``) reads the whole input,
then emits ``num_outputs`` outputs on blank steps; ``True`` (``"aligned"``, Dyck)
emits one output per input step (``num_outputs == T_in``), output ``t`` computed
from inputs ``0..t`` only. Only causal recurrent models have the aligned mode
(``supports_aligned``: the LSTM and the memory-augmented RNNs); the
encoder-decoders read the whole input before their first output and raise
``AlignedModeError`` (a ``UserError``) when asked for it.
``train`` switches training-only behaviour (PANM's random base address);
``key`` is a JAX PRNG key for that randomness. Models are built by name from a
typed config: ``build_model("panm", input_size=12, output_size=10, hidden=128)``;
``model_options(name)`` gives each field of that config with its type and
default. An unknown name raises ``UnknownNameError`` (``panm_jax.errors``; a
``ValueError``) listing the known names.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import typing
from collections.abc import Callable
from typing import Any, Protocol

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax.checks import did_you_mean, positive_int, unknown_name
from panm_jax.errors import UserError

__all__ = [
    "INPUT_BOUND",
    "AlignedModeError",
    "SequenceModel",
    "aligned_models",
    "build_model",
    "get_config",
    "list_models",
    "model_options",
    "prepare_inputs",
    "refuse_aligned",
    "register_model",
    "supports_aligned",
]


class SequenceModel(Protocol):
    """What every model answers (see the module docstring)."""

    def __call__(
        self,
        inputs: jax.Array,
        input_mask: jax.Array,
        num_outputs: int,
        *,
        aligned: bool = False,
        train: bool = False,
        key: jax.Array | None = None,
        return_traces: bool = False,
    ) -> Any: ...


class AlignedModeError(UserError):
    """A model without the aligned mode (one output per input step) was asked for it."""

    def __init__(self, model: str):
        super().__init__(
            f"aligned: model {model!r} reads the whole input before its first output, so it has no aligned "
            "mode (one output per input step, from the inputs so far), which this task needs; models with "
            f"it: {', '.join(aligned_models())}"
        )


# Inputs beyond this magnitude are clipped to it (a documented bound, far above any
# encoding a task uses): every model is then finite for every finite input, since
# |W x| stays below the float32 maximum (3.4e38) for weights and widths far beyond
# any trained model's (|w| D_in < 3e8), and the Transformers' layer norms are
# scale-free (``modules.transformer.LayerNorm``). Below it, inputs are used as given.
INPUT_BOUND = 1e30


def refuse_aligned(model: str, aligned) -> None:
    """Raise ``AlignedModeError`` for ``model`` (a model without the aligned mode) when ``aligned`` is true."""
    if aligned:
        raise AlignedModeError(model)


def prepare_inputs(inputs, input_mask, num_outputs, input_size: int | None = None, *, aligned: bool = False):
    """Validate the one call's arguments (trace time) and make padding inert.

    Checks, each a ``ValueError`` naming the argument, what was expected and what was
    given: ``inputs`` is a real floating ``[B, T_in, D_in]`` array with ``B >= 1``,
    ``T_in >= 1`` (and ``D_in == input_size`` when given); ``input_mask`` is
    ``[B, T_in]`` (bool, or numbers read as ``!= 0``); ``num_outputs`` is a positive
    Python int (it is static: one compilation per output length), equal to ``T_in``
    when ``aligned`` (a Python bool).

    Returns ``(inputs, mask)``: ``inputs`` with every padded step (``mask`` false)
    replaced by zeros and every entry clipped to ``[-INPUT_BOUND, INPUT_BOUND]``;
    ``mask`` as bool. Whatever the padding held (NaN, inf, 1e30), the logits at real
    positions and every gradient are then those of zero padding: ``where`` passes no
    cotangent to the branch it does not select.
    """
    shape = tuple(jnp.shape(inputs))
    if len(shape) != 3:
        raise ValueError(f"inputs: expected shape [B, T_in, D_in], got {shape}")
    dtype = jnp.result_type(inputs)
    if not jnp.issubdtype(dtype, jnp.floating):
        raise ValueError(f"inputs: expected a real floating dtype (float32, bfloat16, ...), got {dtype}")
    if shape[0] < 1 or shape[1] < 1:
        raise ValueError(f"inputs: expected at least one example and one input step [B >= 1, T_in >= 1], got {shape}")
    if input_size is not None and shape[-1] != input_size:
        raise ValueError(f"inputs: expected D_in = {input_size} (the model's input_size), got shape {shape}")
    if tuple(jnp.shape(input_mask)) != shape[:2]:
        raise ValueError(f"input_mask: expected shape [B, T_in] = {shape[:2]}, got {tuple(jnp.shape(input_mask))}")
    mask_dtype = jnp.result_type(input_mask)
    if jnp.issubdtype(mask_dtype, jnp.complexfloating):
        raise ValueError(f"input_mask: expected bool (or 0/1 numbers), got {mask_dtype}")
    num_outputs = positive_int("num_outputs", num_outputs)  # static: it sets the output's shape
    if not isinstance(aligned, bool):
        raise ValueError(f"aligned: expected a Python bool (it is static), got {aligned!r}")
    if aligned and num_outputs != shape[1]:
        raise ValueError(
            f"num_outputs: expected T_in = {shape[1]} with aligned=True (one output per input step), got {num_outputs}"
        )
    mask = jnp.asarray(input_mask) != 0 if mask_dtype != jnp.bool_ else jnp.asarray(input_mask)
    bound = min(INPUT_BOUND, float(jnp.finfo(dtype).max))
    inputs = jnp.where(mask[..., None], jnp.clip(jnp.asarray(inputs), -bound, bound), 0).astype(dtype)
    return inputs, mask


@dataclasses.dataclass(frozen=True)
class _Entry:
    config_cls: type
    builder: Callable[..., nnx.Module]
    description: str
    aligned: bool


_REGISTRY: dict[str, _Entry] = {}


def register_model(name: str, config_cls: type, description: str, *, aligned: bool = False):
    """Decorator: register ``builder(config, input_size, output_size, rngs)`` under ``name``.

    ``aligned``: the model has the aligned mode (``model(..., aligned=True)``, module docstring).
    """

    def wrap(builder):
        if name in _REGISTRY:
            raise ValueError(f"name: model {name!r} is already registered")
        _REGISTRY[name] = _Entry(config_cls, builder, description, aligned)
        return builder

    return wrap


def supports_aligned(name: str) -> bool:
    """Whether model ``name`` has the aligned mode (one output per input step; the module docstring)."""
    return _entry(name).aligned


def aligned_models() -> list[str]:
    """The registered models with the aligned mode, sorted."""
    _load_builtin_models()
    return sorted(name for name, entry in _REGISTRY.items() if entry.aligned)


def list_models() -> dict[str, str]:
    """Registered names and their one-line descriptions."""
    _load_builtin_models()
    return {name: entry.description for name, entry in sorted(_REGISTRY.items())}


def _entry(name: str) -> _Entry:
    _load_builtin_models()
    if name not in _REGISTRY:
        raise unknown_name("name", name, sorted(_REGISTRY))
    return _REGISTRY[name]


def get_config(name: str, **hparams):
    """The typed config of model ``name`` with ``hparams`` applied (validated)."""
    cls = _entry(name).config_cls
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(hparams) - fields)
    if unknown:
        raise ValueError(
            f"hparams: unknown hyperparameter(s) {unknown} for model {name!r}; known: {sorted(fields)}"
            + did_you_mean(unknown, fields)
        )
    return cls(**hparams)


def model_options(name: str) -> dict[str, inspect.Parameter]:
    """The options of model ``name``: its config dataclass's fields as ``{field: inspect.Parameter}``.

    Each parameter's ``annotation`` is the field's resolved type hint (``int``,
    ``float``, ``int | None``, ``tuple[int, ...]``) and its ``default`` the
    field's default, in field order.

    Raises:
      UnknownNameError: ``name`` is not registered.
    """
    cls = _entry(name).config_cls
    hints = typing.get_type_hints(cls)
    options = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = inspect.Parameter.empty
        options[f.name] = inspect.Parameter(
            f.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hints[f.name]
        )
    return options


def build_model(name: str, *, input_size: int, output_size: int, seed: int = 0, **hparams) -> nnx.Module:
    """Build model ``name`` for inputs of width ``input_size`` and ``output_size`` classes.

    Raises:
      UnknownNameError: for an unknown name (listing the known ones).
      ValueError: for an unknown hyperparameter (listing the model's fields) or an invalid value.
    """
    input_size = positive_int("input_size", input_size)
    output_size = positive_int("output_size", output_size)
    config = get_config(name, **hparams)
    return _entry(name).builder(config, input_size, output_size, nnx.Rngs(seed))


# Modules whose import registers the built-in models (their @register_model
# decorators run on import), one per line.
BUILTIN_MODEL_MODULES = (
    "panm_jax.models.lstm",
    "panm_jax.models.panm",
    "panm_jax.models.attention_models",
    "panm_jax.models.memory_models",
    "panm_jax.models.panm_transformer",
)


def _load_builtin_models() -> None:
    for module in BUILTIN_MODEL_MODULES:
        importlib.import_module(module)
