"""The ``panm-jax`` command line: a thin layer over the library.

One module per sub-command, in the order ``panm-jax --help`` lists them:

* ``train``: ``panm-jax train``, train a model on a task and evaluate it;
* ``evaluate``: ``panm-jax eval``, evaluate a run's checkpoint over length
  modes or every length of a range;
* ``plot``: ``panm-jax plot``, accuracy against length from results files;
* ``tasks``: ``panm-jax tasks`` (the task table) and ``panm-jax tasks show NAME``
  (a task's options and one decoded example);
* ``models``: ``panm-jax models`` (the model card) and ``panm-jax models show
  NAME`` (a model's options).

Each exposes ``register(subparsers)``. What goes wrong prints one line,
``error: ...``, on stderr (``--debug`` prints the traceback too) and exits with
a code that says what kind of failure it was (``EXIT_CODES``):

* 1, the run failed: a non-finite loss stopped it, or its results hold
  non-finite numbers;
* 2, a user's mistake: a wrong argument, setting or file, a checkpoint that
  fails its checks, a run folder held by another process;
* 3, the operating system refused: a path that cannot be written or read (a
  folder that is a file, no permission, a full disk); the line names the path
  and what to do;
* 4, a process of a multi-process run was lost;
* 130, interrupted (Ctrl-C, or SIGTERM, which a command takes as it takes
  Ctrl-C): training and evaluation stop before their next step or batch
  (``panm_jax.train.interrupt``), so a checkpoint being written is finished
  first; the run folder's lock is released, and the line says where the run
  resumes. A second SIGTERM while that is done is ignored, so the clean-up is
  not cut short; a second Ctrl-C stops at once.

Any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import errno
import re
import signal
import sys
import traceback

from panm_jax import __version__
from panm_jax._cache import COMPILE_CACHE_ENV, compile_cache_dir
from panm_jax.checks import did_you_mean
from panm_jax.cli import evaluate, models, plot, tasks, train
from panm_jax.errors import UserError
from panm_jax.train.compile_cache import enable_compile_cache
from panm_jax.train.interrupt import Stopped, on_stop_signals

__all__ = [
    "EXIT_CODES",
    "ArgumentParser",
    "build_parser",
    "interrupted_by",
    "main",
    "os_error_line",
    "user_errors",
]

EXIT_CODES = {"run failed": 1, "user error": 2, "os error": 3, "process lost": 4, "interrupted": 130}

# What to do about an operating-system error, by errno.
_OS_ADVICE = {
    errno.ENOSPC: "free space on that disk, then rerun the same command (a training run resumes from its last "
    "checkpoint)",
    errno.EDQUOT: "free space within your quota, then rerun the same command",
    errno.EACCES: "make it writable (and readable) by you, or give another --workdir",
    errno.EPERM: "make it writable (and readable) by you, or give another --workdir",
    errno.EROFS: "that file system is read-only: give a --workdir on a writable one",
    errno.ENOTDIR: "a part of that path is a file, not a folder: give another --workdir",
    errno.EISDIR: "a file was expected there, a folder found: move the folder away, or give another --workdir",
    errno.EEXIST: "a file is in the way: move it, or give another --workdir",
}

# The sub-command modules, in the order --help lists them.
COMMAND_MODULES = (train, evaluate, plot, tasks, models)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line (``error: argument --seed: ...``) and exit code 2; a
    misspelled choice (a command, ``--on-nan stp``) names the nearest one."""

    def error(self, message: str):
        choice = re.search(r"invalid choice: '(?P<given>[^']*)' \(choose from (?P<known>.*)\)$", message)
        if choice is not None:
            message += did_you_mean(choice["given"], re.findall(r"'([^']*)'", choice["known"]))
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr, flush=True)
        raise SystemExit(2)


def interrupted_by(err: BaseException) -> str:
    """``"interrupted"`` (Ctrl-C) or ``"terminated (SIGTERM)"``: how a ``KeyboardInterrupt`` came."""
    return "terminated (SIGTERM)" if isinstance(err, Stopped) and err.signum == signal.SIGTERM else "interrupted"


def user_errors() -> tuple[type[BaseException], ...]:
    """The exception types that are a user's mistake, not a bug.

    ``UserError`` covers its subclasses: ``UnknownNameError`` (any registry) and
    ``TaskOptionError``. A checkpoint that fails its checks and a run folder
    held by another process are not bugs either.
    """
    from panm_jax.train.checkpoint import CheckpointError
    from panm_jax.train.lock import WorkdirBusy

    return (UserError, CheckpointError, WorkdirBusy)


COMPILING = ("train", "eval")  # the commands that compile programs, and so use the compilation cache


def build_parser() -> argparse.ArgumentParser:
    """The ``panm-jax`` parser with every sub-command."""
    parser = ArgumentParser(
        prog="panm-jax",
        description="Memory-augmented neural networks in JAX: NTM, DNC, neural Stack/Queue/DeQue and PANM.",
    )
    parser.add_argument("--version", action="version", version=f"panm-jax {__version__}")
    parser.add_argument("--debug", action="store_true", help="print the traceback of an error too")
    parser.add_argument(
        "--compile-cache",
        metavar="DIR|off",
        help="JAX's persistent compilation cache, where a rerun reads the programs it compiled before "
        f"(default: ${COMPILE_CACHE_ENV}, else {compile_cache_dir('')}; 'off' turns it off)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``panm-jax`` with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 0
    try:
        with on_stop_signals():
            if args.command in COMPILING:
                enable_compile_cache(args.compile_cache)
            return int(args.func(args) or 0)
    except KeyboardInterrupt as err:
        if args.debug:
            traceback.print_exc()
        print(f"error: {interrupted_by(err)}", file=sys.stderr, flush=True)
        return EXIT_CODES["interrupted"]
    except Exception as err:
        if isinstance(err, OSError):
            message, code = os_error_line(err), EXIT_CODES["os error"]
        elif isinstance(err, user_errors()):
            message, code = " ".join(str(err).split()), EXIT_CODES["user error"]  # one line
        else:
            raise
        if args.debug:
            traceback.print_exc()
        print(f"error: {message}", file=sys.stderr, flush=True)
        return code


def os_error_line(err: OSError) -> str:
    """``PATH: what the system said; what to do``, one line, for an ``OSError``."""
    path = err.filename if err.filename is not None else "a file of the run"
    reason = err.strerror or str(err) or type(err).__name__
    advice = _OS_ADVICE.get(err.errno, "fix that, then rerun the same command")
    return " ".join(f"{path}: {reason}; {advice}".split())
