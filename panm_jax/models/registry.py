"""The one model interface and the name -> builder registry.

Every model in panm_jax is a Flax NNX module answering

    model(inputs [B, T_in, D_in], input_mask [B, T_in], num_outputs, *,
          train=False, key=None, return_traces=False)
        -> logits [B, T_out, K]                    (T_out = num_outputs)
        -> (logits, traces)                        with return_traces=True

``num_outputs`` is a static Python int (one compilation per output length);
``train`` switches training-only behaviour (PANM's random base address);
``key`` is a JAX PRNG key for that randomness. Models are built by name from a
typed config: ``build_model("panm", input_size=12, output_size=10, hidden=128)``.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from typing import Any, Protocol

import jax
from flax import nnx

__all__ = ["SequenceModel", "build_model", "check_call", "get_config", "list_models", "register_model"]


class SequenceModel(Protocol):
    """What every model answers (see the module docstring)."""

    def __call__(
        self,
        inputs: jax.Array,
        input_mask: jax.Array,
        num_outputs: int,
        *,
        train: bool = False,
        key: jax.Array | None = None,
        return_traces: bool = False,
    ) -> Any: ...


def check_call(inputs, input_mask, num_outputs, input_size: int | None = None) -> None:
    """Validate the one call's arguments at trace time (named ``ValueError``s).

    ``inputs`` must be ``[B, T_in, D_in]`` (with ``D_in == input_size`` when
    given), ``input_mask`` ``[B, T_in]`` and ``num_outputs`` a positive Python int
    (it is static: one compilation per output length).
    """
    shape = tuple(jax.numpy.shape(inputs))
    if len(shape) != 3:
        raise ValueError(f"inputs: expected shape [B, T_in, D_in], got {shape}")
    if input_size is not None and shape[-1] != input_size:
        raise ValueError(f"inputs: expected D_in = {input_size} (the model's input_size), got shape {shape}")
    if tuple(jax.numpy.shape(input_mask)) != shape[:2]:
        raise ValueError(f"input_mask: expected shape [B, T_in] = {shape[:2]}, got {tuple(jax.numpy.shape(input_mask))}")
    if isinstance(num_outputs, bool) or not isinstance(num_outputs, int) or num_outputs < 1:
        raise ValueError(f"num_outputs: expected a positive Python int (static), got {num_outputs!r}")


@dataclasses.dataclass(frozen=True)
class _Entry:
    config_cls: type
    builder: Callable[..., nnx.Module]
    description: str


_REGISTRY: dict[str, _Entry] = {}


def register_model(name: str, config_cls: type, description: str):
    """Decorator: register ``builder(config, input_size, output_size, rngs)`` under ``name``."""

    def wrap(builder):
        if name in _REGISTRY:
            raise ValueError(f"name: model {name!r} is already registered")
        _REGISTRY[name] = _Entry(config_cls, builder, description)
        return builder

    return wrap


def list_models() -> dict[str, str]:
    """Registered names and their one-line descriptions."""
    _load_builtin_models()
    return {name: entry.description for name, entry in sorted(_REGISTRY.items())}


def _entry(name: str) -> _Entry:
    _load_builtin_models()
    if name not in _REGISTRY:
        raise ValueError(f"name: unknown model {name!r}; known models: {sorted(_REGISTRY)}")
    return _REGISTRY[name]


def get_config(name: str, **hparams):
    """The typed config of model ``name`` with ``hparams`` applied (validated)."""
    cls = _entry(name).config_cls
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(hparams) - fields)
    if unknown:
        raise ValueError(
            f"hparams: unknown hyperparameter(s) {unknown} for model {name!r}; known: {sorted(fields)}"
        )
    return cls(**hparams)


def build_model(name: str, *, input_size: int, output_size: int, seed: int = 0, **hparams) -> nnx.Module:
    """Build model ``name`` for inputs of width ``input_size`` and ``output_size`` classes.

    Raises:
      ValueError: for an unknown name (listing the known ones), an unknown
        hyperparameter (listing the model's fields) or an invalid value.
    """
    for arg, value in (("input_size", input_size), ("output_size", output_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{arg}: expected a positive integer, got {value!r}")
    config = get_config(name, **hparams)
    return _entry(name).builder(config, input_size, output_size, nnx.Rngs(seed))


# Modules whose import registers the built-in models (their @register_model
# decorators run on import), one per line.
BUILTIN_MODEL_MODULES = (
    "panm_jax.models.lstm",
    "panm_jax.models.panm",
    "panm_jax.models.attention_models",
    "panm_jax.models.memory_models",
)


def _load_builtin_models() -> None:
    for module in BUILTIN_MODEL_MODULES:
        importlib.import_module(module)
