"""A process of a multi-process ``panm-jax train`` run, watched from outside JAX.

When one process of a multi-process run is lost, JAX ends every other one
itself (its "fate sharing"): the client of the coordination service logs a
fatal error and aborts the process, with a C++ stack dump, wherever it
stands: at once when process 0 (which runs the service) is lost, once the
service has missed the lost process's heartbeats otherwise. No Python code of
the aborted process runs after that, so the process cannot say so itself.

So with several processes ``panm-jax train`` runs the training in a child
process (the same command line, with ``PANM_JAX_SUPERVISED=1``) and stays out
of JAX itself. ``supervise`` passes the child's standard output through
untouched and relays its standard error line by line, holding back what the
coordination service logs from the first such line on (``panm-jax``'s own
``error:`` and ``warning:`` lines still pass). When the child ends by
JAX's fatal report, it prints one line naming the lost process (read from the
report: the processes the service found unhealthy, or process 0 when the
service itself is gone) and where the same command resumes, and returns exit
code 4. Ctrl-C and SIGTERM are passed on to the child, which stops as a
single-process run does (exit 130). When the child ends any other way, its
exit code is returned and anything held back is printed after all.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable

__all__ = ["SUPERVISED", "lost_line", "needs_supervisor", "supervise"]

SUPERVISED = "PANM_JAX_SUPERVISED"  # set to "1" in the child: it trains, nothing watches it again

# The first line of what the coordination service (or its client) logs when a process of the run is lost.
_SERVICE_LOG = re.compile(rb"coordination[ _]service|Terminating process because the JAX distributed service")
_FATAL = re.compile(r"Terminating process because the JAX distributed service detected fatal errors")
# "The following tasks are unhealthy (stopped sending heartbeats):\n1\n": the lost ones, by task number.
_UNHEALTHY = re.compile(r"tasks are unhealthy \(([^)]*)\):\s*((?:(?:/job:\S+?/task:)?\d+[\s,]+)+)")
_LOST_LEADER = re.compile(r"leader task|Socket closed|Connection refused|failed to connect", re.IGNORECASE)
_OWN_LINES = (b"error: ", b"warning: ")  # panm-jax's own lines: always passed on
_EXIT_LOST = 4  # EXIT_CODES["process lost"] of panm_jax.cli


def needs_supervisor(environ: dict[str, str] | None = None) -> bool:
    """Whether this ``panm-jax train`` is one process of a multi-process run and not yet the watched child."""
    from panm_jax.train.sharding import distributed_settings

    environ = dict(os.environ) if environ is None else environ
    return environ.get(SUPERVISED) != "1" and distributed_settings(environ) is not None


def lost_line(process: int | None, count: int | None, lost: str, reason: str, resume: str) -> str:
    """The one line of a process that stops because ``lost`` (e.g. ``"process 1"``) of its run is gone."""
    me = f"process {process} of {count}" if process is not None and count is not None else "this process"
    return (
        f"{me}: {lost} of this run was lost ({reason}); every process stops; the same command on every process "
        f"resumes {resume}"
    )


def lost_in_report(report: str) -> tuple[str, str]:
    """``(who, why)`` from JAX's fatal report: ``("process 1", "it stopped sending heartbeats")``, or
    ``("process 0", ...)`` when the coordination service itself (run by process 0) is gone."""
    found = _UNHEALTHY.search(report)
    if found:
        numbers = sorted({int(n) for n in re.findall(r"(\d+)(?=[\s,]|$)", found.group(2))})
        if numbers:
            who = "process" + ("es " if len(numbers) > 1 else " ") + ", ".join(map(str, numbers))
            return who, f"it {found.group(1).strip()}" if len(numbers) == 1 else found.group(1).strip()
    if _LOST_LEADER.search(report):
        return "process 0", "its coordination service is gone"
    return "another process", "JAX's coordination service reported a lost process"


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the child gets SIGTERM (and stops as after Ctrl-C) if this process dies first."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: the child outlives a killed parent
        pass


def supervise(resume: Callable[[], str], process: int | None, count: int | None) -> int:
    """Run this command again as a child process that trains; return its exit code, or 4 with one line when
    JAX ended it because a process of the run was lost. ``resume()`` says where the same command resumes."""
    command = [sys.executable, *sys.orig_argv[1:]]
    child = subprocess.Popen(
        command,
        env={**os.environ, SUPERVISED: "1"},
        stderr=subprocess.PIPE,
        process_group=0,  # Ctrl-C reaches this process only, which passes it on once
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
    )

    def pass_on(signum, frame) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    previous = {s: signal.signal(s, pass_on) for s in (signal.SIGINT, signal.SIGTERM)}
    held: list[bytes] = []
    said = False  # whether the child printed its own line about a lost process (lost_line)
    try:
        assert child.stderr is not None
        for line in child.stderr:
            if (held or _SERVICE_LOG.search(line)) and not line.startswith(_OWN_LINES):
                held.append(line)
            else:
                said = said or (line.startswith(b"error: ") and b" of this run was lost (" in line)
                sys.stderr.buffer.write(line)
                sys.stderr.buffer.flush()
        code = child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    report = b"".join(held).decode(errors="replace")
    if code == _EXIT_LOST or said:  # the child saw the loss itself (a collective failed) and said so
        return _EXIT_LOST
    if _FATAL.search(report):
        who, why = lost_in_report(report)
        print(f"error: {lost_line(process, count, who, why, resume())}", file=sys.stderr, flush=True)
        return _EXIT_LOST
    if held:
        sys.stderr.buffer.write(b"".join(held))
        sys.stderr.buffer.flush()
    if code < 0:  # ended by a signal nobody caught
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        print(f"error: the training process ended by {name}; the same command resumes {resume()}", file=sys.stderr)
        return 128 - code
    return code
