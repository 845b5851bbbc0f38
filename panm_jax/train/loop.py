"""``train_and_evaluate(config, workdir)``: a whole run, resumable at any point.

A single run is the one-seed case of the training loop (``train/engine.py``,
which ``train_seeds`` drives for several seeds): this module holds its pieces,
``Run`` (the task, the model by name, the optax optimiser, ``nnx.split`` once,
the state on a mesh of every device, the jitted ``train_step`` and
``eval_step``), and what the loop shares between one seed and several: the
batch of a step (``training_batch``: a pure function of ``(seed, step)``, so
the step is the data stream's position), the default buckets, the config check
of a resumed checkpoint, the checks of the losses (``LossWatch``) and the
results record. ``train_and_evaluate`` takes the workdir's lock (one run per
folder, ``train/lock.py``), resumes from the newest readable checkpoint and
runs the loop to its end (see ``train/engine.py`` for its steps).

Files in ``workdir``: ``config.json``, ``metrics.jsonl``, ``checkpoints/``,
``best/``, ``results.*``, ``accuracy.png`` and ``.lock`` (the running
process's PID, empty when none runs). All are written atomically (or
append-only); a run killed at any moment loses at most the steps since its last
checkpoint, and rerunning the same command resumes it exactly. Notes on what
the run found and did (a corrupt checkpoint set aside, skipped batches) go to
stderr, one line each (``note``).

The folder is checked before anything is built or written: its path must be one
orbax can write checkpoints under (``check_workdir_path``: UTF-8 text, and none
of the characters orbax and tensorstore read as something else), and what is
already there must not stand where the run writes (``check_run_folder``: a file
where ``checkpoints/`` or ``best/`` goes, a folder where a file goes, a folder
that cannot be written). Either raises at once, naming the path, instead of at
the first checkpoint or results write. Orbax's temporary folders of a save
that was cut short (a full disk, Ctrl-C, SIGTERM, a kill) are removed when the
save fails and again when a run starts (``remove_partial_checkpoints``).

Several processes (``jax.distributed``, ``docs/distributed.md``) run the same
loop on the same data, each feeding its devices' rows of every global batch;
``workdir`` must be one folder that all of them see. Process 0 alone takes the
lock, writes ``config.json``, ``metrics.jsonl``, ``results.*`` and
``accuracy.png`` and prints; every process takes part in each checkpoint save
and restore (orbax has process 0 write the arrays and coordinates the others)
and in each evaluation (its metrics are reduced over all devices, so every
process gets the global numbers). With one process all of this is the single
run above.
"""

from __future__ import annotations

import errno
import fnmatch
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import jax
import numpy as np
from rich.console import Console

from panm_jax.errors import UserError
from panm_jax.models import build_model
from panm_jax.tasks.buckets import fitted_buckets, pad_to_bucket, training_length_distribution
from panm_jax.tasks.losses import check_batch
from panm_jax.train import engine
from panm_jax.train import evaluate as evaluation
from panm_jax.train.checkpoint import ORBAX_TMP_SUFFIX, Checkpointer, CheckpointError
from panm_jax.train.config import TrainConfig, resume_differences
from panm_jax.train.io import append_jsonl
from panm_jax.train.lock import LOCK_FILE, run_lock
from panm_jax.train.optim import make_optimizer
from panm_jax.train.progress import ProgressDisplay
from panm_jax.train.provenance import environment
from panm_jax.train.sharding import (
    all_agree,
    is_primary,
    make_mesh,
    maybe_initialize_distributed,
    replicate,
    shard_batch,
)
from panm_jax.train.steps import init_train_state, make_eval_step, make_train_step

__all__ = [
    "NonFiniteLossError",
    "Run",
    "check_run_folder",
    "check_workdir_path",
    "default_buckets",
    "remove_partial_checkpoints",
    "train_and_evaluate",
    "training_batch",
]

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


def default_buckets(task, batch_size: int = 128, seeds: int = 1) -> tuple[int, ...]:
    """The buckets fitted to the lengths of ``task``'s training batches of ``batch_size`` examples (of the
    longest of ``seeds`` batches, for seeds trained together): the fewest that compute at most 10 % more
    time steps than the real ones (``tasks.buckets.fitted_buckets`` over ``training_length_distribution``):
    (2, 4, 6, 8, 10) for 1..10, one bucket every 5 lengths for 1..40. The last bucket is the longest
    training length, so every training length has one.
    """
    return fitted_buckets(task, *training_length_distribution(task, batch_size, seeds=seeds))


def training_batch(task, config: TrainConfig, step: int, buckets):
    """The batch of ``step``: a pure function of ``(config.seed, step)``."""
    rng = np.random.default_rng([config.seed, step])
    batch = task.train_batch(rng, config.batch_size)
    try:  # a class id outside [0, K) would index past the logits: a NaN loss many steps later
        check_batch(batch, task.output_size, task.target_kind)
    except ValueError as err:
        raise ValueError(f"task {task.name!r}, training batch of step {step}: {err}") from None
    return pad_to_bucket(batch, task, buckets)


def check_batch_sizes(config: TrainConfig, num_devices: int) -> None:
    """Every batch of the run (training, and evaluation with its smaller last batch) splits evenly over
    the ``num_devices`` devices of the mesh (of all processes); raises ``UserError`` naming the field."""
    where = f"the {num_devices} devices" + (
        f" of the {jax.process_count()} processes" if jax.process_count() > 1 else ""
    )
    ex, eb = config.eval_examples, config.eval_batch_size
    # With eval_batch_size a multiple, eval_examples is one exactly when its last evaluation batch is.
    sizes = (
        [("batch_size", config.batch_size)] + ([("eval_batch_size", eb)] if ex > eb else []) + [("eval_examples", ex)]
    )
    for name, size in sizes:
        if size % num_devices:
            last = f" (a last evaluation batch of {ex % eb})" if name == "eval_examples" and ex > eb else ""
            raise UserError(f"{name}: expected a multiple of {where}, got {size}{last}")


class Run:
    """The pieces of one configured run (also used by ``panm-jax eval``)."""

    def __init__(self, config: TrainConfig):
        maybe_initialize_distributed()
        self.config = config
        self.task = config.build_task()
        self.model = build_model(
            config.model,
            input_size=self.task.input_size,
            output_size=self.task.output_size,
            seed=config.seed,
            config=config.model_config,
        )
        self.optimizer = make_optimizer(config.optimizer, config.num_steps)
        self.graphdef, state = init_train_state(self.model, self.optimizer, seed=config.seed)
        self.mesh = make_mesh()
        check_batch_sizes(config, self.mesh.devices.size)
        self.state = replicate(state, self.mesh)
        self.buckets = tuple(config.buckets) or default_buckets(self.task, config.batch_size)
        self.modes = tuple(config.eval_modes) or tuple(self.task.test_modes)  # checked by TrainConfig
        self.train_step = jax.jit(
            make_train_step(
                self.graphdef,
                self.optimizer,
                self.task,
                skip_nonfinite=config.on_nan == "skip-batch",
                compute_dtype=config.compute_dtype,
            ),
            donate_argnums=0,
        )
        self.eval_step = jax.jit(make_eval_step(self.graphdef, self.task, compute_dtype=config.compute_dtype))

    def shard(self, batch):
        return shard_batch(batch, self.mesh)

    def evaluate(self, params, modes, seed: int) -> dict[str, dict[str, Any]]:
        c = self.config
        sets = evaluation.eval_sets(self.task, modes, c.eval_examples, c.eval_batch_size, seed)
        return evaluation.evaluate(self.eval_step, params, self.task, sets, seed, shard=self.shard)

    # ---- the training loop's interface (train/engine.py ``Pieces``): one seed --------------------

    size = 1

    @property
    def configs(self) -> list[TrainConfig]:
        return [self.config]

    @property
    def template(self):
        return jax.device_get(self.state)

    def description(self) -> str:
        return f"{self.config.model} on {self.config.task}"

    def unstack(self, state, index: int):
        return jax.device_get(state)

    def place(self, states):
        (state,) = states
        return replicate(state, self.mesh)

    def batch(self, steps):
        (step,) = steps
        return self.shard(training_batch(self.task, self.config, step, self.buckets))

    def advance(self, state, batch, active):
        return self.train_step(state, batch)

    def seed_metrics(self, metrics, index: int) -> dict[str, float]:
        return {k: float(v) for k, v in metrics.items()}

    def evaluate_seeds(self, params, modes, seed: int) -> list[dict[str, dict[str, Any]]]:
        return [self.evaluate(params, modes, seed)]

    def view(self, index: int) -> Run:
        return self


def results_record(run: Run, per_mode: dict[str, dict[str, Any]], step: int) -> dict[str, Any]:
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


def train_and_evaluate(
    config: TrainConfig,
    workdir: str | Path,
    *,
    progress: bool = True,
    console: Console | None = None,
    allow_unverified: bool = False,
) -> dict[str, Any]:
    """Train ``config`` in ``workdir`` (resuming if it holds a checkpoint); returns the results record.

    ``allow_unverified``: resume from a checkpoint without its checksums (``Checkpointer``).

    Raises ``WorkdirBusy`` when another run holds the workdir, ``CheckpointError``
    when its checkpoints belong to other settings (or none can be read), and
    ``NonFiniteLossError`` on a non-finite loss with ``on_nan = "stop"``.

    With several processes every one calls this with the same arguments; each
    returns the same record, once process 0 has written the results.
    """
    workdir = check_workdir_path(workdir)
    check_run_folder(workdir)  # before the lock: nothing is created in a folder the run cannot use
    maybe_initialize_distributed()  # before the first JAX call
    several = jax.process_count() > 1
    if several and not is_primary():
        console, progress = Console(quiet=True), False  # process 0 alone prints
    console = console or Console()
    with run_lock(workdir, primary=is_primary(), agree=all_agree if several else None) as lock:
        if lock is not None and lock.stale_pid is not None:
            note(
                f"{lock.path}: the run of process {lock.stale_pid} ended without releasing it (crashed or killed); "
                "taking it over"
            )
        run = Run(config)
        ckpt = Checkpointer(workdir, keep=config.keep_checkpoints, notify=note, allow_unverified=allow_unverified)
        finished = False
        try:
            with display(console, progress) as show:
                (results,) = engine.run_to_end(engine.training(run, [workdir], [ckpt]), show)
            finished = True
        finally:
            try:
                ckpt.close()
            finally:
                if not finished and is_primary():  # orbax's writes have ended: what a cut-short save left goes
                    remove_partial_checkpoints(workdir)
        return results


def display(console: Console, progress: bool):
    """The ``on_record`` of ``engine.run_to_end`` (a context manager): the progress bar and notes
    (``panm_jax.train.progress``) on ``console``."""
    return ProgressDisplay(console, enabled=progress)
