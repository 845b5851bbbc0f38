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

Each exposes ``register(subparsers)``. A user's mistake (a wrong argument,
setting or file) prints one line, ``error: ...``, on stderr and exits with code
2; ``--debug`` prints its traceback too. Any other exception is a bug and keeps
its traceback.
"""

from __future__ import annotations

import argparse
import re
import sys
import traceback

from panm_jax import __version__
from panm_jax.checks import did_you_mean
from panm_jax.cli import evaluate, models, plot, tasks, train
from panm_jax.errors import UserError

__all__ = ["ArgumentParser", "build_parser", "main", "user_errors"]

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


def user_errors() -> tuple[type[BaseException], ...]:
    """The exception types that are a user's mistake, not a bug.

    ``UserError`` covers its subclasses: ``UnknownNameError`` (any registry) and
    ``TaskOptionError``. A checkpoint that fails its checks and a run folder
    held by another process are not bugs either.
    """
    from panm_jax.train.checkpoint import CheckpointError
    from panm_jax.train.lock import WorkdirBusy

    return (UserError, CheckpointError, WorkdirBusy)


def build_parser() -> argparse.ArgumentParser:
    """The ``panm-jax`` parser with every sub-command."""
    parser = ArgumentParser(
        prog="panm-jax",
        description="Memory-augmented neural networks in JAX: NTM, DNC, neural Stack/Queue/DeQue and PANM.",
    )
    parser.add_argument("--version", action="version", version=f"panm-jax {__version__}")
    parser.add_argument("--debug", action="store_true", help="print the traceback of an error too")
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
        return int(args.func(args) or 0)
    except Exception as err:
        if not isinstance(err, user_errors()):
            raise
        if args.debug:
            traceback.print_exc()
        message = " ".join(str(err).split())  # one line
        print(f"error: {message}", file=sys.stderr, flush=True)
        return 2
