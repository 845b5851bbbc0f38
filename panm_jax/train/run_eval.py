"""Evaluating a run folder written by ``train_and_evaluate``: the library side of ``panm-jax eval``.

    from panm_jax.train import evaluate_run, evaluate_run_range

    ev = evaluate_run("runs/copy-panm", modes=["L", "2L+1"])     # the best checkpoint, two length modes
    ev.record["modes"]                                           # the results record's rows
    ev = evaluate_run_range("runs/rev-stack", (41, 500), examples_per_length=64)
    ev.record["score"]                                           # the headline metric over 41..500

Each returns an ``Evaluation``: the record (a results record, as ``results.json``
holds, or a range record, as ``range.json``), the ``Run`` built for it and the
parameters evaluated. Nothing is written: ``report.write_results`` and
``report.write_range`` write a record.

An evaluation the run has already recorded is not computed again (unless
``recompute``): where ``results.json`` or ``eval.json`` holds the same
evaluation (the same config, the examples per mode included; the checkpoint
that ``best`` picks now; the same modes), that record is returned with
``recorded_in`` naming the file (``run`` and ``params`` are then ``None``).

Evaluating reads a run folder and never moves or deletes a checkpoint, nor
takes the run's lock: it may read a run while it trains. It reads the newest
checkpoint that is complete and verified, listing the folder afresh (one that
the run rotates away before it is read is passed over for the then newest).
The model is built from the configuration stored inside the checkpoints, not
from ``config.json`` (a file anyone can edit): when the two differ, the
evaluation is refused, naming the fields, unless ``ignore_config_json``. A
checkpoint without its checksums is refused unless ``allow_unverified``, and
one whose parameters are not finite always is.

A mistake raises ``UserError`` naming the argument; ``names`` maps an
argument's name to the name to give it in messages (``panm-jax eval`` gives its
flags: ``{"modes": "--modes", ...}``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax

from panm_jax import checks
from panm_jax.checks import did_you_mean
from panm_jax.errors import UserError
from panm_jax.train.interrupt import at_safe_points

__all__ = ["DEFAULT_EXAMPLES_PER_LENGTH", "Evaluation", "evaluate_run", "evaluate_run_range"]

DEFAULT_EXAMPLES_PER_LENGTH = 64
_INT32_WHY = "JAX indexes arrays with int32"


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """What ``evaluate_run`` or ``evaluate_run_range`` found.

    Attributes:
      record: the results record (``evaluate_run``) or range record (``evaluate_run_range``).
      recorded_in: the file the record was read from when the run had recorded this very evaluation
        (nothing was computed), else ``None``.
      run: the ``train.loop.Run`` built from the stored configuration (``None`` when read back).
      params: the evaluated parameters, replicated on ``run.mesh`` (``None`` when read back).
    """

    record: dict[str, Any]
    recorded_in: Path | None = None
    run: Any = None
    params: Any = None


def _name(names: Mapping[str, str] | None, argument: str) -> str:
    return (names or {}).get(argument, argument)


def _check_checkpoint(value: str, names) -> None:
    if not isinstance(value, str) or not (value in ("best", "latest") or (value.isdigit() and int(value) > 0)):
        raise UserError(f"{_name(names, 'checkpoint')}: expected best, latest or a step number, got {value!r}")


def _open(workdir, examples, ignore_config_json: bool, allow_unverified: bool, names):
    """``(workdir, config, checkpointer)``: the run folder checked, its stored configuration (``examples`` per
    mode applied) and a read-only ``Checkpointer`` on it (the caller closes it)."""
    from panm_jax.train.checkpoint import Checkpointer
    from panm_jax.train.config import TrainConfig, read_config_file
    from panm_jax.train.engine import check_workdir_path, note

    where = _name(names, "workdir")
    if not str(workdir).strip():
        raise UserError(f"{where}: expected a run folder, got {str(workdir)!r}")
    workdir = check_workdir_path(workdir, where)
    config_path = workdir / "config.json"
    if not config_path.is_file():
        raise UserError(f"{where}: expected a run folder with config.json, got {str(workdir)!r}")
    if examples is not None:
        checks.integer(_name(names, "examples"), examples, 1, checks.INT32_MAX, why=_INT32_WHY)
    config = TrainConfig.from_dict(read_config_file(config_path, what=where))
    # Read-only: evaluating never moves or deletes a checkpoint nor takes the lock (a run may be training here).
    ckpt = Checkpointer(
        workdir, keep=config.keep_checkpoints, read_only=True, notify=note, allow_unverified=allow_unverified
    )
    try:
        config = _stored_config(config, ckpt, config_path, ignore_config_json, names)
    except BaseException:
        ckpt.close()
        raise
    if examples is not None:
        config = config.replace(eval_examples=examples)
    return workdir, config, ckpt


def _stored_config(given, ckpt, config_path: Path, ignore_config_json: bool, names):
    """The configuration stored in the run's checkpoints (the best's, else the latest's), checked against
    ``config.json``'s (``given``): a difference is refused, naming the fields, unless ``ignore_config_json``.
    ``given`` when no checkpoint can be read (the evaluation then says there is none)."""
    from panm_jax.train.config import TrainConfig, resume_differences

    meta = ckpt.stored_record()
    if meta is None or "config" not in meta:
        return given
    stored = TrainConfig.from_dict(meta["config"])
    diff = resume_differences(stored, given)
    if diff and not ignore_config_json:
        shown = "; ".join(f"{name}: {old!r} stored, {new!r} in config.json" for name, old, new in diff[:4])
        raise UserError(
            f"{_name(names, 'workdir')}: {config_path} differs from the configuration stored in the checkpoints "
            f"({shown}); restore the file, or pass {_name(names, 'ignore_config_json')} to evaluate with the "
            "stored one"
        )
    return stored


def _recorded(config, ckpt, workdir: Path, modes: Sequence[str] | None) -> tuple[Path, dict] | None:
    """``(path, record)`` of the run's record of this very evaluation of the best checkpoint, or None."""
    from panm_jax.train import report

    step = ckpt.newest_step("best")
    step = ckpt.newest_step("checkpoints") if step is None else step  # what checkpoint="best" evaluates
    wanted_modes = list(modes) if modes else (list(config.eval_modes) or list(config.build_task().test_modes))
    wanted = report.recorded_config(config)
    for path in (workdir / "results.json", workdir / "eval.json"):
        try:
            record = report.load_results(path)
        except UserError:  # none, or not a record
            continue
        if (
            record.get("config") == wanted
            and record["step"] == step
            and [row.get("mode") for row in record["modes"]] == wanted_modes
        ):
            return path, record
    return None


def _restore_params(checkpoint: str, run, ckpt, workdir: Path, names):
    """The parameters of the checkpoint ``checkpoint`` names (the latest when the best is missing or
    unreadable), replicated on the run's mesh, and its metadata."""
    from panm_jax.train.engine import note
    from panm_jax.train.sharding import replicate

    template = jax.device_get(run.state)
    restored = None
    if checkpoint not in ("best", "latest"):
        step, kept = int(checkpoint), ckpt.kept_steps()
        if step not in kept:
            raise UserError(
                f"{_name(names, 'checkpoint')}: expected best, latest or the step of a checkpoint kept in "
                f"{str(workdir)!r} ({kept}), got {step}"
            )
        restored = ckpt.restore_step(step, template)  # no fallback: a corrupt one is the CheckpointError
    elif checkpoint == "best" and ckpt.newest_step("best") is None:
        note(f"no best checkpoint in {workdir / 'best'}; evaluating the latest checkpoint instead")
    elif checkpoint == "best":
        restored = ckpt.restore_best(template, then="evaluating the latest checkpoint instead")
    if restored is None:
        restored = ckpt.restore_latest(template)  # a CheckpointError names the checkpoint
    if restored is None:
        raise UserError(f"{_name(names, 'workdir')}: no readable checkpoint in {str(workdir)!r}")
    state, meta = restored
    return replicate(state.params, run.mesh), meta


def evaluate_run(
    workdir: str | Path,
    *,
    checkpoint: str = "best",
    modes: Sequence[str] | None = None,
    examples: int | None = None,
    recompute: bool = False,
    ignore_config_json: bool = False,
    allow_unverified: bool = False,
    names: Mapping[str, str] | None = None,
) -> Evaluation:
    """Evaluate a checkpoint of the run in ``workdir`` on length ``modes`` (module docstring).

    Args:
      workdir: a run folder written by ``train_and_evaluate``.
      checkpoint: ``"best"`` (the latest when the best is missing or unreadable), ``"latest"``, or the step
        of a kept checkpoint (``"48000"``).
      modes: the task's length modes (default: the run's ``eval_modes``, else all of the task's).
      examples: examples per mode (default: the run's ``eval_examples``).
      recompute: evaluate even when the run has recorded this evaluation.
      ignore_config_json: evaluate with the stored configuration even when ``config.json`` differs.
      allow_unverified: read a checkpoint that has no ``checksums.sha256``.
      names: the names to give the arguments in error messages.
    """
    from panm_jax.train import evaluate as evaluation
    from panm_jax.train.engine import results_record
    from panm_jax.train.loop import Run

    _check_checkpoint(checkpoint, names)
    workdir, config, ckpt = _open(workdir, examples, ignore_config_json, allow_unverified, names)
    with at_safe_points():  # Ctrl-C and SIGTERM stop it between batches (train/interrupt.py)
        try:
            if not recompute and checkpoint == "best":
                found = _recorded(config, ckpt, workdir, modes)
                if found is not None:
                    return Evaluation(record=found[1], recorded_in=found[0])
            run = Run(config)
            modes = tuple(modes) if modes else run.modes
            unknown = [m for m in modes if m not in run.task.test_modes]
            if unknown:
                known = list(run.task.test_modes)
                raise UserError(
                    f"{_name(names, 'modes')}: unknown mode(s) {unknown}; the task has {known}"
                    f"{did_you_mean(unknown, known)}"
                )
            params, meta = _restore_params(checkpoint, run, ckpt, workdir, names)
            per_mode = run.evaluate(params, modes, evaluation.TEST_SEED)
            return Evaluation(record=results_record(run, per_mode, meta["step"]), run=run, params=params)
        finally:
            ckpt.close()


def evaluate_run_range(
    workdir: str | Path,
    lengths: tuple[int, int],
    *,
    examples_per_length: int | None = None,
    checkpoint: str = "best",
    ignore_config_json: bool = False,
    allow_unverified: bool = False,
    names: Mapping[str, str] | None = None,
) -> Evaluation:
    """Evaluate a checkpoint of the run in ``workdir`` at every length ``lo..hi`` on its own
    (``range_eval.range_evaluate``; the record's score is the headline metric averaged over them). The
    arguments other than these two are ``evaluate_run``'s.

    Args:
      lengths: ``(lo, hi)``, lengths the task can generate.
      examples_per_length: examples at each length (default ``DEFAULT_EXAMPLES_PER_LENGTH``).
    """
    from panm_jax.train.engine import results_record
    from panm_jax.train.loop import Run
    from panm_jax.train.range_eval import range_evaluate

    _check_checkpoint(checkpoint, names)
    lo, hi = lengths
    if examples_per_length is not None:
        checks.integer(_name(names, "examples_per_length"), examples_per_length, 1, checks.INT32_MAX, why=_INT32_WHY)
    workdir, config, ckpt = _open(workdir, None, ignore_config_json, allow_unverified, names)
    with at_safe_points():  # Ctrl-C and SIGTERM stop it between batches (train/interrupt.py)
        try:
            run = Run(config)
            task = run.task
            if not (task.lengths.contains(lo) and task.lengths.contains(hi)):
                raise UserError(
                    f"{_name(names, 'lengths')}: expected lengths of task {task.name!r} ({task.lengths.expected()}), "
                    f"got '{lo}-{hi}'"
                )
            examples = examples_per_length or DEFAULT_EXAMPLES_PER_LENGTH
            batch_size = min(run.config.eval_batch_size, examples)
            devices = int(run.mesh.devices.size)
            if batch_size % devices:
                raise UserError(
                    f"{_name(names, 'examples_per_length')}: expected a multiple of the {devices} devices (or at least "
                    f"eval_batch_size, {run.config.eval_batch_size}), got {examples}"
                )
            params, meta = _restore_params(checkpoint, run, ckpt, workdir, names)
            result = range_evaluate(run, params, range(lo, hi + 1), examples_per_length=examples, batch_size=batch_size)
            record = result.with_step(meta["step"]).to_record()
            base = results_record(run, {}, meta["step"])
            record.update(config=base["config"], environment=base["environment"])
            return Evaluation(record=record, run=run, params=params)
        finally:
            ckpt.close()
