"""Stop signals (``panm_jax.train.interrupt``): where they raise, where they wait for a safe point, and that
one raised where Python loses the exception (a garbage-collection callback: a run that lost its SIGTERM so
went on training for ever) is not lost."""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time

import pytest

from panm_jax.train import interrupt
from panm_jax.train.interrupt import Stopped, at_safe_points, on_stop_signals, stop_if_asked


def _signal_and_wait(signum: int, seconds: float = 5.0) -> None:
    """Send ``signum`` to this process and give its handler ``seconds`` to run (it runs between bytecodes)."""
    os.kill(os.getpid(), signum)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.01)


def test_outside_a_safe_stretch_sigterm_raises_where_it_comes_and_a_second_is_ignored():
    with on_stop_signals():
        with pytest.raises(Stopped) as caught:
            _signal_and_wait(signal.SIGTERM)
        assert caught.value.signum == signal.SIGTERM and isinstance(caught.value, KeyboardInterrupt)
        _signal_and_wait(signal.SIGTERM, 0.2)  # the clean-up the first one started is not cut short


def test_within_a_safe_stretch_sigterm_waits_for_the_next_safe_point():
    reached = []
    with on_stop_signals(), pytest.raises(Stopped) as caught, at_safe_points():
        stop_if_asked()  # nothing asked yet
        _signal_and_wait(signal.SIGTERM, 0.3)
        reached.append("after the signal")  # the handler ran inside the stretch: no raise there
        _signal_and_wait(signal.SIGTERM, 0.2)  # a second one changes nothing
        reached.append("after a second")
        stop_if_asked()
        reached.append("after the safe point")
    assert reached == ["after the signal", "after a second"] and caught.value.signum == signal.SIGTERM


def test_a_second_ctrl_c_raises_at_once_even_within_a_safe_stretch():
    with on_stop_signals(), pytest.raises(Stopped) as caught, at_safe_points():
        _signal_and_wait(signal.SIGINT, 0.3)  # the first waits for a safe point
        _signal_and_wait(signal.SIGINT)  # the second does not
        pytest.fail("the second Ctrl-C did not raise")
    assert caught.value.signum == signal.SIGINT


def test_a_signal_after_a_stretch_s_last_safe_point_lets_it_end_and_the_next_stretch_raises_at_once():
    finished = []
    with on_stop_signals():
        with at_safe_points():
            _signal_and_wait(signal.SIGTERM, 0.3)
            finished.append("the stretch")
        finished.append("after it")
        with pytest.raises(Stopped), at_safe_points():
            finished.append("the next stretch")
    assert finished == ["the stretch", "after it"]


def test_a_signal_whose_exception_python_lost_raises_at_the_next_safe_point(monkeypatch):
    # The handler runs in a garbage-collection callback (as JAX's is, where the hang was seen); an exception
    # raised there is printed as "ignored" and lost. Within a stretch nothing is raised there at all ...
    lost = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: lost.append(unraisable.exc_value))

    def callback(phase, info):
        if phase == "start":
            _signal_and_wait(signal.SIGTERM, 0.2)

    gc.callbacks.append(callback)
    try:
        with on_stop_signals(), pytest.raises(Stopped), at_safe_points():
            gc.collect()
            assert lost == []
            stop_if_asked()
        # ... and outside one, where it raises in the callback and is lost, the next safe point raises it.
        with on_stop_signals():
            gc.collect()
            assert [type(e) for e in lost] == [Stopped]
            with pytest.raises(Stopped):
                stop_if_asked()
    finally:
        gc.callbacks.remove(callback)


def test_nothing_is_asked_without_a_signal_and_the_handlers_come_back():
    before = {s: signal.getsignal(s) for s in interrupt.STOP_SIGNALS}
    with on_stop_signals(), at_safe_points():
        stop_if_asked()
        assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
    assert {s: signal.getsignal(s) for s in before} == before


def test_a_signal_ignored_by_whoever_started_the_command_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell starts a background job
    try:
        with on_stop_signals(), at_safe_points():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            _signal_and_wait(signal.SIGINT, 0.2)
            stop_if_asked()  # nothing was asked
    finally:
        signal.signal(signal.SIGINT, previous)


def test_with_several_processes_all_stop_when_any_was_asked():
    asked_elsewhere = []

    def agree(flag: bool) -> bool:  # all_agree's answer when another process was asked
        asked_elsewhere.append(flag)
        return False

    with on_stop_signals(), pytest.raises(Stopped) as caught:
        stop_if_asked(agree=agree)
    assert asked_elsewhere == [True] and caught.value.signum == signal.SIGTERM
    with on_stop_signals():
        stop_if_asked(agree=lambda flag: flag)  # none asked


def test_outside_the_main_thread_nothing_changes():
    seen = []

    def worker():
        with on_stop_signals(), at_safe_points():
            seen.append(signal.getsignal(signal.SIGTERM))
            stop_if_asked()
        seen.append("done")

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [before, "done"]
