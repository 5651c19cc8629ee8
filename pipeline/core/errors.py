"""Errors that end a command before any work starts (exit status 2)."""

from __future__ import annotations

__all__ = ["ConfigError", "TracejudgeError"]


class TracejudgeError(Exception):
    """Base class of tracejudge's own errors."""


class ConfigError(TracejudgeError):
    """A config or its overrides are invalid.

    `str(error)` names the file, the key path (and line when known) and what
    was expected, one problem per line.
    """
