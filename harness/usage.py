"""A command's usage text where `python -OO` dropped docstrings: every command's and generator's --help,
and the scripts' under scripts/ (their argparse description is their docstring's first line).

A leaf of the standard library only, so that a script (a plain PyTorch baseline among them) reads it with
the checkout on its path and nothing of the harness's dependencies installed.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path


def module_doc(name: str) -> str:
    """The docstring of module `name` (a command's usage, a generator's description), read from its source
    where `python -OO` dropped it: every command's --help, and harness.report's and harness.check's very
    start, failed with an AttributeError on None under -OO. A script run by path passes `__name__`
    ("__main__"), whose module holds the script's file."""
    module = sys.modules[name]
    if module.__doc__:
        return module.__doc__
    try:
        source = Path(module.__file__ or "").read_text(encoding="utf-8")
        return ast.get_docstring(ast.parse(source), clean=False) or ""
    except (OSError, SyntaxError, ValueError):
        return ""
