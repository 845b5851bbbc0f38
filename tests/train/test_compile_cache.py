"""The persistent compilation cache: where it lives, how it is turned off, and that a second process reads it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

from panm_jax._cache import compile_cache_dir
from panm_jax.errors import UserError
from panm_jax.train.compile_cache import enable_compile_cache

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def jax_cache_config():
    """The test session's cache settings, put back after the test changes them."""
    names = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs")
    saved = {n: getattr(jax.config, n) for n in names}
    yield
    for n, v in saved.items():
        jax.config.update(n, v)


def test_the_folder_follows_the_setting(monkeypatch, tmp_path):
    monkeypatch.setenv("PANM_JAX_CACHE_DIR", str(tmp_path / "root"))
    monkeypatch.delenv("PANM_JAX_COMPILE_CACHE", raising=False)
    assert compile_cache_dir() == tmp_path / "root" / "xla"
    assert compile_cache_dir("") == tmp_path / "root" / "xla"
    for off in ("off", "OFF", " none ", "0"):
        assert compile_cache_dir(off) is None
    assert compile_cache_dir(str(tmp_path / "elsewhere")) == tmp_path / "elsewhere"
    monkeypatch.setenv("PANM_JAX_COMPILE_CACHE", "off")
    assert compile_cache_dir() is None


def test_enable_sets_jax_keeps_a_users_folder_and_turns_off(jax_cache_config, tmp_path, monkeypatch):
    monkeypatch.delenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", raising=False)
    session = jax.config.jax_compilation_cache_dir  # the tests' own cache (tests/conftest.py)
    assert session
    assert enable_compile_cache() == Path(session)  # a folder already set for JAX is kept
    folder = tmp_path / "cache"
    assert enable_compile_cache(str(folder)) == folder and folder.is_dir()
    assert jax.config.jax_compilation_cache_dir == str(folder)
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 0.5
    assert enable_compile_cache("off") is None
    assert not jax.config.jax_compilation_cache_dir


def test_a_folder_that_cannot_be_made_is_named(jax_cache_config, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(UserError, match=r"compile cache: expected a folder this user can write .*a-file/xla"):
        enable_compile_cache(str(blocker / "xla"))
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    env.pop("JAX_COMPILATION_CACHE_DIR")
    out = subprocess.run(
        [sys.executable, "-m", "panm_jax.cli", "--compile-cache", str(blocker / "xla"), "eval", "--workdir", "x"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2
    assert out.stderr.startswith("error: compile cache: expected a folder this user can write (--compile-cache")
    assert len(out.stderr.strip().splitlines()) == 1


_PROGRAM = """
import jax, jax.numpy as jnp
from panm_jax import enable_compile_cache
hits = []
jax.monitoring.register_event_listener(lambda event, **kw: hits.append(event) if event.endswith("cache_hits") else None)
enable_compile_cache({folder!r})
jax.jit(lambda x: jnp.tanh(x @ x.T).sum())(jnp.ones((8, 8))).block_until_ready()
print(len(hits))
"""


def test_a_second_process_reads_what_the_first_compiled(tmp_path):
    folder = tmp_path / "xla"
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    env.pop("JAX_COMPILATION_CACHE_DIR")
    runs = [
        subprocess.run(
            [sys.executable, "-c", _PROGRAM.format(folder=str(folder))],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        for _ in range(2)
    ]
    first, second = (int(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert first == 0 and second >= 1
    assert any(folder.iterdir())
