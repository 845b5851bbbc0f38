"""The training progress bar: what ``panm-jax train`` shows of the records the training loop yields.

``train/engine.py``'s ``training`` yields plain records; ``ProgressDisplay``
renders them on a ``rich`` console: a ``note`` is printed as a line, ``begin``
opens the bar (description, total, steps done), each ``progress`` record moves
it (steps, loss, accuracy, steps per second, elapsed and remaining time).
Several seeds show their mean loss and the range of their accuracies.

    with ProgressDisplay(console, enabled=True) as show:
        results = engine.run_to_end(engine.training(pieces, workdirs, ckpts), show)
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

__all__ = ["ProgressDisplay", "progress_columns"]


def progress_columns() -> list:
    """The training progress bar's columns (rich): description, bar, steps, loss, accuracy, rate, times."""
    return [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]}"),
        TextColumn("acc {task.fields[acc]}"),
        TextColumn("{task.fields[rate]} steps/s"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]


class ProgressDisplay:
    """A context manager and ``on_record`` callback: the training loop's records on ``console``; with
    ``enabled`` false, the notes only."""

    def __init__(self, console: Console, *, enabled: bool = True):
        self.console = console
        self.bar = Progress(*progress_columns(), console=console, disable=not enabled, transient=False)
        self.job = None

    def __enter__(self) -> ProgressDisplay:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.bar.__exit__(*exc)

    def __call__(self, record: dict[str, Any]) -> None:
        event = record["event"]
        if event == "note":
            self.console.print(record["text"])
        elif event == "begin":
            self.job = self.bar.add_task(
                record["description"], total=record["total"], completed=record["completed"], loss="-", acc="-", rate="-"
            )
        elif event == "progress" and self.job is not None:
            lo, hi = record["accuracy"]
            acc = f"{100 * lo:.1f}%" if lo == hi else f"{100 * lo:.1f}-{100 * hi:.1f}%"
            self.bar.update(
                self.job,
                completed=record["completed"],
                loss=f"{record['loss']:.4f}",
                acc=acc,
                rate=f"{record['rate']:.1f}",
            )
