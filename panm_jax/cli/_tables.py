"""How ``panm-jax tasks``, ``panm-jax models`` and their ``show`` lay out what they print, at any width.

The listings are tables whose columns come in order of importance: the first
ones (the name, the description) always, each further one only while the
table still fits the width, with every column that wraps (a description)
at least its minimum width. The width is the terminal's; when the output is
not a terminal (piped, captured), ``$COLUMNS`` where it is set, else none: the
whole table, every column, each row on one line (``panm-jax tasks | grep
dyck`` finds a task's whole row). A caption names the columns a narrow
terminal left out.

``show`` prints one option per entry: the name, then ``type = default``
and the allowed values, the meaning on the next line, wrapped to the width
(80 columns when not a terminal, ``$COLUMNS`` where set).
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from panm_jax.cli._options import OptionDoc

__all__ = ["Column", "fit_table", "listing_width", "print_listing", "print_options", "print_wrapped"]


@dataclass(frozen=True)
class Column:
    """A listing's column: its header, whether its cells wrap at spaces, and the narrowest it may get."""

    header: str
    wrap: bool = False  # wraps at spaces (a description); otherwise each cell stays on one line
    min_width: int = 0  # a wrapping column is never narrower (nor narrower than its longest word)
    justify: str = "left"


def _natural(header: str, cells: Sequence[str]) -> int:
    return max(cell_len(line) for text in (header, *cells) for line in text.splitlines() or [""])


def _narrowest(column: Column, cells: Sequence[str]) -> int:
    natural = _natural(column.header, cells)
    if not column.wrap:
        return natural
    longest_word = max((cell_len(w) for text in (column.header, *cells) for w in text.split()), default=1)
    return min(natural, max(column.min_width, longest_word))


def _overhead(n: int) -> int:
    """What a rich table of ``n`` columns adds to their widths: a border between and around them, and
    one space of padding on each side of each."""
    return 3 * n + 1


def fit_table(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None, *, required: int = 2
) -> tuple[Table, list[str]]:
    """A table of ``rows`` with the columns that fit ``width`` (every column where ``width`` is None), and
    the headers of the columns left out.

    ``columns`` come in order of importance: the first ``required`` always, then
    each further one while the table, its wrapping columns at their narrowest,
    still fits. Extra room goes to the wrapping columns, up to what they need to
    hold their cells on one line. Every column gets a fixed width.
    """
    cells = [[row[i] for row in rows] for i in range(len(columns))]
    narrowest = [_narrowest(c, cells[i]) for i, c in enumerate(columns)]
    natural = [_natural(c.header, cells[i]) for i, c in enumerate(columns)]
    chosen = list(range(min(required, len(columns))))
    for i in range(len(chosen), len(columns)):  # never a column while a more important one is left out
        needed = sum(narrowest[j] for j in (*chosen, i)) + _overhead(len(chosen) + 1)
        if width is not None and needed > width:
            break
        chosen.append(i)
    widths = {i: natural[i] for i in chosen}
    if width is not None and sum(widths.values()) + _overhead(len(chosen)) > width:
        room = width - _overhead(len(chosen)) - sum(narrowest[i] for i in chosen)
        slack = {i: natural[i] - narrowest[i] for i in chosen if columns[i].wrap}
        total = sum(slack.values()) or 1
        widths = {i: narrowest[i] + (max(room, 0) * slack.get(i, 0)) // total for i in chosen}
    table = Table()
    for i in chosen:
        column = columns[i]
        table.add_column(column.header, width=widths[i], no_wrap=not column.wrap, justify=column.justify)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*(Text(row[i]) for i in chosen))  # Text: a "[math]" in a cell is not markup
    return table, [columns[i].header for i in range(len(columns)) if i not in chosen]


def listing_width() -> int | None:
    """The width a listing fits: the terminal's; else ``$COLUMNS`` where set; else None (no limit)."""
    console = Console()
    if console.is_terminal:
        return console.width
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def print_listing(
    title: str, columns: Sequence[Column], rows: Sequence[Sequence[str]], *, caption: str, required: int = 2
) -> None:
    """Print a listing at ``listing_width()``: its title centred, the table (``fit_table``), then the
    caption and the columns left out, if any (lines with no trailing spaces, for a file or ``grep``)."""
    width = listing_width()
    table, left_out = fit_table(columns, rows, width, required=required)
    table_width = sum(c.width or 0 for c in table.columns) + _overhead(len(table.columns))
    console = Console(width=table_width if width is None else width)
    console.print(Text(" " * max((table_width - cell_len(title)) // 2, 0) + title, style="bold"))
    console.print(table)
    if left_out:
        caption += f" (left out at this width: {', '.join(left_out)})"
    for line in _wrap(caption, console.width):
        console.print(Text(line, style="dim"), soft_wrap=True)


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` in lines of at most ``width`` (a word longer than that on a line of its own, whole; no break at
    a hyphen: "feed-forward", "2L+1" stay whole), each starting with ``indent``."""
    return textwrap.wrap(
        text, width, initial_indent=indent, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    )


def print_wrapped(console: Console, text: str, *, indent: str = "", style: str = "") -> None:
    """``text`` wrapped to the console's width, each line indented by ``indent``."""
    for line in _wrap(text, console.width, indent):
        console.print(Text(line, style=style), soft_wrap=True)


def print_options(console: Console, options: Sequence[OptionDoc]) -> None:
    """One entry per option: its name, ``type = default; allowed values``, and its meaning below, wrapped
    to the console's width in a column beside the names."""
    names = [f"  {option.name}  " for option in options]
    left = max(map(len, names), default=0)
    right = max(console.width - left, 24)
    for name, option in zip(names, options, strict=True):
        head = option.type if not option.default else f"{option.type} = {option.default}"
        if option.allowed:
            head += f"; {option.allowed}"
        head_lines = _wrap(head, right)
        for i, line in enumerate(head_lines + _wrap(option.meaning, right)):
            text = Text(name.ljust(left) if i == 0 else " " * left, style="bold" if i == 0 else "")
            text.append(line, style="cyan" if i < len(head_lines) else "")
            console.print(text, soft_wrap=True)
