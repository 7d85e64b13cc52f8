"""The official compliance checker's rule code, compiled once per process.

mlp_compliance evaluates each rule of its rules files as a string, `eval(test.strip(), state, {...})`
and `exec(code.strip(), ...)`, for every log line its key matches: Python compiles the same few hundred
strings again for each of a round's million lines, which was about half of the time the checker took
over a whole published round (v3.1: 1.7 million evaluations). While it checks a log
(harness.results.read.official.fast_checker), mlp_compliance is given an `eval` and an `exec` that
compile each distinct string once, with the same mode and no inherited compiler flags (mlp_compliance's only future import, print_function, is the default in Python 3), and run the
compiled code with the globals and locals the checker passes: the checker runs the same code on the same
state, so its verdicts and messages are unchanged (tests/results/read/test_official.py holds them equal to the
checker's own command). A string that does not compile raises the same SyntaxError in the same place, which
the checker reports as it always has.

    python -m harness.report ROUND        # every log checked, each rule compiled once
"""
from __future__ import annotations

import builtins
from types import CodeType
from typing import Any, Optional

LIMIT = 4096  # distinct strings kept: the rules files of every ruleset hold far fewer

_compiled: dict[tuple[str, str], CodeType] = {}


def _code(source: Any, mode: str) -> Any:
    """The compiled code of a string (cached); anything else (a code object) as it is."""
    if not isinstance(source, str):
        return source
    key = (source, mode)
    code = _compiled.get(key)
    if code is None:
        code = compile(source, "<string>", mode, dont_inherit=True)
        if len(_compiled) < LIMIT:
            _compiled[key] = code
    return code


def cached_eval(source: Any, globals: Optional[dict] = None, locals: Optional[Any] = None) -> Any:
    return builtins.eval(_code(source, "eval"), globals, locals)


def cached_exec(source: Any, globals: Optional[dict] = None, locals: Optional[Any] = None) -> None:
    builtins.exec(_code(source, "exec"), globals, locals)
