"""``panm-jax tasks``: list the tasks, or show one task's options and a decoded example.

panm-jax tasks                                  a table of every task
panm-jax tasks show copy --length 5 [--seed 0]  one example, decoded, and the task's options
panm-jax tasks show dyck --option n=3 --mode 2L
"""

from __future__ import annotations

import ast

import numpy as np
from rich.console import Console
from rich.table import Table

from panm_jax.cli._tables import options_table, wide_console
from panm_jax.errors import UserError
from panm_jax.tasks.registry import get_task, list_tasks, task_options

__all__ = ["VARIANTS", "register"]

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
        help="print one decoded example of a task",
        description="Print one decoded example of a task, then the task's options with their types and "
        "defaults (set them with --option here, with --set task_options.NAME=VALUE in panm-jax train).",
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


def _list(args) -> int:
    table = Table(title="panm_jax tasks")
    for col in ("name", "input width", "output size", "metric", "outputs", "train lengths", "test length modes"):
        table.add_column(col, no_wrap=col in ("name", "metric", "outputs"))
    for name in list_tasks():
        for options in ({}, *VARIANTS.get(name, ())):
            try:
                row = get_task(name, **options).describe()
            except ImportError as err:  # a task whose optional package is not installed (its message names the extra)
                hint = str(err).split(" (import failed")[0]
                table.add_row(name, "", "", "", "", "", f"not available: {hint}")
                continue
            out = f"{row['output_size']} {'multi-hot' if row['target_kind'] == 'multi_hot' else 'classes'}"
            table.add_row(
                row["name"],
                str(row["input_size"]),
                out,
                row["metric"],
                row["output_mode"],
                row["train_lengths"],
                ", ".join(f"{k}: {v}" if k != v else k for k, v in row["test_modes"].items()),
            )
    wide_console(150).print(table)
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
    console = Console()
    console.print(
        f"[bold]{task.describe()['name']}[/bold]  (seed {args.seed}; "
        f"inputs {tuple(batch.inputs.shape)}, targets {tuple(batch.targets.shape)}, "
        f"outputs {task.output_mode})"
    )
    console.print(f"input  ({len(example.inputs)}): " + " ".join(example.inputs), markup=False, highlight=False)
    console.print(f"target ({len(example.targets)}): " + " ".join(example.targets), markup=False, highlight=False)
    table = options_table(
        f"options of task {args.name!r}",
        task_options(args.name),
        how="--option NAME=VALUE here; --set task_options.NAME=VALUE in panm-jax train",
    )
    wide_console(100).print(table)
    return 0
