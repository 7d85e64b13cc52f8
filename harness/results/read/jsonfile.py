"""JSON a user's files hold, read as one kind of failure: a file nested deeper than Python's parser can
follow raises RecursionError, which every reader would otherwise let through as a traceback."""
from __future__ import annotations

import json
from typing import Any


def loads(text: str) -> Any:
    """json.loads, with nesting too deep to parse raised as the ValueError any other bad JSON raises."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deep to read") from None
