"""Reliability of a run's folder: damaged checkpoints, NaN losses, a damaged best/, another config,
two processes, orbax's noise on a failed read, and evaluation sets that do not depend on the mode list.

Damage is done to a copy of one finished tiny run (the ``run_copy`` fixture), and
the CLI is called in-process (``panm_jax.cli.main``), so these tests train at
most once themselves.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import chex
import jax
import numpy as np
import pytest

from panm_jax.cli import build_parser, main
from panm_jax.train import loop
from panm_jax.train.checkpoint import Checkpointer, CheckpointError, drop_closed_loop_callbacks
from panm_jax.train.checksums import CHECKSUM_FILE, ChecksumError, verify_checksums, write_checksums
from panm_jax.train.engine import NonFiniteLossError, config_check
from panm_jax.train.evaluate import TEST_SEED, eval_sets, mode_seed
from panm_jax.train.io import append_jsonl, read_jsonl
from panm_jax.train.lock import WorkdirBusy, WorkdirLock
from panm_jax.train.loop import Run, train_and_evaluate
from tests.train.tiny import FINISHED, TINY, tiny_config

REPO = Path(__file__).resolve().parents[2]


def _template(config=None):
    return jax.device_get(Run(config or tiny_config(**FINISHED)).state)


def _largest_file(folder: Path) -> Path:
    files = (f for f in folder.rglob("*") if f.is_file() and f.name != CHECKSUM_FILE)
    return max(files, key=lambda f: f.stat().st_size)


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _tiny_argv(workdir: Path, *extra: str) -> list[str]:
    argv = [
        "train",
        "--task",
        "copy",
        "--model",
        "panm",
        "--workdir",
        str(workdir),
        "--no-progress",
        "--steps",
        str(FINISHED["num_steps"]),
        "--set",
        f"eval_every={FINISHED['eval_every']}",
    ]
    for item in TINY:
        argv += ["--set", item]
    return argv + list(extra)


# ---- checksums: bytes changed inside an array file -------------------------------------------


@pytest.mark.parametrize("damage", ["16 bytes", "1 bit"])
def test_changed_bytes_in_the_newest_checkpoint_are_caught(run_copy, damage):
    array_file = _largest_file(run_copy / "checkpoints" / "8")
    data = bytearray(array_file.read_bytes())
    middle = len(data) // 2
    if damage == "1 bit":
        data[middle] ^= 0x10
    else:
        data[middle : middle + 16] = bytes(b ^ 0xFF for b in data[middle : middle + 16])
    array_file.write_bytes(bytes(data))
    ckpt = Checkpointer(run_copy)
    with pytest.warns(RuntimeWarning) as caught:
        state, meta = ckpt.restore_latest(_template())
    ckpt.close()
    assert meta["step"] == 4 and int(state.step) == 4  # the previous checkpoint, not the damaged one
    message = str(caught[0].message)
    assert re.search(
        r"checkpoint .*checkpoints/8 is corrupt or unreadable \(ChecksumError: .*"
        + re.escape(array_file.name)
        + r": SHA-256 .* does not match",
        message,
    ), message
    assert (run_copy / "checkpoints" / "corrupt-8" / array_file.relative_to(run_copy / "checkpoints" / "8")).exists()


def test_a_checkpoint_without_its_checksums_is_damaged_and_set_aside(run_copy):
    # Without its listing a flipped bit would restore as a wrong number: such a checkpoint is not trusted.
    (run_copy / "checkpoints" / "8" / CHECKSUM_FILE).unlink()
    array_file = _largest_file(run_copy / "checkpoints" / "8")
    data = bytearray(array_file.read_bytes())
    data[len(data) // 2] ^= 0x10
    array_file.write_bytes(bytes(data))
    with pytest.warns(
        RuntimeWarning,
        match=rf"checkpoint .*checkpoints/8 is corrupt or unreadable \(no {CHECKSUM_FILE}, which every checkpoint "
        r"of this library has, .* --allow-unverified reads it anyway\); moved to .*checkpoints/corrupt-8, trying "
        r"an older one",
    ):
        state, meta = Checkpointer(run_copy).restore_latest(_template())
    assert meta["step"] == 4 and int(state.step) == 4
    assert (run_copy / "checkpoints" / "corrupt-8").is_dir()


def test_an_unverified_checkpoint_restores_only_when_allowed_and_says_so(run_copy):
    for listing in run_copy.glob(f"checkpoints/*/{CHECKSUM_FILE}"):
        listing.unlink()
    with pytest.warns(
        RuntimeWarning,
        match=rf"checkpoint .*checkpoints/8 has no {CHECKSUM_FILE}; restoring it without verifying its bytes "
        r"\(--allow-unverified\)",
    ):
        _, meta = Checkpointer(run_copy, allow_unverified=True).restore_latest(_template())
    assert meta["step"] == 8
    with pytest.warns(RuntimeWarning), pytest.raises(CheckpointError, match=r"checkpoints: none of .* could be read"):
        Checkpointer(run_copy).restore_latest(_template())


def test_a_checkpoint_folder_renamed_to_another_step_is_set_aside(run_copy):
    # checkpoints/8 renamed to 12: taken for its name it would resume at step 12's data position.
    (run_copy / "checkpoints" / "8").rename(run_copy / "checkpoints" / "12")
    with pytest.warns(
        RuntimeWarning,
        match=r"checkpoint .*checkpoints/12 is corrupt or unreadable \(its folder is named 12 but its record is "
        r"of step 8\); moved to .*checkpoints/corrupt-12, trying an older one",
    ):
        state, meta = Checkpointer(run_copy).restore_latest(_template())
    assert meta["step"] == 4 and int(state.step) == 4


def test_a_checksum_listing_must_name_exactly_the_folders_files(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "a").write_bytes(b"alpha")
    (tmp_path / "d" / "b").write_bytes(b"beta")
    assert verify_checksums(tmp_path) is False  # no listing: written before checksums
    listing = write_checksums(tmp_path)
    assert verify_checksums(tmp_path) is True
    (tmp_path / "d" / "b").write_bytes(b"bets")
    with pytest.raises(ChecksumError, match=r"d/b: SHA-256 .* does not match the recorded"):
        verify_checksums(tmp_path)
    write_checksums(tmp_path)
    listing.write_text(listing.read_text().splitlines()[0] + "\n")  # a listing cut short
    with pytest.raises(ChecksumError, match=r"d/b: in the checkpoint but not listed"):
        verify_checksums(tmp_path)
    write_checksums(tmp_path)
    (tmp_path / "a").unlink()
    with pytest.raises(ChecksumError, match=r"/a: listed in checksums.sha256 but missing"):
        verify_checksums(tmp_path)


# ---- a task's targets outside its classes ------------------------------------------------------


def test_targets_outside_the_task_classes_are_named_before_training_on_them(monkeypatch):
    # A class id >= K would index past the logits (a NaN loss, or a silently wrong one, later on).
    from panm_jax.tasks import get_task

    task = get_task("copy", max_train_length=3)
    real_train, real_eval = task.train_batch, task.eval_batches

    def off_by_one(batch):
        targets = np.array(batch.targets)
        targets[0, 0] = task.output_size
        return batch._replace(targets=targets)

    monkeypatch.setattr(task, "train_batch", lambda rng, n: off_by_one(real_train(rng, n)))
    config = tiny_config()
    with pytest.raises(
        ValueError,
        match=rf"^task 'copy', training batch of step 3: targets: expected class ids in "
        rf"\[0, {task.output_size}\) .* at scored steps, got {task.output_size}$",
    ):
        loop.training_batch(task, config, 3, loop.default_buckets(task))
    monkeypatch.setattr(task, "eval_batches", lambda *a, **k: [off_by_one(b) for b in real_eval(*a, **k)])
    with pytest.raises(ValueError, match=r"^task 'copy', evaluation set 2L\+1: targets: expected class ids in "):
        eval_sets(task, ["2L+1"], 8, 8, seed=0)


# ---- NaN or Inf loss: stop (default) or skip the batch ----------------------------------------


def test_a_nan_loss_stops_the_run_and_skip_batch_leaves_the_state_unchanged(tmp_path, monkeypatch, capsys):
    real_batch = loop.training_batch

    def poisoned(task, config, step, buckets):  # the batches of steps 5..8 have NaN inputs
        batch = real_batch(task, config, step, buckets)
        return batch._replace(inputs=batch.inputs * np.nan) if step + 1 >= 5 else batch

    monkeypatch.setattr(loop, "training_batch", poisoned)
    # A small LSTM with one bucket and one evaluation mode: few compilations. Losses are looked
    # at only where the loop syncs anyway (log, evaluation, checkpoint: step 8 here).
    config = tiny_config(
        **FINISHED,
        model="lstm",
        model_options={"hidden": 8},
        buckets=[3],
        eval_modes=["L"],
        checkpoint_every=4,
        log_every=4,
    )
    with pytest.raises(
        NonFiniteLossError,
        match=r"loss: non-finite at step 5 \(loss nan, .*the last good checkpoint "
        r"is .*checkpoints/4\); set on_nan = \"skip-batch\"",
    ):
        train_and_evaluate(config, tmp_path, progress=False)
    ckpt = Checkpointer(tmp_path, read_only=True)
    assert ckpt.latest.all_steps() == [4] and ckpt.best.latest_step() is None  # nothing saved after step 4
    before, _ = ckpt.restore_latest(_template(config))
    events = [r for r in read_jsonl(tmp_path / "metrics.jsonl") if "event" in r]
    assert events[-1] == {
        "event": "non-finite loss",
        "step": 5,
        "loss": None,  # NaN, written as JSON's null
        "grad_norm": None,
        "param_norm": None,
        "on_nan": "stop",
    }
    assert not (tmp_path / "results.json").exists()

    # Skipping is limited: by default at most 1 % of num_steps (here at least one batch): the second
    # poisoned batch stops the run, naming the limit, and nothing is saved after step 4.
    with pytest.raises(
        NonFiniteLossError,
        match=r"on_nan: skip-batch skipped 4 batches by step 8, more than max_skipped_fraction = 0.01 of "
        r"num_steps \(1\): .* saved nothing after it \(the last good checkpoint is .*checkpoints/4\)",
    ):
        train_and_evaluate(config.replace(on_nan="skip-batch"), tmp_path, progress=False)
    assert Checkpointer(tmp_path, read_only=True).latest.all_steps() == [4]

    # on_nan and the limit may change on resume: the same run goes on from step 4, skipping the four
    # poisoned batches.
    train_and_evaluate(config.replace(on_nan="skip-batch", max_skipped_fraction=0.5), tmp_path, progress=False)
    after, meta = Checkpointer(tmp_path, read_only=True).restore_latest(_template(config))
    assert meta["step"] == 8 and int(after.step) == 8 and int(before.step) == 4
    # parameters and optimiser state untouched by skipped batches (same tree, every leaf equal)
    chex.assert_trees_all_equal((before.params, before.opt_state), (after.params, after.opt_state))
    assert meta["skipped_batches"] == 4  # carried by the checkpoint: the limit counts over the whole run
    events = [r for r in read_jsonl(tmp_path / "metrics.jsonl") if r.get("event") == "skipped non-finite batch"]
    assert [r["step"] for r in events[-4:]] == [5, 6, 7, 8]
    err = capsys.readouterr().err
    assert (
        "warning: skipped 4 batch(es) with a non-finite loss, gradient or parameter (steps [5, 6, 7, 8]; "
        "4 of at most 4 in this run)" in err
    )


def test_on_nan_is_a_config_field_and_a_flag():
    from panm_jax.cli.train import _config_from_args

    assert tiny_config().on_nan == "stop"
    args = build_parser().parse_args(["train", "--on-nan", "skip-batch"])
    assert _config_from_args(args).on_nan == "skip-batch"
    with pytest.raises(ValueError, match=r"on_nan: expected one of \['stop', 'skip-batch'\], got 'ignore'"):
        tiny_config(on_nan="ignore")


# ---- a damaged best/: resume and eval fall back to the latest checkpoint ----------------------


def test_a_best_checkpoint_without_its_metadata_does_not_stop_the_resume(run_copy, capsys):
    (run_copy / "best" / "8" / "meta" / "metadata").unlink()
    results = train_and_evaluate(tiny_config(**FINISHED), run_copy, progress=False)
    out = capsys.readouterr()
    assert "resumed from step 8" in out.out and results["step"] == 8
    notes = [line for line in out.err.splitlines() if line.startswith("warning:")]
    assert len(notes) == 1, notes
    assert re.fullmatch(
        r"warning: best checkpoint .*best/8 is corrupt or unreadable \(ChecksumError: .*meta/metadata: "
        r"listed in checksums.sha256 but missing\); moved to .*best/corrupt-8, the run goes on from "
        r"the latest checkpoint and keeps a new best at its next evaluation",
        notes[0],
    ), notes[0]


def test_eval_falls_back_to_the_latest_checkpoint_when_the_best_is_truncated(run_copy, capsys):
    best = run_copy / "best" / "8"
    (best / CHECKSUM_FILE).unlink()  # as written before checksums: orbax's own read is what fails
    array_file = _largest_file(best)
    array_file.write_bytes(array_file.read_bytes()[:100])
    assert main(["eval", "--workdir", str(run_copy), "--modes", "L"]) == 0
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if line.startswith(("warning:", "error:"))]
    assert len(notes) == 1, notes
    assert re.fullmatch(
        r"warning: best checkpoint .*best/8 is corrupt or unreadable \(.*\); left in place, "
        r"evaluating the latest checkpoint instead",
        notes[0],
    ), notes[0]
    assert "Traceback" not in err and "Event loop is closed" not in err
    assert array_file.exists()  # evaluation moves nothing
    assert (run_copy / "eval.json").exists()


# ---- another config in an existing workdir: refused, nothing touched ----------------------------


def _eval_row(path: Path, mode: str = "L") -> dict:
    return next(m for m in json.loads(path.read_text())["modes"] if m["mode"] == mode)


def test_eval_of_a_kept_checkpoint_by_its_step(run_copy, capsys):
    """``--checkpoint STEP`` evaluates that checkpoint (checkpoints/4 here, not the best, 8) into eval-STEP.*."""
    assert main(["eval", "--workdir", str(run_copy), "--modes", "L", "--checkpoint", "4"]) == 0
    assert main(["eval", "--workdir", str(run_copy), "--modes", "L", "--checkpoint", "8"]) == 0
    assert main(["eval", "--workdir", str(run_copy), "--modes", "L", "--checkpoint", "latest"]) == 0
    capsys.readouterr()
    assert json.loads((run_copy / "eval-4.json").read_text())["step"] == 4
    assert json.loads((run_copy / "eval-8.json").read_text())["step"] == 8
    assert _eval_row(run_copy / "eval-8.json") == _eval_row(run_copy / "eval.json")  # the same checkpoint
    assert _eval_row(run_copy / "eval-4.json")["loss"] != _eval_row(run_copy / "eval-8.json")["loss"]
    ckpt = Checkpointer(run_copy, read_only=True)
    assert ckpt.kept_steps() == [4, 8] and ckpt.restore_step(8, _template())[1]["step"] == 8
    with pytest.raises(CheckpointError, match=r"step 5: no checkpoint of that step is kept in .* \(kept: \[4, 8\]\)"):
        ckpt.restore_step(5, _template())
    ckpt.close()


@pytest.mark.parametrize(
    "value, message",
    [
        ("5", r"--checkpoint: expected best, latest or the step of a checkpoint kept in '.*run' \(\[4, 8\]\), got 5"),
        ("four", r"--checkpoint: expected best, latest or a step number, got 'four'"),
        ("0", r"--checkpoint: expected best, latest or a step number, got '0'"),
    ],
)
def test_eval_of_a_step_that_is_not_kept_is_a_named_error(run_copy, capsys, value, message):
    assert main(["eval", "--workdir", str(run_copy), "--checkpoint", value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.fullmatch("error: " + message, err[0]), err
    assert not list(run_copy.glob("eval*"))


def test_eval_of_a_corrupt_checkpoint_by_its_step_names_it_and_does_not_fall_back(run_copy, capsys):
    array_file = _largest_file(run_copy / "checkpoints" / "4")
    data = bytearray(array_file.read_bytes())
    data[-1] ^= 0xFF
    array_file.write_bytes(bytes(data))
    assert main(["eval", "--workdir", str(run_copy), "--modes", "L", "--checkpoint", "4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.fullmatch(
        r"error: checkpoint .*checkpoints/4 is corrupt or unreadable \(ChecksumError: .*\)", err[0]
    ), err
    assert array_file.exists() and not (run_copy / "checkpoints" / "corrupt-4").exists()  # left in place
    assert not list(run_copy.glob("eval*"))


def test_another_models_config_is_refused_and_the_workdir_left_as_it_was(run_copy, capsys):
    before = _snapshot(run_copy)
    argv = [
        "train",
        "--task",
        "copy",
        "--model",
        "lstm",
        "--workdir",
        str(run_copy),
        "--no-progress",
        "--steps",
        "8",
        "--set",
        "task_options.max_train_length=3",
        "--set",
        "model_options.hidden=8",
        "--set",
        "batch_size=8",
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert re.match(
        r"error: config: the checkpoints in .* belong to a run with different settings \['model', "
        r"'model_options.mlp_hidden', .*\(model: 'panm' in the checkpoints, 'lstm' given;",
        err[0],
    ), err[0]
    assert _snapshot(run_copy) == before
    # The original command still resumes from the last checkpoint.
    _, meta = Checkpointer(run_copy).restore_latest(_template(), config_check(tiny_config(**FINISHED), run_copy))
    assert meta["step"] == 8


# ---- one run per workdir ----------------------------------------------------------------------

_HOLD_LOCK = """
import sys, time
from panm_jax.train.lock import WorkdirLock
WorkdirLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(600)
"""


def test_a_second_run_on_a_workdir_is_refused(tmp_path, capsys):
    workdir = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(workdir)], cwd=REPO, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"held"
        assert main(_tiny_argv(workdir)) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, err
        assert re.fullmatch(
            rf"error: --workdir: '.*run' is in use by another run \(process {holder.pid} on .* holds "
            r".*run/\.lock\); wait for it to finish or use another workdir",
            err[0],
        ), err[0]
        assert [p.name for p in workdir.iterdir()] == [".lock"]  # the refused run wrote nothing
    finally:
        holder.kill()  # kill -9: the kernel drops the lock, the PID stays in the file
        holder.wait()
    with WorkdirLock(workdir) as lock:
        assert lock.stale_pid == holder.pid
        with pytest.raises(WorkdirBusy, match=rf"process {os.getpid()} "):
            WorkdirLock(workdir).acquire()  # a second holder in one process is refused too
    assert (workdir / ".lock").read_text() == ""  # a clean release leaves no PID
    with WorkdirLock(workdir) as lock:
        assert lock.stale_pid is None


# ---- orbax's late callbacks into a closed event loop ------------------------------------------


class _CallsClosedLoop:
    """On collection, calls a closed loop the way a late tensorstore read does (an unraisable error)."""

    def __init__(self, loop):
        self.loop = loop

    def __del__(self):
        self.loop.call_soon_threadsafe(print)


class _RaisesOther:
    def __del__(self):
        raise ValueError("a real error")


def test_closed_event_loop_callbacks_are_dropped_and_other_errors_kept(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: seen.append(unraisable.exc_value))
    drop_closed_loop_callbacks()
    drop_closed_loop_callbacks()  # installed once
    closed = asyncio.new_event_loop()
    closed.close()
    obj = _CallsClosedLoop(closed)
    del obj
    obj = _RaisesOther()
    del obj
    assert [repr(e) for e in seen] == ["ValueError('a real error')"]


# ---- evaluation sets: seeded by task, mode and length, not by a mode's place in a list ----------


def test_a_mode_gets_the_same_examples_and_numbers_in_any_subset_of_modes():
    config = tiny_config(model_options={**tiny_config().model_options, "random_base_at_eval": True})
    run = Run(config)  # PANM drawing its base address at evaluation: the keys must not move either
    both = run.evaluate(run.state.params, ("L", "2L+1"), TEST_SEED)
    alone = run.evaluate(run.state.params, ("2L+1",), TEST_SEED)
    swapped = run.evaluate(run.state.params, ("2L+1", "L"), TEST_SEED)
    assert alone["2L+1"] == both["2L+1"] and swapped == both
    a = eval_sets(run.task, ("L", "2L+1"), 8, 8, TEST_SEED)["2L+1"][0]
    b = eval_sets(run.task, ("2L+1",), 8, 8, TEST_SEED)["2L+1"][0]
    np.testing.assert_array_equal(a.inputs, b.inputs)
    # A stable hash (the same in every process, unlike hash()) of the seed, task, mode and lengths.
    assert mode_seed(run.task, "2L+1", TEST_SEED) == 1103257651
    assert len({mode_seed(run.task, m, s) for m in ("L", "2L+1") for s in (TEST_SEED, TEST_SEED + 1)}) == 4


def test_a_step_saved_again_replaces_the_earlier_checkpoint(tmp_path):
    # A run resumed from an older checkpoint re-reaches the step of its best checkpoint and may
    # score it differently (another evaluation set, a non-deterministic device): saving it again
    # must replace that checkpoint, not fail with orbax's "step already exists".
    ckpt = Checkpointer(tmp_path)
    ckpt.save_best(8, {"w": np.zeros(3, np.float32)}, {"step": 8, "score": 0.5})
    ckpt.save_best(8, {"w": np.ones(3, np.float32)}, {"step": 8, "score": 0.75})
    state, meta = ckpt.restore_best({"w": np.zeros(3, np.float32)})
    assert meta["score"] == 0.75 and state["w"].tolist() == [1.0, 1.0, 1.0]
    assert verify_checksums(tmp_path / "best" / "8")
    ckpt.close()


def test_a_record_appended_after_a_torn_line_starts_a_line_of_its_own(tmp_path):
    # A crash in the middle of a write leaves a last line without its newline; the resume's first record
    # must not be glued to it (and lost with it when the log is read).
    path = tmp_path / "metrics.jsonl"
    append_jsonl(path, {"step": 1, "loss": 2.0})
    with open(path, "a") as f:
        f.write('{"step": 2, "lo')
    append_jsonl(path, {"event": "resumed", "step": 1})
    append_jsonl(path, {"step": 2, "loss": 1.5})
    assert read_jsonl(path) == [
        {"step": 1, "loss": 2.0},
        {"event": "resumed", "step": 1},
        {"step": 2, "loss": 1.5},
    ]
    assert path.read_text().count("\n") == 4  # the torn line closed, nothing else added
    fresh = tmp_path / "new" / "metrics.jsonl"
    append_jsonl(fresh, {"step": 0})
    assert fresh.read_text() == '{"step": 0}\n'
