"""The harness: page faults counted per timed call and the cost of one fault, the JSON record of a run, and the
portable form of its command."""

from __future__ import annotations

import json
import math
import os
import sys

import jax.numpy as jnp
import pytest

from benchmarks import common

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts the OS's minor faults (Linux)")


@linux
def test_time_compiled_counts_the_faults_of_a_fresh_output_per_call():
    x = jnp.ones((32 * 1024 * 1024,), jnp.float32)  # 128 MiB: over any mmap threshold of glibc's
    t = common.time_compiled(lambda x: x * 2.0, x, warmup=1, repeats=3)
    # At least one fault per 2 MiB (huge pages), 32,768 with 4 KiB pages; an output kept mapped would need none.
    assert t["page_faults"] >= 64
    assert t["median_s"] > 0


@linux
def test_page_fault_cost_is_a_positive_time_per_fault():
    cost = common.page_fault_cost(repeats=3, mib=128)
    # Mapping and zeroing a 4 KiB page takes about a microsecond; a 2 MiB one a few dozen.
    assert math.isfinite(cost) and 0 < cost < 1e-3


def test_fault_counter_is_none_or_a_count():
    n = common.minor_faults()
    assert n is None or (isinstance(n, int) and n >= 0)


def test_time_compiled_keeps_the_first_warm_up_output_only_when_asked():
    counter = jnp.arange(3.0)
    t = common.time_compiled(lambda x: x + 1.0, counter, warmup=2, repeats=1, keep_first=True)
    assert t["first"].tolist() == [1.0, 2.0, 3.0]
    assert "first" not in common.time_compiled(lambda x: x + 1.0, counter, warmup=1, repeats=1)


def test_write_results_writes_the_json_record_alone_and_atomically(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path)
    writes = []
    real = common.atomic_write_text
    monkeypatch.setattr(common, "atomic_write_text", lambda path, text: writes.append(path) or real(path, text))
    rows = [{"a": 1.5, "b": "x"}]
    path = common.write_results("t", "Title", rows, ["a"], {"device": "cpu"}, "N.", "python -m m", {"k": 1}, "here")
    assert path == tmp_path / "here" / "t.json" and writes == [path]
    assert [p.name for p in (tmp_path / "here").iterdir()] == ["t.json"]
    record = json.loads(path.read_text())
    assert list(record) == ["name", "title", "command", "settings", "environment", "rows", "notes"]
    assert record["rows"] == rows and record["settings"] == {"k": 1}
    assert path.read_text() == json.dumps(record, indent=2) + "\n"


def test_write_results_leaves_the_old_record_whole_when_a_write_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path)
    path = common.write_results("t", "Old", [{"a": 1}], ["a"], {}, device="here")

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)  # the rename that would put the new record in place
    with pytest.raises(OSError, match="disk full"):
        common.write_results("t", "New", [{"a": 2}], ["a"], {}, device="here")
    assert json.loads(path.read_text())["title"] == "Old"
    assert [p.name for p in (tmp_path / "here").iterdir()] == ["t.json"]  # no temporary file left


@pytest.fixture
def no_variables(monkeypatch):
    """No variable of ``COMMAND_VARIABLES`` set: commands without a prefix."""
    for name in common.COMMAND_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    "args, want",
    [
        # a path inside the repository: relative to its root, as the option's value or after "="
        (["--time", str(common.REPO / "configs" / "demo.toml")], "--time configs/demo.toml"),
        (["--combine=" + str(common.REPO / "a.json") + "," + str(common.REPO / "b.json")], "--combine=a.json,b.json"),
        # a work folder outside it: runs/ and its last component
        (["--workdir", "/tmp/scratch/gpu/abl", "--name", "x"], "--workdir runs/abl --name x"),
        (["--trace=/tmp/tr"], "--trace=runs/tr"),
        # the peers' interpreter and checkouts, by role
        (
            ["--peer-python", "/tmp/dm-venv/bin/python", "--peer-repo", "/tmp/dm_chomsky"],
            "--peer-python PYTHON --peer-repo PEER_REPO",
        ),
        (["--peer-python", ".venv-peer/bin/python", "--panm", "/home/me/PANM"], "--peer-python PYTHON --panm PANM"),
        # any other absolute path outside it; relative paths and other arguments as given, shell-quoted
        (["/scratch/runs/copy/panm-s0", "runs/copy/panm-s1"], "PATH runs/copy/panm-s1"),
        (["--set", "task.test_lengths=k(L+1)", "--math", ""], "--set 'task.test_lengths=k(L+1)' --math ''"),
    ],
)
def test_portable_command_keeps_no_path_of_this_machine(no_variables, args, want):
    assert (
        common.portable_command(args, "benchmarks.accuracy.ablation")
        == "python -m benchmarks.accuracy.ablation " + want
    )


def test_portable_command_reads_the_module_and_arguments_from_sys_argv(no_variables, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(common.REPO / "benchmarks" / "speed" / "zoo.py"), "--models", "rnn"])
    assert common.portable_command() == "python -m benchmarks.speed.zoo --models rnn"
    monkeypatch.setattr(sys, "argv", [str(common.REPO / "benchmarks" / "speed" / "__main__.py")])
    assert common.portable_command() == "python -m benchmarks.speed"
    assert (
        common.portable_command(["--quick"], "benchmarks.speed.kernels") == "python -m benchmarks.speed.kernels --quick"
    )


def test_portable_command_records_the_variables_that_change_a_run(no_variables, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    monkeypatch.setenv("LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4")
    assert common.portable_command([], "benchmarks.speed") == (
        "LD_PRELOAD=LD_PRELOAD XLA_FLAGS='--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1' "
        "python -m benchmarks.speed"
    )


def test_a_record_holds_no_nan_a_missing_value_is_null():
    record = {"rows": [{"a": float("nan"), "b": [1.0, float("inf")], "c": (2.0, -float("inf"))}], "x": 3}
    assert common.without_nonfinite(record) == {"rows": [{"a": None, "b": [1.0, None], "c": [2.0, None]}], "x": 3}
