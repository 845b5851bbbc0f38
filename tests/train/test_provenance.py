"""Every part of a run logs what trains it: the code's commit, the software's versions, the device."""

from __future__ import annotations

import json
import platform
import subprocess

import jax

import panm_jax
from panm_jax.train import provenance
from panm_jax.train.io import read_jsonl
from panm_jax.train.loop import train_and_evaluate
from tests.train.tiny import FINISHED, tiny_config


def _parts(workdir):
    return [r for r in read_jsonl(workdir / "metrics.jsonl") if r.get("event") in ("started", "resumed")]


def test_a_run_logs_what_started_it_and_what_resumed_it(run_copy):
    train_and_evaluate(tiny_config(**{**FINISHED, "num_steps": FINISHED["num_steps"] + 2}), run_copy, progress=False)
    parts = _parts(run_copy)
    assert [(p["event"], p["step"]) for p in parts] == [("started", 0), ("resumed", FINISHED["num_steps"])]
    for p in parts:
        assert p["panm_jax"] == panm_jax.__version__ and p["jax"] == jax.__version__
        assert p["python"] == platform.python_version()
        assert (p["platform"], p["devices"], p["processes"]) == ("cpu", jax.device_count(), 1)
        assert p["device"] == jax.devices()[0].device_kind
        assert p["code"] == provenance.code_commit()
    # The results record the same for the evaluation that wrote them.
    environment = json.loads((run_copy / "results.json").read_text())["environment"]
    assert environment == {k: v for k, v in parts[-1].items() if k not in ("event", "step")}


def test_the_commit_is_this_checkout_s_own():
    try:
        head = subprocess.run(
            ["git", "-C", str(provenance._PACKAGE), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        head = None  # not a checkout: an installed copy logs no commit
    code = provenance.code_commit()
    assert code == head or (head is not None and code == head + "+dirty")


def test_no_commit_is_claimed_for_a_package_inside_another_repository(tmp_path, monkeypatch):
    """A copy of the package somewhere inside another project's repository (say in its virtual
    environment) must not log that project's commit as its own."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    package = tmp_path / ".venv" / "site-packages" / "panm_jax"
    package.mkdir(parents=True)
    monkeypatch.setattr(provenance, "_PACKAGE", package)
    assert provenance.code_commit() is None


def test_no_commit_where_there_is_no_repository(tmp_path, monkeypatch):
    package = tmp_path / "panm_jax"
    package.mkdir()
    monkeypatch.setattr(provenance, "_PACKAGE", package)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert provenance.code_commit() is None
