"""Typed training configuration: dataclasses with the papers' defaults.

One ``TrainConfig`` describes a run completely; it is loaded from a TOML or JSON
file and from command-line overrides (``section.field=value``), validated, and
stored inside every checkpoint so a run can be resumed or evaluated without it.
Each field of ``TrainConfig`` and ``OptimizerConfig`` is declared once with
``panm_jax.options.option``: its default, its check, the values the check allows
and its meaning (``panm-jax train --settings`` and the design page list them).

**Typed from the file to the model and the task.** A config file names the model
and the task and gives their options as tables (``model_options``,
``task_options``), as it stores them; a ``TrainConfig`` carries them typed:
``config.model_config`` is the model's frozen config dataclass with those options
applied (``models.get_config``; ``build_model(name, config=...)`` takes it as it
is), and ``config.build_task()`` the task built from its options, once per
config (``replace`` keeps it while the task and its options stay the same).

Validation happens before anything is compiled or written, in two steps. Building
a config checks every field against its type hint (a bool is not an integer,
numbers must be finite, a table must be a table), then against its allowed
values, integers up to what a run can hold (``num_steps`` and the other step
counts up to ``STEP_MAX``, the int32 step counter; sizes and lengths in int32;
``seed`` up to ``SEED_MAX``, the seeds JAX's random keys tell apart; every
integer of ``task_options`` and ``model_options`` in int32); the task's name
and its options' names and types against the task's ``Options``
(``tasks.task_options``; nothing is built); and the model's options
against its config dataclass, whose own checks run as ``model_config`` is made
(and kept). The settings that need the task itself (its options' values, the
evaluation and selection modes, the model's output mode, the buckets) are checked
when the task is built: ``load_config`` builds it, so a config file or a ``--set``
gets every message at load time. Each problem raises ``ConfigError`` (a
``UserError``, a ``ValueError``) naming the field, what was expected and what was given.

Defaults follow the algorithmic-task protocol of Le et al. 2024 (Plug, Play, and Generalize: Length Extrapolation with
Pointer-Augmented Neural Memory, TMLR)
and its authors' code (listed in docs/tasks.md): batch
128, RMSprop with learning rate 1e-4, momentum 0.9, decay 0.95, gradient values
clipped at 10, 50,000 steps, checkpoint selection on the L+1 validation set.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import tomllib
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from panm_jax import checks
from panm_jax.checks import check_type
from panm_jax.errors import ConfigError, UnknownNameError, UserError
from panm_jax.options import check_options, option

if TYPE_CHECKING:
    from panm_jax.tasks.base import Task

__all__ = [
    "SEED_MAX",
    "STEP_MAX",
    "ConfigError",
    "OptimizerConfig",
    "TrainConfig",
    "load_config",
    "parse_overrides",
    "resume_differences",
]

OPTIMIZERS = ("rmsprop", "adam", "adamw", "sgd")
SCHEDULES = ("constant", "cosine", "warmup_cosine")
ON_NAN = ("stop", "skip-batch")
COMPUTE_DTYPES = ("float32", "bfloat16")  # TrainConfig.compute_dtype: the forward pass's dtype (train.steps)
# Fields a resumed run may change: they do not alter what a run computes while its losses are finite.
# num_steps only extends or shortens the run (the loop refuses one below the checkpoint's step), unless a
# learning-rate schedule decays over it: a cosine run cannot change it (see ``resume_differences``).
# max_minutes is a wall-clock budget: it only says where this invocation stops, so a run stopped by its
# budget may be resumed with another budget or none.
RESUMABLE_CHANGES = ("on_nan", "max_skipped_fraction", "num_steps", "max_minutes")
# The largest step a run can count to: the step counter (TrainState.step) is an int32.
STEP_MAX = checks.INT32_MAX
# The largest seed: jax.random.key(seed) keeps the low 32 bits of a seed (without 64-bit mode), so seed
# 2^32 would initialise the model as seed 0 does; NumPy's generators take any seed below it too.
SEED_MAX = 2**32 - 1
# Why each integer field is bounded, for its message (STEP_MAX, SEED_MAX, or int32 array sizes).
_STEPS_WHY = "the step counter is int32"
_SIZE_WHY = "JAX indexes arrays with int32"


def _nonempty(name: str, value) -> str:
    if not isinstance(value, str) or not value:
        raise UserError(f"{name}: expected a non-empty string, got {value!r}")
    return value


def _ascending_lengths(name: str, value) -> tuple[int, ...]:
    buckets = tuple(value)
    if any(b < 1 for b in buckets) or list(buckets) != sorted(set(buckets)):
        raise UserError(f"{name}: expected strictly ascending positive integers, got {list(buckets)}")
    if buckets and buckets[-1] > checks.INT32_MAX:
        raise UserError(f"{name}: expected lengths of at most {checks.INT32_MAX} ({_SIZE_WHY}), got {list(buckets)}")
    return buckets


def _steps(default: int, doc: str, lo: int = 1) -> Any:
    """An option counted in training steps: an integer up to ``STEP_MAX`` (the step counter is int32)."""
    return option(default, checks.integer, lo, STEP_MAX, why=_STEPS_WHY, doc=doc)


def _size(default: int, doc: str) -> Any:
    """A size: a positive integer up to int32 (JAX indexes arrays with int32)."""
    return option(default, checks.integer, 1, checks.INT32_MAX, why=_SIZE_WHY, doc=doc)


@dataclasses.dataclass(frozen=True)
class OptimizerConfig:
    """The optax optimiser, schedule and clipping (``train.optim.make_optimizer``)."""

    name: str = option("rmsprop", checks.one_of, OPTIMIZERS, doc="the optimiser")
    learning_rate: float = option(1e-4, checks.positive_number, doc="the learning rate (the schedule's peak)")
    momentum: float = option(0.9, checks.number, 0, 1, hi_open=True, doc="RMSprop's and SGD's momentum")
    decay: float = option(
        0.95, checks.number, 0, 1, hi_open=True, doc="RMSprop's decay of the squared-gradient average"
    )
    eps: float = option(1e-8, checks.positive_number, doc="RMSprop's epsilon (Adam keeps optax's own)")
    eps_in_sqrt: bool = option(
        False,
        checks.boolean,
        doc="RMSprop: false: g / (sqrt(v) + eps), PyTorch's (the authors'); true: g / sqrt(v + eps), optax's",
    )
    weight_decay: float = option(0.0, checks.number, 0, doc="AdamW's weight decay")
    clip_value: float | None = option(
        10.0,
        checks.optional_positive_number,
        doc="clip every gradient value to [-v, v] (the authors' code); false or null: off",
    )
    clip_norm: float | None = option(
        None, checks.optional_positive_number, doc="clip the global gradient norm; false or null: off"
    )
    schedule: str = option("constant", checks.one_of, SCHEDULES, doc="the learning rate's schedule over num_steps")
    warmup_steps: int = _steps(0, "warmup_cosine: steps of linear warmup (at most num_steps)", lo=0)

    def __post_init__(self):
        for name in ("clip_value", "clip_norm"):
            if getattr(self, name) is False:  # TOML has no null: `clip_value = false` switches clipping off
                object.__setattr__(self, name, None)
        _check_field_types("optimizer.", self)
        _check_declared(self, "optimizer.")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """A whole training run."""

    task: str = option("copy", _nonempty, allowed="a task's name", doc="the task (panm-jax tasks lists them)")
    task_options: Mapping[str, Any] = option(
        default_factory=dict, doc="the task's options (panm-jax tasks show NAME lists them)"
    )
    model: str = option("panm", _nonempty, allowed="a model's name", doc="the model (panm-jax models lists them)")
    model_options: Mapping[str, Any] = option(
        default_factory=dict, doc="the model's options (panm-jax models show NAME lists them)"
    )
    optimizer: OptimizerConfig = option(
        default_factory=OptimizerConfig, doc="the optimiser's settings (a table of OptimizerConfig's fields)"
    )
    batch_size: int = _size(128, "training examples per step")
    num_steps: int = _steps(50_000, "training steps")
    seed: int = option(
        0,
        checks.integer,
        0,
        SEED_MAX,
        why="the seeds JAX's random keys tell apart",
        doc="the seed of the initialisation, the data stream and training's randomness",
    )
    buckets: Sequence[int] = option(
        (),
        _ascending_lengths,
        allowed="strictly ascending positive integers",
        doc="task lengths training batches are padded to; empty: the fewest costing at most 10 % more steps",
    )
    eval_every: int = _steps(1_000, "steps between validations (and best-checkpoint selection)")
    eval_modes: Sequence[str] = option(
        (), doc="the test modes evaluated at the end; empty: every test mode of the task; a string: comma-separated"
    )
    eval_examples: int = _size(1_000, "examples per evaluated mode")
    eval_batch_size: int = _size(128, "examples per evaluation batch")
    select_mode: str = option(
        "", doc='the validation mode that picks the best checkpoint: a test mode, "train", or "": the task\'s own'
    )
    checkpoint_every: int = _steps(1_000, "steps between checkpoints")
    keep_checkpoints: int = option(3, checks.integer, 1, checks.INT32_MAX, doc="checkpoints kept (the last ones)")
    log_every: int = _steps(50, "steps between records of the training metrics")
    max_minutes: float | None = option(
        None,
        checks.optional_positive_number,
        doc="wall-clock minutes of one invocation: then it evaluates, saves and stops (a rerun resumes)",
    )
    on_nan: str = option(
        "stop",
        checks.one_of,
        ON_NAN,
        doc="a non-finite loss or gradient norm: stop with an error, or skip the batch and go on",
    )
    max_skipped_fraction: float = option(
        0.01, checks.number, 0, 1, doc="skip-batch: the most batches skipped, as a fraction of num_steps"
    )
    compute_dtype: str = option(
        "float32",
        checks.one_of,
        COMPUTE_DTYPES,
        doc="the forward pass's dtype (bfloat16: mixed precision; parameters stay float32)",
    )

    def __post_init__(self):
        if self.max_minutes is False:  # TOML has no null
            object.__setattr__(self, "max_minutes", None)
        if isinstance(self.eval_modes, str):  # "L+1" or "L,2L+1", as `panm-jax eval --modes` takes them
            object.__setattr__(self, "eval_modes", [m.strip() for m in self.eval_modes.split(",") if m.strip()])
        _check_field_types("", self)
        _check_declared(self, "")
        if self.optimizer.warmup_steps > self.num_steps:
            raise ConfigError(
                "optimizer.warmup_steps",
                f"expected at most num_steps ({self.num_steps}), got {self.optimizer.warmup_steps}",
            )
        object.__setattr__(self, "eval_modes", tuple(self.eval_modes))
        object.__setattr__(self, "task_options", dict(self.task_options))
        object.__setattr__(self, "model_options", dict(self.model_options))
        _check_task_options(self)
        _check_model(self)

    @functools.cached_property
    def model_config(self) -> Any:
        """The model's typed config: its frozen config dataclass with ``model_options`` applied and
        validated (``models.get_config``), made once as the config is built and kept."""
        from panm_jax.models.registry import get_config

        return get_config(self.model, **self.model_options)

    def build_task(self) -> Task:
        """The task ``task`` built with ``task_options``: built the first time it is asked for and kept
        (``replace`` passes it on while the task and its options stay the same).

        Each call checks the settings that need the task: its options' values (the task's own
        checks), ``eval_modes`` and ``select_mode`` against its modes, the model's output mode against
        the task's, and the buckets against its longest training example.

        Raises:
          ConfigError: naming the setting (``task_options``, ``eval_modes``, ``select_mode``, ``model``,
            ``model_options.teacher_forcing``, ``buckets``), or ``task`` where the task's optional
            package is missing.
        """
        task = self.__dict__.get("_task")
        if task is None:
            task = self.__dict__["_task"] = _build_task(self)  # frozen: the instance's dict keeps it
        _check_modes(self, task)
        _check_output_mode(self, task)
        _check_buckets(self, task)
        return task

    @property
    def selection_mode(self) -> str:
        """The validation mode that selects the best checkpoint: ``select_mode``, or where that is ""
        the task's ``validation_mode``."""
        return self.select_mode or self.build_task().validation_mode

    def to_dict(self) -> dict[str, Any]:
        """The config as a file holds it, ``select_mode`` as the mode in effect (``selection_mode``)."""
        d = dataclasses.asdict(self)
        d["buckets"] = list(self.buckets)
        d["eval_modes"] = list(self.eval_modes)
        d["select_mode"] = self.selection_mode
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainConfig:
        """Build from a plain mapping (a parsed file); unknown keys raise ``ValueError``."""
        if not isinstance(data, Mapping):
            raise ConfigError("config", f"expected a mapping of fields, got {type(data).__name__}")
        data = dict(data)
        _check_fields("config", data, cls)
        if "optimizer" in data:
            opt = data["optimizer"]
            if not isinstance(opt, Mapping):
                raise ConfigError("optimizer", f"expected a table of fields, got {opt!r}")
            _check_fields("optimizer", opt, OptimizerConfig)
            data["optimizer"] = OptimizerConfig(**opt)
        return cls(**data)

    def replace(self, **changes) -> TrainConfig:
        """A copy with ``changes`` applied and validated; the built task goes with it while ``task`` and
        ``task_options`` stay the same, and the settings that need it are checked against it at once."""
        new = dataclasses.replace(self, **changes)
        task = self.__dict__.get("_task")
        if task is not None and (new.task, new.task_options) == (self.task, self.task_options):
            new.__dict__["_task"] = task
            new.build_task()
        return new


class _Unset:
    def __repr__(self) -> str:
        return "unset"


def resume_differences(stored: TrainConfig, given: TrainConfig) -> list[tuple[str, Any, Any]]:
    """``(field, stored value, given value)`` for each setting that differs, nested ones dotted
    (``optimizer.learning_rate``, ``model_options.hidden``; a value absent on one side is an object whose
    ``repr`` is ``unset``); fields of ``RESUMABLE_CHANGES`` are left out (``num_steps`` only under the
    constant schedule: the cosine schedules decay over it)."""
    missing = _Unset()
    resumable = RESUMABLE_CHANGES
    if not stored.optimizer.schedule == given.optimizer.schedule == "constant":
        resumable = tuple(name for name in resumable if name != "num_steps")

    def walk(prefix: str, a: Mapping[str, Any], b: Mapping[str, Any]):
        out = []
        for key in [*a, *(k for k in b if k not in a)]:
            name = f"{prefix}{key}"
            x, y = a.get(key, missing), b.get(key, missing)
            if name in resumable or x == y:
                continue
            if isinstance(x, Mapping) and isinstance(y, Mapping):
                out += walk(f"{name}.", x, y)
            else:
                out.append((name, x, y))
        return out

    return walk("", stored.to_dict(), given.to_dict())


def _check_fields(where: str, data: Mapping[str, Any], cls) -> None:
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(
            where, f"unknown field(s) {unknown}; known: {sorted(known)}{checks.did_you_mean(unknown, known)}"
        )


def _check_field_types(prefix: str, instance) -> None:
    """``check_type`` every field of a dataclass instance against its annotation."""
    hints = typing.get_type_hints(type(instance))
    for f in dataclasses.fields(instance):
        check_type(prefix + f.name, getattr(instance, f.name), hints[f.name])


def _check_options(field: str, what: str, given: Mapping[str, Any], known: Mapping[str, inspect.Parameter]) -> None:
    """``given`` options against ``known`` ones (``task_options``/``model_options``): each name is known
    (unless ``known`` takes ``**options``) and each value fits its type hint."""
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in known.values())
    unknown = sorted(set(given) - set(known))
    if unknown and not open_ended:
        names = sorted(k for k, p in known.items() if p.kind is not inspect.Parameter.VAR_KEYWORD)
        raise ConfigError(
            f"{field} ({what})",
            f"unknown {_NOUNS[field]}(s) {unknown}; known: {names}{checks.did_you_mean(unknown, names)}",
        )
    for key, value in given.items():
        if key in known and known[key].kind is not inspect.Parameter.VAR_KEYWORD:
            check_type(f"{field}.{key}", value, known[key].annotation)
        _check_int32(f"{field}.{key}", value)


def _check_int32(name: str, value) -> None:
    """Every integer in ``value`` (an option's value: a number, or lists and tables of them) lies in
    int32, the integers JAX computes with: a size, length or count beyond it cannot be used, and a
    Python int beyond it raises ``OverflowError`` where it meets JAX."""
    if isinstance(value, Mapping):
        for v in value.values():
            _check_int32(name, v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _check_int32(name, v)
    elif isinstance(value, int) and not isinstance(value, bool) and not checks.INT32_MIN <= value <= checks.INT32_MAX:
        raise ConfigError(
            name,
            f"expected an integer in [{checks.INT32_MIN}, {checks.INT32_MAX}] (JAX computes in int32), got {value!r}",
        )


# How a message names an entry of task_options and of model_options (the model's are dataclass fields).
_NOUNS = {"task_options": "option", "model_options": "field"}


def _check_task_options(config: TrainConfig) -> None:
    """The task exists and takes these options, each of its type (read from its signature: nothing is
    built)."""
    from panm_jax.tasks import task_options

    try:
        known = task_options(config.task)
    except UnknownNameError as err:
        raise ConfigError("task", str(err).removeprefix("name: ")) from None
    _check_options("task_options", f"task {config.task!r}", config.task_options, known)


def _build_task(config: TrainConfig) -> Task:
    """The task built with the config's options; the task's own checks of their values raise
    ``ConfigError``."""
    from panm_jax.tasks import get_task

    try:
        return get_task(config.task, **config.task_options)
    except ImportError as err:  # the task's optional package is missing (the message names the extra to install)
        raise ConfigError("task", str(err)) from err
    except (TypeError, ValueError) as err:
        raise ConfigError("task_options", str(err)) from err
    except MemoryError as err:  # options whose data do not fit in memory (a length of 2^30)
        raise ConfigError(
            "task_options",
            f"expected options whose data fit in memory, got {dict(config.task_options)} for task "
            f"{config.task!r} ({type(err).__name__}: {err})",
        ) from err


def _check_modes(config: TrainConfig, task: Task) -> None:
    """The evaluation modes and the selection mode are modes of the task."""
    for name, modes in (("eval_modes", config.eval_modes), ("select_mode", (config.select_mode or "train",))):
        # "train" (fresh examples of the training distribution) may select the checkpoint, never be reported.
        known_modes = list(task.test_modes) + (["train"] if name == "select_mode" else [])
        unknown = [m for m in modes if m not in known_modes]
        if unknown:
            raise ConfigError(
                name,
                f"unknown mode(s) {unknown}; the task {config.task!r} has {known_modes}"
                + checks.did_you_mean(unknown, known_modes),
            )


def _check_output_mode(config: TrainConfig, task: Task) -> None:
    """A task with one output per input step (``output_mode = "aligned"``) needs a model with that mode; a
    teacher-forced model needs class targets."""
    from panm_jax.models.registry import aligned_models, supports_aligned

    if config.model_options.get("teacher_forcing") and task.target_kind != "classes":
        raise ConfigError(
            "model_options.teacher_forcing",
            f"the decoder reads the previous target token, so the task needs class targets; {config.task!r} has "
            f"{task.target_kind!r} targets",
        )
    if task.output_mode == "aligned" and not supports_aligned(config.model):
        raise ConfigError(
            "model",
            f"the task {config.task!r} needs one output per input step (output_mode 'aligned'), which model "
            f"{config.model!r} does not have (it reads the whole input first); models with it: "
            f"{', '.join(aligned_models())}",
        )


def _check_buckets(config: TrainConfig, task: Task) -> None:
    """The buckets that training batches are padded to hold the task's longest training example (at its
    longest training length), so that no batch of the run fails to fit (evaluation pads each mode's
    examples to their own length and uses no buckets)."""
    if not config.buckets:
        return
    longest = task.train_lengths.hi
    top = config.buckets[-1]
    need_in, need_out = task.input_steps(longest), task.output_steps(longest)
    if task.input_steps(top) < need_in or task.output_steps(top) < need_out:
        raise ConfigError(
            "buckets",
            f"expected a largest bucket that holds the longest training length of task {config.task!r} "
            f"({longest}: {need_in} input and {need_out} output steps), got {list(config.buckets)} (bucket {top} "
            f"holds {task.input_steps(top)} and {task.output_steps(top)}); add a bucket of at least {longest}",
        )


def _check_model(config: TrainConfig) -> None:
    """The model exists and its options fit its config dataclass: each one's name and type against the
    dataclass's fields (so a wrong type never reaches the model), then the dataclass's own checks."""
    from panm_jax.models.registry import model_options

    try:
        known = model_options(config.model)
    except UnknownNameError as err:
        raise ConfigError("model", str(err).removeprefix("name: ")) from None
    _check_options("model_options", f"model {config.model!r}", config.model_options, known)
    try:
        _ = config.model_config  # made (and kept) here, so that its checks run as the config is built
    except (TypeError, ValueError) as err:
        field = str(err).split(":", 1)[0]
        if field in config.model_options:  # the model's messages start with the field's name
            raise ConfigError(f"model_options.{field}", str(err).split(":", 1)[1].strip()) from err
        raise ConfigError("model_options", str(err)) from err


def _check_declared(config, prefix: str) -> None:
    """The declared check of every field (``panm_jax.options.check_options``); an error becomes a
    ``ConfigError`` naming the field (``optimizer.learning_rate``)."""
    try:
        check_options(config, prefix)
    except UserError as err:
        field, _, message = str(err).partition(": ")
        raise ConfigError(field, message) from None


def load_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> TrainConfig:
    """Load a ``TrainConfig`` from a TOML/JSON file (or the defaults) and apply overrides.

    ``overrides`` are ``"field=value"`` strings; nested fields use dots
    (``optimizer.learning_rate=3e-4``, ``model_options.hidden=128``); values are
    parsed as JSON when they parse (numbers, booleans, lists, null) and taken as
    strings otherwise. The task is built (``TrainConfig.build_task``, kept by the
    config), so every setting is checked on return.
    """
    data: dict[str, Any] = {}
    if path is not None:
        data = read_config_file(path)
    for key, value in parse_overrides(overrides):
        target = data
        parts = key.split(".")
        for i, part in enumerate(parts[:-1]):
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise ConfigError(".".join(parts[: i + 1]), f"expected a table of fields, got {target!r}")
        target[parts[-1]] = value
    config = TrainConfig.from_dict(data)
    config.build_task()  # the settings that need the task are checked now, before anything runs
    return config


def read_config_file(path: str | Path, what: str = "config") -> dict[str, Any]:
    """The mapping in a TOML or JSON file (JSON when it ends in ``.json``); a missing, unreadable or
    malformed file raises ``ConfigError`` naming ``what`` and the file."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(what, f"expected a TOML or JSON file, got {str(path)!r}, which does not exist")
    if path.is_dir():
        raise ConfigError(what, f"expected a TOML or JSON file, got {str(path)!r}, which is a directory")
    try:
        text = path.read_text(encoding="utf-8")
        return json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except UnicodeDecodeError as err:
        raise ConfigError(what, f"cannot parse {str(path)!r}: not UTF-8 text ({err})") from err
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(what, f"cannot parse {str(path)!r}: {err}") from err
    except OSError as err:
        raise ConfigError(what, f"cannot read {str(path)!r}: {err.strerror or err}") from err


def parse_overrides(overrides: Sequence[str]) -> list[tuple[str, Any]]:
    """``["field=value", ...]`` (``panm-jax train --set``) as ``[(field, value), ...]``, in order.

    The field is kept as written, dots and all (``model_options.hidden``); ``load_config``
    applies the pairs. The value is parsed as JSON where it parses (``128``, ``true``,
    ``[1, 2]``, ``null``) and kept as a string otherwise (``score=scaled_dot``).

    Raises:
      ConfigError: an item without ``=``.
    """
    out = []
    for item in overrides:
        if "=" not in item:
            raise ConfigError("override", f"expected 'field=value', got {item!r}")
        key, raw = item.split("=", 1)
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out.append((key.strip(), value))
    return out
