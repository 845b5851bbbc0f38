"""The progress display: a live bar on a terminal; piped, a plain line at the start and per tenth of the steps."""

from __future__ import annotations

import io

from rich.console import Console

from panm_jax.train.progress import LINES, ProgressDisplay


def _run(console: Console, total: int = 1500, start: int = 0) -> None:
    with ProgressDisplay(console, enabled=True) as show:
        show({"event": "note", "text": "resuming"})
        show({"event": "begin", "description": "copy/panm", "total": total, "completed": start})
        for step in range(start + 1, total + 1):
            show({"event": "progress", "completed": step, "loss": 1.0 / step, "accuracy": (0.5, 0.5), "rate": 10.0})


def test_piped_output_shows_the_run_as_it_goes_in_plain_lines():
    out = io.StringIO()
    _run(Console(file=out, force_terminal=False, width=80))
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["resuming", "copy/panm: 0/1500 steps"]
    steps = [line.split(": ")[1].split(" ")[0] for line in lines[2:]]
    assert steps == [f"{150 * k}/1500" for k in range(1, LINES + 1)], lines
    assert lines[-1] == "copy/panm: 1500/1500 steps, loss 0.0007, acc 50.0%, 10.0 steps/s"
    assert all(len(line) <= 80 for line in lines)  # nothing cut at the console's width


def test_a_resumed_piped_run_prints_from_where_it_resumed():
    out = io.StringIO()
    _run(Console(file=out, force_terminal=False, width=120), total=100, start=35)
    steps = [line.split(": ")[1].split(" ")[0] for line in out.getvalue().splitlines()[1:]]
    assert steps == ["35/100", "40/100", "50/100", "60/100", "70/100", "80/100", "90/100", "100/100"]


def test_a_terminal_gets_the_live_bar_and_no_plain_lines():
    out = io.StringIO()
    _run(Console(file=out, force_terminal=True, width=120), total=20)
    assert "copy/panm: 10/20 steps" not in out.getvalue() and "20/20" in out.getvalue()
