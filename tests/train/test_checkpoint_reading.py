"""Checkpoints whose files verify but whose state cannot be read, told apart from another run's checkpoints;
and reading a run's folder (``panm-jax eval``) while the run writes, rotates and holds it.

Damage is done to a copy of one finished tiny run (the ``run_copy`` fixture: checkpoints/4,
checkpoints/8 and best/8); the CLI is called in-process (``panm_jax.cli.main``). The
checkpoint-level tests save small dictionaries of arrays and train nothing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from panm_jax.cli import main
from panm_jax.train import checkpoint as checkpoint_module
from panm_jax.train.checkpoint import LAYOUT_KEY, Checkpointer, CheckpointError
from panm_jax.train.checksums import CHECKSUM_FILE, verify_checksums, write_checksums
from panm_jax.train.engine import config_check
from panm_jax.train.io import read_jsonl
from panm_jax.train.lock import LOCK_FILE, WorkdirBusy, WorkdirLock, live_holder
from panm_jax.train.loop import Run, train_and_evaluate
from tests.train.tiny import FINISHED, tiny_config

REPO = Path(__file__).resolve().parents[2]


def _template(config=None):
    return jax.device_get(Run(config or tiny_config(**FINISHED)).state)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _truncate_arrays(checkpoint: Path) -> Path:
    """Cut orbax's array data file of ``checkpoint`` (``state/d/*``) to half, then write its checksums again,
    so that they verify: returns the file."""
    (data,) = (checkpoint / "state" / "d").iterdir()
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    write_checksums(checkpoint)
    assert verify_checksums(checkpoint)
    return data


def _notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(("warning:", "error:"))]


def _last_per_step(path: Path) -> dict[int, dict]:
    return {r["step"]: r for r in read_jsonl(path) if "loss" in r and "step" in r}


# ---- a checkpoint that verifies but does not restore: damage, set aside --------------------------


def test_a_verified_checkpoint_whose_arrays_cannot_be_read_is_set_aside_and_the_run_resumes_before_it(
    finished_run, run_copy, capsys
):
    data = _truncate_arrays(run_copy / "checkpoints" / "8")
    results = train_and_evaluate(tiny_config(**FINISHED), run_copy, progress=False)
    out = capsys.readouterr()
    notes = _notes(out.err)
    assert len(notes) == 1, notes
    assert re.fullmatch(
        rf"warning: checkpoint .*checkpoints/8 is corrupt or unreadable \(its files match their {CHECKSUM_FILE} "
        r"but its arrays cannot be read: .*\); moved to .*checkpoints/corrupt-8, trying an older one",
        notes[0],
    ), notes[0]
    assert "Traceback" not in out.err
    assert "resumed from step 4" in out.out and results["step"] == 8
    assert (run_copy / "checkpoints" / "corrupt-8" / data.relative_to(run_copy / "checkpoints" / "8")).is_file()
    # Steps 5..8 trained again from checkpoints/4: bit-identical to the uninterrupted run.
    straight, resumed = _last_per_step(finished_run / "metrics.jsonl"), _last_per_step(run_copy / "metrics.jsonl")
    assert sorted(resumed) == sorted(straight) == list(range(1, 9))
    for step in range(5, 9):
        for key in ("loss", "token_accuracy", "grad_norm"):
            assert resumed[step][key] == straight[step][key], (step, key)
    check = config_check(tiny_config(**FINISHED), run_copy)
    again, _ = Checkpointer(run_copy, read_only=True).restore_latest(_template(), check)
    original, _ = Checkpointer(finished_run, read_only=True).restore_latest(_template(), check)
    for a, b in zip(jax.tree_util.tree_leaves(again), jax.tree_util.tree_leaves(original), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_checkpoint_written_before_the_layout_record_is_judged_by_orbaxs_metadata(run_copy):
    """Without ``state_layout`` in its record, orbax's array metadata says what a checkpoint holds."""
    newest = run_copy / "checkpoints" / "8"
    record = json.loads((newest / "meta" / "metadata").read_text())
    del record[LAYOUT_KEY]
    (newest / "meta" / "metadata").write_text(json.dumps(record))
    write_checksums(newest)
    before = _snapshot(run_copy)
    other = _template(tiny_config(**FINISHED).replace(model_options={"hidden": 16, "mlp_hidden": 8, "address_bits": 5}))
    with pytest.raises(CheckpointError, match=r"checkpoints/8: its state does not fit this config's \(its \d+ arrays "):
        Checkpointer(run_copy, notify=pytest.fail).restore_latest(other)
    assert _snapshot(run_copy) == before
    _truncate_arrays(newest)  # now damaged: this config's own layout, arrays unreadable
    notes = []
    _, meta = Checkpointer(run_copy, notify=notes.append).restore_latest(_template())
    assert meta["step"] == 4 and len(notes) == 1 and "checkpoints/corrupt-8" in notes[0], notes


# ---- another run's checkpoints: refused, nothing moved, damaged or not -------------------------------


def test_another_config_is_refused_untouched_even_when_the_newest_checkpoint_is_damaged(run_copy, capsys):
    _truncate_arrays(run_copy / "checkpoints" / "8")
    before = _snapshot(run_copy)
    argv = ["train", "--task", "copy", "--model", "lstm", "--workdir", str(run_copy), "--no-progress"]
    argv += ["--steps", "8", "--set", "task_options.max_train_length=3", "--set", "model_options.hidden=8"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    notes = _notes(err)
    assert len(notes) == 1 and re.match(
        r"error: config: the checkpoints in .* belong to a run with different settings \['model', ", notes[0]
    ), notes
    assert "Traceback" not in err
    assert _snapshot(run_copy) == before


def test_a_state_of_another_layout_is_refused_before_reading_and_moves_nothing(run_copy):
    """A template of another shape with no config check (a caller's mistake, or another version's state):
    the layout in the record says so before any array is read, damaged arrays or not."""
    other = _template(tiny_config(**FINISHED).replace(model_options={"hidden": 16, "mlp_hidden": 8, "address_bits": 5}))
    before = _snapshot(run_copy)
    ckpt = Checkpointer(run_copy, notify=pytest.fail)
    pattern = r"checkpoints/8: its state does not fit this config's \(its \d+ arrays differ in shape or dtype from "
    with pytest.raises(CheckpointError, match=pattern + r".*\); use another workdir"):
        ckpt.restore_latest(other)
    _truncate_arrays(run_copy / "checkpoints" / "8")
    before = _snapshot(run_copy)
    with pytest.raises(CheckpointError, match=pattern):
        ckpt.restore_latest(other)
    ckpt.close()
    assert _snapshot(run_copy) == before


# ---- the writer: rotation after the checksums, atomic ------------------------------------------------

_STATE = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(4, np.float32)}


def _save_steps(workdir: Path, steps, keep: int = 2) -> Checkpointer:
    ckpt = Checkpointer(workdir, keep=keep)
    for step in steps:
        ckpt.save(step, _STATE, {"step": step})
    return ckpt


def test_old_checkpoints_go_only_after_the_new_one_is_verified_and_leave_no_half_folder(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "deleting-1").mkdir()  # left by a process killed while deleting
    ckpt = _save_steps(tmp_path, [2, 3, 4])
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["3", "4"]
    assert ckpt.kept_steps() == [3, 4] and all(verify_checksums(tmp_path / "checkpoints" / s) for s in ("3", "4"))
    record = json.loads((tmp_path / "checkpoints" / "4" / "meta" / "metadata").read_text())
    assert record[LAYOUT_KEY]["arrays"] == 2
    ckpt.save(4, _STATE, {"step": 4})  # saved again: replaces it
    assert ckpt.kept_steps() == [3, 4]
    ckpt.close()


# ---- a reader while the run writes --------------------------------------------------------------------


def test_a_reader_lists_again_when_a_checkpoint_is_rotated_away_before_it_is_read(tmp_path, monkeypatch):
    writer = _save_steps(tmp_path, [1, 2])
    reader = Checkpointer(tmp_path, read_only=True, notify=pytest.fail)
    read = Checkpointer._read
    rotated = []

    def rotate_first(self, manager, step, template, check):
        if self is reader and template is not None and not rotated:
            rotated.append(step)
            writer.save(3, _STATE, {"step": 3})  # removes checkpoints/1
            writer.save(4, _STATE, {"step": 4})  # removes checkpoints/2, the one being read
        return read(self, manager, step, template, check)

    monkeypatch.setattr(Checkpointer, "_read", rotate_first)
    _, meta = reader.restore_latest(_STATE)
    assert rotated == [2] and meta["step"] == 4
    assert reader.kept_steps() == [3, 4]


def test_a_listing_that_fails_as_a_checkpoint_is_removed_is_tried_again(tmp_path, monkeypatch):
    _save_steps(tmp_path, [1, 2])
    reader = Checkpointer(tmp_path, read_only=True, notify=pytest.fail)
    manager_type = type(reader.latest)
    reload, calls = manager_type.reload, []

    def flaky(self):
        calls.append(self.directory)
        if len(calls) == 1:  # as when orbax stats a step folder that the run has just renamed away
            raise FileNotFoundError(2, "No such file or directory", str(tmp_path / "checkpoints" / "1"))
        return reload(self)

    monkeypatch.setattr(manager_type, "reload", flaky)
    assert reader.newest_step() == 2 and len(calls) == 2


def test_a_reader_gives_up_after_a_bounded_number_of_listings(tmp_path, monkeypatch):
    _save_steps(tmp_path, [1])
    reader = Checkpointer(tmp_path, read_only=True, notify=pytest.fail)
    reads = []

    def vanish(self, manager, step, template, check):
        reads.append(step)
        raise checkpoint_module._Corrupt("gone")

    monkeypatch.setattr(Checkpointer, "_read", vanish)
    monkeypatch.setattr(Checkpointer, "_present", lambda self, manager, step: False)
    with pytest.raises(
        CheckpointError, match=r"checkpoints: its checkpoints were removed or still being written each "
    ):
        reader.restore_latest(_STATE)
    assert reads == [1] * checkpoint_module._LISTINGS


_HOLD_LOCK = """
import sys, time
from panm_jax.train.lock import WorkdirLock
WorkdirLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(600)
"""


@pytest.fixture
def held(run_copy):
    """``run_copy`` with its lock held by another live process (as by a run training there)."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(run_copy)], cwd=REPO, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"held"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def test_a_checkpoint_without_checksums_is_unfinished_while_a_live_run_holds_the_folder(run_copy, held):
    (run_copy / "checkpoints" / "8" / CHECKSUM_FILE).unlink()  # as between orbax's commit and the checksums
    assert live_holder(run_copy)[0] == held.pid
    _, meta = Checkpointer(run_copy, read_only=True, notify=pytest.fail).restore_latest(_template())
    assert meta["step"] == 4  # passed over without a note
    held.kill()
    held.wait()
    assert live_holder(run_copy) is None  # the PID stays in the file, its process is gone
    notes = []
    _, meta = Checkpointer(run_copy, read_only=True, notify=notes.append).restore_latest(_template())
    assert meta["step"] == 4 and len(notes) == 1 and "checkpoints/8 is corrupt or unreadable (no checksums" in notes[0]


def _rotating_eval(monkeypatch, run_copy):
    """While ``panm-jax eval`` reads checkpoints/8, the run saves checkpoints/12 and rotates 4 and 8 away."""
    state, meta = Checkpointer(run_copy, read_only=True).restore_latest(_template())
    read = Checkpointer._read
    rotated = []

    def rotate_first(self, manager, step, template, check):
        if self.read_only and template is not None and Path(manager.directory).name == "checkpoints" and not rotated:
            rotated.append(step)
            writer = Checkpointer(run_copy, keep=1)
            writer.save(12, state, {**meta, "step": 12})
            writer.close()
        return read(self, manager, step, template, check)

    monkeypatch.setattr(Checkpointer, "_read", rotate_first)
    return rotated


def test_eval_reads_the_then_newest_checkpoint_when_the_one_listed_is_rotated_away(run_copy, monkeypatch, capsys):
    rotated = _rotating_eval(monkeypatch, run_copy)
    assert main(["eval", "--workdir", str(run_copy), "--modes", "L", "--checkpoint", "latest"]) == 0
    err = capsys.readouterr().err
    assert rotated == [8] and _notes(err) == [] and "Traceback" not in err
    assert json.loads((run_copy / "eval.json").read_text())["step"] == 12
    assert sorted(p.name for p in (run_copy / "checkpoints").iterdir()) == ["12"]


def test_eval_reads_a_run_whose_lock_another_live_process_holds(run_copy, held, capsys):
    before = (run_copy / LOCK_FILE).read_text()
    assert main(["eval", "--workdir", str(run_copy), "--modes", "L"]) == 0  # the best, best/8
    assert json.loads((run_copy / "eval.json").read_text())["step"] == 8
    (run_copy / "checkpoints" / "8" / CHECKSUM_FILE).unlink()  # the newest, still being written
    assert main(["eval", "--workdir", str(run_copy), "--modes", "L", "--checkpoint", "latest"]) == 0
    err = capsys.readouterr().err
    assert _notes(err) == [] and "Traceback" not in err
    assert json.loads((run_copy / "eval.json").read_text())["step"] == 4
    assert (run_copy / "checkpoints" / "8").is_dir() and not list(run_copy.glob("*/corrupt-*"))  # nothing moved
    assert (run_copy / LOCK_FILE).read_text() == before and before.split()[0] == str(held.pid)
    with pytest.raises(WorkdirBusy, match=rf"process {held.pid} "):
        WorkdirLock(run_copy).acquire()  # still the run's


def test_eval_of_a_kept_step_rotated_away_before_it_is_read_says_it_is_not_kept(run_copy, monkeypatch, capsys):
    _rotating_eval(monkeypatch, run_copy)
    assert main(["eval", "--workdir", str(run_copy), "--modes", "L", "--checkpoint", "4"]) == 2
    notes = _notes(capsys.readouterr().err)
    assert len(notes) == 1 and re.fullmatch(
        r"error: step 4: no checkpoint of that step is kept in .*run \(kept: \[8, 12\]\)", notes[0]
    ), notes
