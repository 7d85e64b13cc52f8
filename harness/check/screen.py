"""`python -m harness.check.screen RULES...`: the keys of official rules files that choose further rules files,
and the values each may take. The screen itself lives in harness.results.read.screen (the report screens the logs
it checks too)."""
from __future__ import annotations

import sys

from harness.results.read.screen import MAX_LINE, long_line, main, path_choosing_keys, refused_value

__all__ = ["MAX_LINE", "long_line", "path_choosing_keys", "refused_value", "main"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
