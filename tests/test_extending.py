"""``docs/extending.md``: its two modules, written out as they stand on the page, are a task and a model of one's own;
a model built on Flax's ``nnx.RNN`` trains, and one with state the trainer would never update is refused.

The page's Python blocks are saved as ``my_tasks.py`` and ``my_models.py`` in a
folder put on ``sys.path`` (as ``PYTHONPATH=.`` does), then named
``"my_tasks:Rotate"`` and ``"my_models:mean_readout"`` through the library and
through ``panm-jax train`` and ``panm-jax eval``. Names that cannot be resolved
are one-line errors naming the argument.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from panm_jax import cli
from panm_jax.errors import UserError
from panm_jax.models import build_model, register_model
from panm_jax.models.registry import MODELS, model_options
from panm_jax.tasks import TaskOptionError, get_task, task_options
from panm_jax.tasks.registry import TASKS
from panm_jax.train.io import read_jsonl

PAGE = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


@pytest.fixture(scope="module")
def own_modules(tmp_path_factory):
    """The page's modules on ``sys.path``; the registrations they add are removed afterwards."""
    folder = tmp_path_factory.mktemp("own")
    blocks = re.findall(r"```python\n(# (\w+)\.py\n.*?)```", PAGE.read_text(), re.S)
    assert [name for _, name in blocks] == ["my_tasks", "my_models"]
    for code, name in blocks:
        (folder / f"{name}.py").write_text(code)
    sys.path.insert(0, str(folder))
    tasks, models = set(TASKS), set(MODELS)
    yield folder
    sys.path.remove(str(folder))
    for key in set(TASKS) - tasks:
        del TASKS[key]
    for key in set(MODELS) - models:
        del MODELS[key]
    for name in ("my_tasks", "my_models"):
        sys.modules.pop(name, None)


def test_a_task_of_ones_own_by_module_and_class(own_modules):
    task = get_task("my_tasks:Rotate", max_train_length=5)
    batch = task.example([1, 2, 3, 4])
    np.testing.assert_array_equal(batch.targets[0], [2, 3, 4, 1])
    assert task.sample(np.random.default_rng(0), 4, 5).targets.shape[0] == 4
    assert "my_tasks:Rotate" in TASKS  # registered under the whole name
    # Its own option, declared with panm_jax.options.option: checked, recorded, listed with the shared ones.
    np.testing.assert_array_equal(get_task("my_tasks:Rotate", by=2).example([1, 2, 3, 4]).targets[0], [3, 4, 1, 2])
    assert get_task("my_tasks:Rotate", by=3).options()["by"] == 3
    with pytest.raises(TaskOptionError, match=r"^rotate: option by: expected a positive integer, got 0$"):
        get_task("my_tasks:Rotate", by=0)
    assert list(task_options("my_tasks:Rotate")) == [
        "max_train_length",
        "min_train_length",
        "max_length",
        "test_lengths",
        "by",
    ]


def test_the_own_tasks_option_is_shown_as_declared(own_modules, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    assert cli.main(["tasks", "show", "my_tasks:Rotate", "--length", "4"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "by int = 1; a positive integer k, the places each token moves left" in out


def test_a_model_of_ones_own_by_module_and_registered_name(own_modules):
    model = build_model("my_models:mean_readout", input_size=12, output_size=10, hidden=16)
    logits = model(np.zeros((2, 5, 12), np.float32), np.ones((2, 5), bool), 3)
    assert logits.shape == (2, 3, 10)
    # The builder function's name finds the same model.
    assert model_options("my_models:build_mean_readout") == model_options("my_models:mean_readout")
    assert MODELS["my_models:build_mean_readout"] is MODELS["my_models:mean_readout"]
    with pytest.raises(ValueError, match=r"^hidden: expected a positive integer, got 0$"):  # its declared check
        build_model("my_models:mean_readout", input_size=12, output_size=10, hidden=0)


def test_models_show_lists_the_declared_options_of_ones_own_model(own_modules, capsys):
    assert cli.main(["models", "show", "my_models:mean_readout"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "hidden int = 32; a positive integer the width of the input embedding" in out


def test_train_and_eval_name_them_on_the_command_line(own_modules, tmp_path, capsys):
    workdir = tmp_path / "rotate"
    args = ["--task", "my_tasks:Rotate", "--model", "my_models:mean_readout", "--steps", "2", "--no-progress"]
    sets = ["task_options.max_train_length=3", "model_options.hidden=8", "batch_size=8", "eval_examples=8"]
    sets += ["eval_batch_size=8", 'eval_modes=["L"]', 'select_mode="L"']
    argv = ["train", *args, "--workdir", str(workdir)] + [x for s in sets for x in ("--set", s)]
    assert cli.main(argv) == 0, capsys.readouterr().err
    config = json.loads((workdir / "config.json").read_text())
    assert (config["task"], config["model"]) == ("my_tasks:Rotate", "my_models:mean_readout")
    assert cli.main(["eval", "--workdir", str(workdir), "--modes", "L"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    "name, message",
    [
        ("no_such_module_here:Task", r"task: cannot import 'no_such_module_here' \(of 'no_such_module_here:Task'\)"),
        ("my_tasks:Nothing", r"task: module 'my_tasks' has no task class or factory 'Nothing'"),
        (":Rotate", r"task: expected a registered name or 'package.module:NAME', got ':Rotate'"),
    ],
)
def test_a_task_name_that_cannot_be_resolved_is_one_line(own_modules, name, message):
    with pytest.raises(UserError, match=message):
        get_task(name)


def test_a_module_that_registers_no_such_model_is_named(own_modules):
    with pytest.raises(UserError, match=r"model: module 'my_models' registers no model 'nothing'"):
        build_model("my_models:nothing", input_size=3, output_size=2)


class _Recurrent(nnx.Module):
    """A model built the usual Flax way, on ``nnx.RNN`` (which holds an ``nnx.Rngs``), with an optional
    ``nnx.BatchNorm`` (state the trainer refuses)."""

    def __init__(self, input_size, output_size, rngs, batch_norm=False):
        self.rnn = nnx.RNN(nnx.GRUCell(input_size, 8, rngs=rngs), rngs=rngs)
        self.norm = nnx.BatchNorm(8, rngs=rngs) if batch_norm else None
        self.readout = nnx.Linear(8, output_size, rngs=rngs)

    def __call__(self, inputs, input_mask, num_outputs, *, aligned=False, train=False, key=None, return_traces=False):
        h = self.rnn(inputs, seq_lengths=input_mask.sum(-1))  # [B, T_in, 8]
        last = h[:, -1]
        if self.norm is not None:
            last = self.norm(last)
        logits = jnp.repeat(self.readout(last)[:, None], num_outputs, axis=1)
        return (logits, {}) if return_traces else logits


@dataclasses.dataclass(frozen=True)
class _RecurrentConfig:
    batch_norm: bool = False


@pytest.fixture
def recurrent():
    name = "test_extending_recurrent"
    register_model(name, _RecurrentConfig, "nnx.RNN over the input")(
        lambda config, input_size, output_size, rngs: _Recurrent(input_size, output_size, rngs, config.batch_norm)
    )
    yield name
    del MODELS[name]


def test_a_model_on_flaxs_nnx_rnn_trains_and_resumes(recurrent, tmp_path):
    from panm_jax.train.config import load_config
    from panm_jax.train.loop import train_and_evaluate

    settings = [f'model="{recurrent}"', "task_options.max_train_length=3", "batch_size=8", "eval_examples=8"]
    settings += [
        "eval_batch_size=8",
        'eval_modes=["L"]',
        'select_mode="L"',
        "checkpoint_every=2",
        "eval_every=2",
        "log_every=1",
    ]
    first = train_and_evaluate(load_config(None, settings + ["num_steps=2"]), tmp_path / "run", progress=False)
    again = train_and_evaluate(load_config(None, settings + ["num_steps=4"]), tmp_path / "run", progress=False)
    assert (first["step"], again["step"]) == (2, 4)
    losses = [r["loss"] for r in read_jsonl(tmp_path / "run" / "metrics.jsonl") if "loss" in r]
    assert len(losses) == 4 and np.all(np.isfinite(losses))


def test_a_model_with_state_the_trainer_would_never_update_is_refused_by_name(recurrent, tmp_path, capsys):
    argv = ["train", "--task", "copy", "--model", recurrent, "--steps", "1", "--workdir", str(tmp_path / "bn")]
    argv += ["--set", "model_options.batch_norm=true", "--no-progress"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: model: expected its state to be nnx.Param variables (trained) and random-number streams (kept as "
        "built), got norm.mean (BatchStat), norm.var (BatchStat): the trainer would never update these"
    ]
