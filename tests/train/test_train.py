"""Tests of panm_jax/train/: config, steps, checkpoints, exact resume, sharding, evaluation, CLI.

Every run here is tiny (PANM of width 8 on Copy with training lengths 1..3), so
the subprocess tests (kill -9 resume, 4 devices, the CLI) take seconds each.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import chex
import jax
import numpy as np
import pytest

from panm_jax.tasks.buckets import padding_efficiency, training_length_distribution
from panm_jax.train.checkpoint import Checkpointer, CheckpointError
from panm_jax.train.config import OptimizerConfig, TrainConfig, load_config
from panm_jax.train.io import read_jsonl
from panm_jax.train.loop import Run, default_buckets, train_and_evaluate, training_batch
from tests.train.tiny import FINISHED, TINY, tiny_config

REPO = Path(__file__).resolve().parents[2]


def _cli(args, workdir, *, env_extra=None, **popen):
    env = {**os.environ, "JAX_PLATFORMS": "cpu", **(env_extra or {})}
    cmd = [sys.executable, "-m", "panm_jax.cli", *args]
    return cmd, env


def _train_cmd(workdir, steps=16):
    args = [
        "train",
        "--task",
        "copy",
        "--model",
        "panm",
        "--workdir",
        str(workdir),
        "--no-progress",
        "--steps",
        str(steps),
        "--set",
        "eval_every=8",
        "--set",
        "checkpoint_every=4",
    ]
    for item in TINY:
        args += ["--set", item]
    return _cli(args, workdir)


def _last_per_step(path: Path) -> dict[int, dict]:
    out = {}
    for rec in read_jsonl(path):
        if "loss" in rec and "step" in rec:
            out[rec["step"]] = rec
    return out


# ---- config ---------------------------------------------------------------------------------


def test_config_round_trip_and_files(tmp_path):
    config = tiny_config()
    assert TrainConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    toml = tmp_path / "run.toml"
    toml.write_text(
        'task = "reverse"\nnum_steps = 7\n[optimizer]\nname = "adam"\nlearning_rate = 0.01\n'
        "[model_options]\nhidden = 16\n"
    )
    c = load_config(toml, ["optimizer.clip_value=null", "buckets=[2, 4, 10]"])
    assert (c.task, c.num_steps, c.optimizer.name, c.optimizer.learning_rate) == ("reverse", 7, "adam", 0.01)
    assert c.model_options == {"hidden": 16} and c.optimizer.clip_value is None and c.buckets == (2, 4, 10)
    # Defaults are the paper's protocol (Le et al. 2024, §3.1, with the RMSprop of the authors' code; docs/tasks.md,
    # Algorithmic tasks).
    d = TrainConfig()
    assert (
        d.batch_size,
        d.optimizer.name,
        d.optimizer.learning_rate,
        d.optimizer.momentum,
        d.optimizer.decay,
        d.optimizer.clip_value,
        d.selection_mode,
    ) == (128, "rmsprop", 1e-4, 0.9, 0.95, 10.0, "L+1")


def test_config_rejects_unknown_and_invalid_fields(tmp_path):
    with pytest.raises(ValueError, match=r"config: unknown field\(s\) \['num_step'\]; known: "):
        load_config(None, ["num_step=3"])
    with pytest.raises(ValueError, match=r"optimizer: unknown field\(s\) \['lr'\]"):
        load_config(None, ["optimizer.lr=3"])
    with pytest.raises(ValueError, match=r"batch_size: expected an integer in \[1, 2147483647\] .*, got 0"):
        load_config(None, ["batch_size=0"])
    with pytest.raises(
        ValueError, match=r"optimizer.name: expected one of \['rmsprop', 'adam', 'adamw', 'sgd'\], got 'lamb'"
    ):
        OptimizerConfig(name="lamb")
    with pytest.raises(ValueError, match=r"buckets: expected strictly ascending positive integers, got \[4, 2\]"):
        load_config(None, ["buckets=[4, 2]"])
    bad = tmp_path / "bad.toml"
    bad.write_text("task = \n")
    with pytest.raises(ValueError, match=r"config: cannot parse"):
        load_config(bad)
    with pytest.raises(ValueError, match=r"override: expected 'field=value', got 'num_steps'"):
        load_config(None, ["num_steps"])


# ---- steps: one compilation per bucket ------------------------------------------------------


def test_train_step_traces_once_per_bucket(trace_counter):
    from panm_jax.train.steps import make_train_step

    run = Run(tiny_config())
    # chex fails at the first trace past one per bucket; the count below is exact
    counter = trace_counter(
        chex.assert_max_traces(make_train_step(run.graphdef, run.optimizer, run.task), n=len(run.buckets))
    )
    step = jax.jit(counter)
    state = run.state
    seen = {}
    s = 0
    while min(seen.values(), default=0) < 2 or len(seen) < len(run.buckets):  # visit every bucket twice
        batch = training_batch(run.task, run.config, s, run.buckets)
        seen[batch.inputs.shape] = seen.get(batch.inputs.shape, 0) + 1
        state, _ = step(state, batch)
        s += 1
    assert len(seen) == len(run.buckets) == 3
    assert counter.count == len(run.buckets)


def test_training_batches_are_a_pure_function_of_seed_and_step():
    run = Run(tiny_config())
    a = training_batch(run.task, run.config, 5, run.buckets)
    b = training_batch(run.task, run.config, 5, run.buckets)
    c = training_batch(run.task, run.config, 6, run.buckets)
    np.testing.assert_array_equal(a.inputs, b.inputs)
    assert not np.array_equal(a.targets, c.targets) or a.inputs.shape != c.inputs.shape


# ---- a whole run in-process: files, tables, plot, best checkpoint ----------------------------


def test_train_and_evaluate_writes_results(finished_run):
    results = json.loads((finished_run / "results.json").read_text())
    assert [m["mode"] for m in results["modes"]] == ["L", "2L+1"]
    assert [m["length"] for m in results["modes"]] == ["3", "7"]
    for m in results["modes"]:
        assert 0.0 <= m["token_accuracy"] <= 1.0 and m["examples"] == 8
    for name in ("results.json", "results.csv", "results.md", "accuracy.png", "config.json", "metrics.jsonl"):
        assert (finished_run / name).stat().st_size > 0
    assert (finished_run / "accuracy.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    csv_lines = (finished_run / "results.csv").read_text().splitlines()
    assert csv_lines[0].startswith("mode,length,token_accuracy") and len(csv_lines) == 3
    assert "| L | 3 |" in (finished_run / "results.md").read_text()
    logged = _last_per_step(finished_run / "metrics.jsonl")
    assert sorted(logged) == list(range(1, 9))
    ckpt = Checkpointer(finished_run, read_only=True)
    assert sorted(ckpt.latest.all_steps()) == [4, 8]
    assert ckpt.best_meta()["mode"] == "L"
    ckpt.close()
    # What the training cost: its wall and compile time, steps per second, its buckets and their efficiency.
    cost = results["training"]
    config = TrainConfig.from_dict(results["config"])
    task = config.build_task()
    buckets = default_buckets(task, config.batch_size)
    assert cost["buckets"] == list(buckets) and cost["seeds_together"] == 1
    assert cost["steps"] == cost["timed_steps"] == 8
    assert 0 < cost["compile_seconds"] < cost["wall_seconds"]
    assert cost["steps_per_second"] == pytest.approx(8 / cost["wall_seconds"], rel=1e-2)
    lengths, weights = training_length_distribution(task, config.batch_size)
    assert cost["padding_efficiency"] == pytest.approx(padding_efficiency(task, buckets, lengths, weights), abs=1e-4)


def test_random_base_at_eval_gets_a_fixed_key_per_batch(tmp_path):
    # PANM drawing its base address at evaluation needs a key there too; the
    # evaluation must stay a deterministic function of the parameters.
    config = tiny_config(
        num_steps=2,
        eval_every=2,
        checkpoint_every=2,
        model_options={**tiny_config().model_options, "random_base_at_eval": True},
    )
    results = train_and_evaluate(config, tmp_path, progress=False)
    assert all(0.0 <= m["token_accuracy"] <= 1.0 for m in results["modes"])
    run = Run(config)
    first = run.evaluate(run.state.params, ("L", "2L+1"), 5)
    assert run.evaluate(run.state.params, ("L", "2L+1"), 5) == first
    assert run.evaluate(run.state.params, ("L", "2L+1"), 6) != first  # other examples and other bases


def test_corrupt_checkpoint_falls_back_to_the_previous_one(run_copy):
    # Truncate every data file of the newest checkpoint (step 8).
    newest = run_copy / "checkpoints" / "8"
    for f in newest.rglob("*"):
        if f.is_file() and f.stat().st_size > 0:
            f.write_bytes(b"")
    ckpt = Checkpointer(run_copy)
    run = Run(tiny_config(**FINISHED))
    with pytest.warns(RuntimeWarning, match=r"checkpoint .*checkpoints/8 is corrupt or unreadable"):
        state, meta = ckpt.restore_latest(jax.device_get(run.state))
    assert meta["step"] == 4 and int(state.step) == 4
    assert (run_copy / "checkpoints" / "corrupt-8").is_dir()  # kept, moved aside, not deleted
    # Every checkpoint unreadable: a clear error naming them.
    for f in (run_copy / "checkpoints" / "4").rglob("*"):
        if f.is_file() and f.stat().st_size > 0:
            f.write_bytes(b"")
    with pytest.warns(RuntimeWarning), pytest.raises(CheckpointError, match=r"checkpoints: none of .*checkpoints/4"):
        Checkpointer(run_copy).restore_latest(jax.device_get(run.state))


def test_resuming_with_another_config_is_refused(run_copy):
    with pytest.raises(
        CheckpointError,
        match=r"different settings \['batch_size'\] \(batch_size: 8 in the "
        r"checkpoints, 16 given\)",
    ):
        train_and_evaluate(tiny_config(**FINISHED, batch_size=16), run_copy, progress=False)


# ---- kill -9 at a random step, resume, compare bit for bit ---------------------------------

_HANG_AFTER = """
import time
from panm_jax import cli
from panm_jax.train import engine
from panm_jax.train.io import append_jsonl

def append_then_hang(path, record):
    append_jsonl(path, record)
    if record.get("step") == {hang_at} and "loss" in record:
        time.sleep(3600)

assert engine.append_jsonl is append_jsonl  # the training loop logs through this name
engine.append_jsonl = append_then_hang
raise SystemExit(cli.main({argv!r}))
"""


def test_kill_9_then_resume_is_bit_identical(tmp_path):
    cmd, env = _train_cmd(tmp_path / "straight")
    subprocess.run(cmd, env=env, cwd=REPO, check=True, capture_output=True, timeout=600)
    straight = _last_per_step(tmp_path / "straight" / "metrics.jsonl")

    killed_dir = tmp_path / "killed"
    cmd, env = _train_cmd(killed_dir)
    kill_at = int(np.random.default_rng().integers(6, 14))  # a random step, after the first checkpoint
    # The kill lands wherever the run is when the poll below sees step `kill_at`: mid-step,
    # mid-evaluation or mid-checkpoint. So that a fast machine cannot finish all 16 steps
    # before the signal arrives, the killed run goes through a wrapper that stops (sleeps)
    # once it has logged step kill_at + 2 <= 15; the training code itself is unchanged.
    wrapper = _HANG_AFTER.format(hang_at=kill_at + 2, argv=cmd[3:])
    proc = subprocess.Popen(
        [sys.executable, "-c", wrapper], env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 300
    while time.time() < deadline:
        if max(_last_per_step(killed_dir / "metrics.jsonl"), default=0) >= kill_at:
            break
        if proc.poll() is not None:
            pytest.fail("the training subprocess ended before it could be killed")
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    before = max(_last_per_step(killed_dir / "metrics.jsonl"))
    assert before < 16
    done = subprocess.run(cmd, env=env, cwd=REPO, check=True, capture_output=True, text=True, timeout=600)
    assert "resumed from step" in done.stdout
    resumed = _last_per_step(killed_dir / "metrics.jsonl")
    assert sorted(resumed) == sorted(straight) == list(range(1, 17))
    log = read_jsonl(killed_dir / "metrics.jsonl")  # each step once: the steps after the checkpoint were dropped
    assert [r["step"] for r in log if "loss" in r] == list(range(1, 17))
    (part,) = [r for r in log if r.get("event") == "resumed"]
    assert part["dropped"] >= before - part["step"] > 0
    for step in straight:  # bit-identical: float equality of every logged metric
        for key in ("loss", "token_accuracy", "grad_norm"):
            assert resumed[step][key] == straight[step][key], (step, key, kill_at)
    a = json.loads((tmp_path / "straight" / "results.json").read_text())
    b = json.loads((killed_dir / "results.json").read_text())
    assert a["modes"] == b["modes"]
    # The killed run's cost adds the time its checkpoint recorded to the resumed part's: every step is timed.
    assert b["training"]["steps"] == b["training"]["timed_steps"] == 16


# ---- data parallelism: 4 CPU devices equal 1 -------------------------------------------------

_LOSSES = """
import json, jax
from panm_jax.train.config import load_config
from panm_jax.train.loop import Run, training_batch
config = load_config(None, {tiny!r} + ["num_steps=5"])
run = Run(config)
state, out = run.state, []
for s in range(5):
    state, m = run.train_step(state, run.shard(training_batch(run.task, config, s, run.buckets)))
    out.append(float(m["loss"]))
print(json.dumps({{"devices": jax.device_count(), "losses": out,
                  "sharding": str(state.params.jax_array_sharding) if hasattr(state.params, 'jax_array_sharding') else ""}}))
"""


def _losses(devices: int) -> dict:
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}",
    }
    out = subprocess.run(
        [sys.executable, "-c", _LOSSES.format(tiny=TINY)],
        env=env,
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_four_devices_match_one_device():
    one, four = _losses(1), _losses(4)
    assert (one["devices"], four["devices"]) == (1, 4)
    np.testing.assert_allclose(four["losses"], one["losses"], rtol=2e-5, atol=1e-6)


def test_batch_not_divisible_by_devices_is_named():
    from jax.sharding import Mesh

    from panm_jax.train.sharding import shard_batch

    mesh = Mesh(np.asarray(jax.devices()[:1] * 1), ("data",))
    assert shard_batch({"x": np.zeros((3, 2))}, mesh)["x"].shape == (3, 2)
    fake = type("M", (), {"devices": np.zeros(4)})()
    with pytest.raises(ValueError, match=r"batch_size: expected a multiple of the 4 devices of the mesh, got 6"):
        shard_batch({"x": np.zeros((6, 2))}, fake)


# ---- the CLI: train a few steps, then eval its checkpoint, then plot ----------------------------


def test_cli_train_eval_plot(tmp_path):
    cmd, env = _train_cmd(tmp_path / "run", steps=4)
    out = subprocess.run(cmd, env=env, cwd=REPO, check=True, capture_output=True, text=True, timeout=600)
    assert "token_accuracy by length" in out.stdout
    cmd, env = _cli(["eval", "--workdir", str(tmp_path / "run"), "--modes", "L", "--with-traces"], tmp_path)
    out = subprocess.run(cmd, env=env, cwd=REPO, check=True, capture_output=True, text=True, timeout=600)
    assert "eval.json" in out.stdout and (tmp_path / "run" / "eval_traces.png").stat().st_size > 0
    assert [m["mode"] for m in json.loads((tmp_path / "run" / "eval.json").read_text())["modes"]] == ["L"]
    cmd, env = _cli(
        [
            "plot",
            str(tmp_path / "run"),
            str(tmp_path / "run" / "eval.json"),
            "--out",
            str(tmp_path / "both.png"),
            "--labels",
            "train,eval",
        ],
        tmp_path,
    )
    subprocess.run(cmd, env=env, cwd=REPO, check=True, capture_output=True, timeout=600)
    assert (tmp_path / "both.png").read_bytes()[:4] == b"\x89PNG"
    cmd, env = _cli(["train", "--set", "nonsense=1"], tmp_path)
    bad = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert bad.returncode != 0 and "unknown field(s) ['nonsense']" in bad.stderr


def test_time_budget_stops_early_with_a_checkpoint_and_results(tmp_path):
    # A budget of ~0 minutes: the run stops after its first step, evaluates and
    # checkpoints there, and still writes the results of its best checkpoint.
    results = train_and_evaluate(tiny_config(num_steps=1000, max_minutes=1e-6), tmp_path, progress=False)
    events = [r for r in read_jsonl(tmp_path / "metrics.jsonl") if r.get("event") == "time budget reached"]
    assert events and events[0]["step"] == 1
    ckpt = Checkpointer(tmp_path)
    assert ckpt.latest.all_steps() == [1]
    ckpt.close()
    assert results["step"] == 1 and (tmp_path / "results.json").exists()
    with pytest.raises(ValueError, match=r"max_minutes: expected a finite positive number or None, got -1"):
        tiny_config(max_minutes=-1)
