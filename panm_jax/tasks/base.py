"""The one task interface: ``Batch``, ``LengthRange`` and the ``Task`` base class.

Every task is a host-side NumPy generator, deterministic from the
``np.random.Generator`` it is given:

    batch = task.sample(rng, batch_size, length)

returns a ``Batch`` of padded arrays with masks. A model reads
``batch.inputs`` (``[B, T_in, D_in]``, masked by ``batch.input_mask``) and emits
``T_out`` outputs (``[B, T_out, K]`` logits) that are scored against
``batch.targets`` where ``batch.target_mask`` is true.

How outputs line up with inputs is the task's ``output_mode``:

* ``"after_input"``: the model reads the whole input, then emits ``T_out``
  outputs on blank steps whose decoder input is zero (``z_t = 0``: no teacher
  forcing, Le et al. 2024 (Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural Memory, TMLR),
  App. D.1). The input holds no blank
  steps; the model adds them (``model(inputs, input_mask, num_outputs=T_out)``).
* ``"aligned"``: one output per input step (``T_out == T_in``), as in Dyck
  next-symbol prediction, where the output at step ``t`` is read after input
  ``t``.

``length`` means the task's own length (tokens of the sequence, of the
expression, of the source sentence); ``input_steps(length)`` and
``output_steps(length)`` turn it into array time steps, which is what the
bucket helper pads to (``panm_jax.tasks.buckets``).
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple, TypeVar

import numpy as np

from panm_jax import checks
from panm_jax.errors import UnknownNameError, UserError
from panm_jax.options import check_options

__all__ = [
    "Batch",
    "DecodedExample",
    "LengthRange",
    "Task",
    "TaskOptionError",
    "TaskOptions",
    "UnknownTaskError",
    "check_batch_size",
    "check_rng",
]


UnknownTaskError = UnknownNameError
"""``get_task`` was given a name that is not registered: the same type as
``panm_jax.errors.UnknownNameError`` (one type for every registry), kept under
this name for the task API."""


class TaskOptionError(UserError):
    """A task was given an option it does not have, or an invalid value for one (a ``UserError``)."""


class Batch(NamedTuple):
    """One padded batch; NumPy arrays on the host (a pytree, so ``jax.jit`` takes it).

    Padding steps are zero in ``inputs``/``targets`` and false in the masks.
    """

    inputs: np.ndarray  # [B, T_in, D_in] float32
    input_mask: np.ndarray  # [B, T_in]       bool, true on real input steps
    targets: np.ndarray  # [B, T_out] int32 class ids, or [B, T_out, K] float32 multi-hot
    target_mask: np.ndarray  # [B, T_out]      bool, true on scored output steps


class DecodedExample(NamedTuple):
    """One example of a batch written back as symbols (for the CLI and for reading)."""

    inputs: list[str]  # one symbol per real input step
    targets: list[str]  # one symbol (or a set of symbols) per scored output step


@dataclasses.dataclass(frozen=True)
class LengthRange:
    """The admissible lengths ``lo, lo + step, ..., <= hi`` (``step`` 2 keeps a parity)."""

    lo: int
    hi: int
    step: int = 1

    def __post_init__(self):
        if not (1 <= self.step and 0 <= self.lo <= self.hi):
            raise ValueError(f"LengthRange: expected 0 <= lo <= hi and step >= 1, got {self}")

    def values(self) -> np.ndarray:
        """Every admissible length, ascending."""
        return np.arange(self.lo, self.hi + 1, self.step)

    def contains(self, n: int) -> bool:
        return self.lo <= n <= self.hi and (n - self.lo) % self.step == 0

    def describe(self) -> str:
        """``"10"``, ``"1..10"``, ``"2..10 (even)"``."""
        if self.lo == self.hi:
            return str(self.lo)
        parity = ""
        if self.step == 2:
            parity = " (even)" if self.lo % 2 == 0 else " (odd)"
        elif self.step > 2:
            parity = f" (step {self.step})"
        return f"{self.lo}..{self.hi}{parity}"

    def expected(self) -> str:
        """The phrase used in error messages: ``an odd integer in [1, 1021]``."""
        kind = "an integer"
        if self.step == 2:
            kind = "an even integer" if self.lo % 2 == 0 else "an odd integer"
        elif self.step > 2:
            kind = f"an integer = {self.lo} mod {self.step}"
        return f"{kind} in [{self.lo}, {self.hi}]"


def check_batch_size(batch_size, name: str = "batch_size") -> int:
    """Return ``batch_size`` as an ``int`` or raise ``UserError`` (naming ``name``) unless it is >= 1."""
    return checks.positive_int(name, batch_size)


def check_rng(rng) -> np.random.Generator:
    """Return ``rng``, or raise ``UserError`` unless it is a ``np.random.Generator``.

    A seed is refused, not turned into a generator: a fresh generator per call
    would draw the same batch every time.
    """
    if not isinstance(rng, np.random.Generator):
        got = repr(rng) if isinstance(rng, (int, float, str, type(None))) else f"a {type(rng).__name__}"
        raise UserError(f"rng: expected a numpy.random.Generator (np.random.default_rng(seed)), got {got}")
    return rng


@dataclasses.dataclass(frozen=True)
class TaskOptions:
    """The options of a task: a frozen dataclass whose fields are declared with ``panm_jax.options.option``
    (default, check, allowed values, meaning), each checked as it is made. A task's class names its own as
    ``Options`` (a subclass of its base task's ``Options`` where it adds options); checks that relate an
    option to another, or to the task's class, stay in the task's ``__init__``."""

    def __post_init__(self):
        check_options(self)


class Task(abc.ABC):
    """A procedural task: sizes, length modes, a generator and its metrics.

    Its options are the fields of its ``Options`` dataclass (``TaskOptions``); ``__init__(**options)``
    reads them with ``take_options``. Subclasses set the class attributes and the ``__init__``-computed
    fields below, and implement ``_generate(rng, lengths)`` for a validated
    per-example length vector, ``input_steps``/``output_steps``, ``metrics``
    and ``decode``.

    Attributes:
      name: the registry name (``"copy"``).
      input_size: ``D_in``, the width of an input row.
      output_size: ``K``, the number of output classes (or the multi-hot width).
      target_kind: ``"classes"`` (``targets`` are ``[B, T_out]`` int32 ids,
        softmax outputs) or ``"multi_hot"`` (``targets`` are ``[B, T_out, K]``
        float32 in {0, 1}, sigmoid outputs).
      output_mode: ``"after_input"`` or ``"aligned"`` (see the module docstring).
      metric_names: the keys of ``metrics(...)``; the first is the headline metric.
      length_sampling: ``"per_batch"`` (one length for a whole batch, as the
        algorithmic tasks of Le et al. 2024 draw) or ``"per_example"`` (each example
        its own length, padded with masks).
      train_lengths: the training ``LengthRange``.
      test_modes: mode name -> ``LengthRange`` (a single length or a range).
      lengths: every length ``sample`` accepts (``min`` .. ``max``); anything
        outside raises ``ValueError`` naming ``length``.
    """

    name: ClassVar[str]
    Options: ClassVar[type[TaskOptions]] = TaskOptions
    target_kind: ClassVar[str] = "classes"
    output_mode: ClassVar[str] = "after_input"
    metric_names: ClassVar[tuple[str, ...]] = ("token_accuracy",)
    length_sampling: ClassVar[str] = "per_batch"

    input_size: int
    output_size: int
    train_lengths: LengthRange
    test_modes: Mapping[str, LengthRange]
    lengths: LengthRange

    def take_options(self, given: Mapping[str, Any]) -> Any:
        """``self.Options(**given)``: each name an option of the task, each value passing its declared check.

        Raises:
          TaskOptionError: ``"<task>: unknown option(s) [...]; expected some of [...]"`` or
            ``"<task>: option <name>: expected ..., got ..."``.
        """
        known = [f.name for f in dataclasses.fields(self.Options)]
        check_option_names(self.name, given, known)
        try:
            return self.Options(**given)
        except UserError as err:
            raise TaskOptionError(f"{self.name}: option {err}") from None

    # ------------------------------------------------------------------ shapes

    @abc.abstractmethod
    def input_steps(self, length: int) -> int:
        """``T_in`` of an example of this length (delimiters and query rows included)."""

    @abc.abstractmethod
    def output_steps(self, length: int) -> int:
        """``T_out`` of an example of this length."""

    # ------------------------------------------------------------- generation

    def sample(self, rng: np.random.Generator, batch_size: int, length) -> Batch:
        """Draw one batch.

        Args:
          rng: the only source of randomness; the same generator state gives
            the same arrays.
          batch_size: ``B >= 1``.
          length: one length for the whole batch (an int), or a ``[B]`` vector
            of per-example lengths (from ``sample_lengths``); a batch of mixed
            lengths is padded to the longest, with masks.

        Returns:
          a ``Batch`` with ``T_in = input_steps(max length)`` and
          ``T_out = output_steps(max length)``.
        """
        check_rng(rng)
        batch_size = check_batch_size(batch_size)
        lengths = self.check_lengths(length, batch_size)
        return self._generate(rng, lengths)

    @abc.abstractmethod
    def _generate(self, rng: np.random.Generator, lengths: np.ndarray) -> Batch:
        """Generate a batch for validated per-example ``lengths`` ``[B]`` int64."""

    def check_lengths(self, length, batch_size: int) -> np.ndarray:
        """Validate ``length`` (an int or a ``[B]`` vector) and return it as ``[B]`` int64."""
        if isinstance(length, (int, np.integer)) and not isinstance(length, bool):
            if not self.lengths.contains(int(length)):
                raise ValueError(f"length: expected {self.lengths.expected()}, got {length!r}")
            return np.full((batch_size,), int(length), dtype=np.int64)
        arr = np.asarray(length)
        if arr.shape != (batch_size,) or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(
                f"length: expected an integer or an integer vector of shape ({batch_size},), "
                f"got {type(length).__name__} with shape {arr.shape} and dtype {arr.dtype}"
            )
        lo, hi, step = self.lengths.lo, self.lengths.hi, self.lengths.step
        bad = (arr < lo) | (arr > hi) | ((arr - lo) % step != 0)
        if bad.any():
            raise ValueError(f"length: expected {self.lengths.expected()}, got {int(arr[bad][0])}")
        return arr.astype(np.int64)

    def mode_range(self, mode: str) -> LengthRange:
        """The ``LengthRange`` of ``"train"`` or of a test mode."""
        if mode == "train":
            return self.train_lengths
        try:
            return self.test_modes[mode]
        except KeyError:
            known = ["train", *self.test_modes]
            raise ValueError(f"mode: expected one of {known}, got {mode!r}{checks.did_you_mean(mode, known)}") from None

    @property
    def validation_mode(self) -> str:
        """The mode whose fresh examples select a run's checkpoint by default (``TrainConfig.select_mode``).

        Here: ``"L+1"`` where the task has it (Le et al. 2024 select on it), else its
        first test mode. Tasks override it to keep selection off their test lengths:
        the Chomsky-hierarchy tasks name their training-length mode (``"1-40"``), SCAN
        and Mathematics ``"train"`` (fresh examples of the training split).
        """
        return "L+1" if "L+1" in self.test_modes else next(iter(self.test_modes))

    def sample_lengths(self, rng: np.random.Generator, batch_size: int, mode: str = "train") -> np.ndarray:
        """Draw ``[B]`` lengths for ``mode`` (``"train"`` or a test mode name).

        ``per_batch`` tasks draw one length uniformly from the mode's range and
        repeat it (a fresh length per batch); ``per_example`` tasks draw each
        example's length uniformly.
        """
        check_rng(rng)
        batch_size = check_batch_size(batch_size)
        values = self.mode_range(mode).values()
        if self.length_sampling == "per_batch":
            return np.full((batch_size,), values[rng.integers(len(values))], dtype=np.int64)
        return values[rng.integers(len(values), size=batch_size)].astype(np.int64)

    def train_batch(self, rng: np.random.Generator, batch_size: int) -> Batch:
        """One training batch: ``sample`` at lengths from ``sample_lengths(mode="train")``."""
        return self.sample(rng, batch_size, self.sample_lengths(rng, batch_size, "train"))

    def test_batch(self, rng: np.random.Generator, batch_size: int, mode: str) -> Batch:
        """One batch of test mode ``mode``."""
        return self.sample(rng, batch_size, self.sample_lengths(rng, batch_size, mode))

    def eval_batches(self, mode: str, num_examples: int, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        """The evaluation set of ``mode``: ``num_examples`` examples in batches, fixed by ``seed``.

        The last batch is smaller when ``batch_size`` does not divide ``num_examples``.
        """
        num_examples = check_batch_size(num_examples, "num_examples")
        batch_size = check_batch_size(batch_size)
        self.mode_range(mode)  # validates the mode name
        rng = np.random.default_rng(seed)
        done = 0
        while done < num_examples:
            b = min(batch_size, num_examples - done)
            yield self.test_batch(rng, b, mode)
            done += b

    # --------------------------------------------------------------- scoring

    @abc.abstractmethod
    def metrics(self, logits, batch: Batch) -> dict[str, Any]:
        """Masked metrics of ``logits`` ``[B, T_out, K]`` against ``batch``; pure jax.numpy, jit-able."""

    def loss(self, logits, batch: Batch):
        """Masked mean loss: softmax cross-entropy for classes, sigmoid cross-entropy for multi-hot."""
        from panm_jax.tasks import losses

        if self.target_kind == "multi_hot":
            return losses.sigmoid_cross_entropy(logits, batch)
        return losses.softmax_cross_entropy(logits, batch)

    # ---------------------------------------------------------------- reading

    @abc.abstractmethod
    def decode(self, batch: Batch, index: int = 0) -> DecodedExample:
        """Example ``index`` of ``batch`` as input and target symbols."""

    def options(self) -> dict[str, Any]:
        """The options this task was built with (what ``get_task`` would need to rebuild it)."""
        return dict(getattr(self, "_options", {}))

    def describe(self) -> dict[str, Any]:
        """A one-row summary for tables: sizes, metric, lengths."""
        return {
            "name": self.name,
            "input_size": self.input_size,
            "output_size": self.output_size,
            "target_kind": self.target_kind,
            "output_mode": self.output_mode,
            "metric": self.metric_names[0],
            "metrics": list(self.metric_names),
            "train_lengths": self.train_lengths.describe(),
            "test_modes": {k: v.describe() for k, v in self.test_modes.items()},
            "lengths": self.lengths.describe(),
        }

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options().items())
        return f"{type(self).__name__}({opts})"


def one_hot(ids: np.ndarray, depth: int, dtype=np.float32) -> np.ndarray:
    """``ids`` ``[...]`` int -> ``[..., depth]`` one-hot (negative ids give an all-zero row)."""
    out = np.zeros((*ids.shape, depth), dtype=dtype)
    valid = ids >= 0
    np.put_along_axis(out, np.where(valid, ids, 0)[..., None], valid[..., None].astype(dtype), axis=-1)
    return out


def step_mask(lengths: np.ndarray, steps: int) -> np.ndarray:
    """``[B, steps]`` bool: true where the step index is below each example's length."""
    return np.arange(steps)[None, :] < np.asarray(lengths)[:, None]


def check_option_names(task_name: str, given: Mapping[str, Any], known: Sequence[str]) -> None:
    """Raise ``TaskOptionError`` naming any option of ``given`` not in ``known``."""
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise TaskOptionError(
            f"{task_name}: unknown option(s) {unknown}; expected some of {sorted(known)}"
            + checks.did_you_mean(unknown, known)
        )


_T = TypeVar("_T")


def check_option(task_name: str, option: str, check: Callable[..., _T], value, *args) -> _T:
    """Return ``check(option, value, *args)`` (a ``panm_jax.checks`` function); a failure is a ``TaskOptionError``.

    ``check_option("dyck", "p", checks.probability, 1.5)`` raises
    ``"dyck: option p: expected a number in [0, 1], got 1.5"``.
    """
    try:
        return check(option, value, *args)
    except UserError as err:
        raise TaskOptionError(f"{task_name}: option {err}") from None


def check_int_option(task_name: str, option: str, value, lo: int, hi: int | None = None) -> int:
    """Return ``value`` as an int or raise ``TaskOptionError`` unless ``lo <= value (<= hi)``.

    ``check_option`` with ``checks.integer``: the message reads ``"<task>: option <name>: ..."``.
    """
    return check_option(task_name, option, checks.integer, value, lo, hi)
