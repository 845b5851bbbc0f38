"""Faults a run meets and how it reports them: non-finite parameters, non-finite results, late-caught
settings, the operating system refusing a path, Ctrl-C, an edited ``config.json``.

Each case: what a user sees (one line, ``error: ...``, and the exit code of ``panm_jax.cli.EXIT_CODES``)
and that nothing already written is lost.
"""

from __future__ import annotations

import errno
import json
import re

import jax
import numpy as np
import pytest

from panm_jax.cli import EXIT_CODES, main
from panm_jax.train import checkpoint as checkpoint_module
from panm_jax.train.checkpoint import Checkpointer, NonFiniteCheckpointError
from panm_jax.train.config import ConfigError
from panm_jax.train.engine import NonFiniteLossError
from panm_jax.train.evaluate import TEST_SEED
from panm_jax.train.loop import Run, train_and_evaluate
from tests.train.tiny import FINISHED, TINY, tiny_config


def _template(config=None):
    return jax.device_get(Run(config or tiny_config(**FINISHED)).state)


def _train_args(workdir, *extra: str) -> list[str]:
    sets = [item for s in TINY for item in ("--set", s)]
    return ["train", "--workdir", str(workdir), "--no-progress", *sets, *extra]


def _error_lines(err: str) -> list[str]:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert "Traceback" not in err, err
    return lines


def _poison(workdir, manager: str, step: int) -> None:
    """Rewrite ``workdir/manager/step`` (verified, with checksums) with a NaN in its parameters."""
    ckpt = Checkpointer(workdir)
    state, meta = (ckpt.restore_best if manager == "best" else ckpt.restore_latest)(_template())
    leaves, treedef = jax.tree_util.tree_flatten(state.params)
    leaves[0] = np.full_like(leaves[0], np.nan)
    state = state._replace(params=jax.tree_util.tree_unflatten(treedef, leaves))
    (ckpt.save_best if manager == "best" else ckpt.save)(step, state, meta)
    ckpt.close()


# ---- non-finite parameters ----------------------------------------------------------------------


def test_eval_and_resume_refuse_a_checkpoint_with_non_finite_parameters(run_copy, capsys):
    _poison(run_copy, "best", 8)
    assert main(["eval", "--workdir", str(run_copy), "--modes", "L"]) == EXIT_CODES["user error"]
    lines = _error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and re.fullmatch(
        r"error: checkpoint .*best/8: \d+ of its \d+ parameter values are NaN or infinite, so nothing can be "
        r"resumed or evaluated from it; kept checkpoints: \[4, 8\]",
        lines[0],
    ), lines
    _poison(run_copy, "latest", 8)
    with pytest.raises(NonFiniteCheckpointError, match=r"checkpoints/8: \d+ of its"):
        train_and_evaluate(tiny_config(**FINISHED).replace(num_steps=12), run_copy, progress=False)


def test_the_last_good_checkpoint_has_finite_parameters(run_copy):
    _poison(run_copy, "latest", 8)
    ckpt = Checkpointer(run_copy, read_only=True)
    assert ckpt.last_good(before=9) == run_copy.resolve() / "checkpoints" / "4"
    assert ckpt.last_good(before=4) is None


def test_parameters_that_overflow_stop_the_run_before_anything_is_saved(tmp_path):
    # SGD at a learning rate of 1e30: the first update leaves parameters whose squares overflow float32,
    # while the loss of that step (computed before the update) is finite.
    config = tiny_config(num_steps=4, checkpoint_every=4, eval_every=4, eval_modes=["L"])
    config = config.replace(optimizer=config.optimizer.__class__(name="sgd", learning_rate=1e30))
    with pytest.raises(
        NonFiniteLossError,
        match=r"loss: non-finite at step 1 \(loss [0-9.]+, gradient norm [0-9.e+]+, parameter norm (inf|nan)\); "
        r"the run stopped and saved nothing after it \(no good checkpoint was saved before it\)",
    ):
        train_and_evaluate(config, tmp_path, progress=False)
    assert not list((tmp_path / "checkpoints").glob("[0-9]*"))


# ---- non-finite results ----------------------------------------------------------------------


def test_non_finite_results_are_written_as_null_and_fail_the_run(tmp_path, monkeypatch, capsys):
    real = Run.evaluate

    def nan_test_loss(self, params, modes, seed):
        rows = real(self, params, modes, seed)
        if seed == TEST_SEED:
            rows[modes[0]]["loss"] = float("nan")
        return rows

    monkeypatch.setattr(Run, "evaluate", nan_test_loss)
    code = main(_train_args(tmp_path, "--set", "num_steps=2", "--set", 'eval_modes=["L"]'))
    assert code == EXIT_CODES["run failed"]
    lines = _error_lines(capsys.readouterr().err)
    assert lines == ["error: seed 0: non-finite results (written as null): loss of mode L"], lines
    record = json.loads((tmp_path / "results.json").read_text())  # strict JSON: no NaN token
    assert record["failed"] and record["modes"][0]["loss"] is None


# ---- settings caught when the config is built ------------------------------------------------


def test_buckets_that_cannot_hold_the_training_lengths_are_refused_at_once():
    with pytest.raises(
        ConfigError,
        match=r"buckets: expected a largest bucket that holds the longest training length of task 'copy' "
        r"\(3: \d+ input and \d+ output steps\), got \[1, 2\] .*add a bucket of at least 3",
    ):
        tiny_config(buckets=[1, 2])
    assert tiny_config(buckets=[1, 3]).buckets == (1, 3)


def test_an_empty_workdir_is_refused(capsys):
    assert main(["train", "--workdir", ""]) == EXIT_CODES["user error"]
    assert main(["eval", "--workdir", " "]) == EXIT_CODES["user error"]
    lines = _error_lines(capsys.readouterr().err)
    assert lines == [
        "error: --workdir: expected a folder path, got ''",
        "error: --workdir: expected a run folder, got ' '",
    ]


# ---- the operating system refuses a path --------------------------------------------------------


@pytest.mark.parametrize(
    "make, pattern",
    [
        ("a file", r"error: .*/run: (File exists|Not a directory); .*give another --workdir"),
        (
            "under a file",
            r"error: .*/file/run: Not a directory; a part of that path is a file, not a folder: give "
            r"another --workdir",
        ),
        (
            "metrics.jsonl a folder",
            r"error: .*/run/metrics.jsonl: Is a directory; a file was expected there, a "
            r"folder found: move the folder away, or give another --workdir",
        ),
        (".lock a folder", r"error: .*/run/.lock: Is a directory; a file was expected there, a folder found: .*"),
    ],
)
def test_a_path_the_system_refuses_is_one_line_naming_it(tmp_path, capsys, make, pattern):
    workdir = tmp_path / "run"
    if make == "a file":
        workdir.write_text("not a folder")
    elif make == "under a file":
        (tmp_path / "file").write_text("not a folder")
        workdir = tmp_path / "file" / "run"
    else:
        workdir.mkdir()
        (workdir / make.split()[0]).mkdir()
    assert main(_train_args(workdir, "--set", "num_steps=2")) == EXIT_CODES["os error"]
    lines = _error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and re.fullmatch(pattern, lines[0]), lines


def test_a_full_disk_during_a_checkpoint_write_discards_it_and_names_the_path(tmp_path, monkeypatch, capsys):
    real = checkpoint_module.write_checksums

    def disk_full(path):
        if path.name == "4" and path.parent.name == "checkpoints":
            raise OSError(errno.ENOSPC, "No space left on device", str(path / "checksums.sha256"))
        return real(path)

    monkeypatch.setattr(checkpoint_module, "write_checksums", disk_full)
    args = _train_args(tmp_path, "--set", "num_steps=4", "--set", "checkpoint_every=4", "--set", "eval_every=4")
    assert main(args) == EXIT_CODES["os error"]
    lines = _error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and re.fullmatch(
        r"error: .*checkpoints/4/checksums.sha256: No space left on device; free space on that disk, then rerun "
        r"the same command \(a training run resumes from its last checkpoint\)",
        lines[0],
    ), lines
    assert not (tmp_path / "checkpoints" / "4").exists()  # the half-written checkpoint is gone
    assert (tmp_path / ".lock").read_text() == ""  # released
    monkeypatch.setattr(checkpoint_module, "write_checksums", real)
    assert main(args) == 0  # the same command, once the disk has room


@pytest.mark.parametrize(
    "err, advice",
    [
        (PermissionError(errno.EACCES, "Permission denied", "/r/metrics.jsonl"), "make it writable"),
        (OSError(errno.EROFS, "Read-only file system", "/r/checkpoints"), "that file system is read-only"),
        (OSError(errno.EIO, "Input/output error", "/r/x"), "fix that, then rerun the same command"),
        (OSError(errno.EIO, "Input/output error"), "fix that"),
    ],
)
def test_an_operating_system_error_becomes_one_line_with_what_to_do(err, advice):
    from panm_jax.cli import os_error_line

    line = os_error_line(err)
    assert "\n" not in line and line.startswith(f"{err.filename or 'a file of the run'}: {err.strerror}; {advice}")


def test_an_interrupt_raised_inside_a_save_discards_that_checkpoint_and_says_where_to_resume(
    tmp_path, monkeypatch, capsys
):
    real = checkpoint_module.write_checksums

    def interrupted(path):
        if path.name == "8":
            raise KeyboardInterrupt
        return real(path)

    monkeypatch.setattr(checkpoint_module, "write_checksums", interrupted)
    args = _train_args(tmp_path, "--set", "num_steps=8", "--set", "checkpoint_every=4", "--set", "eval_every=8")
    assert main(args) == EXIT_CODES["interrupted"]
    lines = _error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and re.fullmatch(
        r"error: interrupted; no partial checkpoint kept and the lock released; the "
        rf"same command resumes {re.escape(str(tmp_path))} from step 4",
        lines[0],
    ), lines
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["4"]
    assert (tmp_path / ".lock").read_text() == ""
    monkeypatch.setattr(checkpoint_module, "write_checksums", real)
    assert main(args) == 0
    assert "resumed from step 4" in capsys.readouterr().out


# ---- eval uses the configuration stored in the checkpoints -------------------------------------


def test_eval_refuses_an_edited_config_json_unless_asked(run_copy, capsys):
    path = run_copy / "config.json"
    config = json.loads(path.read_text())
    config["model_options"]["hidden"] = 16
    path.write_text(json.dumps(config))
    assert main(["eval", "--workdir", str(run_copy), "--modes", "L"]) == EXIT_CODES["user error"]
    lines = _error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and re.fullmatch(
        r"error: --workdir: .*config.json differs from the configuration stored in the checkpoints "
        r"\(model_options.hidden: 8 stored, 16 in config.json\); restore the file, or pass --ignore-config-json "
        r"to evaluate with the stored one",
        lines[0],
    ), lines
    assert main(["eval", "--workdir", str(run_copy), "--modes", "L", "--ignore-config-json"]) == 0
    record = json.loads((run_copy / "eval.json").read_text())
    assert record["config"]["model_options"]["hidden"] == 8  # the model that was trained


# ---- a lost process of a multi-process run --------------------------------------------------------


def test_a_lost_process_stops_this_one_with_one_line_and_exit_code_4(tmp_path, monkeypatch, capfd):
    # The survivors of a killed process get this from their next collective (measured with 2 local CPU
    # processes, one killed with SIGKILL); the coordination service then names the lost one.
    from panm_jax.cli import train as train_cli

    (tmp_path / "checkpoints" / "50").mkdir(parents=True)
    err = jax.errors.JaxRuntimeError(
        "UNKNOWN: Gloo all-reduce failed: [external/gloo/gloo/transport/tcp/pair.cc:547] Connection closed by "
        "peer [127.0.0.1]:20686"
    )
    assert not train_cli._lost_peer(err)  # one process: no peer to lose, a bug like any other
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    assert train_cli._lost_peer(err) and not train_cli._lost_peer(jax.errors.JaxRuntimeError("INTERNAL: bad shape"))
    # process_allgather (the processes' agreement on a flag) raises a ValueError for the same loss.
    assert train_cli._lost_peer(ValueError("UNKNOWN: Gloo AllGather failed: ... Connection reset by peer"))
    monkeypatch.setattr(train_cli, "_lost_processes", lambda: [1])
    exits = []
    monkeypatch.setattr("os._exit", exits.append)
    train_cli._stop_lost(err, [tmp_path])
    assert exits == [EXIT_CODES["process lost"]]
    lines = _error_lines(capfd.readouterr().err)
    assert len(lines) == 1 and re.fullmatch(
        r"error: process 0 of 2: process 1 of this run was lost \(UNKNOWN: Gloo all-reduce failed: .*Connection "
        rf"closed by peer .*\); every process stops; the same command on every process resumes {re.escape(str(tmp_path))} "
        r"from step 50",
        lines[0],
    ), lines


def test_the_lost_process_is_asked_of_the_coordination_service(monkeypatch):
    from jax._src import distributed

    from panm_jax.cli import train as train_cli

    class Service:
        def __init__(self, live):
            self.live = live

        def get_live_nodes(self, everyone):
            if self.live is None:
                raise jax.errors.JaxRuntimeError("UNAVAILABLE: Failed to send RPC to coordination service")
            return self.live

    monkeypatch.setattr(jax, "process_count", lambda: 3)
    monkeypatch.setattr(jax, "process_index", lambda: 1)
    monkeypatch.setattr(distributed.global_state, "client", Service([0, 1]))
    assert train_cli._lost_processes() == [2]
    monkeypatch.setattr(distributed.global_state, "client", Service(None))  # gone with process 0, its host
    assert train_cli._lost_processes() == [0]
