"""SCAN (Lake & Baroni 2018) generated from its grammar, with the length splits.

Lake & Baroni (2018), "Generalization without Systematicity: On the
Compositional Skills of Sequence-to-Sequence Recurrent Networks", ICML 2018.
The language is enumerated here from the paper's phrase-structure grammar and
interpretation functions (nothing is downloaded):

    C -> S and S | S after S | S
    S -> V twice | V thrice | V
    V -> D[1] opposite D[2] | D[1] around D[2] | D | U
    D -> U left | U right | turn left | turn right
    U -> walk | look | run | jump

``D[1] opposite D[2]`` inserts ``opposite`` between the two words of a ``D``
("walk opposite left", "turn opposite right"). Interpretation:

    [[walk]] = WALK   [[look]] = LOOK   [[run]] = RUN   [[jump]] = JUMP
    [[turn left]] = LTURN                [[turn right]] = RTURN
    [[u left]] = LTURN [[u]]             [[u right]] = RTURN [[u]]
    [[turn opposite left]] = LTURN LTURN [[u opposite left]] = LTURN LTURN [[u]]
    [[turn around left]] = LTURN LTURN LTURN LTURN
    [[u around left]] = LTURN [[u]] LTURN [[u]] LTURN [[u]] LTURN [[u]]
    (and the same with right / RTURN)
    [[x twice]] = [[x]] [[x]]            [[x thrice]] = [[x]] [[x]] [[x]]
    [[x1 and x2]] = [[x1]] [[x2]]        [[x1 after x2]] = [[x2]] [[x1]]

There are 34 ``V`` (4 ``U``, 10 ``D``, 10 "opposite", 10 "around"), 102 ``S``
and ``102 + 2 * 102**2 = 20,910`` commands, every one with a single parse. A
command has 1 to 9 words and 1 to 48 actions ("jump around left thrice and
jump around left thrice"). Only 33 action counts occur: every count 1..22, then
24, 25, 26, 27, 28, 30, 32, 33, 36, 40 and 48.

**Length splits.** The length split of Lake & Baroni trains on the commands of
at most 22 actions (16,990) and tests on the longer ones (3,920). The cut-offs
``22, 24, 25, 26, 27, 28, 30, 32, 33, 36, 40`` (Le et al. 2024, "Plug, Play,
and Generalize: Length Extrapolation with Pointer-Augmented Neural Memory",
TMLR, Table 4) move the boundary: each is an occurring action count, and
``cutoff = c`` trains on the commands of at most ``c`` actions. Sizes
(computed by ``split``, checked by the tests):

    cut-off   22     24     25     26     27     28     30     32     33     36     40
    train  16990  17326  17774  18286  18734  19182  19758  20206  20462  20526  20782
    test    3920   3584   3136   2624   2176   1728   1152    704    448    384    128

**Format** (``output_mode = "after_input"``). The model reads the command, then
emits the actions on blank steps (zero decoder input, no teacher forcing):

    inputs  = w_1 ... w_m <eos> <pad> ... <pad>   (T_in = 10 rows, one-hot over 15)
    targets = a_1 ... a_n <eos>                   (T_out = n + 1 steps, 7 classes)

Input rows are one-hot over the 13 command words, ``<eos>`` (end of command)
and ``<pad>``. Every command is padded with ``<pad>`` rows to the same
``T_in = 10`` (the longest command, 9 words, plus ``<eos>``), and these rows
are real input rows (``input_mask`` true): the interface requires an example
of length ``n`` to have exactly ``input_steps(n)`` real rows, and commands
with the same number of actions have different numbers of words. A fixed
``T_in`` also keeps the input's size from telling the model anything about
the target's length, which is the split variable. Targets are the 6 actions
and ``<eos>``; ``<eos>`` is scored, so an exact match includes stopping.

**Lengths.** ``length`` is the number of actions of the target (the split
variable), so ``output_steps(n) = n + 1``; ``input_steps(n) = 10`` for every
``n``. ``lengths`` is ``1..48`` and ``sample`` also rejects the 15 counts in
that range that no command has (23, 29, 31, 34, 35, 37, 38, 39, 41..47),
naming the count. ``train_lengths`` is ``1..cutoff`` and the test mode
``"test"`` runs from the first occurring count above the cut-off to 48 (24..48
at cut-off 22); counts in these ranges that do not occur are never drawn.

**Sampling.** ``sample(rng, B, n)`` draws each example uniformly among the
commands with ``n`` actions. ``sample_lengths(rng, B, mode)`` draws each
example's count with probability proportional to the number of commands of
that count in the mode, so ``train_batch`` draws commands uniformly from the
training split (not uniformly by length: length 1 has 6 commands, length 10
has 1,696) and ``test_batch`` uniformly from the test split.
``eval_batches(mode, num_examples, batch_size, seed)`` walks a permutation of
the mode's commands fixed by ``seed`` (cycling when ``num_examples`` exceeds
the split), so ``num_examples = len(task.commands("test"))`` scores the whole
test split once. ``split(cutoff)`` returns the two splits as (words, actions)
pairs and ``batch_from_commands`` encodes given commands.

Metrics: exact sequence match (``sequence_accuracy``, the headline; the end
symbol included), then ``token_accuracy``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np

from panm_jax import checks
from panm_jax.errors import UserError
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
    "ACTIONS",
    "CUTOFFS",
    "INPUT_VOCABULARY",
    "OUTPUT_VOCABULARY",
    "SCANTask",
    "WORDS",
    "interpret",
    "language",
    "split",
]

WORDS = (
    "walk",
    "look",
    "run",
    "jump",
    "turn",
    "left",
    "right",
    "opposite",
    "around",
    "twice",
    "thrice",
    "and",
    "after",
)
ACTIONS = ("WALK", "LOOK", "RUN", "JUMP", "LTURN", "RTURN")
INPUT_VOCABULARY = WORDS + ("<eos>", "<pad>")
OUTPUT_VOCABULARY = ACTIONS + ("<eos>",)
IN_EOS = len(WORDS)  # 13
IN_PAD = IN_EOS + 1  # 14
OUT_EOS = len(ACTIONS)  # 6
CUTOFFS = (22, 24, 25, 26, 27, 28, 30, 32, 33, 36, 40)

_PRIMITIVES = {"walk": "WALK", "look": "LOOK", "run": "RUN", "jump": "JUMP"}
_TURNS = {"left": "LTURN", "right": "RTURN"}

Pair = tuple[tuple[str, ...], tuple[str, ...]]  # (command words, actions)


# ------------------------------------------------------------------ grammar


def _u() -> list[Pair]:
    """U -> walk | look | run | jump."""
    return [((u,), (a,)) for u, a in _PRIMITIVES.items()]


def _d_parts() -> list[tuple[str, str, tuple[str, ...], str]]:
    """The two words of each D (``D[1]``, ``D[2]``), with ``[[D[1]]]`` (empty for turn) and the turn."""
    firsts = [(u, a) for (u,), a in _u()] + [("turn", ())]
    return [(first, side, act, _TURNS[side]) for side in _TURNS for first, act in firsts]


def _v() -> list[Pair]:
    """V -> D[1] opposite D[2] | D[1] around D[2] | D | U."""
    out: list[Pair] = []
    for first, side, act, turn in _d_parts():
        out.append(((first, side), (turn,) + act))  # D
        out.append(((first, "opposite", side), (turn, turn) + act))  # opposite
        out.append(((first, "around", side), ((turn,) + act) * 4))  # around
    return out + _u()


def _s() -> list[Pair]:
    """S -> V twice | V thrice | V."""
    out: list[Pair] = []
    for words, acts in _v():
        out += [(words, acts), (words + ("twice",), acts * 2), (words + ("thrice",), acts * 3)]
    return out


def _c() -> list[Pair]:
    """C -> S and S | S after S | S."""
    s = _s()
    out = list(s)
    for w1, a1 in s:
        for w2, a2 in s:
            out.append((w1 + ("and",) + w2, a1 + a2))
            out.append((w1 + ("after",) + w2, a2 + a1))
    return out


class Language(NamedTuple):
    """The enumerated language: parallel tuples and padded id arrays, sorted by command words.

    ``in_ids`` ``[N, T_in]``: word ids, ``<eos>``, then ``<pad>`` (``INPUT_VOCABULARY``);
    ``out_ids`` ``[N, 49]``: action ids, ``<eos>``, then 0 (``OUTPUT_VOCABULARY``);
    ``num_words``, ``num_actions`` ``[N]``; ``by_length``: indices grouped by
    action count (``order``), with ``starts[n]`` and ``counts[n]`` for ``n = 0..48``.
    """

    commands: tuple[tuple[str, ...], ...]
    actions: tuple[tuple[str, ...], ...]
    in_ids: np.ndarray
    out_ids: np.ndarray
    num_words: np.ndarray
    num_actions: np.ndarray
    order: np.ndarray
    starts: np.ndarray
    counts: np.ndarray
    index: dict[str, int]  # type: ignore[assignment]  # shadows tuple.index; a public field, kept

    @property
    def max_words(self) -> int:
        return int(self.num_words.max())

    @property
    def max_actions(self) -> int:
        return int(self.num_actions.max())


@functools.cache
def language() -> Language:
    """Every SCAN command with its actions (built on first use, then cached)."""
    pairs = sorted(set(_c()))
    commands = tuple(w for w, _ in pairs)
    actions = tuple(a for _, a in pairs)
    num_words = np.array([len(w) for w in commands], dtype=np.int64)
    num_actions = np.array([len(a) for a in actions], dtype=np.int64)
    n_cmd, t_in, t_out = len(pairs), int(num_words.max()) + 1, int(num_actions.max()) + 1
    word_id = {w: i for i, w in enumerate(WORDS)}
    action_id = {a: i for i, a in enumerate(ACTIONS)}
    in_ids = np.full((n_cmd, t_in), IN_PAD, dtype=np.int64)
    out_ids = np.zeros((n_cmd, t_out), dtype=np.int32)
    for i, (w, a) in enumerate(pairs):
        in_ids[i, : len(w)] = [word_id[x] for x in w]
        in_ids[i, len(w)] = IN_EOS
        out_ids[i, : len(a)] = [action_id[x] for x in a]
        out_ids[i, len(a)] = OUT_EOS
    order = np.argsort(num_actions, kind="stable")
    counts = np.bincount(num_actions, minlength=t_out).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    for arr in (in_ids, out_ids, num_words, num_actions, order, counts, starts):
        arr.setflags(write=False)
    index = {" ".join(w): i for i, w in enumerate(commands)}
    return Language(commands, actions, in_ids, out_ids, num_words, num_actions, order, starts, counts, index)


def interpret(command) -> list[str]:
    """The action sequence of a SCAN command (a string or a word list); ``ValueError`` if not SCAN."""
    words = command.split() if isinstance(command, str) else list(command)
    i = language().index.get(" ".join(words))
    if i is None:
        raise ValueError(f"command: expected a command of the SCAN grammar, got {' '.join(words)!r}")
    return list(language().actions[i])


def _check_cutoff(name: str, value) -> int:
    """``value`` as an ``int`` if it is one of ``CUTOFFS``, else ``UserError`` naming ``name`` (the check of
    ``SCANTask.Options.cutoff``)."""
    try:
        cutoff = checks.integer(name, value)
        if cutoff in CUTOFFS:
            return cutoff
    except UserError:
        pass
    raise UserError(f"{name}: expected one of {list(CUTOFFS)}, got {value!r}")


def split(cutoff: int = 22) -> tuple[list[Pair], list[Pair]]:
    """The length split at ``cutoff``: ``(train, test)`` lists of ``(words, actions)`` tuples.

    ``train`` holds the commands of at most ``cutoff`` actions, ``test`` the
    rest; both in the language's (sorted) order.
    """
    cutoff = check_option("split", "cutoff", _check_cutoff, cutoff)
    lang = language()
    train = [(w, a) for w, a in zip(lang.commands, lang.actions, strict=True) if len(a) <= cutoff]
    test = [(w, a) for w, a in zip(lang.commands, lang.actions, strict=True) if len(a) > cutoff]
    return train, test


# --------------------------------------------------------------------- task


class SCANTask(Task):
    """SCAN with a length split (module docstring).

    Its options: ``SCANTask.Options``.
    """

    @dataclasses.dataclass(frozen=True)
    class Options(TaskOptions):
        cutoff: int = option(
            22,
            _check_cutoff,
            doc="train on commands of at most cutoff actions, test on the longer ones (22: Lake & Baroni)",
            allowed=f"one of {list(CUTOFFS)}",
        )

    name = "scan"
    metric_names = ("sequence_accuracy", "token_accuracy")
    length_sampling = "per_example"
    output_mode = "after_input"

    def __init__(self, **options: Any):
        o = self.take_options(options)
        self.cutoff = o.cutoff
        self._options = {"cutoff": self.cutoff}
        lang = self._lang = language()
        self.input_size = len(INPUT_VOCABULARY)
        self.output_size = len(OUTPUT_VOCABULARY)
        self._exists = lang.counts > 0  # [49]: action counts that occur
        occurring = np.flatnonzero(self._exists)
        self.lengths = LengthRange(int(occurring.min()), int(occurring.max()))
        self.train_lengths = LengthRange(int(occurring.min()), self.cutoff)
        self.test_modes = {"test": LengthRange(int(occurring[occurring > self.cutoff].min()), lang.max_actions)}
        # The commands of each mode, in the language's order.
        self._pools = {
            mode: np.flatnonzero((lang.num_actions >= r.lo) & (lang.num_actions <= r.hi))
            for mode, r in (("train", self.train_lengths), ("test", self.test_modes["test"]))
        }

    @property
    def validation_mode(self) -> str:
        """``"train"``: checkpoints are selected on commands of the training split, never on the test split
        (whose 3,920 commands at cut-off 22 are the whole test set: a validation draw from it would select on
        the reported examples)."""
        return "train"

    # ------------------------------------------------------------- shapes

    def input_steps(self, length: int) -> int:
        return self._lang.in_ids.shape[1]  # 10 for every length (module docstring)

    def output_steps(self, length: int) -> int:
        return int(length) + 1

    # --------------------------------------------------------- generation

    def check_lengths(self, length, batch_size: int) -> np.ndarray:
        lengths = super().check_lengths(length, batch_size)
        missing = ~self._exists[lengths]
        if missing.any():
            occurring = np.flatnonzero(self._exists).tolist()
            raise ValueError(
                f"length: expected an action count that some SCAN command has (one of {occurring}), "
                f"got {int(lengths[missing][0])}"
            )
        return lengths

    def _generate(self, rng: np.random.Generator, lengths: np.ndarray) -> Batch:
        lang = self._lang
        pick = rng.integers(0, lang.counts[lengths])  # uniform within each count
        return self._encode(lang.order[lang.starts[lengths] + pick])

    def _encode(self, rows: np.ndarray) -> Batch:
        """The batch of language rows ``rows`` ``[B]``, padded to the longest target."""
        lang = self._lang
        n = lang.num_actions[rows]
        t_out = int(n.max()) + 1
        inputs = one_hot(lang.in_ids[rows], self.input_size)
        input_mask = np.ones(inputs.shape[:2], dtype=bool)
        return Batch(inputs, input_mask, lang.out_ids[rows, :t_out].copy(), step_mask(n + 1, t_out))

    def commands(self, mode: str = "train") -> list[tuple[str, ...]]:
        """The commands of ``"train"`` or ``"test"`` (word tuples, the language's order)."""
        self.mode_range(mode)
        return [self._lang.commands[i] for i in self._pools[mode]]

    def split(self) -> tuple[list[Pair], list[Pair]]:
        """``split(self.cutoff)``: the (words, actions) pairs of the training and test splits."""
        return split(self.cutoff)

    def sample_lengths(self, rng: np.random.Generator, batch_size: int, mode: str = "train") -> np.ndarray:
        """Action counts of ``batch_size`` commands drawn uniformly from the mode's split.

        ``sample`` then draws uniformly within each count, so a batch is a
        uniform draw (with replacement) from the split.
        """
        check_rng(rng)
        batch_size = check_batch_size(batch_size)
        self.mode_range(mode)
        pool = self._pools[mode]
        return self._lang.num_actions[pool[rng.integers(len(pool), size=batch_size)]].astype(np.int64)

    def eval_batches(self, mode: str, num_examples: int, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        """``num_examples`` commands of ``mode``: a permutation of its split fixed by ``seed``, in batches.

        Without replacement: the first ``len(split)`` examples are every
        command of the split once; beyond that the permutation repeats.
        """
        num_examples = check_batch_size(num_examples, "num_examples")
        batch_size = check_batch_size(batch_size)
        self.mode_range(mode)
        pool = self._pools[mode]
        perm = pool[np.random.default_rng(seed).permutation(len(pool))]
        rows = np.resize(perm, num_examples)
        for start in range(0, num_examples, batch_size):
            yield self._encode(rows[start : start + batch_size])

    def batch_from_commands(self, commands: Iterable) -> Batch:
        """A batch of given SCAN commands (strings or word lists), in order."""
        index = self._lang.index
        rows = []
        for c in commands:
            words = c.split() if isinstance(c, str) else list(c)
            i = index.get(" ".join(words))
            if i is None:
                raise ValueError(f"command: expected a command of the SCAN grammar, got {' '.join(words)!r}")
            rows.append(i)
        if not rows:
            raise ValueError("commands: expected at least one command")
        return self._encode(np.array(rows, dtype=np.int64))

    def example(self, command) -> Batch:
        """A one-example batch of a given command (for hand checks and reading)."""
        return self.batch_from_commands([command])

    def length_counts(self, mode: str | None = None) -> dict[int, int]:
        """Number of commands per action count, in the whole language or in ``mode``."""
        if mode is None:
            rows = np.arange(len(self._lang.commands))
        else:
            self.mode_range(mode)
            rows = self._pools[mode]
        return dict(sorted(Counter(self._lang.num_actions[rows].tolist()).items()))

    # ------------------------------------------------------------ scoring

    def metrics(self, logits, batch: Batch) -> dict[str, Any]:
        return {
            "sequence_accuracy": _metrics.sequence_accuracy(logits, batch),
            "token_accuracy": _metrics.token_accuracy(logits, batch),
        }

    # ------------------------------------------------------------ reading

    def decode(self, batch: Batch, index: int = 0) -> DecodedExample:
        ids = batch.inputs[index][batch.input_mask[index]].argmax(axis=-1)
        tgt = batch.targets[index][batch.target_mask[index]]
        return DecodedExample([INPUT_VOCABULARY[i] for i in ids], [OUTPUT_VOCABULARY[i] for i in tgt])
