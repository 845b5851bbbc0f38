"""A queue of unfinished protocol runs, most decisive first, for a GPU available a few minutes at a time.

One command spends a time budget on the first unfinished cells of ``PLAN``, in order, and stops in time;
the next command goes on where it stopped::

    python -m benchmarks.accuracy.queue --workdir runs/queue --budget-seconds 540 [--export DIR] [--cells A,B]
    python -m benchmarks.accuracy.queue --plan            # the cells and their state; runs nothing
    python -m benchmarks.accuracy.queue --unpack DIR      # what --export DIR packed, into this checkout

A cell is one command line of an existing runner (``reproduce``, ``chomsky``, ``transduction``): the
queue starts that runner as a child process and never trains anything itself. Each cell has a name, its
runner's command, its budget (seeds x steps, the papers' protocols) and a test of being finished: the
runner's record (``benchmarks/results/<device>/<name>.json``, any device's folder) holds every model and
seed at the expected steps. Short of that, the runner's work folders under ``--workdir`` say how far it
got: runs finished (their ``results.json``, with the runner's own test), the step of each other run's
newest complete checkpoint. ``--plan`` prints the cells in order with their state (done, partial with
that progress, or not started), the measured pace of their last attempt and the command.

Running. Each call takes the cells in order, skips those done, and runs the next one until it
finishes or the budget is spent; then the following one, and so on. A runner is started only if at
least ``--min-seconds`` of the budget remain (its start and compilation take about a minute). It is
stopped from outside before the budget runs out: SIGINT to its process group (Python's
KeyboardInterrupt: the runner closes its checkpoints) when ``--grace-seconds`` plus 10 seconds are
left, again every 5 seconds (one raised inside a callback is lost), SIGTERM after ``--grace-seconds``
if it still runs, SIGKILL 10 seconds later. Stopping loses at most the steps since the run's last
checkpoint (every 1,000 steps under the algorithmic protocol, 250 on the Chomsky tasks; a
transduction run saves only at its end, so it must fit in one call): the runners resume from their
work folders, so the next call continues the same runs. The runners' own minute caps are not used:
``reproduce --minutes`` and ``chomsky --minutes`` name other run folders and end their runs at the
cap (results written), so a later call could not continue them. The whole call ends within
``--budget-seconds`` and the few seconds an export takes: 540 keeps it under 10 minutes.

Failures. A runner that exits with an error, or exits 0 without its cell being finished, is recorded
with its exit code and the queue moves on to the next cell (a broken cell does not hold the others
back). A cell whose last two attempts failed so is passed over until ``--retry-failed``.

Records. Each runner writes its own record, as it does when run by hand. The queue appends one line per
attempt to ``<workdir>/queue.jsonl`` (``panm_jax.train.io.append_jsonl``: one whole line, flushed to
disk): the cell, its command, start and end (UTC), seconds, exit code, whether and how it was stopped
(``budget``: SIGINT, SIGTERM or SIGKILL), the device (``nvidia-smi``'s GPU names, else ``cpu``) and the
code's commit, the cell's state before and after (with steps), the record files the runner wrote and
the last lines of its output. The whole output of every attempt goes to
``<workdir>/logs/<cell>.log``. One call at a time per work folder (``<workdir>/queue.lock``).

Between machines. Run folders stay on the machine that trained them, where a second call continues
them. For a call on another machine, ``--export DIR`` packs into ``DIR`` what must outlive this one:
the records written during this call, ``queue.jsonl``, the logs, every run folder's small files
(logs, configs, results), and the newest complete checkpoint and the best checkpoint of each
unfinished run, cell by cell in plan order, while the total stays under ``--export-mib`` (44 MiB), in
``queue_state.tar.gz.00``, ``.01``, ... (15 MiB each, at most 7), with ``queue_plan.txt`` (the plan
after the call). Back in the checkout, ``--unpack DIR`` puts the records under ``benchmarks/results/``
and replaces the work folder with the archive's; copied to the next machine beside the checkout, it
lets the runs resume there. A run whose checkpoints did not fit starts again from its first step.
What fits: a PANM run's two checkpoints take about 36 MB (parameters and optimiser state, about 18 MB
each), so one PANM run at a time, or many runs of the small Chomsky and transduction models; five
PANM seeds trained together do not. Hence:

* the 50,000-step cells train their 5 seeds together and need about 9 minutes of an H200 (5 seeds of
  Copy took 8.5, ``nvidia-h200/reproduce_copy_capped_5seeds.json``): two calls on one machine, or one
  longer call; a machine gone before they finish takes their progress with it;
* ID Sort's 100,000 steps train the seeds one after another (``--one-by-one``: the same runs up to
  floating-point rounding), so the seed in progress carries over from machine to machine; together
  they would need twice Copy's time in one go.

With a GPU available a few minutes at a time, one command per visit, run with the interpreter that
has the GPU's JAX (the runners run under the same one, ``sys.executable``), the work folder as the
last ``--unpack`` left it::

    python -m benchmarks.accuracy.queue --workdir runs/queue --budget-seconds 540 --export DIR

then ``python -m benchmarks.accuracy.queue --unpack DIR`` on the files ``DIR`` held.

The plan, most decisive first (``PLAN``; records under ``benchmarks/results/<device>/``):

1. ID Sort under the protocol of Le et al. 2024 (100,000 steps, 5 seeds): the recorded runs reached
   2,001 steps.
2. Mix and Dynamic Recall with the test lengths of the tables' headers (``task.test_lengths=k(L+1)``,
   ``task.max_train_length=9``) under the protocol, PANM and each task's best baseline of the paper
   (Location Attention on Mix, Content Attention on Dynamic Recall), 5 seeds: the reading of the
   tables that the runs at the CPU budget did not rule out (``benchmarks/findings/algorithmic.md``).
3. Mix and Dynamic Recall under the protocol to its 50,000 steps: the recorded runs stopped at 45,360
   and 44,898 (``reproduce_*_capped_5seeds.json``). Their work folders are not kept, and they trained
   with the RMSprop form used before this library's became PyTorch's, so these cells train new runs.
4. The options of ours (``OURS``) on Reverse, Mix, Dynamic Recall, Priority Sort and ID Sort under the
   protocol, 5 seeds (Copy's are recorded, ``reproduce_copy_capped_opt-5d5a9b_3seeds.json``).
5. The Chomsky-hierarchy cells at the paper's 1,000,000 steps, one seed (Delétang et al. 2023): the
   RNN and the LSTM on parity check and modular arithmetic, the Stack-RNN on reverse string, stack
   manipulation and modular arithmetic with brackets, the Tape-RNN on duplicate string, odds first and
   binary addition; then PANM on each of those eight tasks.
6. The transduction cells that decide the claims of Grefenstette et al. 2015 (the Stack-LSTM on
   reversal, the Queue-LSTM on copying, the DeQue-LSTM on both; ``--decisive-only``), 3 seeds, at the
   budget the paper's "until convergence" is read as in ``benchmarks/findings/transduction.md``: 20,000
   steps, learning rate 0.005, 1,000 test sequences.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import fcntl
import io
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from panm_jax.train.checksums import CHECKSUM_FILE
from panm_jax.train.io import append_jsonl, atomic_write_bytes, atomic_write_text, read_jsonl

REPO = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO / "benchmarks" / "results"  # every device's records: benchmarks/results/<device>/<name>.json
LOG = "queue.jsonl"  # one line per attempt, in the work folder
ARCHIVE = "queue_state.tar.gz"  # --export's parts: ARCHIVE.00, ARCHIVE.01, ...
PLAN_FILE = "queue_plan.txt"  # --export: the plan after the call
MANIFEST = "exported.json"  # inside the archive, in the work folder: what it holds
PART_BYTES = 15 * 2**20
MAX_PARTS = 7
TERM_SECONDS = 10  # after SIGTERM, before SIGKILL
INTERRUPT_EVERY = 5.0  # SIGINT is sent again this often until the runner stops or its grace is over
TAIL_LINES = 20  # lines of a runner's output kept in its attempt's line

SEEDS = (0, 1, 2, 3, 4)  # Le et al. 2024 report the mean of 5 runs
# The options of ours (benchmarks/findings/algorithmic.md): one-bit-neighbour distractors with the scaled dot
# score, pointers snapped in training and evaluation.
OURS = (
    "panm.distractors=16",
    "panm.distractor_sampling=neighbours",
    "panm.score=scaled_dot",
    "panm.snap_pointers=always",
)
# The test lengths of the tables' headers: train 1..9, test 9 / 10 / 20 / 40 / 80 (panm_jax.tasks.algorithmic).
HEADERS = ("task.test_lengths=k(L+1)", "task.max_train_length=9")
CHOMSKY_STEPS = 1_000_000  # Delétang et al. 2023 train every run 1,000,000 steps
TITLES = {
    "reverse": "Reverse",
    "mix": "Mix",
    "dynamic_recall": "Dynamic Recall",
    "priority_sort": "Priority Sort",
    "id_sort": "ID Sort",
}


# ------------------------------------------------------------------------------------------------- cells


@dataclasses.dataclass(frozen=True)
class Run:
    """One training run of a cell: its folder, its steps, whether it is finished (``results.json`` of this
    config) and needs nothing more of its checkpoints (``complete``), and the step it would resume from."""

    folder: Path
    steps: int
    finished: bool
    complete: bool
    resume_step: int


@dataclasses.dataclass(frozen=True)
class State:
    """A cell's state: ``status`` is ``"done"``, ``"partial"`` or ``"not started"``; ``done_steps`` of
    ``total_steps`` are behind it (a finished run counts whole, another up to its newest checkpoint)."""

    status: str
    detail: str
    done_steps: int = 0
    total_steps: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Cell:
    """One protocol cell: one command line of a runner (``module``). Subclasses say which runs it trains
    (``runs``), where its record is (``record_stem``) and when that record holds the whole cell
    (``record_ok``)."""

    name: str
    why: str

    module = ""  # the runner, run as ``python -m module``

    def args(self, workdir: Path) -> list[str]:
        """The runner's arguments, its work folder under ``workdir`` included."""
        raise NotImplementedError

    def command(self, workdir: Path) -> list[str]:
        """The process the queue starts: the runner under this interpreter."""
        return [sys.executable, "-m", self.module, *self.args(workdir)]

    def shown(self, workdir: Path) -> str:
        """The command as a person types it."""
        return shlex.join(["python", "-m", self.module, *self.args(workdir)])

    def budget(self) -> str:
        raise NotImplementedError

    def runs(self, workdir: Path) -> list[Run]:
        raise NotImplementedError

    def record_stem(self) -> str | None:
        """The record's file name without ``.json`` (None: the command writes none)."""
        return None

    def record_ok(self, record: dict[str, Any]) -> bool:
        raise NotImplementedError

    def record(self, results: Path) -> Path | None:
        """A record of the whole cell under ``results/<device>/``, or None."""
        stem = self.record_stem()
        if stem is None:
            return None
        for path in sorted(results.glob(f"*/{stem}.json")):
            try:
                record = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            if self.record_ok(record):
                return path
        return None

    def state(self, workdir: Path, results: Path | None = None) -> State:
        results = RESULTS_DIR if results is None else results
        runs = self.runs(workdir)
        total = sum(r.steps for r in runs)
        found = self.record(results)
        if found is not None:
            return State("done", f"record {found.relative_to(results).as_posix()}", total, total)
        done = sum(r.steps if r.finished else min(r.resume_step, r.steps) for r in runs)
        finished = sum(r.finished for r in runs)
        if self.record_stem() is None and finished == len(runs) and all(r.complete for r in runs):
            return State("done", f"all {len(runs)} runs finished", total, total)
        if not any(r.folder.exists() for r in runs):
            return State("not started", "", 0, total)
        detail = (
            f"{finished} of {len(runs)} runs finished, {done:,} of {total:,} steps ({100 * done / max(total, 1):.0f} %)"
        )
        if finished == len(runs):
            detail += "; the record is not written yet"
        return State("partial", detail, done, total)

    def resume_folders(self, workdir: Path) -> list[Path]:
        """The run folders whose checkpoints a later call still needs (started, not complete), in order."""
        return [r.folder for r in self.runs(workdir) if r.folder.exists() and not r.complete]


def newest_checkpoint(folder: Path) -> Path | None:
    """The newest complete checkpoint in ``folder`` (``checkpoints`` or ``best`` of a run): a step folder with
    its ``checksums.sha256`` (``panm_jax.train.checkpoint``; ``deleting-<step>`` and ``corrupt-<step>`` are not
    steps)."""
    steps = [p for p in folder.glob("*") if p.name.isdigit() and (p / CHECKSUM_FILE).exists()]
    return max(steps, key=lambda p: int(p.name), default=None)


def resume_step(run_folder: Path) -> int:
    found = newest_checkpoint(run_folder / "checkpoints")
    return int(found.name) if found is not None else 0


def _rel(path: Path) -> str:
    """``path`` relative to the checkout when inside it (what a record's command shows), else as given."""
    path = Path(os.path.abspath(path))
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)


def _rows_cover(record: dict[str, Any], expected: set[tuple[str, str, int]], steps: int) -> bool:
    """Whether ``record`` has a row of every ``(task, model, seed)`` in ``expected`` trained ``steps`` steps."""
    rows = {(r.get("task"), r.get("model"), r.get("seed")): r for r in record.get("rows", [])}
    return all(key in rows and rows[key].get("steps") == steps for key in expected)


@dataclasses.dataclass(frozen=True)
class ReproduceCell(Cell):
    """``python -m benchmarks.accuracy.reproduce`` under the paper's protocol (Le et al. 2024): ``models`` on
    ``task``, ``seeds``, the model and task options ``sets`` (``--set``), ``--name label``; ``steps`` replaces the
    protocol's steps; ``one_by_one`` trains the seeds one after another."""

    task: str = "copy"
    models: tuple[str, ...] = ("panm",)
    seeds: tuple[int, ...] = SEEDS
    sets: tuple[str, ...] = ()
    label: str = "5seeds"
    steps: int | None = None
    one_by_one: bool = False

    module = "benchmarks.accuracy.reproduce"

    def args(self, workdir: Path) -> list[str]:
        out = ["--task", self.task, "--models", ",".join(self.models), "--seeds", ",".join(map(str, self.seeds))]
        for item in self.sets:
            out += ["--set", item]
        if self.steps is not None:
            out += ["--steps", str(self.steps)]
        if self.one_by_one:
            out.append("--one-by-one")
        return [*out, "--name", self.label, "--workdir", _rel(workdir / "reproduce")]

    def _parsed(self, workdir: Path):
        from benchmarks.accuracy import reproduce

        args = SimpleNamespace(
            quick=False, select="L+1", steps=self.steps, name=self.label, workdir=str(workdir / "reproduce")
        )
        minutes = {m: None for m in self.models}
        return reproduce, args, minutes, reproduce.parse_model_sets(list(self.sets), list(self.models))

    def _steps(self) -> int:
        return self.steps or (100_000 if self.task == "id_sort" else 50_000)

    def budget(self) -> str:
        together = "one after another" if self.one_by_one else "together"
        return (
            f"{', '.join(self.models)}: {len(self.seeds)} seeds ({together}) x {self._steps():,} steps, "
            "the paper's protocol"
        )

    def runs(self, workdir: Path) -> list[Run]:
        reproduce, args, minutes, model_sets = self._parsed(workdir)
        out = []
        for model in self.models:
            for config, folder in reproduce.run_plan(args, self.task, model, list(self.seeds), minutes, model_sets):
                finished = reproduce.finished_results(folder, config) is not None
                out.append(Run(folder, config.num_steps, finished, finished, resume_step(folder)))
        return out

    def record_stem(self) -> str:
        reproduce, args, minutes, model_sets = self._parsed(Path("."))
        return reproduce.results_name(f"reproduce_{self.task}", args, minutes, model_sets)

    def record_ok(self, record: dict[str, Any]) -> bool:
        ours = {r.get("model"): r for r in record.get("rows", []) if r.get("row") == "ours"}
        for model in self.models:
            row = ours.get(model)
            if row is None or row.get("seeds") != len(self.seeds):
                return False
            if [s.strip() for s in str(row.get("steps", "")).split(",")] != [str(self._steps())] * len(self.seeds):
                return False
        return True


@dataclasses.dataclass(frozen=True)
class ChomskyCell(Cell):
    """``python -m benchmarks.accuracy.chomsky``: ``models`` on ``tasks``, ``seeds``, ``steps`` each, the
    runner's default sweep (every test length 41..500, 64 examples) unless the fields say otherwise;
    ``--name label`` (None: no record, the cell is done when its runs are)."""

    tasks: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0,)
    steps: int = CHOMSKY_STEPS
    label: str | None = None
    max_train_length: int = 40
    max_test_length: int = 500
    examples_per_length: int | None = None

    module = "benchmarks.accuracy.chomsky"

    def args(self, workdir: Path) -> list[str]:
        out = [
            "--tasks",
            ",".join(self.tasks),
            "--models",
            ",".join(self.models),
            "--seeds",
            ",".join(map(str, self.seeds)),
            "--steps",
            str(self.steps),
        ]
        if (self.max_train_length, self.max_test_length) != (40, 500):
            out += ["--max-train-length", str(self.max_train_length), "--max-test-length", str(self.max_test_length)]
        if self.examples_per_length is not None:
            out += ["--examples-per-length", str(self.examples_per_length)]
        if self.label is not None:
            out += ["--name", self.label]
        return [*out, "--workdir", _rel(workdir / "chomsky")]

    def budget(self) -> str:
        return (
            f"{', '.join(self.models)} on {len(self.tasks)} task(s): {len(self.seeds)} seed(s) x {self.steps:,} steps"
        )

    def runs(self, workdir: Path) -> list[Run]:
        from benchmarks.accuracy import chomsky

        out = []
        for task in self.tasks:
            for model in self.models:
                for seed in self.seeds:
                    config = chomsky.make_config(
                        task, model, seed, None, self.max_train_length, self.max_test_length, self.steps
                    )
                    folder = workdir / "chomsky" / task / f"{model}-s{seed}-{self.steps}steps"  # chomsky.main's
                    finished = chomsky.finished(folder, config)
                    # Finished and range-evaluated (range.json): the checkpoints are not read again.
                    complete = finished and (folder / "range.json").exists()
                    out.append(Run(folder, self.steps, finished, complete, resume_step(folder)))
        return out

    def record_stem(self) -> str | None:
        return None if self.label is None else f"chomsky_{self.label}"

    def record_ok(self, record: dict[str, Any]) -> bool:
        expected = {(t, m, s) for t in self.tasks for m in self.models for s in self.seeds}
        return _rows_cover(record, expected, self.steps)


@dataclasses.dataclass(frozen=True)
class TransductionCell(Cell):
    """``python -m benchmarks.accuracy.transduction``: ``models`` on ``tasks`` (only the decisive cells among
    them with ``decisive_only``), ``seeds`` and ``extra_seeds``, ``steps`` steps at learning rate ``lr``,
    ``test_examples`` test sequences, ``--name label``."""

    tasks: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0,)
    extra_seeds: tuple[int, ...] = ()
    decisive_only: bool = False
    steps: int = 20_000
    lr: float = 0.005
    hidden: int = 256
    test_examples: int = 1_000
    label: str | None = None

    module = "benchmarks.accuracy.transduction"

    def args(self, workdir: Path) -> list[str]:
        out = ["--tasks", ",".join(self.tasks), "--models", ",".join(self.models)]
        out += ["--seeds", ",".join(map(str, self.seeds))]
        if self.extra_seeds:
            out += ["--extra-seeds", ",".join(map(str, self.extra_seeds))]
        if self.decisive_only:
            out.append("--decisive-only")
        out += ["--steps", str(self.steps), "--lr", f"{self.lr:g}", "--test-examples", str(self.test_examples)]
        if self.hidden != 256:
            out += ["--hidden", str(self.hidden)]
        if self.label is not None:
            out += ["--name", self.label]
        return [*out, "--workdir", _rel(workdir / "transduction")]

    def _plan(self) -> list[tuple[str, str, int]]:
        from benchmarks.accuracy import transduction

        extra = [s for s in self.extra_seeds if s not in self.seeds]
        return transduction.run_plan(list(self.tasks), list(self.models), list(self.seeds), extra, self.decisive_only)

    def budget(self) -> str:
        return (
            f"{len(self._plan())} runs x {self.steps:,} steps (batch 10, RMSProp {self.lr:g}); a run saves only at "
            "its end, so it must fit in one call"
        )

    def runs(self, workdir: Path) -> list[Run]:
        from benchmarks.accuracy import chomsky, transduction

        out = []
        for task, model, seed in self._plan():
            config = transduction.make_config(task, model, seed, self.steps, self.hidden, self.lr, self.test_examples)
            tag = f"s{seed}-{self.steps}steps-h{self.hidden}-lr{self.lr:g}-test{self.test_examples}"  # its main's
            folder = workdir / "transduction" / task / f"{model}-{tag}"
            finished = chomsky.finished(folder, config)
            out.append(Run(folder, self.steps, finished, finished, resume_step(folder)))
        return out

    def record_stem(self) -> str | None:
        return None if self.label is None else f"transduction_{self.label}"

    def record_ok(self, record: dict[str, Any]) -> bool:
        return _rows_cover(record, set(self._plan()), self.steps)


def build_plan() -> list[Cell]:
    """Today's plan, most decisive first (the module docstring says why each cell is there)."""
    cells: list[Cell] = [
        ReproduceCell(
            "id_sort_protocol",
            "ID Sort under the protocol: the recorded runs reached 2,001 of 100,000 steps",
            task="id_sort",
            one_by_one=True,
        )
    ]
    for task, attention in (("mix", "location"), ("dynamic_recall", "content")):
        cells += [
            ReproduceCell(
                f"{task}_headers_panm",
                f"{TITLES[task]} with the headers' test lengths under the protocol: PANM",
                task=task,
                sets=HEADERS,
            ),
            ReproduceCell(
                f"{task}_headers_{attention}_attention",
                f"{TITLES[task]} with the headers' test lengths under the protocol: {attention.title()} Attention, "
                "the paper's best baseline there",
                task=task,
                models=("lstm_attention",),
                sets=(f"lstm_attention.attention={attention}", *HEADERS),
            ),
        ]
    cells += [
        ReproduceCell(
            f"{task}_protocol",
            f"{TITLES[task]} under the protocol to its 50,000 steps: the recorded runs stopped at {stopped:,}",
            task=task,
        )
        for task, stopped in (("mix", 45_360), ("dynamic_recall", 44_898))
    ]
    cells += [
        ReproduceCell(
            f"{task}_ours",
            f"{TITLES[task]} under the protocol with the options of ours",
            task=task,
            sets=OURS,
            one_by_one=task == "id_sort",
        )
        for task in ("reverse", "mix", "dynamic_recall", "priority_sort", "id_sort")
    ]
    chomsky_baselines = (
        ("regular", ("parity_check", "modular_arithmetic"), ("rnn", "single_lstm")),
        ("stack", ("reverse_string", "stack_manipulation", "modular_arithmetic_brackets"), ("stack_rnn",)),
        ("tape", ("duplicate_string", "odds_first", "binary_addition"), ("tape_rnn",)),
    )
    cells += [
        ChomskyCell(
            f"chomsky_{group}",
            f"the paper's {' and '.join(models)} on {', '.join(tasks)} at its 1,000,000 steps",
            tasks=tasks,
            models=models,
            label=f"{CHOMSKY_STEPS}steps_{group}",
        )
        for group, tasks, models in chomsky_baselines
    ]
    cells += [
        ChomskyCell(
            f"chomsky_panm_{task}",
            f"PANM on {task} at the paper's 1,000,000 steps",
            tasks=(task,),
            models=("panm",),
            label=f"{CHOMSKY_STEPS}steps_panm_{task}",
        )
        for _, tasks, _ in chomsky_baselines
        for task in tasks
    ]
    cells.append(
        TransductionCell(
            "transduction_decisive",
            "the Stack-LSTM on reversal, the Queue-LSTM on copying, the DeQue-LSTM on both (Grefenstette et al. 2015)",
            tasks=("transduction_copy", "transduction_reversal"),
            models=("stack_lstm", "queue_lstm", "deque_lstm"),
            seeds=(0,),
            extra_seeds=(1, 2),
            decisive_only=True,
            label="decisive_20000steps",
        )
    )
    return cells


PLAN: list[Cell] = build_plan()


# ------------------------------------------------------------------------------------------------- history


def history(workdir: Path) -> list[dict[str, Any]]:
    return read_jsonl(workdir / LOG)


def failed(line: dict[str, Any]) -> bool:
    """An attempt that ended by itself without finishing its cell: an error, or exit 0 short of done."""
    return line.get("stopped") is None and not line.get("finished", False)


def failing(cell: Cell, lines: list[dict[str, Any]]) -> bool:
    """Whether the last two attempts of ``cell`` both failed (``failed``)."""
    mine = [line for line in lines if line.get("cell") == cell.name]
    return len(mine) >= 2 and all(failed(line) for line in mine[-2:])


def pace(cell: Cell, lines: list[dict[str, Any]]) -> float | None:
    """Steps per second of the cell's last attempt that moved it on (start and compilation included)."""
    for line in reversed([line for line in lines if line.get("cell") == cell.name]):
        gained = line.get("after", {}).get("done_steps", 0) - line.get("before", {}).get("done_steps", 0)
        if gained > 0 and line.get("seconds"):
            return gained / line["seconds"]
    return None


# ------------------------------------------------------------------------------------------------- plan


def plan_text(cells: Sequence[Cell], workdir: Path, results: Path | None = None, brief: bool = False) -> str:
    """The ordered cells with their state, budget, command and record, as ``--plan`` prints them; ``brief``:
    one line per cell, its state."""
    lines_seen = history(workdir)
    out = [f"{len(cells)} cells, most decisive first; work folder {_rel(workdir)}"]
    for i, cell in enumerate(cells, 1):
        state = cell.state(workdir, results)
        status = state.status + (f": {state.detail}" if state.detail else "")
        attempts = [line for line in lines_seen if line.get("cell") == cell.name]
        if state.status != "done":
            rate = pace(cell, lines_seen)
            if rate is not None:
                left = (state.total_steps - state.done_steps) / rate
                status += f"; about {left:,.0f} s more at its last attempt's pace ({rate:.1f} steps/s)"
            if failing(cell, lines_seen):
                status += "; its last two attempts failed: passed over until --retry-failed"
        out.append(f"{i:2d}. {cell.name}: {status}")
        if brief:
            continue
        out.append(f"    why: {cell.why}")
        out.append(f"    budget: {cell.budget()}")
        if attempts:
            last = attempts[-1]
            how = f"stopped ({last['stopped']})" if last.get("stopped") else f"exit {last.get('exit_code')}"
            out.append(f"    attempts: {len(attempts)}, the last {last.get('start')} on {last.get('device')}, {how}")
        out.append(f"    command: {cell.shown(workdir)}")
        stem = cell.record_stem()
        out.append(
            f"    done when: benchmarks/results/<device>/{stem}.json holds every model and seed at its steps"
            if stem
            else "    done when: every run's folder holds its results"
        )
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------- running


def describe_device() -> str:
    """The GPUs ``nvidia-smi`` lists (``NVIDIA H200``), else ``cpu``; asked without starting JAX, whose
    allocator would take the GPU's memory from the runners."""
    try:
        found = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return "cpu"
    names = [n.strip() for n in found if n.strip()]
    return ", ".join(dict.fromkeys(names)) or "cpu"


def describe_code() -> str | None:
    """The checkout's commit, ``+dirty`` when tracked files differ (what the runs record as ``code``)."""
    from panm_jax.train.provenance import code_commit

    return code_commit()


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


class Interrupted(Exception):
    """The queue itself was asked to stop (SIGINT or SIGTERM)."""


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """While a runner runs: SIGINT and SIGTERM to the queue raise ``Interrupted`` (so its runner is stopped
    and the attempt recorded). SIGINT gets a handler even where the queue was started with it ignored (as a
    shell starts background jobs): an ignored signal stays ignored in a child, whose Python would then never
    raise KeyboardInterrupt, while a handled one is reset to its default in the child."""

    def handler(signum, frame):
        raise Interrupted(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def stop(proc: subprocess.Popen, grace: float) -> str:
    """Stop ``proc``'s process group: SIGINT, sent again every ``INTERRUPT_EVERY`` seconds for ``grace``
    seconds (a KeyboardInterrupt raised where Python ignores exceptions, in a garbage-collection callback of
    JAX's say, is lost), then SIGTERM, then after ``TERM_SECONDS`` SIGKILL; returns the last signal sent.
    Whatever of the group outlives its leader is killed."""
    sent = "none"
    end = time.monotonic() + grace
    steps = [(signal.SIGINT, None), (signal.SIGTERM, TERM_SECONDS), (signal.SIGKILL, None)]
    for sig, wait in steps:
        while True:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            sent = sig.name
            timeout = min(INTERRUPT_EVERY, max(0.0, end - time.monotonic())) if sig == signal.SIGINT else wait
            try:
                proc.wait(timeout=timeout)
                break
            except subprocess.TimeoutExpired:
                if sig != signal.SIGINT or time.monotonic() >= end:
                    break
        if proc.poll() is not None:
            break
    proc.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # children left behind by the runner
    return sent


def attempt(
    cell: Cell, workdir: Path, seconds: float, grace: float, device: str, code: str | None, results: Path | None
) -> dict[str, Any]:
    """Run ``cell``'s runner for at most ``seconds`` (then ``stop`` it), append its line to the log and
    return it."""
    before = cell.state(workdir, results)
    log_path = workdir / "logs" / f"{cell.name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start, began = _now(), time.monotonic()
    with open(log_path, "ab") as log:
        offset = log.tell()
        log.write(f"== {start} {cell.shown(workdir)}\n".encode())
        log.flush()
        print(f"== {cell.name} ({before.status}{': ' + before.detail if before.detail else ''})", flush=True)
        print(f"   {cell.shown(workdir)}", flush=True)
        print(f"   up to {seconds:.0f} s; output in {_rel(log_path)}", flush=True)
        stopped, interrupted, proc = None, None, None
        try:
            with _signals_interrupt():
                proc = subprocess.Popen(
                    cell.command(workdir),
                    cwd=REPO,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env={**os.environ, "PYTHONUNBUFFERED": "1"},
                    start_new_session=True,  # its own process group: stop() signals the runner and its children
                )
                try:
                    proc.wait(timeout=max(0.0, seconds))
                except subprocess.TimeoutExpired:
                    stopped = "budget: " + stop(proc, grace)
        except Interrupted as err:
            if proc is None:
                raise
            interrupted = str(err)
            stopped = f"queue interrupted ({err}): " + stop(proc, grace)
    output = log_path.read_bytes()[offset:].decode(errors="replace").splitlines()[1:]
    after = cell.state(workdir, results)
    line = {
        "cell": cell.name,
        "command": cell.shown(workdir),
        "start": start,
        "end": _now(),
        "seconds": round(time.monotonic() - began, 1),
        "exit_code": proc.returncode,
        "stopped": stopped,
        "finished": after.status == "done",
        "device": device,
        "code": code,
        "before": before.to_dict(),
        "after": after.to_dict(),
        "wrote": [x for x in output if x.startswith("wrote ")],
        "output_tail": [x[-400:] for x in output if x.strip()][-TAIL_LINES:],
        "log": _rel(log_path),
    }
    append_jsonl(workdir / LOG, line)
    how = stopped or f"exit {proc.returncode}"
    print(f"   {how} after {line['seconds']:.0f} s: {after.status}{': ' + after.detail if after.detail else ''}")
    if failed(line):
        print("   " + "\n   ".join(line["output_tail"][-5:]), flush=True)
    if interrupted is not None:
        raise Interrupted(interrupted)
    return line


@contextlib.contextmanager
def queue_lock(workdir: Path) -> Iterator[None]:
    """One queue call at a time per work folder (``flock`` on ``<workdir>/queue.lock``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    with open(workdir / "queue.lock", "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SystemExit(f"{_rel(workdir)}: another queue call is running in this work folder") from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run_queue(
    cells: Sequence[Cell],
    workdir: Path,
    budget_seconds: float,
    *,
    grace_seconds: float = 30.0,
    min_seconds: float = 90.0,
    retry_failed: bool = False,
    results: Path | None = None,
) -> list[dict[str, Any]]:
    """Run the first unfinished ``cells`` in order within ``budget_seconds``; returns this call's attempts.

    A runner is stopped (``stop``) when ``grace_seconds + TERM_SECONDS`` of the budget are left, so that it
    is gone by the end of it; none is started with less than ``min_seconds`` before that point. A failed
    attempt moves on to the next cell; a cell whose last two attempts failed is passed over unless
    ``retry_failed``."""
    deadline = time.monotonic() + budget_seconds - grace_seconds - TERM_SECONDS
    device, code = describe_device(), describe_code()
    lines = []
    for cell in cells:
        state = cell.state(workdir, results)
        if state.status == "done":
            continue
        if not retry_failed and failing(cell, history(workdir)):
            print(f"== {cell.name}: passed over, its last two attempts failed (--retry-failed runs it)", flush=True)
            continue
        left = deadline - time.monotonic()
        if left < min_seconds:
            print(f"== stopping: {max(left, 0):.0f} s left, less than --min-seconds {min_seconds:g}", flush=True)
            break
        line = attempt(cell, workdir, left, grace_seconds, device, code, results)
        lines.append(line)
        if line["stopped"] is not None:
            break  # the budget is spent
    else:
        print("== every cell of the plan is done or passed over", flush=True)
    return lines


# ------------------------------------------------------------------------------------------------- export


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _small_files(workdir: Path) -> Iterator[Path]:
    """The work folder's files but the runs' checkpoints and the locks."""
    for path in _files(workdir):
        parts = path.relative_to(workdir).parts
        if path.name in (".lock", "queue.lock") or any(p in ("checkpoints", "best") for p in parts[:-1]):
            continue
        yield path


def export_state(
    cells: Sequence[Cell],
    workdir: Path,
    out: Path,
    since: float,
    cap_bytes: int,
    *,
    root: Path | None = None,
    results: Path | None = None,
) -> dict[str, Any]:
    """Pack into ``out`` what a later call on another machine needs (the module docstring's "Between
    machines"): ``ARCHIVE.00``, ``.01``, ... and ``PLAN_FILE``; returns the manifest. Paths in the archive
    are relative to ``root`` (the checkout), which must hold ``workdir``."""
    results = RESULTS_DIR if results is None else results
    workdir, root = Path(os.path.abspath(workdir)), Path(os.path.abspath(REPO if root is None else root))
    if not workdir.is_relative_to(root) or workdir == root:
        raise SystemExit(f"--export: the work folder {workdir} must be a folder inside {root}")
    members: dict[Path, int] = {}
    records = [p for p in _files(results) if p.stat().st_mtime >= since - 1.0] if results.exists() else []
    for path in [*records, *_small_files(workdir)]:
        members[path] = path.stat().st_size
    size = sum(members.values())
    kept, left_out = [], []
    for cell in cells:
        # A cell's checkpoints go whole or not at all: seeds trained together resume together.
        folders = cell.resume_folders(workdir)
        wanted = {
            f: [c for c in (newest_checkpoint(f / "checkpoints"), newest_checkpoint(f / "best")) if c] for f in folders
        }
        files = [p for found in wanted.values() for c in found for p in _files(c)]
        if not files:
            continue
        extra = sum(p.stat().st_size for p in files)
        names = [f.relative_to(root).as_posix() for f, found in wanted.items() if found]
        if size + extra > cap_bytes:
            left_out += names
            continue
        members.update({p: p.stat().st_size for p in files})
        size += extra
        kept += names
    manifest = {
        "workdir": workdir.relative_to(root).as_posix(),
        "created": _now(),
        "device": describe_device(),
        "code": describe_code(),
        "records": [p.relative_to(root).as_posix() for p in records],
        "checkpoints": kept,
        "checkpoints_left_out": left_out,
        "bytes": size,
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:  # checkpoints hardly compress
        for path in members:
            tar.add(path, arcname=path.relative_to(root).as_posix(), recursive=False)
        data = (json.dumps(manifest, indent=1) + "\n").encode()
        info = tarfile.TarInfo(f"{manifest['workdir']}/{MANIFEST}")
        info.size, info.mtime = len(data), int(time.time())
        tar.addfile(info, io.BytesIO(data))
    blob = buffer.getvalue()
    parts = max(1, math.ceil(len(blob) / PART_BYTES))
    if parts > MAX_PARTS:
        raise SystemExit(f"--export: {len(blob):,} bytes make {parts} parts, more than {MAX_PARTS}; lower --export-mib")
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob(f"{ARCHIVE}.*"):
        old.unlink()
    for i in range(parts):
        atomic_write_bytes(out / f"{ARCHIVE}.{i:02d}", blob[i * PART_BYTES : (i + 1) * PART_BYTES])
    atomic_write_text(out / PLAN_FILE, plan_text(cells, workdir, results) + "\n")
    return manifest


def unpack_state(folder: Path, root: Path | None = None) -> dict[str, Any]:
    """Unpack ``export_state``'s parts found in ``folder`` into ``root`` (the checkout): the records into their
    places, the work folder replaced by the archive's. Returns the manifest."""
    root = REPO if root is None else root
    parts = sorted(folder.glob(f"{ARCHIVE}.*"))
    if not parts:
        raise SystemExit(f"--unpack: no {ARCHIVE}.NN in {folder}")
    blob = b"".join(p.read_bytes() for p in parts)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        names = [m.name for m in tar.getmembers() if m.name.endswith(f"/{MANIFEST}")]
        if len(names) != 1:
            raise SystemExit(f"--unpack: {parts[0]}: not an archive of --export (no single {MANIFEST})")
        manifest = json.loads(tar.extractfile(names[0]).read())  # type: ignore[union-attr]
        workdir = (root / manifest["workdir"]).resolve()
        if not workdir.is_relative_to(root.resolve()) or workdir == root.resolve():
            raise SystemExit(f"--unpack: the archive's work folder {manifest['workdir']!r} is not inside {root}")
        if workdir.exists():
            shutil.rmtree(workdir)
        tar.extractall(root, filter="data")
    return manifest


# ------------------------------------------------------------------------------------------------- command line


def select(cells: Sequence[Cell], names: str | None) -> list[Cell]:
    if not names:
        return list(cells)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = {c.name for c in cells}
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise SystemExit(f"--cells: no cell named {unknown}; the plan's: {', '.join(c.name for c in cells)}")
    return [c for c in cells if c.name in wanted]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plan", action="store_true", help="print the cells in order with their state; run nothing")
    p.add_argument("--workdir", default="runs/queue", help="the queue's work folder: runners' folders, log, output")
    p.add_argument("--budget-seconds", type=float, default=540.0, help="this call's time for its runners")
    p.add_argument(
        "--grace-seconds",
        type=float,
        default=30.0,
        help="time a runner gets to stop after SIGINT (it is sent this long, plus 10 s, before the budget ends)",
    )
    p.add_argument(
        "--min-seconds", type=float, default=90.0, help="start no runner with less of the budget left than this"
    )
    p.add_argument("--cells", default=None, help="only these cells of the plan (comma-separated names)")
    p.add_argument("--retry-failed", action="store_true", help="run cells whose last two attempts failed too")
    p.add_argument("--export", default=None, metavar="DIR", help="pack what a later machine needs into DIR")
    p.add_argument("--export-mib", type=float, default=44.0, help="at most this many MiB in --export's parts")
    p.add_argument(
        "--unpack", default=None, metavar="DIR", help="unpack --export's parts from DIR into this checkout; run nothing"
    )
    args = p.parse_args(argv)
    if args.unpack is not None:
        manifest = unpack_state(Path(args.unpack))
        print(
            f"unpacked {len(manifest['records'])} record file(s) and {manifest['workdir']} (checkpoints of "
            f"{len(manifest['checkpoints'])} run(s); left out: {len(manifest['checkpoints_left_out'])}), "
            f"made {manifest['created']} on {manifest['device']} at {manifest['code']}"
        )
        for path in manifest["records"]:
            print("  ", path)
        return 0
    cells = select(PLAN, args.cells)
    workdir = Path(os.path.abspath(args.workdir))
    if args.plan:
        print(plan_text(cells, workdir))
        return 0
    if args.budget_seconds <= 0 or args.grace_seconds < 0 or args.min_seconds < 0 or args.export_mib <= 0:
        raise SystemExit("--budget-seconds, --export-mib: expected positive numbers; --grace/min-seconds: not negative")
    if args.export is not None and (not workdir.is_relative_to(REPO) or workdir == REPO):
        raise SystemExit(f"--export: the work folder {workdir} must be a folder inside the checkout {REPO}")
    since = time.time()
    with queue_lock(workdir):
        try:
            run_queue(
                cells,
                workdir,
                args.budget_seconds,
                grace_seconds=args.grace_seconds,
                min_seconds=args.min_seconds,
                retry_failed=args.retry_failed,
            )
        except Interrupted as err:
            print(f"== interrupted ({err})", flush=True)
            return 130
        finally:
            if args.export is not None:
                # Every cell's checkpoints, not only --cells': the archive replaces the work folder.
                manifest = export_state(PLAN, workdir, Path(args.export), since, int(args.export_mib * 2**20))
                print(
                    f"== exported to {args.export}: {manifest['bytes']:,} bytes, {len(manifest['records'])} record "
                    f"file(s), checkpoints of {len(manifest['checkpoints'])} run(s)"
                    + (
                        f", left out: {', '.join(manifest['checkpoints_left_out'])}"
                        if manifest["checkpoints_left_out"]
                        else ""
                    ),
                    flush=True,
                )
    print(plan_text(cells, workdir, brief=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
