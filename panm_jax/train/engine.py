"""The one training loop: S seeds of one run (a single run is S = 1), as a generator of records.

``training(pieces, workdirs, ckpts)`` drives the pieces of a configured run,
``train/loop.py``'s ``Run`` (one seed, or S seeds stacked on a leading axis,
``train/seeds.py``), through the same steps:

1. restore each seed's folder from its newest readable checkpoint (its stored
   config must match, or the run refuses and touches nothing) and its best
   checkpoint's score;
2. step the seeds that stand lowest (all of them, once they stand at the same
   step): draw each one's batch of ``(seed, step)``, run the jitted step; every
   ``log_every`` steps append the metrics to each ``metrics.jsonl`` (which holds each step once: a resumed
   part first drops the records of the steps after its checkpoint, logged by the part cut short, and its
   opening ``"resumed"`` record says how many, ``dropped``, where any); every
   ``eval_every`` steps evaluate on the validation sets and keep each seed's
   best checkpoint on ``select_mode`` (ties broken by the lower validation
   loss); every ``checkpoint_every`` steps and at the end save a checkpoint;
   before anything is logged, evaluated or saved the losses since the last such
   point are checked (``LossWatch``, no host sync per step); with
   ``max_minutes`` set, stop early when the budget is spent;
3. evaluate each seed's best checkpoint on the test sets and write its
   ``results.{json,csv,md}`` and ``accuracy.png``.

Before step 1 each folder is checked (``check_workdir_path``: a path orbax
can write under, else ``UserError``; ``check_run_folder``: a path the run
writes that is in the way raises the ``OSError`` at once, naming it) and the
temporary folders of a save cut short are removed
(``remove_partial_checkpoints``). A save that fails removes its temporary
folder too, and an ``OSError`` it raises names the checkpoint's path: a full
disk under orbax (tensorstore's ``RESOURCE_EXHAUSTED ... [os_error_code=28]``)
becomes ``OSError(ENOSPC, ..., <workdir>/checkpoints/<step>)``.

It yields records (plain dicts) of what a display shows: ``{"event": "note",
"text": ...}`` for a line to print (a resumed seed), ``{"event": "begin",
"description": ..., "total": ..., "completed": ...}`` once, and ``{"event":
"progress", "completed": ..., "loss": ..., "accuracy": (lo, hi), "rate": ...}``
at every log step; it returns (``StopIteration.value``) each seed's results
record. The progress bar that shows them is
``panm_jax/train/progress.py``'s; ``run_to_end`` consumes the records with any
``on_record`` callback.

The pieces answer one interface (``Pieces``); with one seed its programs are a
single run's own (``jit(train_step)``), so a single run computes exactly what it
did before seeds were batched, and with several they are ``jit(vmap(...))``.
"""

from __future__ import annotations

import errno
import fnmatch
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import Any, Protocol

import jax
import numpy as np

from panm_jax.errors import UserError
from panm_jax.train import evaluate as evaluation
from panm_jax.train import report
from panm_jax.train.checkpoint import ORBAX_TMP_SUFFIX, Checkpointer, CheckpointError
from panm_jax.train.config import TrainConfig, resume_differences
from panm_jax.train.interrupt import stop_if_asked
from panm_jax.train.io import append_jsonl, atomic_write_text, read_jsonl
from panm_jax.train.lock import LOCK_FILE
from panm_jax.train.provenance import environment, segment_record
from panm_jax.train.range_eval import CompileCounter
from panm_jax.train.sharding import all_agree, barrier, is_primary

__all__ = [
    "LossWatch",
    "NonFiniteLossError",
    "Pieces",
    "check_run_folder",
    "check_workdir_path",
    "config_check",
    "note",
    "remove_partial_checkpoints",
    "results_record",
    "run_to_end",
    "training",
]

# Training steps whose losses may wait on device before they are checked (bounds the host's list).
MAX_UNCHECKED_STEPS = 1_000


class Pieces(Protocol):
    """What the loop needs of a configured run of ``size`` seeds (``train.loop.Run``)."""

    configs: list[TrainConfig]
    task: Any
    mesh: Any
    buckets: tuple[int, ...]  # the bucket lengths that training batches are padded to
    modes: tuple[str, ...]  # the test modes reported at the end
    template: Any  # one seed's train state (host arrays): the structure checkpoints are restored into
    state: Any  # the seeds' train state on the mesh

    @property
    def size(self) -> int: ...

    def description(self) -> str: ...

    def unstack(self, state, index: int): ...

    def place(self, states: Sequence[Any]): ...

    def batch(self, steps: Sequence[int]): ...

    def advance(self, state, batch, active: Sequence[bool]): ...

    def seed_metrics(self, metrics: dict[str, np.ndarray], index: int) -> dict[str, float]: ...

    def evaluate_seeds(self, params, modes, seed: int) -> list[dict[str, dict[str, Any]]]: ...

    def view(self, index: int) -> Any: ...  # seed ``index``'s ``config`` and ``task``, for ``results_record``


# What a run writes in its folder: these folders, and these files.
RUN_FOLDERS = ("checkpoints", "best")
RUN_FILES = ("config.json", "metrics.jsonl", "results.json", "results.csv", "results.md", "accuracy.png", LOCK_FILE)


class NonFiniteLossError(RuntimeError):
    """A NaN or infinite training loss under ``on_nan = "stop"``."""


def _unwritable_reason(text: str) -> str | None:
    """Why orbax cannot write checkpoints under the path ``text``, or ``None`` when it can."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "it is not UTF-8 text, and orbax passes checkpoint paths to tensorstore as UTF-8"
    if "\0" in text:
        return "it holds a NUL character, which no file system path can"
    if "\\" in text:
        return "it holds a backslash, which tensorstore (orbax's file store) reads as a folder separator"
    for part in Path(text).parts:
        if not fnmatch.fnmatchcase(part, part):  # "[ab]" is a glob class, matching "a" or "b" only
            return (
                f"its part {part!r} is a glob pattern that does not match itself, and orbax finds a "
                "checkpoint's files by glob"
            )
        if part.endswith("gs:"):
            return f"its part {part!r} and the '/' after it read as a Cloud Storage address to orbax ('gs://')"
    return None


def check_workdir_path(workdir: str | Path, name: str = "workdir") -> Path:
    """Return ``workdir`` as a ``Path``, or raise ``UserError`` (naming ``name``) unless orbax can write
    checkpoints under it: the path, as given and made absolute (symbolic links resolved, as the
    checkpoints are), must be UTF-8 text (a folder named by the bytes ``b"run-\\xff"`` is not), hold no
    NUL and no backslash (tensorstore reads it as a separator), no part that glob reads as a pattern not
    matching itself (``[ab]``) and no part ending in ``gs:`` (orbax turns ``gs:/`` into ``gs://``).
    Nothing is created or written."""
    path = Path(workdir)
    try:
        full = str(path.resolve())
    except (OSError, RuntimeError, ValueError):  # a symbolic link loop, a NUL: the path as it stands
        full = str(path.absolute())
    for text in dict.fromkeys((str(path), full)):
        reason = _unwritable_reason(text)
        if reason is not None:
            shown = os.fsencode(text) if "UTF-8" in reason else text  # the bytes that are not UTF-8
            raise UserError(
                f"{name}: expected a folder path that orbax can write checkpoints under, got {shown!r}: {reason}"
            )
    return path


def _read_only_file_system(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def check_run_folder(workdir: str | Path) -> None:
    """Raise now the ``OSError`` a run in ``workdir`` would meet later, naming the path: ``workdir``, or
    ``checkpoints/`` or ``best/`` in it, that exists but is not a folder (``NotADirectoryError``); a file
    the run writes (``metrics.jsonl``, ``config.json``, ``results.*``, ``accuracy.png``, ``.lock``) that is
    a folder (``IsADirectoryError``); one of those folders that exists but cannot be written
    (``PermissionError``, or ``EROFS`` on a read-only file system). Without this a ``best/`` that is a
    file would be found at the first best checkpoint, steps into the run. Nothing is created or written."""
    workdir = Path(workdir)
    folders = [workdir, *(workdir / name for name in RUN_FOLDERS)]
    for path in folders:
        if path.exists() and not path.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))
    for name in RUN_FILES:
        if (workdir / name).is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(workdir / name))
    for path in folders:
        if path.is_dir() and not os.access(path, os.W_OK | os.X_OK):
            code = errno.EROFS if _read_only_file_system(path) else errno.EACCES
            raise OSError(code, os.strerror(code), str(path))


def remove_partial_checkpoints(workdir: str | Path) -> list[Path]:
    """Remove orbax's temporary folders (``<step>.orbax-checkpoint-tmp...``) from ``workdir``'s
    ``checkpoints/`` and ``best/``: what a save cut short left behind. Never a finished checkpoint (orbax
    renames a whole one to its step). Returns the folders removed. Only for the process that writes the
    run's files, while it holds the run's lock."""
    removed = []
    for name in RUN_FOLDERS:
        folder = Path(workdir) / name
        if not folder.is_dir():
            continue
        for tmp in folder.glob(f"*{ORBAX_TMP_SUFFIX}*"):
            shutil.rmtree(tmp, ignore_errors=True)
            removed.append(tmp)
    return removed


def results_record(run: Any, per_mode: dict[str, dict[str, Any]], step: int) -> dict[str, Any]:
    """The results of ``step``'s parameters over the modes. A NaN or infinite number in them is written as
    ``null`` and the record gets ``"failed"``, saying which (``panm-jax`` then exits with code 1)."""
    modes, bad = [], []
    for mode, row in per_mode.items():
        clean = {}
        for key, value in row.items():
            if isinstance(value, float) and not math.isfinite(value):
                bad.append(f"{key} of mode {mode}")
                value = None
            clean[key] = value
        modes.append({"mode": mode, **clean})
    record = {
        "task": run.config.task,
        "model": run.config.model,
        "metric": run.task.metric_names[0],
        "step": step,
        "modes": modes,
        "config": run.config.to_dict(),
        "environment": environment(),
    }
    if bad:
        record["failed"] = f"non-finite results (written as null): {', '.join(bad)}"
    return record


def note(message: str) -> None:
    """One line on stderr: what the run noticed and did about it (a corrupt checkpoint, a skipped batch).

    With several processes the line names the process (``warning: process 1 of 2: ...``).
    """
    where = f"process {jax.process_index()} of {jax.process_count()}: " if jax.process_count() > 1 else ""
    print(f"warning: {where}{message}", file=sys.stderr, flush=True)


def config_check(config: TrainConfig, workdir: Path):
    """``check(meta)`` for ``Checkpointer``: refuses a checkpoint of other settings, naming them."""

    def check(meta: dict[str, Any]) -> None:
        try:
            stored = TrainConfig.from_dict(meta["config"])
        except (KeyError, TypeError, ValueError) as err:
            raise CheckpointError(
                f"config: the checkpoints in {str(workdir)!r} hold no config this version can "
                f"read ({type(err).__name__}: {err}); use another workdir"
            ) from err
        diff = resume_differences(stored, config)
        if diff:
            shown = "; ".join(f"{name}: {old!r} in the checkpoints, {new!r} given" for name, old, new in diff[:4])
            more = f"; and {len(diff) - 4} more" if len(diff) > 4 else ""
            raise CheckpointError(
                f"config: the checkpoints in {str(workdir)!r} belong to a run with different settings "
                f"{[name for name, _, _ in diff]} ({shown}{more}); use another workdir"
            )

    return check


class LossWatch:
    """The checks of one run's training losses, made before anything is logged, evaluated or saved.

    ``check(unchecked)`` looks at the steps since the last check (one transfer):
    a step is bad when its loss, its gradient norm or its updated parameters'
    norm (``param_norm``, ``train/steps.py``) is NaN or infinite. Under
    ``on_nan = "stop"`` the first bad step raises ``NonFiniteLossError`` naming
    it and the last good checkpoint. Under ``"skip-batch"`` the steps are logged
    as skipped (their updates were not applied, on device) and counted over the
    whole run (``skipped``, carried in every checkpoint's record); more than
    ``max_skipped_fraction`` of ``num_steps`` stops the run with
    ``NonFiniteLossError``. Every process sees the same (global) losses and
    decides the same; the ``primary`` one logs.
    """

    def __init__(self, config: TrainConfig, ckpt: Checkpointer, log_path: Path, *, primary: bool, skipped: int = 0):
        self.config, self.ckpt, self.log_path, self.primary = config, ckpt, log_path, primary
        self.skipped = skipped
        self.limit = max(1, math.floor(config.max_skipped_fraction * config.num_steps))

    def check(self, unchecked) -> None:
        """``unchecked``: ``(step, metrics)`` pairs, the metrics on device or on the host."""
        values = jax.device_get([(m["loss"], m.get("grad_norm", 0.0), m.get("param_norm", 0.0)) for _, m in unchecked])
        bad = [
            (step, float(loss), float(grad), float(norm))
            for (step, _), (loss, grad, norm) in zip(unchecked, values, strict=True)
            if not (np.isfinite(loss) and np.isfinite(grad) and np.isfinite(norm))
        ]
        if not bad:
            return
        c = self.config
        if c.on_nan == "stop":
            step, loss, grad, norm = bad[0]
            if self.primary:
                append_jsonl(self.log_path, {**_event("non-finite loss", bad[0]), "on_nan": "stop"})
            raise NonFiniteLossError(
                f"loss: non-finite at step {step} (loss {loss}, gradient norm {grad}, parameter norm {norm}); the "
                f'run stopped and saved nothing after it ({self._last_good(step)}); set on_nan = "skip-batch" '
                "(--on-nan skip-batch) to skip such batches"
            )
        self.skipped += len(bad)
        if self.primary:
            for row in bad:
                append_jsonl(self.log_path, _event("skipped non-finite batch", row))
        if self.skipped > self.limit:
            raise NonFiniteLossError(
                f"on_nan: skip-batch skipped {self.skipped} batches by step {bad[-1][0]}, more than "
                f"max_skipped_fraction = {c.max_skipped_fraction} of num_steps ({self.limit}): the run learns "
                f"little from what it trains on; it stopped and saved nothing after it ({self._last_good(bad[0][0])})"
            )
        if self.primary:
            note(
                f"skipped {len(bad)} batch(es) with a non-finite loss, gradient or parameter (steps "
                f"{[b[0] for b in bad]}; {self.skipped} of at most {self.limit} in this run): parameters and "
                "optimiser state left unchanged for them"
            )

    def _last_good(self, step: int) -> str:
        good = self.ckpt.last_good(before=step)
        if good is None:
            return "no good checkpoint was saved before it"
        return f"the last good checkpoint is {good}"


def _event(name: str, row: tuple[int, float, float, float]) -> dict[str, Any]:
    """The ``metrics.jsonl`` record of a bad step ``(step, loss, grad_norm, param_norm)``; a NaN or infinite
    number is written as ``null`` (JSON's), so no file of a run holds a non-JSON number."""
    step, *values = row
    names = ("loss", "grad_norm", "param_norm")
    return {
        "event": name,
        "step": step,
        **{k: v if math.isfinite(v) else None for k, v in zip(names, values, strict=True)},
    }


def _time_up(deadline: float) -> bool:
    """Whether the time budget is spent; with several processes, whether it is spent in any of them (one
    all-gather per step, so that all stop at the same step)."""
    up = time.monotonic() > deadline
    return not all_agree(not up) if jax.process_count() > 1 else up


def training(
    pieces: Pieces, workdirs: Sequence[Path], ckpts: Sequence[Checkpointer]
) -> Generator[dict[str, Any], None, list[dict[str, Any]]]:
    """Train the seeds of ``pieces``, seed s in ``workdirs[s]`` with ``ckpts[s]``, yielding records (module
    docstring); returns each seed's results record."""
    configs, S = pieces.configs, pieces.size
    c = configs[0]
    primary = is_primary()  # writes the run's files (process 0; the only process of a single-process run)
    several = jax.process_count() > 1
    for w in workdirs:
        check_workdir_path(w)  # a path orbax can write under
        check_run_folder(w)  # now, not at the first checkpoint or results write
        if primary:
            remove_partial_checkpoints(w)  # left by a save cut short (the run holds the folder's lock)
    checks = [config_check(cs, w) for cs, w in zip(configs, workdirs, strict=True)]
    states = [pieces.unstack(pieces.state, s) for s in range(S)]
    best_scores, watches = [], []
    # What the steps held by each seed's checkpoint cost (training_cost); zero for a fresh run, or one
    # resumed from a checkpoint that predates the record.
    spent = [dict.fromkeys(COST_KEYS, 0.0) for _ in range(S)]
    for s in range(S):
        restored = ckpts[s].restore_latest(pieces.template, checks[s])
        best_meta = ckpts[s].best_meta(
            checks[s], then="the run goes on from the latest checkpoint and keeps a new best at its next evaluation"
        )
        # The best checkpoint maximises the headline metric on the validation mode; ties (several
        # checkpoints at 100%) go to the lower validation loss.
        best_scores.append((best_meta["score"], -best_meta["loss"]) if best_meta else (-np.inf, -np.inf))
        skipped = 0
        if restored is not None:
            saved, meta = restored
            if meta["step"] > c.num_steps:
                raise CheckpointError(
                    f"num_steps: the checkpoints in {str(workdirs[s])!r} are at step {meta['step']}, beyond the "
                    f"num_steps given ({c.num_steps}); give at least {meta['step']} to resume, or use another "
                    "workdir"
                )
            states[s], skipped = saved, meta.get("skipped_batches", 0)
            spent[s] = {k: float(meta.get("cost", {}).get(k, 0.0)) for k in COST_KEYS}
            rate = configs[s].optimizer.learning_rate
            grid = len({cs.optimizer.learning_rate for cs in configs}) > 1
            who = f"seed {configs[s].seed}{f', learning rate {rate:g}' if grid else ''}: " if S > 1 else ""
            yield {"event": "note", "text": f"{who}resumed from step {meta['step']} ({workdirs[s] / 'checkpoints'})"}
        watches.append(LossWatch(configs[s], ckpts[s], workdirs[s] / "metrics.jsonl", primary=primary, skipped=skipped))
        if primary:
            started = ("resumed", meta["step"]) if restored is not None else ("started", 0)
            dropped = _forget_later_steps(workdirs[s] / "metrics.jsonl", started[1])
            append_jsonl(
                workdirs[s] / "metrics.jsonl", segment_record(*started) | ({"dropped": dropped} if dropped else {})
            )
            atomic_write_text(workdirs[s] / "config.json", json.dumps(configs[s].to_dict(), indent=2) + "\n")
    state = pieces.place(states)
    pos = [int(st.step) for st in states]  # each seed's steps taken
    logs = [w / "metrics.jsonl" for w in workdirs]
    headline = pieces.task.metric_names[0]
    deadline = None if c.max_minutes is None else time.monotonic() + 60.0 * c.max_minutes
    pending: list[tuple[list[int], Any]] = []  # (the step each seed reached, -1 if held; metrics on device)
    t_last, s_last = time.perf_counter(), min(pos)
    clock = _Clock(pos)

    def cost(s: int) -> dict[str, float]:  # seed s's training cost up to now, this invocation's included
        return {
            "wall_seconds": spent[s]["wall_seconds"] + clock.seconds(),
            "compile_seconds": spent[s]["compile_seconds"] + clock.compile_seconds,
            "timed_steps": spent[s]["timed_steps"] + pos[s] - clock.start[s],
        }

    yield {"event": "begin", "description": pieces.description(), "total": c.num_steps, "completed": min(pos)}
    with clock:  # counts the compilations while the loop runs
        while min(pos) < c.num_steps:
            if not several:
                stop_if_asked()  # Ctrl-C or SIGTERM: stop here, between steps (train/interrupt.py)
            lo = min(pos)
            active = [p == lo for p in pos]
            state, metrics = pieces.advance(state, pieces.batch(pos), active)
            for s in range(S):
                if active[s]:
                    pos[s] += 1
            done = min(pos)
            pending.append(([pos[s] if active[s] else -1 for s in range(S)], metrics))
            last = done == c.num_steps or (deadline is not None and _time_up(deadline))
            acting = [s for s in range(S) if active[s]]
            log_now = [s for s in acting if pos[s] % c.log_every == 0 or last]
            eval_now = [s for s in acting if pos[s] % c.eval_every == 0 or last]
            save_now = [s for s in acting if pos[s] % c.checkpoint_every == 0 or last]
            if log_now or eval_now or save_now or len(pending) >= MAX_UNCHECKED_STEPS:
                _check_pending(pieces, pending, watches)  # before anything is logged, evaluated or saved
                pending = []
                if several:
                    stop_if_asked(agree=all_agree)  # all processes stop at the same step when any was asked
            if log_now:
                m = {k: np.asarray(v) for k, v in jax.device_get(metrics).items()}
                now = time.perf_counter()
                rate = (done - s_last) / max(now - t_last, 1e-9)
                t_last, s_last = now, done
                rows = {s: pieces.seed_metrics(m, s) for s in log_now}
                if primary:
                    for s, row in rows.items():
                        append_jsonl(logs[s], {"step": pos[s], "time": time.time(), "steps_per_s": rate, **row})
                accuracies = [row[headline] for row in rows.values()]
                yield {
                    "event": "progress",
                    "completed": done,
                    "loss": float(np.mean([row["loss"] for row in rows.values()])),
                    "accuracy": (min(accuracies), max(accuracies)),
                    "rate": rate,
                }
            if eval_now:
                val = pieces.evaluate_seeds(state.params, (c.selection_mode,), evaluation.VALIDATION_SEED)
                for s in eval_now:
                    row = val[s][c.selection_mode]
                    score = (row[headline], -row["loss"])
                    if primary:
                        append_jsonl(logs[s], {"step": pos[s], "validation": val[s]})
                    if score > best_scores[s]:
                        best_scores[s] = score
                        ckpts[s].save_best(
                            pos[s],
                            pieces.unstack(state, s),
                            {
                                "step": pos[s],
                                "score": score[0],
                                "loss": -score[1],
                                "mode": c.selection_mode,
                                "config": configs[s].to_dict(),
                            },
                        )
            for s in save_now:
                ckpts[s].save(
                    pos[s],
                    pieces.unstack(state, s),
                    {
                        "step": pos[s],
                        "data_position": pos[s],
                        "seed": configs[s].seed,
                        "config": configs[s].to_dict(),
                        "skipped_batches": watches[s].skipped,
                        "cost": cost(s),  # what the steps up to here cost (training_cost)
                    },
                )
            if last:
                if done < c.num_steps and primary:
                    for s in range(S):
                        append_jsonl(
                            logs[s], {"event": "time budget reached", "step": pos[s], "max_minutes": c.max_minutes}
                        )
                break
    # Each seed's best checkpoint (selected on select_mode, as Le et al. 2024, "Plug, Play, and Generalize:
    # Length Extrapolation with Pointer-Augmented Neural Memory", do on L+1) on the test sets, all seeds in
    # one evaluation.
    best_states, best_steps = [], []
    for s in range(S):
        final = pieces.unstack(state, s)
        best = ckpts[s].restore_best(final, checks[s], then="reporting the latest state instead")
        best_states.append(final if best is None else best[0])
        best_steps.append(pos[s] if best is None else best[1]["step"])
    per_seed = pieces.evaluate_seeds(pieces.place(best_states).params, pieces.modes, evaluation.TEST_SEED)
    records = []
    for s in range(S):
        record = results_record(pieces.view(s), per_seed[s], best_steps[s])
        record["training"] = training_cost(pieces, pos[s], cost(s))
        if primary:
            report.write_results(record, workdirs[s] / "results")
            report.plot_accuracy([record], workdirs[s] / "accuracy.png")
        records.append(record)
    barrier("panm_jax: results written")  # no process returns before process 0 has written them
    return records


COST_KEYS = ("wall_seconds", "compile_seconds", "timed_steps")


def _forget_later_steps(log: Path, step: int) -> int:
    """Drop from the metrics log ``log`` the records of steps after ``step``, the step this part of the run starts
    from (they were logged by a part cut short after its last checkpoint, and are trained and logged again), so
    that the log holds each step once; returns how many went. The file is rewritten atomically, and only when
    there is something to drop."""
    records = read_jsonl(log)
    kept = [r for r in records if not (isinstance(r.get("step"), int) and r["step"] > step)]
    if len(kept) < len(records):
        atomic_write_text(log, "".join(json.dumps(r) + "\n" for r in kept))
    return len(records) - len(kept)


class _Clock:
    """This invocation's training time: wall seconds since it began, and the seconds of the programs XLA
    compiled (or read from the persistent compilation cache) meanwhile, whatever their name."""

    def __init__(self, pos: Sequence[int]):
        self.start = list(pos)  # each seed's step when the invocation began
        self.began = time.perf_counter()
        self.counter = CompileCounter("")

    def seconds(self) -> float:
        return time.perf_counter() - self.began

    @property
    def compile_seconds(self) -> float:
        return self.counter.all_seconds

    def __enter__(self) -> _Clock:
        self.counter.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.counter.__exit__(*exc)


def training_cost(pieces: Pieces, steps: int, cost: dict[str, float]) -> dict[str, Any]:
    """What a seed's training cost, for its results record: ``steps`` trained; the wall seconds of the
    training loop (validation and checkpoints included) and of its compilations, summed over every
    invocation that trained it (a resumed run adds the time its checkpoint recorded); ``steps_per_second``
    over the steps those invocations timed (``timed_steps``: fewer than ``steps`` when the run resumed from
    a checkpoint that recorded no time); the ``buckets`` its batches were padded to and their
    ``padding_efficiency`` (real / computed time steps over its length distribution,
    ``tasks.buckets.padding_efficiency``; the batches of the seeds trained together are padded to the longest,
    those of members sharing a seed are the same), and the ``seeds_together`` in its program (members of a grid
    of seeds x learning rates included)."""
    from panm_jax.tasks.buckets import padding_efficiency, training_length_distribution

    c = pieces.configs[0]
    lengths, weights = training_length_distribution(pieces.task, c.batch_size)
    timed = int(cost["timed_steps"])
    return {
        "steps": int(steps),
        "wall_seconds": round(cost["wall_seconds"], 3),
        "compile_seconds": round(cost["compile_seconds"], 3),
        "timed_steps": timed,
        "steps_per_second": round(timed / cost["wall_seconds"], 3) if timed and cost["wall_seconds"] > 0 else None,
        "buckets": list(pieces.buckets),
        "padding_efficiency": round(
            padding_efficiency(
                pieces.task, pieces.buckets, lengths, weights, seeds=len({cs.seed for cs in pieces.configs})
            ),
            4,
        ),
        "seeds_together": pieces.size,
    }


def _check_pending(pieces: Pieces, pending, watches) -> None:
    """Each seed's ``LossWatch.check`` over the steps since the last check (one transfer for all seeds)."""
    if not pending:
        return
    names = ("loss", "grad_norm", "param_norm")
    values = jax.device_get([{k: m[k] for k in names if k in m} for _, m in pending])
    for s, watch in enumerate(watches):
        steps = [
            (reached[s], pieces.seed_metrics({k: np.asarray(v) for k, v in host.items()}, s))
            for (reached, _), host in zip(pending, values, strict=True)
            if reached[s] >= 0
        ]
        if steps:
            watch.check(steps)


def run_to_end(
    records: Generator[dict[str, Any], None, list[dict[str, Any]]],
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Consume ``training``'s records (each handed to ``on_record``, if given); its return value."""
    while True:
        try:
            record = next(records)
        except StopIteration as stop:
            return stop.value
        if on_record is not None:
            on_record(record)
