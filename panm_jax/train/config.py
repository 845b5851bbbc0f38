"""Typed training configuration: dataclasses with the papers' defaults.

One ``TrainConfig`` describes a run completely; it is loaded from a TOML or JSON
file and from command-line overrides (``section.field=value``), validated
(unknown fields and invalid values raise ``ValueError`` naming the field), and
stored inside every checkpoint so a run can be resumed or evaluated without it.

Defaults follow TASKS.md §1 (seed 001's protocol and its authors' code): batch
128, RMSprop with learning rate 1e-4, momentum 0.9, decay 0.95, gradient values
clipped at 10, 50,000 steps, checkpoint selection on the L+1 validation set.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["OptimizerConfig", "TrainConfig", "load_config", "parse_overrides", "resume_differences"]

OPTIMIZERS = ("rmsprop", "adam", "adamw", "sgd")
SCHEDULES = ("constant", "cosine", "warmup_cosine")
ON_NAN = ("stop", "skip-batch")
# Fields a resumed run may change: they do not alter what a run computes while its losses are finite.
RESUMABLE_CHANGES = ("on_nan",)


@dataclasses.dataclass(frozen=True)
class OptimizerConfig:
    """The optax optimiser, schedule and clipping (``train.optim.make_optimizer``)."""

    name: str = "rmsprop"  # one of OPTIMIZERS
    learning_rate: float = 1e-4
    momentum: float = 0.9  # RMSprop/SGD momentum
    decay: float = 0.95  # RMSprop decay of the squared-gradient average
    weight_decay: float = 0.0  # AdamW
    clip_value: float | None = 10.0  # clip every gradient value to [-v, v] (authors' code); false/null: off
    clip_norm: float | None = None  # clip the global gradient norm; false/null: off
    schedule: str = "constant"  # one of SCHEDULES
    warmup_steps: int = 0

    def __post_init__(self):
        _one_of("optimizer.name", self.name, OPTIMIZERS)
        _one_of("optimizer.schedule", self.schedule, SCHEDULES)
        _positive("optimizer.learning_rate", self.learning_rate)
        for name in ("momentum", "decay"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0 <= value < 1:
                raise ValueError(f"optimizer.{name}: expected a number in [0, 1), got {value!r}")
        for name in ("clip_value", "clip_norm"):
            value = getattr(self, name)
            if value is False:  # TOML has no null: `clip_value = false` switches clipping off
                object.__setattr__(self, name, None)
            elif value is not None:
                _positive(f"optimizer.{name}", value)
        _non_negative_int("optimizer.warmup_steps", self.warmup_steps)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """A whole training run."""

    task: str = "copy"
    task_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    model: str = "panm"
    model_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    optimizer: OptimizerConfig = dataclasses.field(default_factory=OptimizerConfig)
    batch_size: int = 128
    num_steps: int = 50_000
    seed: int = 0
    # Bucket lengths (task lengths) that training batches are padded to; empty:
    # powers of two below the longest training length, then that length.
    buckets: Sequence[int] = ()
    eval_every: int = 1_000
    eval_modes: Sequence[str] = ()  # empty: every test mode of the task
    eval_examples: int = 1_000
    eval_batch_size: int = 128
    select_mode: str = "L+1"  # the validation mode that picks the best checkpoint (seed 001)
    checkpoint_every: int = 1_000
    keep_checkpoints: int = 3
    log_every: int = 50
    # Wall-clock budget of one invocation, in minutes: when it runs out the run
    # evaluates, checkpoints and stops early (a rerun resumes with a fresh budget).
    max_minutes: float | None = None
    # A NaN or infinite training loss (or gradient norm): "stop" ends the run with an error
    # naming the step and saves nothing after the last good checkpoint; "skip-batch" leaves
    # the parameters and optimiser state unchanged for that batch and goes on.
    on_nan: str = "stop"

    def __post_init__(self):
        for name in ("task", "model", "select_mode"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"{name}: expected a non-empty string, got {getattr(self, name)!r}")
        for name in ("batch_size", "num_steps", "eval_every", "eval_examples", "eval_batch_size",
                     "checkpoint_every", "keep_checkpoints", "log_every"):
            _positive_int(name, getattr(self, name))
        _non_negative_int("seed", self.seed)
        if self.max_minutes is not None and self.max_minutes is not False:
            _positive("max_minutes", self.max_minutes)
        if self.max_minutes is False:  # TOML has no null
            object.__setattr__(self, "max_minutes", None)
        _one_of("on_nan", self.on_nan, ON_NAN)
        if not isinstance(self.optimizer, OptimizerConfig):
            raise ValueError(f"optimizer: expected an OptimizerConfig, got {type(self.optimizer).__name__}")
        buckets = tuple(self.buckets)
        if any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in buckets) or list(buckets) != sorted(
            set(buckets)
        ):
            raise ValueError(f"buckets: expected strictly ascending positive integers, got {list(buckets)}")
        object.__setattr__(self, "buckets", buckets)
        object.__setattr__(self, "eval_modes", tuple(self.eval_modes))
        object.__setattr__(self, "task_options", dict(self.task_options))
        object.__setattr__(self, "model_options", dict(self.model_options))

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["buckets"] = list(self.buckets)
        d["eval_modes"] = list(self.eval_modes)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainConfig:
        """Build from a plain mapping (a parsed file); unknown keys raise ``ValueError``."""
        if not isinstance(data, Mapping):
            raise ValueError(f"config: expected a mapping of fields, got {type(data).__name__}")
        data = dict(data)
        _check_fields("config", data, cls)
        if "optimizer" in data:
            opt = data["optimizer"]
            if not isinstance(opt, Mapping):
                raise ValueError(f"optimizer: expected a table of fields, got {opt!r}")
            _check_fields("optimizer", opt, OptimizerConfig)
            data["optimizer"] = OptimizerConfig(**opt)
        return cls(**data)

    def replace(self, **changes) -> TrainConfig:
        return dataclasses.replace(self, **changes)


class _Unset:
    def __repr__(self) -> str:
        return "unset"


def resume_differences(stored: TrainConfig, given: TrainConfig) -> list[tuple[str, Any, Any]]:
    """``(field, stored value, given value)`` for each setting that differs, nested ones dotted
    (``optimizer.learning_rate``, ``model_options.hidden``; a value absent on one side is an object whose
    ``repr`` is ``unset``); fields of ``RESUMABLE_CHANGES`` are left out."""
    missing = _Unset()

    def walk(prefix: str, a: Mapping[str, Any], b: Mapping[str, Any]):
        out = []
        for key in [*a, *(k for k in b if k not in a)]:
            name = f"{prefix}{key}"
            x, y = a.get(key, missing), b.get(key, missing)
            if name in RESUMABLE_CHANGES or x == y:
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
        raise ValueError(f"{where}: unknown field(s) {unknown}; known: {sorted(known)}")


def _one_of(name, value, options):
    if value not in options:
        raise ValueError(f"{name}: expected one of {list(options)}, got {value!r}")


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name}: expected a positive number, got {value!r}")


def _positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")


def _non_negative_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name}: expected a non-negative integer, got {value!r}")


def load_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> TrainConfig:
    """Load a ``TrainConfig`` from a TOML/JSON file (or the defaults) and apply overrides.

    ``overrides`` are ``"field=value"`` strings; nested fields use dots
    (``optimizer.learning_rate=3e-4``, ``model_options.hidden=128``); values are
    parsed as JSON when they parse (numbers, booleans, lists, null) and taken as
    strings otherwise.
    """
    data: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise ValueError(f"config: file {str(path)!r} does not exist")
        text = path.read_text()
        try:
            data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as err:
            raise ValueError(f"config: cannot parse {str(path)!r}: {err}") from err
    for key, value in parse_overrides(overrides):
        target = data
        parts = key.split(".")
        for part in parts[:-1]:
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise ValueError(f"{key}: {part!r} is not a table of fields")
        target[parts[-1]] = value
    return TrainConfig.from_dict(data)


def parse_overrides(overrides: Sequence[str]) -> list[tuple[str, Any]]:
    out = []
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override: expected 'field=value', got {item!r}")
        key, raw = item.split("=", 1)
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out.append((key.strip(), value))
    return out
