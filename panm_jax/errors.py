"""``UserError``: a mistake in what the user gave (an argument, a setting, a file).

The ``panm-jax`` command line prints such an error as one line, ``error: ...``,
and exits with code 2 (with ``--debug``, the traceback too); any other exception
is a bug and keeps its traceback. Messages name the argument, field or file,
what was expected and what was given.
"""

from __future__ import annotations

__all__ = ["UserError"]


class UserError(ValueError):
    """A wrong argument, setting or file, named in the message."""
