"""The watching parent of a multi-process ``panm-jax train`` (``panm_jax.cli.supervise``), with stand-in children.

``supervise`` runs ``sys.orig_argv`` again as its child; each test sets it to a
small Python script that behaves as a training process can end: JAX's fatal report
of a lost process then an abort, a coordination-service warning then a clean end, a
SIGTERM passed on, a child that prints its own lost-process line. The reports are
the texts jax 0.10.2 printed in 2-process CPU runs (``test_lost_process.py`` runs the
real thing).
"""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import threading
import time

import pytest

from panm_jax.cli import supervise as sv

# What a surviving process 0 printed when process 1 was killed (the service saw its heartbeats stop).
LOST_1 = """\
E1206 15:21:42.420418    9314 coordination_service.cc:1549] [17113672048919220805] Use error polling to propagate \
the following error to all tasks: UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):
1
The tasks have crashed. Check the task logs for an earlier error, or scheduler events (e.g. preemption, eviction) to \
debug further. [type.googleapis.com/tensorflow.CoordinationServiceError='']
E1206 15:21:42.420942    9325 coordination_service_agent.cc:289] Polled an error from coordination service (this \
can be an error from this or another task).
F1206 15:21:42.421113    9325 client.h:80] Terminating process because the JAX distributed service detected fatal \
errors. This most likely indicates that another task died; see the other task logs for more details.
*** Check failure stack trace: ***
    @     0x7effd6840634  absl::lts_20260107::log_internal::LogMessage::SendToLog()
"""
# What a surviving process 1 printed when process 0, which runs the coordination service, was killed.
LOST_0 = """\
E1206 15:21:29.768180    9233 coordination_service_agent.cc:289] Polled an error from coordination service (this \
can be an error from this or another task).
F1206 15:21:29.768252    9233 client.h:80] Terminating process because the JAX distributed service detected fatal \
errors. This most likely indicates that another task died; see the other task logs for more details.
Additional GRPC error information from remote target coordination_service while calling \
/xla.coordination.CoordinationService/PollForError:
:UNKNOWN:Error received from peer  {grpc_status:14, grpc_message:"Socket closed"}
*** Check failure stack trace: ***
    @     0x7f98d9240634  absl::lts_20260107::log_internal::LogMessage::SendToLog()
"""


def test_the_lost_process_is_read_from_jaxs_report():
    assert sv.lost_in_report(LOST_1) == ("process 1", "it stopped sending heartbeats")
    assert sv.lost_in_report(LOST_0) == ("process 0", "its coordination service is gone")
    two = LOST_1.replace(
        "heartbeats):\n1\n", "heartbeats):\n/job:jax_worker/replica:0/task:1\n/job:jax_worker/replica:0/task:3\n"
    )
    assert sv.lost_in_report(two) == ("processes 1, 3", "stopped sending heartbeats")
    assert sv.lost_in_report("F1206 client.h:80] Terminating process because ...")[0] == "another process"


def test_only_a_multi_process_command_is_supervised_and_only_once():
    env = {"JAX_COORDINATOR_ADDRESS": "127.0.0.1:1234", "JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": "0"}
    assert sv.needs_supervisor(env)
    assert not sv.needs_supervisor({**env, sv.SUPERVISED: "1"})  # the child trains
    assert not sv.needs_supervisor({})  # a single process: nothing to watch


def _child(monkeypatch, body: str) -> None:
    """Make ``supervise`` run ``body`` (Python) as its child."""
    monkeypatch.setattr(sys, "orig_argv", [sys.executable, "-c", textwrap.dedent(body)])


def _resume() -> str:
    return "runs/x from step 50"


def test_jaxs_abort_becomes_one_line_and_exit_code_4(monkeypatch, capfd):
    _child(
        monkeypatch,
        f"""
        import os, sys
        assert os.environ["{sv.SUPERVISED}"] == "1"
        sys.stderr.write("warning: a note of the run\\n")
        sys.stderr.write({LOST_0!r})
        sys.stderr.flush()
        os.abort()
        """,
    )
    assert sv.supervise(_resume, 1, 2) == 4
    err = capfd.readouterr().err
    assert err.splitlines() == [
        "warning: a note of the run",
        "error: process 1 of 2: process 0 of this run was lost (its coordination service is gone); every process "
        "stops; the same command on every process resumes runs/x from step 50",
    ]


def test_a_child_that_said_so_itself_is_not_reported_twice(monkeypatch, capfd):
    line = "error: process 0 of 2: process 1 of this run was lost (Gloo ...); every process stops; ..."
    _child(
        monkeypatch,
        f"""
        import os, sys
        os.write(2, {(line + chr(10)).encode()!r})
        sys.stderr.write({LOST_1!r})
        sys.stderr.flush()
        os.abort()
        """,
    )
    assert sv.supervise(_resume, 0, 2) == 4
    assert capfd.readouterr().err.splitlines() == [line]


def test_held_back_lines_are_printed_after_all_when_nothing_was_lost(monkeypatch, capfd):
    warning = "W1206 15:28:55.845094 10760 preemption_sync_manager.cc:147] Failed to retrieve preemption notice " + (
        "from coordination service: UNAVAILABLE: Socket closed"
    )
    _child(
        monkeypatch,
        f"""
        import sys
        print("the table", flush=True)
        sys.stderr.write({warning + chr(10)!r})
        sys.exit(1)
        """,
    )
    assert sv.supervise(_resume, 0, 2) == 1  # the child's own exit code
    out, err = capfd.readouterr()
    assert out == "the table\n"  # stdout passes through untouched
    assert err.splitlines() == [warning]


def test_sigterm_is_passed_on_to_the_child(monkeypatch, capfd):
    _child(
        monkeypatch,
        """
        import signal, sys, time
        def stop(*_):
            sys.stderr.write("error: interrupted (SIGTERM); the same command resumes runs/x from step 50\\n")
            sys.exit(130)
        signal.signal(signal.SIGTERM, stop)
        print("ready", flush=True)
        time.sleep(60)
        """,
    )

    def terminate_when_ready():
        time.sleep(1.5)  # the child has installed its handler by then (it starts in well under a second)
        os.kill(os.getpid(), signal.SIGTERM)

    if threading.current_thread() is not threading.main_thread():
        pytest.fail("signal handlers need the main thread")
    before = signal.getsignal(signal.SIGTERM)
    threading.Thread(target=terminate_when_ready, daemon=True).start()
    start = time.monotonic()
    assert sv.supervise(_resume, 0, 2) == 130
    assert time.monotonic() - start < 30
    assert capfd.readouterr().err.splitlines() == [
        "error: interrupted (SIGTERM); the same command resumes runs/x from step 50"
    ]
    assert signal.getsignal(signal.SIGTERM) == before  # the handler of before is back


def test_a_child_killed_by_a_signal_says_where_the_run_resumes(monkeypatch, capfd):
    _child(monkeypatch, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert sv.supervise(_resume, 0, 2) == 137
    assert capfd.readouterr().err.splitlines() == [
        "error: the training process ended by SIGKILL; the same command resumes runs/x from step 50"
    ]
