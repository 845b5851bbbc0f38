"""``panm-jax tasks``: list the tasks, or show one task's sizes, lengths, options and a decoded example.

panm-jax tasks                                  every task: name, its lengths, what it is, metric, sizes
panm-jax tasks show copy --length 5 [--seed 0]  one example, decoded, then the task's options
panm-jax tasks show dyck --option n=3 --mode 2L

The listing fits the terminal (``_tables``): at 80 columns the name, the
training and test lengths and what the task is, with more columns as the
width allows; piped, every column.
A task's one-line description is the first line of its class's docstring;
``show`` gives each option's type, default, allowed values and meaning, read
from its declaration in the task's ``Options`` (``panm_jax.options.option``;
``_options``).
"""

from __future__ import annotations

import ast
import inspect
import re

import numpy as np
from rich.console import Console

from panm_jax.cli._options import task_option_docs
from panm_jax.cli._tables import Column, print_listing, print_options, print_wrapped
from panm_jax.errors import UserError
from panm_jax.tasks.registry import TASKS, get_task, list_tasks

__all__ = ["COLUMNS", "VARIANTS", "register"]

# Extra table rows for option variants the papers report separately.
VARIANTS = {"dyck": ({"n": 3},)}


def register(subparsers) -> None:
    """Add the ``tasks`` sub-command to the ``panm-jax`` parser."""
    parser = subparsers.add_parser(
        "tasks",
        help="list the tasks, or show a decoded example",
        description="List the tasks with their sizes and length modes, or show one decoded example.",
    )
    parser.set_defaults(func=_list)
    sub = parser.add_subparsers(dest="tasks_command", metavar="ACTION")
    show = sub.add_parser(
        "show",
        help="show a task's sizes, lengths and options, and one decoded example",
        description="Show a task's sizes and length modes, one decoded example, then the task's options: "
        "type, default, allowed values and meaning (set them with --option here, with "
        "--set task_options.NAME=VALUE in panm-jax train).",
    )
    show.add_argument("name", help=f"the task: one of {', '.join(list_tasks())}")
    group = show.add_mutually_exclusive_group()
    group.add_argument("--length", type=int, help="the example's length (default: the longest training length)")
    group.add_argument("--mode", help="draw the length from this mode instead (train or a test mode)")
    show.add_argument("--seed", type=int, default=0, help="the generator seed (default 0)")
    show.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a task option, e.g. n=3 for dyck (repeatable)",
    )
    show.set_defaults(func=_show)


def _parse_options(items: list[str]) -> dict:
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--option: expected KEY=VALUE, got {item!r}")
        try:
            options[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            options[key] = value
    return options


def _describe(name: str) -> str:
    """The first line of task ``name``'s docstring, as plain text: what the task is, in one line."""
    doc = inspect.getdoc(TASKS[name]) or ""
    line = doc.split("\n\n")[0].replace("\n", " ").replace("``", "")
    return re.sub(r"\s*\((?:see )?(?:the )?module docstring\)|;\s*module docstring(?=\))", "", line).strip()


# The listing's columns after the name, most important first (``_tables.fit_table`` keeps those that fit).
COLUMNS = (
    Column("train; test lengths", wrap=True, min_width=16),
    Column("description", wrap=True, min_width=24),
    Column("metric"),
    Column("outputs"),
    Column("input width", justify="right"),
    Column("output size"),
    Column("test length modes"),  # the widest, on one line: last
)


def _lengths(row: dict) -> str:
    """``"1..10; 10, 11, 21, 41, 81"``: the training lengths, then the test modes' lengths (a mode that tests the
    training lengths themselves left out; "(even)" said once where every range is of even lengths)."""
    tests = [v for v in row["test_modes"].values() if v != row["train_lengths"]]
    even = all(v.endswith(" (even)") for v in tests)
    tests = [v.removesuffix(" (even)") for v in tests] if even else tests
    return f"{row['train_lengths']}; {', '.join(tests)}" + (" (even)" if even and tests else "")


def _modes(row: dict) -> str:
    """A task's test modes with their lengths: ``L: 10, L+1: 11, ...`` (a mode named by its lengths once)."""
    return ", ".join(f"{k}: {v}" if k != v else k for k, v in row["test_modes"].items())


def _rows() -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for name in list_tasks():
        for options in ({}, *VARIANTS.get(name, ())):
            try:
                row = get_task(name, **options).describe()
            except ImportError as err:  # a task whose optional package is not installed (its message names the extra)
                hint = str(err).split(" (import failed")[0]
                rows.append((name, "", f"{_describe(name)} Not available: {hint}", "", "", "", "", ""))
                continue
            rows.append(
                (
                    row["name"],
                    _lengths(row),
                    _describe(name),
                    row["metric"],
                    row["output_mode"],
                    str(row["input_size"]),
                    f"{row['output_size']} {'multi-hot' if row['target_kind'] == 'multi_hot' else 'classes'}",
                    _modes(row),
                )
            )
    return rows


def _list(args) -> int:
    del args
    # The name column is never narrower than the longest task name: only a variant's "(n=3)" may wrap.
    columns = (Column("name", wrap=True, min_width=max(len(name) for name in list_tasks())), *COLUMNS)
    print_listing(
        "panm_jax tasks", columns, _rows(), caption="panm-jax tasks show NAME: its options, lengths and an example"
    )
    return 0


def _show(args) -> int:
    options = _parse_options(args.option)
    try:
        task = get_task(args.name, **options)
        rng = np.random.default_rng(args.seed)
        if args.mode is not None:
            batch = task.test_batch(rng, 1, args.mode)  # "train" is a mode too
        else:
            length = task.train_lengths.hi if args.length is None else args.length
            batch = task.sample(rng, 1, length)
    except (ValueError, ImportError) as err:  # refused, or its optional package missing: the message names it
        raise UserError(str(err)) from err
    example = task.decode(batch, 0)
    row = task.describe()
    console = Console()
    kind = "multi-hot" if row["target_kind"] == "multi_hot" else "classes"
    others = f" (also {', '.join(row['metrics'][1:])})" if len(row["metrics"]) > 1 else ""
    print_wrapped(console, f"{row['name']}: {_describe(args.name)}", style="bold")
    print_wrapped(
        console,
        f"inputs {row['input_size']} wide, outputs {row['output_size']} {kind} ({row['output_mode']}); "
        f"metric {row['metric']}{others}",
        indent="  ",
    )
    print_wrapped(console, f"train lengths {row['train_lengths']}; test length modes {_modes(row)}", indent="  ")
    console.print()
    print_wrapped(
        console, f"example (seed {args.seed}): inputs {tuple(batch.inputs.shape)}, targets {tuple(batch.targets.shape)}"
    )
    console.print(f"input  ({len(example.inputs)}): " + " ".join(example.inputs), markup=False, highlight=False)
    console.print(f"target ({len(example.targets)}): " + " ".join(example.targets), markup=False, highlight=False)
    console.print()
    print_wrapped(
        console,
        f"options of task {args.name!r} (--option NAME=VALUE here; --set task_options.NAME=VALUE in panm-jax "
        "train); each as declared (type = default; the values its check allows; what it means):",
    )
    print_options(console, task_option_docs(args.name))
    return 0
