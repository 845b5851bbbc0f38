"""Two modules of the Mathematics dataset, character by character, with its extrapolation sets.

Saxton et al. (2019), "Analysing Mathematical Reasoning Abilities of Neural
Models", ICLR 2019, generate question/answer pairs from procedural modules;
each module has a training distribution and an *extrapolation* distribution of
bigger numbers. As Le et al. (2024), "Plug, Play, and Generalize: Length
Extrapolation with Pointer-Augmented Neural Memory", TMLR, §3.3 and Table 4,
this task trains on the training distribution of one module and tests on its
extrapolation set:

    module         training generator                  test mode "extrapolate"
    add_or_sub     arithmetic__add_or_sub              arithmetic__add_or_sub_big
    place_value    numbers__place_value                numbers__place_value_big

    add_or_sub     "What is -5 - 110911?"  -> "-110916"
                   "Total of 0.06 and -1.2." -> "-1.14"
    place_value    "What is the ten thousands digit of 722313613789?" -> "1"

The questions come from the authors' generator, the PyPI package
``mathematics-dataset`` (1.0.1), an optional dependency: ``pip install
'panm_jax[math]'`` (it needs ``sympy==1.5.1``; newer sympy breaks its imports).
Without it the task cannot be built: ``MathematicsTask(...)`` raises
``MathematicsUnavailableError`` (an ``ImportError``) naming the extra. The rest
of this module (vocabularies, encoding) does not need it.

**Distributions.** The training generator is the package's ``train`` regime
over the whole training entropy range (``modules.train`` with the identity
entropy function: the union of the released ``train-easy``, ``train-medium``
and ``train-hard`` levels); the extrapolation generator is ``test_extra``.
As the package's own sampler does, questions longer than 160 characters and
answers longer than 30 are dropped (and answers longer than the option
``max_answer_length``).

**Pools.** The generator is slow (sympy), too slow to draw every training
batch from it. Each split is therefore drawn once into a fixed *pool*
(options ``train_pool_size``, default 50,000, and ``test_pool_size``, default
10,000), built on first use and cached for the process, keyed by (module,
split, size, ``pool_seed``); a batch is then a draw of pool rows. The
generated chunks are also kept on disk (``cache_dir()``: ``$PANM_JAX_CACHE_DIR``,
else ``~/.cache/panm_jax``), checksummed and keyed by the package versions, so
later processes read a pool instead of generating it again.
Training and test batches draw pool rows with the ``np.random.Generator``
they are given. A pool is generated in chunks of ``CHUNK`` questions; chunk
``c`` is seeded from ``(pool_seed, module, split, c)``, so a pool is fixed by
its seed (the same in every process: checked under different
``PYTHONHASHSEED`` values), and a smaller pool is a prefix of a larger one
with the same seed. With the defaults the question lengths are 4..59
(training) and 16..63 (extrapolation) for add_or_sub, 29..50 and 36..52 for
place_value.

**Determinism.** The package draws from Python's ``random`` module and from
NumPy's global ``np.random`` state. ``generate`` seeds both from the
``np.random.Generator`` it is given and restores both states afterwards, so
generation neither depends on nor disturbs other users of the global state.

**Format** (``output_mode = "after_input"``). The model reads the question,
then emits the answer on blank steps (zero decoder input, no teacher forcing):

    inputs  = q_1 ... q_n <eos>                  (T_in = n + 1 rows, one-hot over 96)
    targets = a_1 ... a_m <eos> <eos> ... <eos>   (T_out = max_answer_length + 1)

Input rows are one-hot over ``INPUT_VOCABULARY``: the 95 characters the
generator's questions may hold (space, ASCII letters, digits and ASCII
punctuation, the package's ``QUESTION_CHARS`` without its empty padding
symbol) and ``<eos>``, the end of the question. Targets are class ids over
``OUTPUT_VOCABULARY``: the 12 characters the answers of these two modules hold
(digits, ``-`` and ``.``) and ``<eos>``. The answer's length is not a function
of the question's, so every answer is followed by ``<eos>`` and padded with
``<eos>`` to a fixed ``T_out`` (as the Chomsky tasks with variable answers
do); every output step is scored. ``max_answer_length`` defaults to 30 (the
generator's bound) for add_or_sub and to 1 for place_value (a digit).

**Lengths.** ``length`` is the question's number of characters (``<eos>``
excluded): ``input_steps(n) = n + 1``, ``output_steps(n) = max_answer_length +
1`` for every ``n``. The generator is not length-controlled, so the ranges are
those of the pools: ``train_lengths`` spans the training pool's question
lengths, the test mode ``"extrapolate"`` the extrapolation pool's, and
``lengths`` both (reading any of them builds the pools). ``sample(rng, B, n)``
draws uniformly among the pooled questions (both pools) of ``n`` characters;
a length in range that no pooled question has is rejected, naming it.

**Sampling.** ``train_batch`` and ``test_batch(mode="extrapolate")`` draw
rows uniformly (with replacement) from the mode's pool, and
``sample_lengths`` returns the lengths of such a draw.
``eval_batches(mode, num_examples, batch_size, seed)`` walks a permutation of
the mode's pool fixed by ``seed`` (cycling when ``num_examples`` exceeds the
pool), so ``num_examples = test_pool_size`` scores the whole extrapolation set
once. ``batch_from_pairs`` encodes given (question, answer) strings.

Metrics: exact sequence match (``sequence_accuracy``, the papers' metric; the
end symbol included), then ``token_accuracy`` (over all ``T_out`` steps, the
``<eos>`` padding included, so it is higher than a per-character score of the
answer alone).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import random
import string
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from panm_jax import checks
from panm_jax._cache import cache_root
from panm_jax.options import option
from panm_jax.tasks import metrics as _metrics
from panm_jax.tasks.base import (
    Batch,
    DecodedExample,
    LengthRange,
    Task,
    TaskOptions,
    check_batch_size,
    check_option,
    check_rng,
    one_hot,
    step_mask,
)

__all__ = [
    "CHUNK",
    "INPUT_VOCABULARY",
    "MODULES",
    "MathematicsTask",
    "MathematicsUnavailableError",
    "OUTPUT_VOCABULARY",
    "SPLITS",
    "generate",
    "pool",
]

INSTALL_HINT = "pip install 'panm_jax[math]'"
# The generator's question characters (its QUESTION_CHARS without the empty padding symbol).
QUESTION_CHARS = " " + string.ascii_letters + string.digits + string.punctuation
INPUT_VOCABULARY = tuple(QUESTION_CHARS) + ("<eos>",)
ANSWER_CHARS = string.digits + "-."
OUTPUT_VOCABULARY = tuple(ANSWER_CHARS) + ("<eos>",)
IN_EOS = len(QUESTION_CHARS)  # 95
OUT_EOS = len(ANSWER_CHARS)  # 12
_IN_ID = {c: i for i, c in enumerate(QUESTION_CHARS)}
_OUT_ID = {c: i for i, c in enumerate(ANSWER_CHARS)}

# The generator's own bounds (mathematics_dataset.generate_settings).
MAX_QUESTION_LENGTH = 160
MAX_ANSWER_LENGTH = 30

MODULES = ("add_or_sub", "place_value")
SPLITS = ("train", "extrapolate")
# module -> (package module, training name, extrapolation name)
_GENERATORS = {
    "add_or_sub": ("arithmetic", "add_or_sub", "add_or_sub_big"),
    "place_value": ("numbers", "place_value", "place_value_big"),
}
_DEFAULT_MAX_ANSWER = {"add_or_sub": MAX_ANSWER_LENGTH, "place_value": 1}
CHUNK = 1000


@contextlib.contextmanager
def _quiet():
    """Silence the DeprecationWarnings newer mpmath (>= 1.4) raises on every call from sympy 1.5.1."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


class MathematicsUnavailableError(ImportError):
    """The optional ``mathematics-dataset`` package (with ``sympy==1.5.1``) is not importable."""


def _import_package():
    """The package's ``arithmetic`` and ``numbers`` modules, or ``MathematicsUnavailableError``."""
    try:
        with _quiet():
            from mathematics_dataset.modules import arithmetic, numbers
    except Exception as err:  # ImportError, or sympy API errors on a newer sympy
        raise MathematicsUnavailableError(
            "mathematics: the task needs the optional package mathematics-dataset (1.0.1) with "
            f"sympy==1.5.1 (newer sympy breaks its imports); install the extra: {INSTALL_HINT} "
            f"(import failed: {type(err).__name__}: {err})"
        ) from err
    return {"arithmetic": arithmetic, "numbers": numbers}


@functools.cache
def _generator(module: str, split: str):
    """The package's question generator of ``module`` and ``split`` (a no-argument callable)."""
    package, train_name, big_name = _GENERATORS[module]
    mod = _import_package()[package]
    with _quiet():
        if split == "train":
            return mod.train(lambda entropy_range: entropy_range)[train_name]
        return mod.test_extra()[big_name]


def generate(
    module: str,
    split: str,
    num: int,
    rng: np.random.Generator,
    max_answer_length: int | None = None,
) -> list[tuple[str, str]]:
    """``num`` (question, answer) string pairs from the package's generator.

    Args:
      module: ``"add_or_sub"`` or ``"place_value"``.
      split: ``"train"`` (the training distribution) or ``"extrapolate"`` (``_big``).
      num: how many pairs (the dropped ones are replaced).
      rng: seeds Python's ``random`` and NumPy's global state, which are
        restored afterwards.
      max_answer_length: drop longer answers (default: the module's default).

    Raises:
      MathematicsUnavailableError: the package is not importable.
    """
    check_option("generate", "module", checks.one_of, module, MODULES)
    check_option("generate", "split", checks.one_of, split, SPLITS)
    num = check_batch_size(num, "num")
    max_answer = _DEFAULT_MAX_ANSWER[module] if max_answer_length is None else int(max_answer_length)
    make = _generator(module, split)
    seed = int(rng.integers(2**32))
    py_state, np_state = random.getstate(), np.random.get_state()
    out: list[tuple[str, str]] = []
    try:
        random.seed(seed)
        np.random.seed(seed)
        with _quiet():
            while len(out) < num:
                problem = make()
                question, answer = str(problem.question), str(problem.answer)
                if len(question) > MAX_QUESTION_LENGTH or len(answer) > min(MAX_ANSWER_LENGTH, max_answer):
                    continue
                out.append((question, answer))
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
    return out


class Pool(NamedTuple):
    """A split's questions and answers, as strings and encoded.

    ``in_ids`` ``[N, T_in]``: character ids, ``<eos>``, then ``-1`` (an all-zero
    row once one-hot); ``out_ids`` ``[N, max_answer + 1]``: answer ids then
    ``<eos>``; ``num_chars`` ``[N]``: question lengths.
    """

    questions: tuple[str, ...]
    answers: tuple[str, ...]
    in_ids: np.ndarray
    out_ids: np.ndarray
    num_chars: np.ndarray


def _encode_pairs(pairs: list[tuple[str, str]], max_answer: int) -> Pool:
    questions = tuple(q for q, _ in pairs)
    answers = tuple(a for _, a in pairs)
    num_chars = np.array([len(q) for q in questions], dtype=np.int64)
    t_in = int(num_chars.max()) + 1
    in_ids = np.full((len(pairs), t_in), -1, dtype=np.int16)
    out_ids = np.full((len(pairs), max_answer + 1), OUT_EOS, dtype=np.int32)
    for i, (q, a) in enumerate(pairs):
        if not q:
            raise ValueError("question: expected at least one character, got ''")
        if len(a) > max_answer:
            raise ValueError(f"answer: expected at most {max_answer} characters, got {a!r}")
        try:
            in_ids[i, : len(q)] = [_IN_ID[c] for c in q]
        except KeyError as err:
            raise ValueError(
                f"question: expected characters of INPUT_VOCABULARY, got {err.args[0]!r} in {q!r}"
            ) from None
        in_ids[i, len(q)] = IN_EOS
        try:
            out_ids[i, : len(a)] = [_OUT_ID[c] for c in a]
        except KeyError as err:
            raise ValueError(
                f"answer: expected characters of OUTPUT_VOCABULARY, got {err.args[0]!r} in {a!r}"
            ) from None
    for arr in (in_ids, out_ids, num_chars):
        arr.setflags(write=False)
    return Pool(questions, answers, in_ids, out_ids, num_chars)


def cache_dir() -> Path:
    """Where generated chunks are kept: ``$PANM_JAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/panm_jax``
    (``~/.cache/panm_jax``), under ``mathematics/``."""
    return cache_root() / "mathematics"


def _package_versions() -> str:
    from importlib import metadata

    try:
        return f"md{metadata.version('mathematics-dataset')}-sympy{metadata.version('sympy')}"
    except metadata.PackageNotFoundError:
        return "unversioned"


def _digest(pairs) -> str:
    return hashlib.sha256(json.dumps(pairs, ensure_ascii=True).encode()).hexdigest()


def _chunk(module: str, split: str, count: int, seed: int, c: int, max_answer: int) -> list[tuple[str, str]]:
    """Chunk ``c`` of a pool: ``count`` questions seeded by ``(seed, module, split, c)``.

    Kept on disk (``cache_dir()``), keyed by the package versions and every
    argument, with the SHA-256 of its pairs: a chunk that does not verify, or
    cannot be read, is generated again and rewritten (atomically, so processes
    building the same pool at once never read half a file). A folder that
    cannot be written only costs the time to generate.
    """
    path = cache_dir() / f"{module}-{split}-{_package_versions()}-seed{seed}-max{max_answer}-n{count}-c{c}.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        pairs = [tuple(p) for p in record["pairs"]]
        if record["sha256"] == _digest(record["pairs"]) and len(pairs) == count:
            return pairs
    except (OSError, ValueError, KeyError, TypeError):
        pass
    rng = np.random.default_rng([seed, MODULES.index(module), SPLITS.index(split), c])
    pairs = generate(module, split, count, rng, max_answer)
    as_lists = [list(p) for p in pairs]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"sha256": _digest(as_lists), "pairs": as_lists}, f)
        os.replace(tmp, path)
    except OSError:
        pass
    return pairs


@functools.lru_cache(maxsize=16)
def pool(module: str, split: str, size: int, seed: int = 0, max_answer_length: int | None = None) -> Pool:
    """The fixed pool of ``size`` questions of ``module``/``split`` (module docstring), cached in the process
    and, chunk by chunk, on disk (``cache_dir()``)."""
    check_option("pool", "module", checks.one_of, module, MODULES)
    check_option("pool", "split", checks.one_of, split, SPLITS)
    max_answer = _DEFAULT_MAX_ANSWER[module] if max_answer_length is None else int(max_answer_length)
    pairs: list[tuple[str, str]] = []
    for c in range((size + CHUNK - 1) // CHUNK):
        pairs += _chunk(module, split, min(CHUNK, size - c * CHUNK), seed, c, max_answer)
    return _encode_pairs(pairs, max_answer)


# --------------------------------------------------------------------- task


class MathematicsTask(Task):
    """A module of the Mathematics dataset with its extrapolation set (module docstring).

    Its options: ``MathematicsTask.Options``.

    Raises:
      TaskOptionError: an option is unknown or invalid.
      MathematicsUnavailableError: the optional package is not installed.
    """

    @dataclasses.dataclass(frozen=True)
    class Options(TaskOptions):
        module: str = option(
            "add_or_sub",
            checks.one_of,
            MODULES,
            doc="the dataset's module: add_or_sub (arithmetic) or place_value (numbers)",
        )
        train_pool_size: int = option(50_000, checks.positive_int, doc="questions in the training pool")
        test_pool_size: int = option(10_000, checks.positive_int, doc="questions in the extrapolation pool")
        pool_seed: int = option(0, checks.nonnegative_int, doc="seeds the pools")
        max_answer_length: int | None = option(
            None,
            checks.optional_integer,
            1,
            MAX_ANSWER_LENGTH,
            doc="T_out - 1, longer answers are not drawn (None: 30 for add_or_sub, 1 for place_value)",
        )

    name = "mathematics"
    metric_names = ("sequence_accuracy", "token_accuracy")
    length_sampling = "per_example"
    output_mode = "after_input"

    def __init__(self, **options: Any):
        o = self.take_options(options)
        self.module = o.module
        self.train_pool_size = o.train_pool_size
        self.test_pool_size = o.test_pool_size
        self.pool_seed = o.pool_seed
        self.max_answer_length = (
            _DEFAULT_MAX_ANSWER[self.module] if o.max_answer_length is None else o.max_answer_length
        )
        self._options = {
            "module": self.module,
            "train_pool_size": self.train_pool_size,
            "test_pool_size": self.test_pool_size,
            "pool_seed": self.pool_seed,
            "max_answer_length": self.max_answer_length,
        }
        _import_package()  # fail now, naming the extra, rather than at the first batch
        self.input_size = len(INPUT_VOCABULARY)
        self.output_size = len(OUTPUT_VOCABULARY)
        self._index: tuple | None = None

    # ------------------------------------------------------------- pools

    def pool(self, mode: str = "train") -> Pool:
        """The pool of ``"train"`` or ``"extrapolate"`` (built on first use)."""
        if mode not in ("train", "extrapolate"):
            raise ValueError(f"mode: expected one of ['train', 'extrapolate'], got {mode!r}")
        size = self.train_pool_size if mode == "train" else self.test_pool_size
        return pool(self.module, mode, size, self.pool_seed, self.max_answer_length)

    def _lengths_index(self):
        """Both pools concatenated and grouped by question length (built once)."""
        if self._index is None:
            pools = [self.pool("train"), self.pool("extrapolate")]
            num_chars = np.concatenate([p.num_chars for p in pools])
            order = np.argsort(num_chars, kind="stable")
            counts = np.bincount(num_chars, minlength=MAX_QUESTION_LENGTH + 2).astype(np.int64)
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
            self._index = (pools, len(pools[0].num_chars), order, starts, counts)
        return self._index

    @property
    def train_lengths(self) -> LengthRange:  # type: ignore[override]  # computed from the pools; read-only here, an attribute in Task
        n = self.pool("train").num_chars
        return LengthRange(int(n.min()), int(n.max()))

    @property
    def test_modes(self) -> dict[str, LengthRange]:  # type: ignore[override]  # computed from the pools; read-only here, an attribute in Task
        n = self.pool("extrapolate").num_chars
        return {"extrapolate": LengthRange(int(n.min()), int(n.max()))}

    @property
    def validation_mode(self) -> str:
        """``"train"``: checkpoints are selected on fresh draws from the training pool, never on the
        extrapolation pool, which is the whole test set."""
        return "train"

    @property
    def lengths(self) -> LengthRange:  # type: ignore[override]  # computed from the pools; read-only here, an attribute in Task
        counts = self._lengths_index()[4]
        occurring = np.flatnonzero(counts)
        return LengthRange(int(occurring.min()), int(occurring.max()))

    # ------------------------------------------------------------- shapes

    def input_steps(self, length: int) -> int:
        return int(length) + 1

    def output_steps(self, length: int) -> int:
        return self.max_answer_length + 1

    # --------------------------------------------------------- generation

    def check_lengths(self, length, batch_size: int) -> np.ndarray:
        lengths = super().check_lengths(length, batch_size)
        counts = self._lengths_index()[4]
        missing = counts[lengths] == 0
        if missing.any():
            raise ValueError(
                f"length: expected a question length that some pooled question has "
                f"(one of {np.flatnonzero(counts).tolist()}), got {int(lengths[missing][0])}"
            )
        return lengths

    def _generate(self, rng: np.random.Generator, lengths: np.ndarray) -> Batch:
        pools, n_train, order, starts, counts = self._lengths_index()
        rows = order[starts[lengths] + rng.integers(0, counts[lengths])]
        in_train = rows < n_train
        parts = [(pools[0], rows[in_train]), (pools[1], rows[~in_train] - n_train)]
        batch = self._encode_mixed(parts)
        # Put the rows back in the order of ``lengths``.
        where = np.concatenate([np.flatnonzero(in_train), np.flatnonzero(~in_train)])
        inverse = np.empty_like(where)
        inverse[where] = np.arange(len(where))
        return Batch(*(x[inverse] for x in batch))

    def _encode_mixed(self, parts) -> Batch:
        """The batch of ``(pool, rows)`` parts, in order, padded to the longest question."""
        n = np.concatenate([p.num_chars[r] for p, r in parts])
        t_in = int(n.max()) + 1
        ids = np.concatenate(
            [
                np.pad(p.in_ids[r, :t_in], ((0, 0), (0, max(0, t_in - p.in_ids.shape[1]))), constant_values=-1)
                for p, r in parts
            ]
        )
        targets = np.concatenate([p.out_ids[r] for p, r in parts]).astype(np.int32)
        input_mask = step_mask(n + 1, t_in)
        return Batch(one_hot(ids, self.input_size), input_mask, targets, np.ones(targets.shape, dtype=bool))

    def _rows(self, mode: str, rows: np.ndarray) -> Batch:
        return self._encode_mixed([(self.pool(mode), rows)])

    def sample_lengths(self, rng: np.random.Generator, batch_size: int, mode: str = "train") -> np.ndarray:
        """Question lengths of ``batch_size`` questions drawn uniformly from the mode's pool."""
        check_rng(rng)
        batch_size = check_batch_size(batch_size)
        self.mode_range(mode)
        p = self.pool(mode)
        return p.num_chars[rng.integers(len(p.num_chars), size=batch_size)].astype(np.int64)

    def train_batch(self, rng: np.random.Generator, batch_size: int) -> Batch:
        """``batch_size`` questions drawn uniformly (with replacement) from the training pool."""
        return self.test_batch(rng, batch_size, "train")

    def test_batch(self, rng: np.random.Generator, batch_size: int, mode: str) -> Batch:
        """``batch_size`` questions drawn uniformly (with replacement) from the pool of ``mode``."""
        check_rng(rng)
        batch_size = check_batch_size(batch_size)
        self.mode_range(mode)
        p = self.pool(mode)
        return self._rows(mode, rng.integers(len(p.num_chars), size=batch_size))

    def eval_batches(self, mode: str, num_examples: int, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        """``num_examples`` questions of ``mode``: a permutation of its pool fixed by ``seed``, in batches."""
        num_examples = check_batch_size(num_examples, "num_examples")
        batch_size = check_batch_size(batch_size)
        self.mode_range(mode)
        size = len(self.pool(mode).num_chars)
        rows = np.resize(np.random.default_rng(seed).permutation(size), num_examples)
        for start in range(0, num_examples, batch_size):
            yield self._rows(mode, rows[start : start + batch_size])

    def batch_from_pairs(self, pairs: Iterable[tuple[str, str]]) -> Batch:
        """A batch of given (question, answer) strings, in order (for hand checks and reading)."""
        pairs = [(str(q), str(a)) for q, a in pairs]
        if not pairs:
            raise ValueError("pairs: expected at least one (question, answer) pair")
        p = _encode_pairs(pairs, self.max_answer_length)
        return self._encode_mixed([(p, np.arange(len(pairs)))])

    # ------------------------------------------------------------ scoring

    def metrics(self, logits, batch: Batch) -> dict[str, Any]:
        return {
            "sequence_accuracy": _metrics.sequence_accuracy(logits, batch),
            "token_accuracy": _metrics.token_accuracy(logits, batch),
        }

    # ------------------------------------------------------------ reading

    def decode(self, batch: Batch, index: int = 0) -> DecodedExample:
        ids = np.asarray(batch.inputs[index])[np.asarray(batch.input_mask[index])].argmax(axis=-1)
        tgt = np.asarray(batch.targets[index])[np.asarray(batch.target_mask[index])]
        return DecodedExample([INPUT_VOCABULARY[i] for i in ids], [OUTPUT_VOCABULARY[i] for i in tgt])

    def decode_text(self, batch: Batch, index: int = 0) -> tuple[str, str]:
        """Example ``index`` as its (question, answer) strings."""
        ex = self.decode(batch, index)
        question = "".join(c for c in ex.inputs if c != "<eos>")
        answer = "".join(ex.targets).split("<eos>")[0]
        return question, answer
