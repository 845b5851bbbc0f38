"""``panm-jax tasks``, ``panm-jax models`` (at 80 columns, wider, piped), their ``show`` and the options
they list (type, default, allowed values, meaning)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re

import pytest
from rich.cells import cell_len

from panm_jax.cli import main
from panm_jax.models import list_models
from panm_jax.tasks import TaskOptionError, get_task, list_tasks, task_options


def _cells(line: str) -> list[str]:
    """The cells of one row of a rich table (``│ a │ b │`` or the header's ``┃ a ┃ b ┃``)."""
    return [cell.strip() for cell in re.split(r"[│┃]", line)[1:-1]]


def test_tasks_piped_lists_every_task_and_column_each_row_on_one_line(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # not a terminal, no width given: every column, no wrapping
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    rows = {_cells(line)[0]: _cells(line) for line in out.splitlines() if line.startswith("│")}
    assert {name.split(" (")[0] for name in rows} == set(list_tasks())
    header = next(_cells(line) for line in out.splitlines() if line.startswith("┃"))
    assert header == [
        "name",
        "train; test lengths",
        "description",
        "metric",
        "outputs",
        "input width",
        "output size",
        "test length modes",
    ]
    copy = dict(zip(header, rows["copy"], strict=True))
    assert copy["description"] == "Copy: y = x (first in, first out)."  # its docstring's first line, plain
    assert copy["test length modes"] == "L: 10, L+1: 11, 2L+1: 21, 4L+1: 41, 8L+1: 81"
    assert copy["train; test lengths"] == "1..10; 10, 11, 21, 41, 81"
    assert rows["dyck (n=3)"][1] == "2..20 (even); 22..26, 40..48, 80..96, 160..192 (even)"
    assert rows["parity_check"][1] == "1..40; 41..500"  # its validation mode, the training lengths, said once
    assert copy["metric"] == "token_accuracy"
    assert "left out" not in out


@pytest.mark.parametrize("command", ["tasks", "models"])
def test_listings_fit_80_columns_with_every_name_whole(command, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main([command]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(cell_len(line) for line in lines) <= 80, max(lines, key=cell_len)
    # A header may wrap onto two lines: join each column's lines.
    heads = [_cells(line) for line in lines if line.startswith("┃")]
    header = [" ".join(part for part in parts if part) for parts in zip(*heads, strict=True)]
    first = ["name", "train; test lengths", "description"] if command == "tasks" else ["name", "description"]
    assert header[: len(first)] == first and all(cell and "…" not in cell for cell in header)
    rows = [_cells(line) for line in lines if line.startswith("│")]
    assert all(len(row) == len(header) for row in rows)
    names = list_tasks() if command == "tasks" else list(list_models())
    first_lines = {row[0].split(" (")[0] for row in rows if row[0]}
    assert set(names) <= first_lines  # every name whole, on its row's first line
    widths = [len(cell) for cell in re.split(r"[┃]", next(line for line in lines if line.startswith("┃")))[1:-1]]
    described = widths[header.index("description")]
    assert min(widths) >= 10 and described >= 24  # no column squeezed to nothing; the description readable
    assert "…" not in out
    # What was left out is said, with where to find it.
    caption = " ".join(lines[lines.index(next(line for line in lines if line.startswith("└"))) + 1 :])
    assert f"panm-jax {command} show NAME" in caption and "left out at this width: " in caption


def test_wider_listings_show_more_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["tasks"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(cell_len(line) for line in lines) <= 120
    heads = [_cells(line) for line in lines if line.startswith("┃")]
    header = [" ".join(part for part in parts if part) for parts in zip(*heads, strict=True)]
    assert header[:4] == ["name", "train; test lengths", "description", "metric"]


def test_show_copy(capsys):
    assert main(["tasks", "show", "copy", "--length", "5", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    lines = [l for l in out.splitlines() if l.startswith(("input", "target"))]
    inputs, targets = lines[0].split(":", 1)[1].split(), lines[1].split(":", 1)[1].split()
    assert inputs[0] == "<s>" and inputs[-1] == "</s>" and len(inputs) == 7
    assert targets == inputs[1:-1]  # copy


def test_show_with_option_and_mode(capsys):
    assert main(["tasks", "show", "dyck", "--option", "n=3", "--mode", "L+2"]) == 0
    assert "dyck (n=3)" in capsys.readouterr().out


def test_show_reports_bad_input(capsys):
    assert main(["tasks", "show", "copy", "--length", "0"]) == 2
    assert "length: expected an integer in [1, 1022], got 0" in capsys.readouterr().err
    assert main(["tasks", "show", "nope"]) == 2
    assert "name: expected one of" in capsys.readouterr().err


def _options(out: str) -> dict[str, str]:
    """``{option: its entry}`` from ``show``'s list: a name at two spaces' indent, then its wrapped lines."""
    entries: dict[str, str] = {}
    name = None
    for line in out.splitlines():
        m = re.match(r"^  ([\w.]+)  +(.*)$", line)  # continuation lines start with more spaces
        if m:
            name = m[1]
            entries[name] = m[2]
        elif name is not None and line.startswith("    "):
            entries[name] += " " + line.strip()
        else:
            name = None
    return entries


def test_show_lists_the_task_options_with_types_defaults_allowed_values_and_meanings(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["tasks", "show", "bigram_flip", "--length", "4"]) == 0
    out = capsys.readouterr().out
    assert max(map(cell_len, out.splitlines())) <= 80
    options = _options(out)
    assert set(options) == {"vocab_size", "min_train_length", "max_train_length", "max_test_length", "max_length"}
    assert options["vocab_size"].startswith("int = 128; an integer >= 2 source symbols")  # its own option
    assert options["max_train_length"].startswith("int = 64; a positive integer the training source")  # its base's
    assert "train lengths 8..64 (even); test length modes test: 66..128 (even)" in " ".join(out.split())
    assert main(["tasks", "show", "dyck", "--length", "4"]) == 0
    options = _options(capsys.readouterr().out)
    assert options["n"] == "int = 2; an integer in [1, 4] the number of bracket types (the paper uses 2 and 3)"
    assert options["p"].startswith("float = 0.5; a number in [0, 1] ")
    assert options["max_train_length"].startswith("int | None = None; an integer >= 2 or None L")
    assert main(["tasks", "show", "scan", "--length", "3"]) == 0
    options = _options(capsys.readouterr().out)
    assert options["cutoff"].startswith("int = 22; one of [22, 24, 25, 26, 27, 28, 30, 32, 33, 36, 40] train on")


@pytest.mark.parametrize("name", list_tasks())
def test_every_task_option_is_shown_as_declared(name, capsys, monkeypatch):
    # What `tasks show` prints of each option is its declaration (panm_jax.options.option), nothing else:
    # type = default; the values its check allows; its one-line meaning.
    from panm_jax.options import declared
    from panm_jax.tasks import TASKS

    monkeypatch.setenv("COLUMNS", "400")
    found = declared(TASKS[name].Options)
    assert found and all(d.doc for d in found.values()), f"{name}: an option without a meaning"
    assert main(["tasks", "show", name]) == 0
    shown = _options(capsys.readouterr().out)
    assert list(shown) == list(found)
    for option, d in found.items():
        head = f"{repr(d.default)}" + (f"; {d.allowed}" if d.allowed else "")
        assert f"= {head} {d.doc}" in shown[option], (name, option, shown[option])


@pytest.mark.parametrize("name", list_tasks())
def test_task_options_are_every_option_the_task_accepts(name):
    # The options task_options reads (the task's Options) are exactly the names the task itself accepts
    # (the list its unknown-option error gives), each with the factory's default.
    options = task_options(name)
    assert options and all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in options.values())
    with pytest.raises(TaskOptionError, match="unknown option") as err:
        get_task(name, not_an_option=1)
    accepted = ast.literal_eval(re.search(r"expected some of (\[.*\])", str(err.value)).group(1))
    assert sorted(options) == sorted(accepted)
    for option in options.values():
        assert option.default is not inspect.Parameter.empty, f"{name}: option {option.name} has no default"


def test_models_show_lists_the_model_options(capsys, monkeypatch):
    from panm_jax.models import get_config, model_options

    monkeypatch.setenv("COLUMNS", "80")
    assert main(["models", "show", "panm"]) == 0
    out = capsys.readouterr().out
    assert max(map(cell_len, out.splitlines())) <= 80 and "PANMConfig" in out
    own, ours, authors = re.split(r"(?m)^variant '\w+' of the decoder", out)
    options = model_options("panm")
    fields = [f.name for f in dataclasses.fields(get_config("panm")) if f.name != "variant"]
    shown = _options(own)
    assert list(shown) == fields  # every field of the paper's config and the encoder's, in field order
    for name in fields:
        assert options[name].default == getattr(get_config("panm"), name)
    # then each variant apart, its options checked by its own config: the paper's fields, then the variants
    assert " ".join(ours.split()).startswith("(Ours, panm_jax.modules.panm_extensions): setting any of these options")
    assert list(_options(ours)) == ["distractors", "distractor_sampling", "snap_pointers", "controller_start"]
    assert _options(ours)["controller_start"].startswith("str = 'sum'; one of ['sum', 'mean'] h^c_0")
    assert _options(authors)["controller_start"].startswith("str = 'sum'; one of ['sum', 'encoder_final'] h^c_0")
    assert list(options) == [*fields, *_options(ours), *list(_options(authors))[:-1]]
    shown = {**shown, **_options(authors)}
    # type = default; what its check accepts; its declared meaning
    assert (
        shown["hidden"]
        == "int = 256; a positive integer D: encoder, Pointer Unit and Controller GRU width (App. C: 256)"
    )
    assert shown["address_bits"].startswith("int = 10; an integer in [1, 30] b: 2^b addresses")
    assert shown["score"].startswith("str = 'cosine'; one of ['cosine', 'scaled_dot'] Eq. 2/5")
    assert shown["mode2_dropout"].startswith("float = 0.0; a number in [0, 1) dropout on the Mode-2 weights")
    assert shown["encoder_ffn_hidden"].startswith("int | None = None; a positive integer or None Transformer encoders")
    assert shown["random_base_at_eval"].startswith("bool = False; true or false draw a_B")
    assert main(["models", "show", "dnc"]) == 0
    shown = _options(capsys.readouterr().out)
    assert shown["controller"].startswith("str = 'lstm'; one of ['feedforward', 'lstm', 'gru', 'transformer']")
    assert shown["remat_chunk"].startswith("int = 0; a non-negative integer keep the backward pass's state")
    assert main(["models", "show", "stack_rnn"]) == 0
    shown = _options(capsys.readouterr().out)
    assert shown["controller"].startswith("str = 'rnn'; one of ['rnn', 'feedforward', 'lstm', 'gru', 'transformer']")
    assert main(["models", "show", "tape_rnn"]) == 0
    shown = _options(capsys.readouterr().out)
    assert shown["value_layers"].startswith("tuple[int, ...] = (64, 64); a sequence of positive integers hidden widths")
    assert main(["models", "show", "lstm"]) == 0
    shown = _options(capsys.readouterr().out)
    assert shown["hidden"].startswith("int = 512; a positive integer Le et al. 2024")
    assert main(["models", "show", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: name: expected one of [")


def test_train_help_points_at_the_options_tables(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "panm-jax models show MODEL" in out and "panm-jax tasks show TASK" in out
    assert "panm-jax train --settings" in out


def test_train_settings_lists_every_field_as_declared(capsys, monkeypatch):
    from panm_jax.options import declared
    from panm_jax.train.config import OptimizerConfig, TrainConfig

    monkeypatch.setenv("COLUMNS", "400")
    assert main(["train", "--settings"]) == 0
    shown = _options(capsys.readouterr().out)
    train = {n: d for n, d in declared(TrainConfig).items() if n != "optimizer"}
    optimizer = {f"optimizer.{n}": d for n, d in declared(OptimizerConfig).items()}
    assert list(shown) == [*train, *optimizer]  # the optimiser's table as its fields
    for name, d in {**train, **optimizer}.items():
        assert d.doc, f"{name}: a setting without a meaning"
        assert shown[name].endswith(f"= {d.default!r}" + (f"; {d.allowed}" if d.allowed else "") + f" {d.doc}")
    assert shown["num_steps"] == (
        "int = 50000; an integer in [1, 2147483647] (the step counter is int32) training steps"
    )
