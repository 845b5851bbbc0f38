"""``train_and_evaluate(config, workdir)``: a whole run, resumable at any point.

The loop of Flax's examples with the functional step of docs/design.md:

1. build the task, the model (by name) and the optax optimiser from the config;
   ``nnx.split`` the model once; place the state on a mesh of every device
   (parameters replicated, batches sharded over the batch axis);
2. take the workdir's lock (one run per folder, ``train/lock.py``); resume
   from the newest readable checkpoint in ``workdir/checkpoints`` if there is
   one (its stored config must match, or the run refuses and touches nothing);
3. for each step: draw the batch of ``(seed, step)`` (the data stream is a pure
   function of them, so the step is the stream's position), pad it to its
   bucket, run the jitted ``train_step`` (one compilation per bucket);
   every ``log_every`` steps append the metrics to ``metrics.jsonl``; every
   ``eval_every`` steps evaluate on the validation sets and keep the best
   checkpoint on ``select_mode`` (ties broken by the lower validation loss);
   with ``max_minutes`` set, the run stops early when the budget is spent
   (evaluating and checkpointing at that step); every ``checkpoint_every`` steps and at the
   end save a checkpoint. Before anything is logged, evaluated or saved the
   losses since the last such point are checked (no host sync per step): a NaN
   or infinite loss stops the run with ``NonFiniteLossError`` naming the step,
   saving nothing (``on_nan = "stop"``), or, with ``on_nan = "skip-batch"``,
   the step left the parameters unchanged (on device) and is logged as skipped;
4. evaluate the best checkpoint on the test sets of every length mode and write
   ``results.{json,csv,md}`` and ``accuracy.png``.

Files in ``workdir``: ``config.json``, ``metrics.jsonl``, ``checkpoints/``,
``best/``, ``results.*``, ``accuracy.png`` and ``.lock`` (the running
process's PID, empty when none runs). All are written atomically (or
append-only); a run killed at any moment loses at most the steps since its last
checkpoint, and rerunning the same command resumes it exactly. Notes on what
the run found and did (a corrupt checkpoint set aside, skipped batches) go to
stderr, one line each (``note``).

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

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from panm_jax.errors import UserError
from panm_jax.models import build_model
from panm_jax.tasks import get_task
from panm_jax.tasks.buckets import pad_to_bucket
from panm_jax.tasks.losses import check_batch
from panm_jax.train import evaluate as evaluation
from panm_jax.train import report
from panm_jax.train.checkpoint import Checkpointer, CheckpointError
from panm_jax.train.config import TrainConfig, resume_differences
from panm_jax.train.io import append_jsonl, atomic_write_text
from panm_jax.train.lock import run_lock
from panm_jax.train.optim import make_optimizer
from panm_jax.train.provenance import environment, segment_record
from panm_jax.train.sharding import (
    all_agree,
    barrier,
    is_primary,
    make_mesh,
    maybe_initialize_distributed,
    replicate,
    shard_batch,
)
from panm_jax.train.steps import init_train_state, make_eval_step, make_train_step

__all__ = ["NonFiniteLossError", "Run", "default_buckets", "train_and_evaluate", "training_batch"]

# Training steps whose losses may wait on device before they are checked (bounds the host's list).
_MAX_UNCHECKED_STEPS = 1_000


class NonFiniteLossError(RuntimeError):
    """A NaN or infinite training loss under ``on_nan = "stop"``."""


def default_buckets(task) -> tuple[int, ...]:
    """Powers of two in the training range, then its longest length: (1, 2, 4, 8, 10) for 1..10.

    Every training length n maps to the smallest bucket >= n, which always exists
    (the last bucket is the longest training length).
    """
    lo, top = task.train_lengths.lo, task.train_lengths.hi
    powers = [2**k for k in range(31) if lo <= 2**k < top]
    return tuple(powers) + (top,)


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
        self.task = get_task(config.task, **config.task_options)
        self.model = build_model(
            config.model,
            input_size=self.task.input_size,
            output_size=self.task.output_size,
            seed=config.seed,
            **config.model_options,
        )
        self.optimizer = make_optimizer(config.optimizer, config.num_steps)
        self.graphdef, state = init_train_state(self.model, self.optimizer, seed=config.seed)
        self.mesh = make_mesh()
        check_batch_sizes(config, self.mesh.devices.size)
        self.state = replicate(state, self.mesh)
        self.buckets = tuple(config.buckets) or default_buckets(self.task)
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


def _host_metrics(metrics) -> dict[str, float]:
    return {k: float(v) for k, v in jax.device_get(metrics).items()}


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
                append_jsonl(
                    self.log_path,
                    {
                        "event": "non-finite loss",
                        "step": step,
                        "loss": _finite_or_none(loss),
                        "grad_norm": _finite_or_none(grad),
                        "param_norm": _finite_or_none(norm),
                        "on_nan": "stop",
                    },
                )
            raise NonFiniteLossError(
                f"loss: non-finite at step {step} (loss {loss}, gradient norm {grad}, parameter norm {norm}); the "
                f'run stopped and saved nothing after it ({self._last_good(step)}); set on_nan = "skip-batch" '
                "(--on-nan skip-batch) to skip such batches"
            )
        self.skipped += len(bad)
        if self.primary:
            for step, loss, grad, norm in bad:
                append_jsonl(
                    self.log_path,
                    {
                        "event": "skipped non-finite batch",
                        "step": step,
                        "loss": _finite_or_none(loss),
                        "grad_norm": _finite_or_none(grad),
                        "param_norm": _finite_or_none(norm),
                    },
                )
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


def _finite_or_none(value: float) -> float | None:
    """``value``, or ``None`` (JSON null) when it is NaN or infinite: no file of a run holds a non-JSON number."""
    return value if math.isfinite(value) else None


def progress_columns() -> list:
    """The training progress bar's columns (rich): description, bar, steps, loss, accuracy, rate, times."""
    return [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]}"),
        TextColumn("acc {task.fields[acc]}"),
        TextColumn("{task.fields[rate]} steps/s"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]


def _time_up(deadline: float) -> bool:
    """Whether the time budget is spent; with several processes, whether it is spent in any of them (one
    all-gather per step, so that all stop at the same step)."""
    up = time.monotonic() > deadline
    return not all_agree(not up) if jax.process_count() > 1 else up


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
    maybe_initialize_distributed()  # before the first JAX call
    several = jax.process_count() > 1
    if several and not is_primary():
        console, progress = Console(quiet=True), False  # process 0 alone prints
    console = console or Console()
    workdir = Path(workdir)
    with run_lock(workdir, primary=is_primary(), agree=all_agree if several else None) as lock:
        if lock is not None and lock.stale_pid is not None:
            note(
                f"{lock.path}: the run of process {lock.stale_pid} ended without releasing it (crashed or killed); "
                "taking it over"
            )
        return _train_and_evaluate(
            config, workdir, progress=progress, console=console, allow_unverified=allow_unverified
        )


def _train_and_evaluate(
    config: TrainConfig, workdir: Path, *, progress: bool, console: Console, allow_unverified: bool
) -> dict[str, Any]:
    run = Run(config)
    ckpt = Checkpointer(workdir, keep=config.keep_checkpoints, notify=note, allow_unverified=allow_unverified)
    try:
        return _train(run, ckpt, workdir, progress=progress, console=console)
    finally:
        ckpt.close()


def _train(run: Run, ckpt: Checkpointer, workdir: Path, *, progress: bool, console: Console) -> dict[str, Any]:
    c = run.config
    state = run.state
    primary = is_primary()  # writes the run's files (process 0; the only process of a single-process run)
    check = config_check(c, workdir)
    restored = ckpt.restore_latest(jax.device_get(state), check)
    best_meta = ckpt.best_meta(
        check, then="the run goes on from the latest checkpoint and keeps a new best at its next evaluation"
    )
    if restored is not None:
        saved_state, meta = restored
        if meta["step"] > c.num_steps:
            raise CheckpointError(
                f"num_steps: the checkpoints in {str(workdir)!r} are at step {meta['step']}, beyond the "
                f"num_steps given ({c.num_steps}); give at least {meta['step']} to resume, or use another workdir"
            )
        state = replicate(saved_state, run.mesh)
        console.print(f"resumed from step {meta['step']} ({workdir / 'checkpoints'})")
    if primary:
        started = ("resumed", meta["step"]) if restored is not None else ("started", 0)
        append_jsonl(workdir / "metrics.jsonl", segment_record(*started))
        atomic_write_text(workdir / "config.json", json.dumps(c.to_dict(), indent=2) + "\n")
    # The best checkpoint maximises the headline metric on the validation mode; ties
    # (several checkpoints at 100%) go to the lower validation loss.
    best_score = (best_meta["score"], -best_meta["loss"]) if best_meta else (-np.inf, -np.inf)

    start = int(jax.device_get(state.step))
    log_path = workdir / "metrics.jsonl"
    headline = run.task.metric_names[0]
    t_last, s_last = time.perf_counter(), start
    deadline = None if c.max_minutes is None else time.monotonic() + 60.0 * c.max_minutes
    unchecked: list[tuple[int, dict[str, Any]]] = []  # (step, metrics on device) not yet checked for NaN/Inf
    watch = LossWatch(c, ckpt, log_path, primary=primary, skipped=meta.get("skipped_batches", 0) if restored else 0)
    with Progress(*progress_columns(), console=console, disable=not progress, transient=False) as bar:
        job = bar.add_task(f"{c.model} on {c.task}", total=c.num_steps, completed=start, loss="-", acc="-", rate="-")
        for step in range(start, c.num_steps):
            batch = run.shard(training_batch(run.task, c, step, run.buckets))
            state, metrics = run.train_step(state, batch)
            done = step + 1
            unchecked.append((done, metrics))
            last = done == c.num_steps or (deadline is not None and _time_up(deadline))
            log_now, eval_now = done % c.log_every == 0 or last, done % c.eval_every == 0 or last
            save_now = done % c.checkpoint_every == 0 or last
            if log_now or eval_now or save_now or len(unchecked) >= _MAX_UNCHECKED_STEPS:
                # Before anything is logged, evaluated or saved.
                watch.check(unchecked)
                unchecked = []
            if log_now:
                m = _host_metrics(metrics)
                now = time.perf_counter()
                rate = (done - s_last) / max(now - t_last, 1e-9)
                t_last, s_last = now, done
                if primary:
                    append_jsonl(log_path, {"step": done, "time": time.time(), "steps_per_s": rate, **m})
                bar.update(
                    job, completed=done, loss=f"{m['loss']:.4f}", acc=f"{100 * m[headline]:.1f}%", rate=f"{rate:.1f}"
                )
            if eval_now:
                val = run.evaluate(state.params, (c.select_mode,), evaluation.VALIDATION_SEED)
                score = (val[c.select_mode][headline], -val[c.select_mode]["loss"])
                if primary:
                    append_jsonl(log_path, {"step": done, "validation": val})
                if score > best_score:
                    best_score = score
                    ckpt.save_best(
                        done,
                        jax.device_get(state),
                        {
                            "step": done,
                            "score": score[0],
                            "loss": -score[1],
                            "mode": c.select_mode,
                            "config": c.to_dict(),
                        },
                    )
            if save_now:
                ckpt.save(
                    done,
                    jax.device_get(state),
                    {
                        "step": done,
                        "data_position": done,
                        "seed": c.seed,
                        "config": c.to_dict(),
                        "skipped_batches": watch.skipped,
                    },
                )
            if last:
                if done < c.num_steps and primary:
                    append_jsonl(log_path, {"event": "time budget reached", "step": done, "max_minutes": c.max_minutes})
                break
    # Report the best checkpoint (selected on the L+1 validation set, as Le et al. 2024, "Plug, Play,
    # and Generalize: Length Extrapolation with Pointer-Augmented Neural Memory", do) on the test sets.
    best = ckpt.restore_best(jax.device_get(state), check, then="reporting the latest state instead")
    if best is None:
        params, step = state.params, int(jax.device_get(state.step))
    else:
        params, step = replicate(best[0].params, run.mesh), best[1]["step"]
    per_mode = run.evaluate(params, run.modes, evaluation.TEST_SEED)
    results = results_record(run, per_mode, step)
    if primary:
        report.write_results(results, workdir / "results")
        report.plot_accuracy([results], workdir / "accuracy.png")
    barrier("panm_jax: results written")  # no process returns before process 0 has written them
    return results
