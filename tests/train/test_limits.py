"""Inputs at and past the limits of what a run can use, refused up front with one named line: integers beyond
what the run stores them in, a workdir path orbax cannot write under, paths in the way in the run folder; and
how a run ends when the disk fills or SIGTERM arrives (as Ctrl-C: before its next step, one line, nothing
half-written kept, the same command resumes).

Each CLI case: one line, ``error: ...``, the exit code of ``panm_jax.cli.EXIT_CODES``, no traceback.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import pytest

from panm_jax.cli import EXIT_CODES, main
from panm_jax.errors import UserError
from panm_jax.models import build_model
from panm_jax.train import checkpoint as checkpoint_module
from panm_jax.train import engine, io
from panm_jax.train import lock as lock_module
from panm_jax.train import loop as loop_module
from panm_jax.train.checkpoint import Checkpointer
from panm_jax.train.checksums import verify_checksums
from panm_jax.train.config import SEED_MAX, STEP_MAX, ConfigError, load_config
from panm_jax.train.engine import check_run_folder, check_workdir_path
from panm_jax.train.loop import train_and_evaluate
from panm_jax.train.optim import make_optimizer
from panm_jax.train.steps import init_train_state, make_train_step
from tests.train.tiny import FINISHED, TINY, tiny_config

REPO = Path(__file__).resolve().parents[2]


def _train_args(workdir, *extra: str) -> list[str]:
    sets = [item for s in TINY for item in ("--set", s)]
    return ["train", "--workdir", str(workdir), "--no-progress", *sets, *extra]


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


# ---- integers beyond what the run holds them in ---------------------------------------------------


def test_seeds_from_2_to_the_32_repeat_smaller_ones_in_jax():
    # Why SEED_MAX is 2^32 - 1: JAX keeps the low 32 bits of a seed (without 64-bit mode), so seed 2^32
    # would initialise the model as seed 0 does, and seeds past 2^63 - 1 raise OverflowError.
    assert SEED_MAX == 2**32 - 1 and STEP_MAX == 2**31 - 1
    data = jax.random.key_data
    assert np.array_equal(data(jax.random.key(2**32)), data(jax.random.key(0)))
    assert not np.array_equal(data(jax.random.key(SEED_MAX)), data(jax.random.key(0)))
    with pytest.raises(OverflowError):
        jax.random.key(2**64)


@pytest.mark.parametrize(
    "override, message",
    [
        (
            "seed=18446744073709551616",
            r"seed: expected an integer in \[0, 4294967295\] \(the seeds JAX's random keys tell ",
        ),
        ("seed=4294967296", r"seed: expected an integer in \[0, 4294967295\] .*, got 4294967296$"),
        ("seed=-1", r"seed: expected an integer in \[0, 4294967295\] .*, got -1$"),
        ("num_steps=2147483648", r"num_steps: expected an integer in \[1, 2147483647\] \(the step counter is int32\)"),
        ("num_steps=0", r"num_steps: expected an integer in \[1, 2147483647\] \(the step counter is int32\), got 0$"),
        (
            "eval_every=9223372036854775808",
            r"eval_every: expected an integer in \[1, 2147483647\] \(the step counter is",
        ),
        (
            "batch_size=2147483648",
            r"batch_size: expected an integer in \[1, 2147483647\] \(JAX indexes arrays with int32\)",
        ),
        (
            "eval_examples=18446744073709551616",
            r"eval_examples: expected an integer in \[1, 2147483647\] \(JAX indexes ",
        ),
        ("keep_checkpoints=2147483648", r"keep_checkpoints: expected an integer in \[1, 2147483647\], got 2147483648$"),
        (
            "optimizer.warmup_steps=2147483648",
            r"optimizer.warmup_steps: expected an integer in \[0, 2147483647\] \(the step",
        ),
        ("buckets=[3, 2147483648]", r"buckets: expected lengths of at most 2147483647 .*, got \[3, 2147483648\]"),
        (
            "task_options.max_length=18446744073709551616",
            r"task_options.max_length: expected an integer in \[-2147483648, 2147483647\] \(JAX computes in int32\), "
            r"got 18446744073709551616",
        ),
        ("task_options.test_lengths=[4, 2147483648]", r"task_options.test_lengths: expected an integer in \[-21"),
        ("model_options.hidden=2147483648", r"model_options.hidden: expected an integer in \[-2147483648, 21"),
    ],
)
def test_an_integer_beyond_what_the_run_holds_is_named_when_the_config_is_built(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [*TINY, override])


def test_task_options_whose_data_do_not_fit_in_memory_are_named(monkeypatch):
    import panm_jax.tasks

    def out_of_memory(name, **options):
        raise MemoryError("Unable to allocate 12.0 GiB for an array with shape (3, 2147483647, 2)")

    monkeypatch.setattr(panm_jax.tasks, "get_task", out_of_memory)
    with pytest.raises(
        ConfigError, match=r"^task_options: expected options whose data fit in memory, got .*MemoryError"
    ):
        load_config(None, TINY)


def test_the_largest_integers_a_run_holds_are_accepted():
    config = load_config(None, [*TINY, f"seed={SEED_MAX}", f"num_steps={STEP_MAX}", f"eval_every={STEP_MAX}"])
    assert (config.seed, config.num_steps) == (SEED_MAX, STEP_MAX)


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            ["--seed", "18446744073709551616"],
            r"--seed: expected an integer in \[0, 4294967295\] \(the seeds JAX's random keys tell apart\), got "
            r"18446744073709551616",
        ),
        (["--seed", "-1"], r"--seed: expected an integer in \[0, 4294967295\] .*, got -1"),
        (["--steps", "2147483648"], r"--steps: expected an integer in \[1, 2147483647\] \(the step counter is int32\)"),
        (
            ["--batch-size", "4294967296"],
            r"--batch-size: expected an integer in \[1, 2147483647\] \(JAX indexes arrays",
        ),
        (
            ["--seeds", "0,4294967296"],
            r"--seeds: expected comma-separated integers in \[0, 4294967295\] \(the seeds JAX's random keys tell "
            r"apart\), got '0,4294967296'",
        ),
    ],
)
def test_a_flag_beyond_what_the_run_holds_is_one_line_naming_it(tmp_path, capsys, flags, message):
    workdir = tmp_path / "run"
    assert main(_train_args(workdir, *flags)) == EXIT_CODES["user error"]
    assert re.fullmatch("error: " + message + ".*", _one_error_line(capsys.readouterr().err))
    assert not workdir.exists()


# ---- a workdir path orbax cannot write under ----------------------------------------------------


@pytest.mark.parametrize(
    "name, reason",
    [
        (os.fsdecode(b"run-\xff"), r"it is not UTF-8 text, and orbax passes checkpoint paths to tensorstore as UTF-8"),
        ("run[12]", r"its part 'run\[12\]' is a glob pattern that does not match itself"),
        ("a\\b", r"it holds a backslash, which tensorstore \(orbax's file store\) reads as a folder separator"),
        ("bucket-gs:", r"its part 'bucket-gs:' and the '/' after it read as a Cloud Storage address"),
    ],
)
def test_a_workdir_orbax_cannot_write_under_is_refused_before_anything_is_created(tmp_path, capsys, name, reason):
    workdir = tmp_path / name
    assert main(_train_args(workdir, "--set", "num_steps=2")) == EXIT_CODES["user error"]
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith("error: --workdir: expected a folder path that orbax can write checkpoints under, got ")
    assert re.search(reason, line), line
    with pytest.raises(UserError, match=r"^workdir: expected a folder path that orbax can write"):
        train_and_evaluate(tiny_config(num_steps=2), workdir, progress=False)
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_a_non_utf8_path_is_shown_as_its_bytes_and_checked_where_it_resolves(tmp_path, monkeypatch):
    with pytest.raises(UserError, match=re.escape(repr(os.fsencode(str(tmp_path / os.fsdecode(b"run-\xff")))))):
        check_workdir_path(tmp_path / os.fsdecode(b"run-\xff"))
    folder = tmp_path / os.fsdecode(b"cwd-\xfe")
    folder.mkdir()
    monkeypatch.chdir(folder)  # a relative workdir under a folder whose name is not UTF-8
    with pytest.raises(UserError, match=r"got b'.*/cwd-\\xfe/run': it is not UTF-8 text"):
        check_workdir_path("run")


@pytest.mark.parametrize("name", ["run with space", "rün", "run:1", "run?*", "x[", "file:x", "s3:"])
def test_paths_orbax_writes_under_are_accepted(tmp_path, name):
    assert check_workdir_path(tmp_path / name) == tmp_path / name


@pytest.mark.parametrize("name", [os.fsdecode(b"run-\xff"), "run[12]", "a\\b", "gs:"])
def test_the_refused_paths_are_ones_orbax_fails_under(tmp_path, name):
    # The reason for each refusal: orbax cannot save and read back a checkpoint there. Should one pass
    # here, orbax has learnt to, and check_workdir_path can let it through.
    state = {"x": np.arange(3, dtype=np.float32)}
    ckpt = Checkpointer(tmp_path / name, notify=lambda message: None)
    try:
        ckpt.save(1, state, {"step": 1})
        restored = ckpt.restore_latest(state)
    except Exception:  # noqa: BLE001 - orbax's and tensorstore's errors vary by name
        restored = None
    finally:
        ckpt.close()
    assert restored is None or not np.array_equal(restored[0]["x"], state["x"])


# ---- paths in the way in the run folder ------------------------------------------------------


@pytest.mark.parametrize(
    "make, pattern",
    [
        ("best a file", r"error: .*/run/best: Not a directory; a part of that path is a file, not a folder: .*"),
        ("checkpoints a file", r"error: .*/run/checkpoints: Not a directory; .*give another --workdir"),
        ("results.json a folder", r"error: .*/run/results.json: Is a directory; a file was expected there, .*"),
        ("accuracy.png a folder", r"error: .*/run/accuracy.png: Is a directory; .*"),
        ("config.json a folder", r"error: .*/run/config.json: Is a directory; .*"),
    ],
)
def test_a_path_in_the_way_is_named_before_the_run_starts(tmp_path, capsys, make, pattern):
    workdir = tmp_path / "run"
    workdir.mkdir()
    name, kind = make.split()[0], make.split()[-1]
    (workdir / name).mkdir() if kind == "folder" else (workdir / name).write_text("in the way")
    before = sorted(p.name for p in workdir.iterdir())
    assert main(_train_args(workdir, "--set", "num_steps=2")) == EXIT_CODES["os error"]
    assert re.fullmatch(pattern, _one_error_line(capsys.readouterr().err))
    assert sorted(p.name for p in workdir.iterdir()) == before  # nothing trained, nothing written


def test_a_folder_the_run_cannot_write_is_named_at_start(tmp_path, monkeypatch, capsys):
    workdir = tmp_path / "run"
    (workdir / "best").mkdir(parents=True)
    real = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path).name != "best" and real(path, mode))
    assert main(_train_args(workdir, "--set", "num_steps=2")) == EXIT_CODES["os error"]
    assert re.fullmatch(
        r"error: .*/run/best: Permission denied; make it writable \(and readable\) by you, or give another --workdir",
        _one_error_line(capsys.readouterr().err),
    )


def test_seeds_trained_together_check_each_folder_before_their_first_step(tmp_path):
    # engine.training (train_seeds and train_and_evaluate alike) checks every folder before anything else.
    (tmp_path / "s1").mkdir()
    (tmp_path / "s1" / "best").write_text("in the way")
    pieces = SimpleNamespace(configs=[tiny_config()], size=1)
    with pytest.raises(NotADirectoryError) as caught:
        next(engine.training(pieces, [tmp_path / "s0", tmp_path / "s1"], [None, None]))
    assert caught.value.filename == str(tmp_path / "s1" / "best")
    check_run_folder(tmp_path / "s0")  # a folder that does not exist yet is fine


# ---- a full disk: the line names the path --------------------------------------------------------


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")  # as write() and fsync() raise it: no path


def test_a_write_that_fills_the_disk_names_its_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    path.write_text("old")
    monkeypatch.setattr(io.os, "fsync", _full_disk)
    with pytest.raises(OSError) as caught:
        io.atomic_write_text(path, "new")
    assert (caught.value.errno, caught.value.filename) == (errno.ENOSPC, str(path))
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temp file
    with pytest.raises(OSError) as caught:
        io.append_jsonl(tmp_path / "metrics.jsonl", {"step": 1})
    assert (caught.value.errno, caught.value.filename) == (errno.ENOSPC, str(tmp_path / "metrics.jsonl"))


def test_a_full_disk_when_the_lock_is_taken_names_the_lock_file(tmp_path, monkeypatch):
    monkeypatch.setattr(lock_module.os, "fsync", _full_disk)
    with pytest.raises(OSError) as caught:
        lock_module.WorkdirLock(tmp_path).acquire()
    assert (caught.value.errno, caught.value.filename) == (errno.ENOSPC, str(tmp_path / ".lock"))
    monkeypatch.undo()
    lock_module.WorkdirLock(tmp_path).acquire().release()  # nothing held: the next run takes it


def test_a_full_disk_in_orbax_names_the_checkpoint_and_leaves_no_temporary_folder(tmp_path, monkeypatch, capsys):
    # What tensorstore raises when the disk fills under orbax (measured on a 256 KiB tmpfs): a ValueError
    # carrying the system's error code, after orbax made its temporary folder.
    real = ocp.CheckpointManager.save

    def disk_full(manager, step, *args, **kwargs):
        if step == 4 and Path(manager.directory).name == "checkpoints":
            tmp = Path(manager.directory) / "4.orbax-checkpoint-tmp" / "state.orbax-checkpoint-tmp"
            tmp.mkdir(parents=True)
            raise ValueError(
                f'RESOURCE_EXHAUSTED: Error writing "00000/0" in OCDBT database at local file "{tmp}/": Failed to '
                "write 470323 bytes to file 14: No space left on device [os_error_code=28]"
            )
        return real(manager, step, *args, **kwargs)

    monkeypatch.setattr(ocp.CheckpointManager, "save", disk_full)
    args = _train_args(tmp_path, "--set", "num_steps=4", "--set", "checkpoint_every=4", "--set", "eval_every=4")
    assert main(args) == EXIT_CODES["os error"]
    assert re.fullmatch(
        r"error: .*/checkpoints/4: No space left on device; free space on that disk, then rerun the same command "
        r"\(a training run resumes from its last checkpoint\)",
        _one_error_line(capsys.readouterr().err),
    )
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == []  # neither 4 nor orbax's folder
    monkeypatch.setattr(ocp.CheckpointManager, "save", real)
    assert main(args) == 0


# ---- SIGTERM ends a run as Ctrl-C does ----------------------------------------------------------------


def test_sigterm_during_a_checkpoint_write_lets_it_finish_then_ends_the_run_before_the_next_step(
    tmp_path, monkeypatch, capsys
):
    real = ocp.CheckpointManager.save
    steps_after = []

    def terminated(manager, step, *args, **kwargs):
        if step == 8 and Path(manager.directory).name == "checkpoints":
            os.kill(os.getpid(), signal.SIGTERM)  # as orbax starts writing step 8
            time.sleep(0.5)  # the handler runs here, within the save: it must not raise here
        return real(manager, step, *args, **kwargs)

    real_batch = loop_module.Run.batch

    def batch(run, steps):
        steps_after.append(list(steps))
        return real_batch(run, steps)

    monkeypatch.setattr(ocp.CheckpointManager, "save", terminated)
    monkeypatch.setattr(loop_module.Run, "batch", batch)
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    args = _train_args(tmp_path, "--set", "num_steps=12", "--set", "checkpoint_every=4", "--set", "eval_every=12")
    assert main(args) == EXIT_CODES["interrupted"]
    assert re.fullmatch(
        r"error: terminated \(SIGTERM\); no partial checkpoint kept and the lock released; the same command "
        rf"resumes {re.escape(str(tmp_path))} from step 8",
        _one_error_line(capsys.readouterr().err),
    )
    assert steps_after[-1] == [7]  # no step after the one that saved
    assert {s: signal.getsignal(s) for s in before} == before  # the handlers are the command's only
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["4", "8"]  # 8 whole, no temporary
    assert verify_checksums(tmp_path / "checkpoints" / "8")
    assert (tmp_path / ".lock").read_text() == ""
    monkeypatch.setattr(ocp.CheckpointManager, "save", real)
    assert main(args) == 0
    assert "resumed from step 8" in capsys.readouterr().out


def test_temporary_folders_a_killed_save_left_are_removed_when_the_run_starts(run_copy):
    left = [run_copy / "checkpoints" / "12.orbax-checkpoint-tmp", run_copy / "best" / "9.orbax-checkpoint-tmp-17"]
    for folder in left:
        (folder / "state.orbax-checkpoint-tmp").mkdir(parents=True)
    train_and_evaluate(tiny_config(**FINISHED), run_copy, progress=False)
    assert sorted(p.name for p in (run_copy / "checkpoints").iterdir()) == ["4", "8"]
    assert sorted(p.name for p in (run_copy / "best").iterdir()) == ["8"]


def test_sigterm_to_a_training_process_ends_it_with_one_line_saying_where_it_resumes(tmp_path):
    workdir = tmp_path / "run"
    sets = [item for s in TINY for item in ("--set", s)]
    argv = [sys.executable, "-m", "panm_jax.cli", "train", "--workdir", str(workdir), "--no-progress", *sets]
    argv += ["--set", "num_steps=100000", "--set", "checkpoint_every=4", "--set", "eval_every=100000"]
    process = subprocess.Popen(argv, cwd=REPO, env={**os.environ, "JAX_PLATFORMS": "cpu"}, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while not (workdir / "checkpoints" / "8" / checkpoint_module.CHECKSUM_FILE).exists():
            assert process.poll() is None and time.monotonic() < deadline, "the run did not reach step 8"
            time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    err = err.decode()
    assert process.returncode == EXIT_CODES["interrupted"], err
    line = _one_error_line(err)
    step = int(re.fullmatch(r"error: terminated \(SIGTERM\); .* the same command resumes .* from step (\d+)", line)[1])
    names = [p.name for p in (workdir / "checkpoints").iterdir()]
    assert not [n for n in names if "orbax-checkpoint-tmp" in n], names  # no temporary folder left
    assert step == max(int(n) for n in names if n.isdigit()) >= 8, (line, names)
    assert (workdir / ".lock").read_text() == ""


# ---- a raw train step's arguments -------------------------------------------------------------------


@pytest.fixture(scope="module")
def raw_step():
    config = tiny_config()
    task = config.build_task()
    model = build_model(
        config.model, input_size=task.input_size, output_size=task.output_size, seed=0, config=config.model_config
    )
    optimizer = make_optimizer(config.optimizer, config.num_steps)
    graphdef, state = init_train_state(model, optimizer, seed=0)
    at_rate = make_train_step(graphdef, lambda lr: make_optimizer(config.optimizer, 12, learning_rate=lr), task)
    batch = task.train_batch(np.random.default_rng(0), 4)
    return make_train_step(graphdef, optimizer, task), at_rate, state, batch


def test_a_raw_train_step_refuses_non_finite_parameters_and_a_bad_state(raw_step):
    step, _, state, batch = raw_step
    leaves, treedef = jax.tree_util.tree_flatten(state.params)
    leaves[0] = np.full_like(leaves[0], np.nan)
    poisoned = state._replace(params=jax.tree_util.tree_unflatten(treedef, leaves))
    with pytest.raises(ValueError, match=r"^state.params: expected finite values, got \d+ NaN or infinite of \d+ in "):
        step(poisoned, batch)
    with pytest.raises(ValueError, match=r"^state.step: expected an integer scalar \[\], got shape \(\) float32$"):
        step(state._replace(step=jnp.zeros((), jnp.float32)), batch)
    with pytest.raises(ValueError, match=r"^state.key: expected a raw PRNG key uint32 \[2\] .*, got shape \(3,\)"):
        jax.jit(step)(state._replace(key=jnp.zeros((3,), jnp.uint32)), batch)  # shapes: checked under jit too
    with pytest.raises(ValueError, match=r"^state: expected a TrainState \(init_train_state\), got tuple$"):
        step(tuple(state), batch)


@pytest.mark.parametrize(
    "rate, message",
    [
        (np.float32(np.nan), r"learning_rate: expected a finite positive number, got nan"),
        (np.float32(np.inf), r"learning_rate: expected a finite positive number, got inf"),
        (np.float32(-1e-3), r"learning_rate: expected a finite positive number, got -0.001"),
        (np.zeros(2, np.float32), r"learning_rate: expected a real scalar \[\], got shape \(2,\) float32"),
        (np.complex64(1), r"learning_rate: expected a real scalar \[\], got shape \(\) complex64"),
    ],
)
def test_a_raw_train_step_refuses_a_learning_rate_it_cannot_train_at(raw_step, rate, message):
    _, at_rate, state, batch = raw_step
    with pytest.raises(ValueError, match=message):
        at_rate(state, batch, rate)


# ---- the same command again on a finished run ---------------------------------------------------------


def test_the_same_train_command_on_a_finished_run_reprints_its_table(tmp_path, capsys):
    args = _train_args(tmp_path, "--set", "num_steps=4", "--set", "eval_every=4", "--set", "checkpoint_every=4")
    assert main(args) == 0
    first = capsys.readouterr().out
    log, results = (tmp_path / "metrics.jsonl").read_text(), (tmp_path / "results.json").read_text()
    assert main(args) == 0
    again = capsys.readouterr().out
    assert "finished this run (step 4)" in again and "--recompute evaluates again" in again
    table = [line for line in first.splitlines() if line.startswith("│")]
    assert table and table == [line for line in again.splitlines() if line.startswith("│")]
    assert (tmp_path / "metrics.jsonl").read_text() == log  # nothing trained, resumed or evaluated again
    assert (tmp_path / "results.json").read_text() == results
    longer = _train_args(tmp_path, "--set", "num_steps=6", "--set", "eval_every=4", "--set", "checkpoint_every=4")
    assert main(longer) == 0  # another configuration: the run goes on
    assert "resumed from step 4" in capsys.readouterr().out
