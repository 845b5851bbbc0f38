"""A user's mistakes: named config errors before anything is built, one-line CLI errors (a misspelled
name naming the nearest), and the paths a user takes (extending a finished run, evaluating one again,
plotting several runs).

Nothing here trains more than two steps of the tiny run; most tests build no model at all.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from panm_jax.cli import main
from panm_jax.train import report
from panm_jax.train.checkpoint import Checkpointer, CheckpointError
from panm_jax.train.config import ConfigError, OptimizerConfig, load_config, resume_differences
from panm_jax.train.io import read_jsonl
from panm_jax.train.loop import train_and_evaluate
from tests.train.tiny import FINISHED, TINY, tiny_config

REPO = Path(__file__).resolve().parents[2]


# ---- configuration: each mistake named (field, expected, given) when the config is built ------


@pytest.mark.parametrize(
    "override, message",
    [
        ("optimizer.learning_rate=0", r"optimizer.learning_rate: expected a finite positive number, got 0"),
        ("optimizer.learning_rate=-1e-3", r"optimizer.learning_rate: expected a finite positive number, got -0.001"),
        ("optimizer.learning_rate=inf", r"optimizer.learning_rate: expected a finite number, got 'inf'"),
        ("optimizer.weight_decay=-0.1", r"optimizer.weight_decay: expected a finite non-negative number, got -0.1"),
        ("optimizer.weight_decay=abc", r"optimizer.weight_decay: expected a finite number, got 'abc'"),
        ("optimizer.warmup_steps=20", r"optimizer.warmup_steps: expected at most num_steps \(12\), got 20"),
        ("model_options.mode2_heads=true", r"model_options.mode2_heads: expected an integer, got True"),
        ("model_options.remat=no", r"model_options.remat: expected true or false, got 'no'"),
        (
            'model_options.inverse_temperature="5"',
            r"model_options.inverse_temperature: expected a finite number, got '5'",
        ),
        ("model_options.pointer_heads=4", r"model_options.pointer_heads: expected an integer in \[0, 3\], got 4"),
        ("model_options.size=3", r"model_options \(model 'panm'\): unknown field\(s\) \['size'\]"),
        ("model_options=5", r"model_options: expected a table, got 5"),
        ("model_options.hidden.x=5", r"model_options.hidden: expected a table of fields, got 8"),
        ("task_options=[1]", r"task_options: expected a table, got \[1\]"),
        ("task_options.max_train_length=0", r"task_options: copy: option max_train_length"),
        ("seed=1.5", r"seed: expected an integer, got 1.5"),
        ("batch_size=true", r"batch_size: expected an integer, got True"),
        ("task=cpy", r"task: expected one of \['copy', .*\], got 'cpy'"),
        ("model=lstmm", r"model: expected one of \[.*'panm'.*\], got 'lstmm'"),
        ('eval_modes=["L", "3L"]', r"eval_modes: unknown mode\(s\) \['3L'\]; the task 'copy' has \['L', "),
        ("select_mode=X", r"select_mode: unknown mode\(s\) \['X'\]"),
        ("buckets=[1, true]", r"buckets: expected a list of integers, got \[1, True\]"),
        # task options: names and types from the task's signature (tasks.task_options), before the task is built
        (
            "task_options.max_train_lenght=3",
            r"task_options \(task 'copy'\): unknown option\(s\) \['max_train_lenght'\]; "
            r"known: \['max_length', 'max_train_length', 'min_train_length', 'test_lengths'\]; did you mean 'max_train_length'\?",
        ),
        ('task_options.max_train_length="3"', r"task_options.max_train_length: expected an integer, got '3'"),
        ("task_options.max_length=2.5", r"task_options.max_length: expected an integer or null, got 2.5"),
        # model options: names and types from the model's config dataclass (models.model_options)
        ("model_options.hiddn=3", r"model_options \(model 'panm'\): unknown field\(s\) \['hiddn'\]; known: \["),
        ("model_options.hidden=abc", r"model_options.hidden: expected an integer, got 'abc'"),
    ],
)
def test_a_wrong_setting_is_named_when_the_config_is_built(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, TINY + ["num_steps=12", override])


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("learning_rate", math.inf, r"optimizer.learning_rate: expected a finite number, got inf"),
        ("learning_rate", math.nan, r"optimizer.learning_rate: expected a finite number, got nan"),
        ("momentum", True, r"optimizer.momentum: expected a finite number, got True"),
    ],
)
def test_non_finite_and_bool_numbers_are_refused(field, value, message):
    with pytest.raises(ConfigError, match=message):
        OptimizerConfig(**{field: value})
    with pytest.raises(ConfigError, match=r"model_options.inverse_temperature: expected a finite number, got inf"):
        tiny_config(model_options={"inverse_temperature": math.inf})


@pytest.mark.parametrize(
    "task, option, value, message",
    [
        ("dyck", "p", "x", r"task_options.p: expected a finite number, got 'x'"),
        ("dyck", "n", True, r"task_options.n: expected an integer, got True"),
        ("bigram_flip", "vocab_size", 2.0, r"task_options.vocab_size: expected an integer, got 2.0"),
        ("bigram_flip", "min_train_length", None, r"task_options.min_train_length: expected an integer, got None"),
        ("mathematics", "module", 3, r"task_options.module: expected a string, got 3"),
    ],
)
def test_a_task_option_of_a_wrong_type_is_named_before_the_task_is_built(task, option, value, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [f'task="{task}"', 'model="lstm"', f"task_options.{option}={json.dumps(value)}"])


def test_valid_task_options_keep_their_meaning():
    # options a base class takes (transduction), untyped ones (machine) and null for a derived default
    config = load_config(None, ['task="bigram_flip"', 'model="lstm"', "task_options.max_train_length=32"])
    assert config.task_options == {"max_train_length": 32}
    config = load_config(None, ['task="automaton_acceptance"', 'model="lstm"', 'task_options.machine="anbn"'])
    assert config.task_options == {"machine": "anbn"}
    config = load_config(
        None, ['task="dyck"', 'model="lstm"', "task_options.n=3", "task_options.max_train_length=null"]
    )
    assert config.task_options == {"n": 3, "max_train_length": None}
    assert load_config(None, ['task="dyck"', 'model="lstm"', "task_options.q=0"]).task_options == {
        "q": 0
    }  # an int for a float


def test_a_run_folders_config_json_still_loads(finished_run):
    from panm_jax.train.config import TrainConfig, read_config_file

    stored = read_config_file(finished_run / "config.json")
    assert TrainConfig.from_dict(stored).to_dict() == stored


def test_eval_modes_given_as_one_string_is_a_comma_separated_list():
    assert load_config(None, TINY + ["eval_modes=L+1"]).eval_modes == ("L+1",)
    assert load_config(None, TINY + ["eval_modes=L,2L+1"]).eval_modes == ("L", "2L+1")


@pytest.mark.parametrize(
    "content, message",
    [
        (b"task = \n", r"config: cannot parse '.*bad.toml': "),
        (b'task = "copy"\xff\n', r"config: cannot parse '.*bad.toml': not UTF-8 text"),
    ],
)
def test_a_malformed_config_file_is_named(tmp_path, content, message):
    (tmp_path / "bad.toml").write_bytes(content)
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path / "bad.toml")


def test_a_config_that_is_a_directory_or_missing_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"config: expected a TOML or JSON file, got '.*', which is a directory"):
        load_config(tmp_path)
    with pytest.raises(ConfigError, match=r"config: expected a TOML or JSON file, got '.*nope.toml', which does not"):
        load_config(tmp_path / "nope.toml")


@pytest.mark.parametrize(
    "content, message",
    [
        (b"{", r"results: cannot parse '.*results.json': Expecting"),
        (b"\xff\xfe", r"results: cannot parse '.*results.json': not UTF-8 text"),
        (b"[1]", r"results: expected a results record .* missing \['task', "),
    ],
)
def test_a_malformed_results_file_is_named(tmp_path, content, message):
    (tmp_path / "results.json").write_bytes(content)
    with pytest.raises(ValueError, match=message):
        report.load_results(tmp_path)


# ---- the CLI: one line `error: ...`, exit code 2, no traceback ---------------------------------


def _bad_results(tmp_path: Path) -> str:
    (tmp_path / "bad").mkdir(exist_ok=True)
    (tmp_path / "bad" / "results.json").write_text("{")
    return str(tmp_path / "bad")


USER_ERRORS = {
    "unknown task": (["train", "--task", "cpy"], r"--task: expected one of \['copy', .*\], got 'cpy'"),
    "unknown model": (["train", "--model", "lstmm"], r"--model: expected one of \[.*\], got 'lstmm'"),
    "bad flag value": (["train", "--seed", "1.5"], r"argument --seed: invalid int value: '1.5'"),
    "non-table": (["train", "--set", "model_options=5"], r"model_options: expected a table, got 5"),
    "non-number": (["train", "--set", "optimizer.weight_decay=abc"], r"optimizer.weight_decay: expected a finite"),
    "infinite lr": (["train", "--lr", "inf"], r"--lr: expected a finite number, got inf"),
    "config dir": (["train", "--config", "{tmp}"], r"config: expected a TOML or JSON file, got .*, which is a dir"),
    "no run to eval": (["eval", "--workdir", "{tmp}/nope"], r"--workdir: expected a run folder with config.json"),
    "no run to plot": (["plot", "{tmp}/nope"], r"results: expected a results.json file or a run folder holding"),
    "bad results": (["plot", "{bad}"], r"results: cannot parse '.*results.json'"),
    "unknown task shown": (["tasks", "show", "cpy"], r"name: expected one of \['copy', "),
    "bad task option": (["tasks", "show", "copy", "--option", "nope=1"], r"copy: unknown option\(s\) \['nope'\]"),
    "task option syntax": (["tasks", "show", "copy", "--option", "n"], r"--option: expected KEY=VALUE, got 'n'"),
    "models argument": (["models", "panm"], r"argument ACTION: invalid choice: 'panm'"),
    "models show argument": (["models", "show", "panm", "x"], r"unrecognized arguments: x"),
    "unknown model shown": (["models", "show", "lstmm"], r"name: expected one of \[.*'lstm'.*\], got 'lstmm'"),
    "misspelled model option": (["train", "--set", "model_options.hiddn=3"], r"model_options \(model 'panm'\): "),
    "task option of a wrong type": (
        ["train", "--set", "task_options.max_train_length=ten"],
        r"task_options.max_train_length: expected an integer, got 'ten'",
    ),
}


# A misspelled name, wherever it is resolved, ends its one line with the nearest known name.
MISSPELLED = {
    "task": (["train", "--task", "cpoy"], r"--task: expected one of \[.*\], got 'cpoy'; did you mean 'copy'\?$"),
    "model": (["train", "--model", "pnam"], r"--model: expected one of .*; did you mean 'panm'\?$"),
    "model option": (["train", "--set", "model_options.hiden=3"], r"model_options .*; did you mean 'hidden'\?$"),
    "task option": (
        ["train", "--set", "task_options.max_train_lenght=3"],
        r"task_options \(task 'copy'\): unknown option\(s\) .*; did you mean 'max_train_length'\?$",
    ),
    "config field": (["train", "--set", "num_step=3"], r"config: unknown field\(s\) .*; did you mean 'num_steps'\?$"),
    "option value": (
        ["train", "--set", "model_options.score=cosin"],
        r"model_options.score: expected one of \['cosine', 'scaled_dot'\], got 'cosin'; did you mean 'cosine'\?$",
    ),
    "eval mode": (["train", "--set", 'eval_modes=["2L+2"]'], r"eval_modes: unknown mode.*; did you mean '2L\+1'\?$"),
    "task shown": (["tasks", "show", "cpoy"], r"name: expected one of .*; did you mean 'copy'\?$"),
    "option shown": (["tasks", "show", "copy", "--option", "max_lenght=3"], r"copy: .*; did you mean 'max_length'\?$"),
    "mode shown": (["tasks", "show", "copy", "--mode", "2l+1"], r"mode: expected one of .*; did you mean '2L\+1'\?$"),
    "model shown": (["models", "show", "pamn"], r"name: expected one of .*; did you mean 'panm'\?$"),
    "command": (
        ["trian"],
        r"argument COMMAND: invalid choice: 'trian' .*; did you mean 'train'\? \(see panm-jax --help\)$",
    ),
    "flag choice": (["train", "--on-nan", "stp"], r"argument --on-nan: invalid choice: .*; did you mean 'stop'\?"),
}
USER_ERRORS.update({f"misspelled {case}": error for case, error in MISSPELLED.items()})


def test_a_name_with_nothing_near_it_gets_no_suggestion(capsys):
    assert main(["tasks", "show", "zzzzzz"]) == 2
    err = capsys.readouterr().err
    assert "got 'zzzzzz'" in err and "did you mean" not in err


@pytest.mark.parametrize("case", USER_ERRORS)
def test_a_user_error_is_one_line_and_exit_code_2(case, tmp_path, capsys):
    argv, message = USER_ERRORS[case]
    argv = [a.format(tmp=tmp_path, bad=_bad_results(tmp_path)) for a in argv]
    argv = [*argv, "--workdir", str(tmp_path / "run")] if argv[0] == "train" else argv
    try:
        code = main(argv)
    except SystemExit as exit:  # argparse's errors
        code = exit.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert re.match(r"error: " + message, err[0]), err[0]
    assert not (tmp_path / "run").exists()  # nothing created


def test_eval_names_the_nearest_mode_of_a_misspelled_one(finished_run, capsys):
    assert main(["eval", "--workdir", str(finished_run), "--modes", "L,2L+2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --modes: unknown mode(s) ['2L+2']"), err
    assert err[0].endswith("did you mean '2L+1'?"), err


@pytest.mark.parametrize("examples", ["0", "-5", "2147483648"])
@pytest.mark.parametrize("flag", ["--examples", "--examples-per-length"])
def test_eval_refuses_a_number_of_examples_out_of_range_by_its_flag(finished_run, flag, examples, capsys):
    extra = ["--lengths", "3-4"] if flag == "--examples-per-length" else []
    assert main(["eval", "--workdir", str(finished_run), flag, examples, *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    want = f"error: {flag}: expected an integer in [1, 2147483647] (JAX indexes arrays with int32), got {examples}"
    assert err == [want]


@pytest.mark.parametrize("name", ["a[b]", "run-\udcff"], ids=["glob", "not-utf8"])
def test_eval_refuses_a_workdir_that_orbax_cannot_read_by_name(tmp_path, name, capsys):
    folder = tmp_path / name
    try:
        folder.mkdir()
    except (OSError, UnicodeEncodeError):
        pytest.skip(f"this file system cannot hold the name {name!r}")
    (folder / "config.json").write_text("{}")
    assert main(["eval", "--workdir", str(folder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --workdir: expected a folder path that orbax can"), err


def test_debug_prints_the_traceback_too(tmp_path, capsys):
    assert main(["--debug", "plot", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1].startswith("error: results: ")


def test_a_misspelled_task_in_a_subprocess_leaves_nothing_behind(tmp_path):
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    out = subprocess.run(
        [sys.executable, "-m", "panm_jax.cli", "train", "--task", "cpy", "--workdir", str(tmp_path / "run")],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [out.stderr.strip()] and out.stderr.startswith("error: --task: ")
    assert list(tmp_path.iterdir()) == []


# ---- extending a finished run ---------------------------------------------------------------


def test_a_finished_run_extends_to_more_steps_and_refuses_fewer(run_copy):
    results = train_and_evaluate(tiny_config(**{**FINISHED, "num_steps": 10}), run_copy, progress=False)
    assert max(r["step"] for r in read_jsonl(run_copy / "metrics.jsonl") if "loss" in r) == 10
    ckpt = Checkpointer(run_copy)
    assert ckpt.latest.latest_step() == 10
    ckpt.close()
    assert results["step"] in (8, 10)
    with pytest.raises(
        CheckpointError,
        match=r"num_steps: the checkpoints in .* are at step 10, beyond the "
        r"num_steps given \(4\); give at least 10",
    ):
        train_and_evaluate(tiny_config(**{**FINISHED, "num_steps": 4}), run_copy, progress=False)


def test_a_run_stopped_by_its_time_budget_goes_on_under_another_budget_or_none():
    capped = tiny_config(max_minutes=5.0)
    assert resume_differences(capped, capped.replace(max_minutes=None)) == []
    assert resume_differences(capped, capped.replace(max_minutes=30.0, num_steps=100)) == []
    # a setting that changes what the run computes is still refused beside it
    assert [d[0] for d in resume_differences(capped, capped.replace(max_minutes=None, seed=1))] == ["seed"]


def test_num_steps_may_change_on_resume_only_under_a_constant_schedule():
    assert resume_differences(tiny_config(), tiny_config(num_steps=100)) == []
    cosine = tiny_config(optimizer=OptimizerConfig(name="adam", schedule="cosine"))
    assert [d[0] for d in resume_differences(cosine, cosine.replace(num_steps=100))] == ["num_steps"]


# ---- evaluating a finished run again ------------------------------------------------------------


def _table_rows(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("│")]


def test_eval_of_a_finished_run_reprints_its_recorded_table(run_copy, capsys, monkeypatch):
    """The run's results.json holds this evaluation (same config, the best checkpoint, the run's modes):
    its table is printed from it, with one line saying so, nothing evaluated and nothing written."""
    import panm_jax.train.loop as loop

    evaluated = main(["eval", "--workdir", str(run_copy), "--recompute"])  # today's evaluation, for comparison
    recomputed = capsys.readouterr().out
    assert evaluated == 0 and (run_copy / "eval.json").exists() and "table read from" not in recomputed
    (run_copy / "eval.json").unlink()

    def no_run(config):
        raise AssertionError("evaluated again")

    monkeypatch.setattr(loop, "Run", no_run)
    assert main(["eval", "--workdir", str(run_copy)]) == 0
    out = capsys.readouterr().out
    said = [line for line in out.splitlines() if "table read from" in line]
    assert len(said) == 1 and f"{run_copy / 'results.json'}" in said[0] and "--recompute" in said[0], out
    assert _table_rows(out) == _table_rows(recomputed) and len(_table_rows(out)) == 2  # modes L, 2L+1
    assert not (run_copy / "eval.json").exists()
    # The same modes named, or the run's number of examples given: the same evaluation, reprinted.
    assert main(["eval", "--workdir", str(run_copy), "--modes", "L,2L+1", "--examples", "8"]) == 0
    assert "table read from" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args", [["--modes", "L"], ["--examples", "16"], ["--checkpoint", "latest"], ["--recompute"]], ids=" ".join
)
def test_eval_that_asks_for_something_else_evaluates(run_copy, args, capsys, monkeypatch):
    import panm_jax.train.loop as loop

    built = []
    monkeypatch.setattr(loop, "Run", lambda config, Run=loop.Run: built.append(config) or Run(config))
    assert main(["eval", "--workdir", str(run_copy), *args]) == 0
    assert len(built) == 1 and "table read from" not in capsys.readouterr().out
    assert (run_copy / "eval.json").exists()


# ---- plotting several runs --------------------------------------------------------------------


def _results(task="copy", model="panm", step=8):
    return {"task": task, "model": model, "metric": "token_accuracy", "step": step, "modes": []}


def test_runs_of_one_model_get_distinct_labels(tmp_path):
    runs = [_results(), _results(), _results(model="lstm")]
    paths = [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    assert report.default_labels(runs, paths) == ["panm (a, step 8)", "panm (b, step 8)", "lstm (step 8)"]
    same_name = [tmp_path / "x" / "run", tmp_path / "y" / "run"]
    labels = report.default_labels(runs[:2], same_name)
    assert len(set(labels)) == 2 and all(str(p) in label for p, label in zip(same_name, labels))


def test_runs_of_two_tasks_are_named_in_the_title_and_warned_about(finished_run, tmp_path, capsys):
    other = tmp_path / "reverse"
    other.mkdir()
    record = json.loads((finished_run / "results.json").read_text())
    (other / "results.json").write_text(json.dumps({**record, "task": "reverse"}))
    assert report.plot_title([record, {**record, "task": "reverse"}]) == "copy, reverse: length generalisation"
    assert main(["plot", str(finished_run), str(other), "--out", str(tmp_path / "both.png")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["warning: plotting runs of different tasks (copy, reverse) on one axis"]


def test_every_models_defaults_fit_their_type_hints():
    import dataclasses
    import typing

    from panm_jax.checks import check_type
    from panm_jax.models.registry import get_config, list_models

    for name in list_models():
        config = get_config(name)
        hints = typing.get_type_hints(type(config))
        for f in dataclasses.fields(config):
            check_type(f"{name}.{f.name}", getattr(config, f.name), hints[f.name])


@pytest.mark.parametrize(
    "task,expected",
    [("copy", "L+1"), ("dyck", "L+2"), ("reverse_string", "1-40"), ("binary_addition", "3-40"), ("scan", "train")],
)
def test_select_mode_defaults_to_the_task_validation_mode(task, expected):
    # Every task trains with the default config; a Chomsky task selects on its training lengths, never on 41..500;
    # SCAN on its training split, never on its (finite) test split.
    config = load_config(None, [f'task="{task}"', 'model="lstm"'])
    assert config.select_mode == "" and config.selection_mode == expected
    assert config.to_dict()["select_mode"] == expected  # what config.json records
    given = load_config(None, [f'task="{task}"', 'model="lstm"', f'select_mode="{expected}"'])
    assert given.selection_mode == expected and given.to_dict() == config.to_dict()
    assert resume_differences(config, given) == []


def test_the_config_carries_the_typed_model_config_and_builds_the_task_once(monkeypatch):
    # The model's options are applied to its frozen config dataclass as the config is built, and the
    # model is built from that very object; the task is built once, when first asked for (not in
    # __post_init__), kept by the config and by replace() while task and task_options stay the same.
    import panm_jax.tasks.registry as registry
    from panm_jax.models.panm import PANMConfig
    from panm_jax.train.config import TrainConfig

    built = []
    factory = registry.TASKS["copy"]

    def counting(**options):
        built.append(options)
        return factory(**options)

    monkeypatch.setitem(registry.TASKS, "copy", counting)
    config = TrainConfig(task="copy", task_options={"max_train_length": 6}, model="panm", model_options={"hidden": 12})
    assert built == []  # building the config builds no task
    assert isinstance(config.model_config, PANMConfig) and config.model_config.hidden == 12
    assert config.model_config is config.model_config
    task = config.build_task()
    assert built == [{"max_train_length": 6}] and task.options()["max_train_length"] == 6
    assert config.build_task() is task
    assert config.replace(seed=3, eval_modes=["L+1"]).build_task() is task  # the same task, rechecked
    other = config.replace(task_options={"max_train_length": 7})
    assert other.build_task() is not task and built[-1] == {"max_train_length": 7}
    with pytest.raises(ConfigError, match=r"^eval_modes: unknown mode\(s\) \['3L'\]"):
        config.replace(eval_modes=["3L"]).build_task()
    assert len(built) == 2


def test_a_run_builds_its_model_from_the_typed_config(monkeypatch):
    from panm_jax.models import registry
    from panm_jax.train.loop import Run

    seen = []
    real = registry.build_model

    def spy(name, **kwargs):
        seen.append(kwargs)
        return real(name, **kwargs)

    monkeypatch.setattr("panm_jax.train.loop.build_model", spy)
    config = tiny_config()
    Run(config)
    assert seen and seen[0]["config"] is config.model_config
    assert set(seen[0]) == {"config", "input_size", "output_size", "seed"}  # no options spread again


def test_train_selects_but_is_never_reported():
    config = load_config(None, ['task="copy"', 'model="lstm"', 'select_mode="train"'])
    assert config.select_mode == "train"
    with pytest.raises(ConfigError, match=r"eval_modes: unknown mode\(s\) \['train'\]"):
        load_config(None, ['task="copy"', 'model="lstm"', 'eval_modes=["train"]'])
