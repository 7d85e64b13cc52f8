"""A torch.compile that fails falls back to the eager code, and the run says so in one line.

A model's fast path compiles parts of it on CUDA (harness/interface/fast_declaration.py); a compilation that
fails there (an operator Inductor cannot lower, a Triton build error, a graph dynamo cannot trace)
must not fail the run or the bench cell: dynamo's own `suppress_errors` runs the failing frame
eagerly. Its report of each failure (a warning with a traceback from torch._dynamo.convert_frame) is
kept here instead of printed, and the run names the first cause in one line and in result.json's
`fallback` (harness/run/throughput.py, harness/run/session.py).

    python -m harness.train model=resnet mode=throughput   # on CUDA, compiled by default
"""
from __future__ import annotations

import logging
from typing import Optional

# the logger that reports a frame dynamo could not compile, under suppress_errors
_REPORTER = "torch._dynamo.convert_frame"
_log = logging.getLogger("harness.compile")


class _Keep(logging.Filter):
    """Keeps the first line of each failure and drops dynamo's record (its traceback stays out of the console)."""

    def __init__(self) -> None:
        super().__init__()
        self.causes: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        cause = _first_line(record)
        if cause not in self.causes:
            self.causes.append(cause)
            _log.warning("warning: torch.compile failed and that part runs eagerly: %s", cause)
        return False


def _first_line(record: logging.LogRecord) -> str:
    err = record.exc_info[1] if record.exc_info else None
    text = f"{type(err).__name__}: {err}" if err is not None else record.getMessage()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0][:300] if lines else "no reason given"


_keep: Optional[_Keep] = None


def install() -> None:
    """From now on a failed compilation runs eagerly and is kept (call before the first compiled step)."""
    global _keep
    import torch._dynamo

    torch._dynamo.config.suppress_errors = True
    if _keep is None:
        _keep = _Keep()
        logging.getLogger(_REPORTER).addFilter(_keep)


def failures() -> list[str]:
    """The first line of each compilation that fell back to eager since install()."""
    return list(_keep.causes) if _keep is not None else []
