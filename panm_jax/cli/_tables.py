"""Tables of ``panm-jax models`` and ``panm-jax tasks``: the options table and a console wide enough for them."""

from __future__ import annotations

import inspect
from typing import Any

from rich.console import Console
from rich.table import Table


def type_name(hint) -> str:
    """A type hint as the table shows it: ``int``, ``float``, ``int | None``, ``tuple[int, ...]``, ``any``."""
    if hint is Any or hint is inspect.Parameter.empty:
        return "any"
    if isinstance(hint, type) and not getattr(hint, "__args__", None):
        return hint.__name__
    return str(hint).replace("typing.", "").replace("NoneType", "None")


def default_text(param: inspect.Parameter) -> str:
    """A parameter's default as the table shows it (``required`` where it has none)."""
    if param.default is inspect.Parameter.empty:
        return "required"
    return repr(param.default)


def options_table(title: str, options: dict[str, inspect.Parameter], *, how: str) -> Table:
    """One row per option: its name, type and default. ``how`` is the table's caption (how to set one)."""
    table = Table(title=title, caption=how)
    for col in ("option", "type", "default"):
        table.add_column(col, no_wrap=True)
    for name, param in options.items():
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            table.add_row(f"**{name}", "any", "(options the task checks itself)")
        else:
            table.add_row(name, type_name(param.annotation), default_text(param))
    return table


def wide_console(width: int) -> Console:
    """A console; when not a terminal (piped, captured), at least ``width`` columns, so a table is not squeezed."""
    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, width))
    return console
