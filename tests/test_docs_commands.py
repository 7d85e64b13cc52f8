"""Commands in the docs and docstrings run as written when pasted into bash."""
from __future__ import annotations

import re

from tests.helpers import REPO

# an unquoted seed=range(1,6) is a bash syntax error: the parentheses must be quoted
UNQUOTED_RANGE = re.compile(r"(?<!['\"])\b[\w.]+=range\(")


def test_range_sweeps_are_quoted_everywhere_a_user_copies_a_command_from():
    files = [REPO / "README.md", *REPO.glob("docs/**/*.md"), *REPO.glob("harness/**/*.py"),
             *REPO.glob("conf/**/*.yaml"), *REPO.glob("reference_models/*/conf/**/*.yaml"),
             *REPO.glob("reference_models/**/*.py"), *REPO.glob("scripts/**/*.py")]
    bad = [f"{p.relative_to(REPO)}:{n}: {line.strip()}" for p in files
           for n, line in enumerate(p.read_text().splitlines(), 1) if UNQUOTED_RANGE.search(line)]
    assert bad == []
