"""The ``panm-jax`` command line: a thin layer over the library.

Each sub-command lives beside what it drives (``panm_jax/<layer>/cli.py``) and
exposes ``register(subparsers)``; this file only collects them. A sub-command
module that is not there yet is left out of ``--help``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from panm_jax import __version__
from panm_jax.train.allocator import configure_from_environment

# Modules that contribute sub-commands, in the order --help lists them.
COMMAND_MODULES = (
    "panm_jax.train.cli",
    "panm_jax.tasks.cli",
    "panm_jax.models.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="panm-jax",
        description="Memory-augmented neural networks in JAX: NTM, DNC, neural Stack/Queue/DeQue and PANM.",
    )
    parser.add_argument("--version", action="version", version=f"panm-jax {__version__}")
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
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
