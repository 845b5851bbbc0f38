"""The training progress display: what ``train_and_evaluate`` (and ``panm-jax train``) shows of the records
the training loop yields.

``train/engine.py``'s ``training`` yields plain records; ``ProgressDisplay``
renders them on a ``rich`` console: a ``note`` is printed as a line, ``begin``
opens the bar (description, total, steps done), each ``progress`` record moves
it (steps, loss, accuracy, steps per second, elapsed and remaining time).
Several seeds show their mean loss and the range of their accuracies.

Where the console is not a terminal (output piped to a file or ``tee``), a live bar would show nothing
until the end; the display prints a plain line instead at the start and each time another tenth of the
steps is done (``LINES``), so a log shows the run as it goes.

    with ProgressDisplay(console, enabled=True) as show:
        results = engine.run_to_end(engine.training(pieces, workdirs, ckpts), show)
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

__all__ = ["LINES", "ProgressDisplay", "progress_columns"]

LINES = 10  # plain lines per run where the console is not a terminal: one per tenth of the steps


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
        self.plain = enabled and not console.is_terminal  # piped: lines, not a live bar
        live = enabled and not self.plain
        self.bar = Progress(*progress_columns(), console=console, disable=not live, transient=False)
        self.job = None
        self.total, self.next_line, self.description = 0, 0, ""

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
            self.total, self.description = record["total"], record["description"]
            self.next_line = self._after(record["completed"])
            if self.plain:
                self.console.print(f"{self.description}: {record['completed']}/{self.total} steps", highlight=False)
        elif event == "progress" and self.job is not None:
            lo, hi = record["accuracy"]
            acc = f"{100 * lo:.1f}%" if lo == hi else f"{100 * lo:.1f}-{100 * hi:.1f}%"
            loss, rate = f"{record['loss']:.4f}", f"{record['rate']:.1f}"
            self.bar.update(self.job, completed=record["completed"], loss=loss, acc=acc, rate=rate)
            if self.plain and record["completed"] >= self.next_line:
                self.console.print(
                    f"{self.description}: {record['completed']}/{self.total} steps, loss {loss}, acc {acc}, "
                    f"{rate} steps/s",
                    highlight=False,
                )
                self.next_line = self._after(record["completed"])

    def _after(self, completed: int) -> int:
        """The step count of the next plain line: the next multiple of a tenth of the steps (the last step)."""
        tenth = max(1, -(-self.total // LINES))
        return min(self.total, (completed // tenth + 1) * tenth)
