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

**One table.** ``MODELS`` is written out below: every built-in name with where
its config and builder are defined (``ModelSpec``: a module and the names in it),
its one-line description and whether it has the aligned mode. It is the one
place a model is added, and reading it imports nothing: ``list_models`` and
``aligned_models`` answer from the table, and a model's module is imported when
its config is first read or the model first built. The task registry
(``panm_jax.tasks.registry.TASKS``) is written the same way. A decorator in each
model's module, run by importing it, would spread the names over the modules and
need every model's module (JAX, Flax and all) imported just to list them.
``register_model`` adds a model at run time. A model of one's own is named
``"package.module:NAME"`` wherever a model name goes: the module is imported at
the first look-up and the model it registers under ``NAME`` (or whose builder
function is called ``NAME``) is registered under the whole name.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from panm_jax._lazy import import_named, load
from panm_jax.checks import check_type, did_you_mean, nonnegative_int, positive_int, unknown_name
from panm_jax.errors import UserError

__all__ = [
    "INPUT_BOUND",
    "MODELS",
    "AlignedModeError",
    "ModelSpec",
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

    Called eagerly (``inputs`` and ``input_mask`` concrete arrays, not traced under
    ``jit``), it also refuses NaN at a real step (``mask`` true), naming the first
    one; padded steps may hold anything. Under ``jit`` the values are not known
    when this runs, and nothing is checked: no check costs a host sync there.

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
    if not isinstance(inputs, jax.core.Tracer) and not isinstance(mask, jax.core.Tracer):
        _refuse_nan(inputs, mask)
    bound = min(INPUT_BOUND, float(jnp.finfo(dtype).max))
    inputs = jnp.where(mask[..., None], jnp.clip(jnp.asarray(inputs), -bound, bound), 0).astype(dtype)
    return inputs, mask


def _refuse_nan(inputs, mask) -> None:
    """``ValueError`` naming the first real step (``mask`` true) of concrete ``inputs`` that holds a NaN."""
    nan = np.isnan(np.asarray(inputs, dtype=np.float32)).any(axis=-1) & np.asarray(mask)
    if nan.any():
        example, step = (int(i) for i in np.argwhere(nan)[0])
        raise ValueError(
            f"inputs: expected no NaN at a real step (input_mask true), got NaN at example {example}, step {step} "
            f"({int(nan.sum())} real step(s) with NaN in all); padded steps may hold anything"
        )


class ModelSpec(NamedTuple):
    """One entry of ``MODELS``: where the model is defined, and what the listings show without importing it.

    ``config`` and ``builder`` are attributes of ``module`` (their names; a model
    added by ``register_model`` holds the objects themselves). The builder is
    called as ``builder(*args, config, input_size, output_size, rngs)``.
    """

    module: str
    config: str | type  # the typed config dataclass
    builder: str | Callable[..., nnx.Module]
    description: str  # one line, for ``list_models`` and ``panm-jax models``
    aligned: bool = False  # the model has the aligned mode (the module docstring)
    args: tuple[Any, ...] = ()  # leading arguments of the builder (the memory models' shared one takes the name)


def _memory(name: str, config: str, description: str) -> ModelSpec:
    """A model of ``memory_models``: one builder for all of them, told which by name; every one is causal."""
    return ModelSpec("panm_jax.models.memory_models", config, "build_memory_model", description, True, (name,))


# name -> where the model is defined, its description and whether it has the aligned mode.
# Nothing is imported to read this table: a model's module is imported when it is first built
# (or its config read). ``list_models`` sorts the names.
MODELS: dict[str, ModelSpec] = {
    "panm": ModelSpec(
        "panm_jax.models.panm",
        "PANMConfig",
        "_build",
        "Pointer-Augmented Neural Memory (Le et al. 2024): LSTM encoder, pointer decoder",
    ),
    "panm_transformer": ModelSpec(
        "panm_jax.models.panm_transformer",
        "PANMTransformerConfig",
        "_build",
        "PANM on a Transformer: Transformer encoder, Controller on a 2-layer Transformer decoder (Le et al. 2024 §3.3)",
    ),
    "ntm": _memory(
        "ntm",
        "NTMConfig",
        "Neural Turing Machine (Graves et al. 2014; Reina Campo 2022): controller + content/location-addressed memory",
    ),
    "dnc": _memory(
        "dnc",
        "DNCConfig",
        "Differentiable Neural Computer (Graves et al. 2016; Reina Campo 2022; Back et al. 2018): "
        "allocation, temporal links, R read, H write heads",
    ),
    "stack_lstm": _memory(
        "stack_lstm",
        "StackLSTMConfig",
        "Stack-LSTM (Grefenstette et al. 2015): LSTM controller + continuous neural Stack",
    ),
    "queue_lstm": _memory(
        "queue_lstm",
        "StackLSTMConfig",
        "Queue-LSTM (Grefenstette et al. 2015): LSTM controller + continuous neural Queue",
    ),
    "deque_lstm": _memory(
        "deque_lstm",
        "StackLSTMConfig",
        "DeQue-LSTM (Grefenstette et al. 2015): LSTM controller + continuous neural DeQue",
    ),
    "stack_rnn": _memory(
        "stack_rnn",
        "StackRNNConfig",
        "Stack-RNN (Joulin & Mikolov 2015; Delétang et al. 2023): RNN controller + soft push/pop/no-op stack",
    ),
    "tape_rnn": _memory(
        "tape_rnn",
        "TapeRNNConfig",
        "Tape-RNN (Delétang et al. 2023): RNN controller + tape with write-and-move and input-length jumps",
    ),
    "srnn": ModelSpec(
        "panm_jax.models.srnn",
        "SRNNConfig",
        "_build_srnn",
        "SRNN (Suzgun et al. 2019): Elman RNN reading the top of a soft push/pop stack, multi-hot outputs",
        aligned=True,
    ),
    "panm_srnn": ModelSpec(
        "panm_jax.models.srnn",
        "PANMSRNNConfig",
        "_build_panm_srnn",
        "PANM on the SRNN (Le et al. 2024 §3.2): no encoder, token memory causally masked, SRNN controller",
        aligned=True,
    ),
    "lstm": ModelSpec(
        "panm_jax.models.lstm",
        "LSTMSeq2SeqConfig",
        "_build",
        "LSTM encoder-decoder baseline (Le et al. 2024 §3.1)",
        aligned=True,
    ),
    "lstm_attention": ModelSpec(
        "panm_jax.models.attention_models",
        "LSTMAttentionConfig",
        "_build_lstm_attention",
        "LSTM encoder-decoder with content/location/hybrid attention (Le et al. 2024 §3.1)",
    ),
    "pointer_network": ModelSpec(
        "panm_jax.models.attention_models",
        "PointerNetworkConfig",
        "_build_pointer_network",
        "Pointer Network predicting tokens (Le et al. 2024 App. D.1)",
    ),
    "transformer": ModelSpec(
        "panm_jax.models.attention_models",
        "TransformerConfig",
        "_build_transformer",
        "Encoder-decoder Transformer, sinusoidal positions (Le et al. 2024 §3.1)",
    ),
    "transformer_rpe": ModelSpec(
        "panm_jax.models.attention_models",
        "TransformerConfig",
        "_build_transformer_rpe",
        "Encoder-decoder Transformer, Transformer-XL relative positions (Le et al. 2024 §3.3)",
    ),
    "universal_transformer": ModelSpec(
        "panm_jax.models.attention_models",
        "UniversalTransformerConfig",
        "_build_universal_transformer",
        "Universal Transformer: one shared layer applied `steps` times, sinusoidal positions (Dehghani et al. 2019)",
    ),
    "universal_transformer_rpe": ModelSpec(
        "panm_jax.models.attention_models",
        "UniversalTransformerConfig",
        "_build_universal_transformer_rpe",
        "Universal Transformer with Transformer-XL relative positions (U. TRM + RPE, Csordás et al. 2021)",
    ),
    "rnn": ModelSpec(
        "panm_jax.models.blank_step_rnn",
        "RNNConfig",
        "_build_rnn",
        "Elman RNN reading the input, then answering on blank steps (Delétang et al. 2023's RNN)",
    ),
    "single_lstm": ModelSpec(
        "panm_jax.models.blank_step_rnn",
        "SingleLSTMConfig",
        "_build_single_lstm",
        "One LSTM reading the input, then answering on blank steps (Delétang et al. 2023's LSTM)",
    ),
    "transformer_encoder": ModelSpec(
        "panm_jax.models.transformer_encoder",
        "TransformerEncoderConfig",
        "_build",
        "Encoder-only Transformer over the input and blank tokens, sin/cos, relative, ALiBi or rotary positions "
        "(Delétang et al. 2023's Transformer)",
    ),
}


def register_model(name: str, config_cls: type, description: str, *, aligned: bool = False):
    """Decorator: add ``builder(config, input_size, output_size, rngs)`` to ``MODELS`` under a new ``name``.

    ``aligned``: the model has the aligned mode (``model(..., aligned=True)``, module docstring).
    """

    def wrap(builder):
        if name in MODELS:
            raise ValueError(f"name: model {name!r} is already registered")
        MODELS[name] = ModelSpec(builder.__module__, config_cls, builder, description, aligned)
        return builder

    return wrap


def supports_aligned(name: str) -> bool:
    """Whether model ``name`` has the aligned mode (one output per input step; the module docstring)."""
    return _spec(name).aligned


def aligned_models() -> list[str]:
    """The registered models with the aligned mode, sorted."""
    return sorted(name for name, spec in MODELS.items() if spec.aligned)


def list_models() -> dict[str, str]:
    """Registered names and their one-line descriptions."""
    return {name: spec.description for name, spec in sorted(MODELS.items())}


def _spec(name: str) -> ModelSpec:
    if isinstance(name, str) and ":" in name and name not in MODELS:
        _register_own(name)
    try:
        return MODELS[name]
    except (KeyError, TypeError):
        raise unknown_name("name", name, sorted(MODELS)) from None


def _register_own(path: str) -> None:
    """Register ``"package.module:NAME"`` under that very name: the model that the module registers with
    ``register_model`` when imported, under ``NAME`` or with ``NAME`` its builder function."""
    module, attribute = import_named(path, "model")
    builder = getattr(module, attribute, None)
    found = [
        spec for key, spec in MODELS.items() if key == attribute or (builder is not None and spec.builder is builder)
    ]
    if not found:
        raise UserError(
            f"model: module {module.__name__!r} registers no model {attribute!r} (a model of one's own is a builder "
            "decorated with panm_jax.models.register_model(name, ConfigClass, description))"
        )
    MODELS[path] = found[0]


def _resolve(spec: ModelSpec, attribute: str | Any) -> Any:
    """``attribute`` of ``spec.module`` when it is a name (importing the module), else the object itself."""
    return load(f"{spec.module}:{attribute}") if isinstance(attribute, str) else attribute


def _config_cls(name: str) -> type:
    spec = _spec(name)
    return _resolve(spec, spec.config)


def get_config(name: str, **hparams):
    """The typed config of model ``name`` with ``hparams`` applied (validated by the config's own checks).

    ``hparams`` are the model's flat options (``model_options``): its config's fields, and where the config
    holds a variant (``variant_options``, as ``PANMConfig`` does) that variant's options by name, which
    its ``from_options`` composes.
    """
    cls = _config_cls(name)
    fields = set(model_options(name))
    unknown = sorted(set(hparams) - fields - {"variant"})
    if unknown:
        raise ValueError(
            f"hparams: unknown hyperparameter(s) {unknown} for model {name!r}; known: {sorted(fields)}"
            + did_you_mean(unknown, fields)
        )
    build = getattr(cls, "from_options", cls)
    return build(**hparams)


def _option_hints(cls: type) -> dict[str, Any]:
    """The type hint of each flat option of config class ``cls``: its fields' and its variants'."""
    hints = {}
    variants = getattr(cls, "variant_options", dict)()
    for owners in variants.values():
        hints.update(typing.get_type_hints(owners[0]))
    hints.update(typing.get_type_hints(cls))
    return hints


def _check_types(name: str, hparams: dict[str, Any]) -> None:
    """Each of ``hparams`` against the type hint of its field of model ``name``'s config.

    The check a training config's ``model_options`` get
    (``panm_jax.checks.check_type``), so that ``build_model("panm", ...,
    remat="no")`` is refused as the config file's ``remat = "no"`` is:
    ``remat: expected true or false, got 'no'`` (a ``ConfigError``).
    """
    hints = _option_hints(_config_cls(name))
    for field, value in hparams.items():
        check_type(field, value, hints[field])


def model_options(name: str) -> dict[str, inspect.Parameter]:
    """The flat options of model ``name``: its config dataclass's fields as ``{field: inspect.Parameter}``,
    then, where the config holds a variant (``variant_options``), each variant's options (the first
    variant's default where two share a name) in place of the ``variant`` field.

    Each parameter's ``annotation`` is the field's resolved type hint (``int``,
    ``float``, ``int | None``, ``tuple[int, ...]``) and its ``default`` the
    field's default, in field order.

    Raises:
      UnknownNameError: ``name`` is not registered.
    """
    cls = _config_cls(name)
    hints = _option_hints(cls)
    variants = getattr(cls, "variant_options", dict)()
    fields = [f for f in dataclasses.fields(cls) if not (variants and f.name == "variant")]
    for variant in dict.fromkeys(c for owners in variants.values() for c in owners):
        fields += dataclasses.fields(variant)
    options = {}
    for f in fields:
        if f.name in options:
            continue
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


def build_model(
    name: str, *, input_size: int, output_size: int, seed: int = 0, config: Any = None, **hparams
) -> nnx.Module:
    """Build model ``name`` for inputs of width ``input_size`` and ``output_size`` classes.

    Its settings are ``hparams`` (applied to the model's config dataclass, ``get_config``) or a
    ``config`` already made (an instance of that dataclass, such as a training config's
    ``model_config``), not both.

    Raises:
      UnknownNameError: for an unknown name (listing the known ones).
      ValueError: for an unknown hyperparameter (listing the model's fields), an invalid value or
        one of the wrong type (checked against its field's type hint, as a training config's are),
        a ``config`` that is not the model's config dataclass or comes with ``hparams``, or a
        ``seed`` that is not a non-negative integer.
    """
    input_size = positive_int("input_size", input_size)
    output_size = positive_int("output_size", output_size)
    seed = nonnegative_int("seed", seed)  # as a training config's seed
    if config is not None:
        cls = _config_cls(name)
        if not isinstance(config, cls):
            raise ValueError(f"config: expected a {cls.__name__} (model {name!r}), got {type(config).__name__}")
        if hparams:
            raise ValueError(
                f"config: expected either config or hyperparameters, got both (hyperparameters {sorted(hparams)})"
            )
    else:
        try:
            config = get_config(name, **hparams)
        except ValueError:
            raise  # an unknown name, or the config's own check: its message says the most
        except Exception:
            _check_types(name, hparams)  # a value of the wrong type that the config's checks did not name
            raise
        _check_types(name, hparams)
    spec = _spec(name)
    return _resolve(spec, spec.builder)(*spec.args, config, input_size, output_size, nnx.Rngs(seed))
