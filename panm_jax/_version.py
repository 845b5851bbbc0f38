"""The package's version, in a module of its own so that sub-packages read it without importing the root."""

__version__ = "0.1.0"
