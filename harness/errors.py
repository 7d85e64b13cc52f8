"""The errors a user can fix, each with a one-line message that says how."""
from __future__ import annotations


class ConfigError(ValueError):
    """A bad option or value; the message is one line that says how to fix it."""
