"""The ``panm-jax`` command line: a thin layer over the library.

Each sub-command lives beside what it drives (``panm_jax/<layer>/cli.py``) and
exposes ``register(subparsers)``; this file only collects them. A sub-command
module that is not there yet is left out of ``--help``.

A user's mistake (a wrong argument, setting or file) prints one line, ``error: ...``,
on stderr and exits with code 2; ``--debug`` prints its traceback too. Any other
exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback

from panm_jax import __version__
from panm_jax.errors import UserError
from panm_jax.train.allocator import configure_from_environment

# Modules that contribute sub-commands, in the order --help lists them.
COMMAND_MODULES = (
    "panm_jax.train.cli",
    "panm_jax.tasks.cli",
    "panm_jax.models.cli",
)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line (``error: argument --seed: ...``) and exit code 2."""

    def error(self, message: str):
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr, flush=True)
        raise SystemExit(2)


def user_errors() -> tuple[type[BaseException], ...]:
    """The exception types that are a user's mistake, not a bug."""
    from panm_jax.tasks.base import TaskOptionError, UnknownTaskError
    from panm_jax.train.checkpoint import CheckpointError
    from panm_jax.train.lock import WorkdirBusy

    return (UserError, CheckpointError, WorkdirBusy, TaskOptionError, UnknownTaskError)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="panm-jax",
        description="Memory-augmented neural networks in JAX: NTM, DNC, neural Stack/Queue/DeQue and PANM.",
    )
    parser.add_argument("--version", action="version", version=f"panm-jax {__version__}")
    parser.add_argument("--debug", action="store_true", help="print the traceback of an error too")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name != name:
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    configure_from_environment()  # PANM_JAX_MALLOC=keep, before any computation (panm_jax/train/allocator.py)
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


if __name__ == "__main__":
    sys.exit(main())
