"""Stopping a run on Ctrl-C or SIGTERM at a point where stopping is safe.

Python runs a signal's handler in the main thread between two bytecodes, wherever they are: inside
orbax's save, inside a garbage-collection callback of JAX (where an exception is printed as "ignored" and
lost, so the run would go on training as if no signal had come), inside a lock's acquisition. A run
therefore does not stop where the signal finds it. ``on_stop_signals()`` (what ``panm-jax`` holds while a
command runs) records the first SIGTERM or Ctrl-C; code that stops cleanly between two of its steps marks
that stretch with ``at_safe_points()`` and calls ``stop_if_asked()`` between steps (the training loop
before each step, an evaluation before each batch), which raises ``Stopped``, a ``KeyboardInterrupt``,
so the run unwinds as from Ctrl-C: the lock is released, the checkpoint being written finishes first, one
line says where the run resumes.

Outside such a stretch the signal raises at once, as Python's own Ctrl-C does. A second Ctrl-C raises at
once everywhere (the person at the keyboard insists); a second SIGTERM is ignored, so that it does not cut
short the clean-up the first one started. A signal that raised where the exception was lost stays asked
for: the next ``stop_if_asked()`` raises it again.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

__all__ = ["Stopped", "at_safe_points", "on_stop_signals", "stop_if_asked"]

# The signals a run stops on.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_asked: int | None = None  # the first stop signal's number, until the handlers are taken down
_safe_depth = 0  # how many ``at_safe_points`` stretches the main thread is in


class Stopped(KeyboardInterrupt):
    """A stop signal (SIGTERM, or Ctrl-C's SIGINT), raised in the main thread, so that it unwinds as Ctrl-C
    does; ``signum`` is the signal's number."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _handler(signum: int, frame) -> None:
    global _asked
    first = _asked is None
    if first:
        _asked = signum
    if _safe_depth > 0 and first:
        return  # the next stop_if_asked() raises it
    if first or signum == signal.SIGINT:
        raise Stopped(signum)
    # a later SIGTERM: ignored


@contextlib.contextmanager
def on_stop_signals() -> Iterator[None]:
    """Within the block, SIGTERM and Ctrl-C stop the command as the module docstring says; outside the main
    thread (where Python runs no signal handler) nothing changes. The previous handlers come back on exit,
    and what was asked is forgotten."""
    global _asked
    if not _main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    _asked = None
    for s in STOP_SIGNALS:
        if previous[s] is not signal.SIG_IGN:  # a signal ignored by whoever started us stays ignored
            signal.signal(s, _handler)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)  # None: not set from Python
        _asked = None


@contextlib.contextmanager
def at_safe_points() -> Iterator[None]:
    """Within the block the first stop signal raises at the next ``stop_if_asked()``, not where it comes.
    One asked before the block raises on entry. One asked after the block's last safe point does not
    raise: the work it would have stopped is done, and the command ends as it would have."""
    global _safe_depth
    if not _main_thread():
        yield
        return
    stop_if_asked()
    _safe_depth += 1
    try:
        yield
    finally:
        _safe_depth -= 1


def stop_if_asked(agree: Callable[[bool], bool] | None = None) -> None:
    """Raise ``Stopped`` if a stop signal came (and was not raised yet where it could not be lost).

    ``agree``: with several processes, ``all_agree``, so that all stop at the same point when any was asked
    (every process must then call this at the same points)."""
    asked = _asked is not None and _main_thread()
    if agree is not None:
        asked = not agree(not asked)
    if asked:
        raise Stopped(_asked if _asked is not None else signal.SIGTERM)
