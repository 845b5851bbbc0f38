"""Fixtures of the training tests: one finished tiny run, trained once per session and copied per test."""

from __future__ import annotations

import shutil

import pytest

from tests.train.tiny import FINISHED, tiny_config


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory):
    """A finished tiny run, ``tiny_config(**FINISHED)``; read it, or change a ``run_copy`` of it."""
    from panm_jax.train.loop import train_and_evaluate

    workdir = tmp_path_factory.mktemp("finished") / "run"
    train_and_evaluate(tiny_config(**FINISHED), workdir, progress=False)
    return workdir


@pytest.fixture
def run_copy(finished_run, tmp_path):
    """A private copy of ``finished_run`` that a test may damage."""
    return shutil.copytree(finished_run, tmp_path / "run")
