"""The library's exceptions for a user's mistake.

``UserError``: a mistake in what the user gave (an argument, a setting, a
file). ``UnknownNameError``: a name that no registry holds (a model, a task, an
optimiser), one type whatever the registry. ``ConfigError``: a setting of a config, named by its
dotted field. The ``panm-jax`` command line
prints each as one line, ``error: ...``, and exits with code 2 (with
``--debug``, the traceback too); any other exception is a bug and keeps its
traceback. Messages name the argument, field or file, what was expected and
what was given.
"""

from __future__ import annotations

__all__ = ["ConfigError", "UnknownNameError", "UserError"]


class UserError(ValueError):
    """A wrong argument, setting or file, named in the message."""


class UnknownNameError(UserError):
    """A name that no registry holds; the message lists the known ones."""


class ConfigError(UserError):
    """An invalid setting; ``field`` is its dotted name (``optimizer.learning_rate``)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
