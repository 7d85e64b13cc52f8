"""Rank 0's MLPerf log for one run, written through mlperf_logging.mllog.

mllog's module-level logger is shared by the whole process and appends to whatever files were
configured before, so two runs in one process (a Hydra sweep) would mix their lines. Each run
therefore gets its own MLLogger around a private logging.Logger whose only handler writes a new
file, created exclusively so that an existing log is never appended to. The handler writes each
record whole or not at all (harness/files.py): a full disk leaves the log ending at its last
whole record and raises DiskFull into the run, which ends it. A value that is not a number (a NaN
loss) is logged as null, so that every line is strict JSON.

    python -m harness.train model=ncf seed=1 && python -m harness.check outputs/
"""
from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any, Optional

from mlperf_logging.mllog import constants, mllog

from harness import files

_REPO_ROOT = str(Path(__file__).resolve().parent.parent)


class MLPerfLog:
    """Events of one run; a disabled log (other ranks) accepts the same calls and writes nothing."""

    def __init__(self, path: Optional[Path]):
        self.path = path
        self._handler: Optional[_WholeLines] = None
        self._mllog: Optional[mllog.MLLogger] = None
        if path is None:
            return
        logger = logging.Logger(f"mlperf_log[{path}]")  # not registered with logging: nothing else writes here
        logger.propagate = False
        self._handler = _WholeLines(path)
        self._handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(self._handler)
        # stack offset 3 skips event/_log here and mllog's own frame: each line records the
        # harness code that logged it
        self._mllog = mllog.MLLogger(logger=logger, default_stack_offset=3, root_dir=_REPO_ROOT)

    @property
    def enabled(self) -> bool:
        return self._mllog is not None

    def event(self, key: str, value: Any = None, metadata: Optional[dict] = None) -> int:
        return self._log("event", key, value, metadata)

    def start(self, key: str, value: Any = None, metadata: Optional[dict] = None) -> int:
        return self._log("start", key, value, metadata)

    def end(self, key: str, value: Any = None, metadata: Optional[dict] = None) -> int:
        return self._log("end", key, value, metadata)

    def _log(self, kind: str, key: str, value: Any, metadata: Optional[dict]) -> int:
        """Log one line and return its time_ms, so results are computed from the logged times."""
        time_ms = int(time.time() * 1e3)
        if self._mllog is not None and self._handler is not None:
            self._handler.failed = None
            getattr(self._mllog, kind)(key, _finite(value), metadata=_finite(metadata), time_ms=time_ms)
            if self._handler.failed is not None:  # mllog catches every error of a write: raise it here
                raise self._handler.failed
        return time_ms

    def close(self) -> None:
        if self._handler is not None:
            self._handler.close()
            self._handler = None
            self._mllog = None


class _WholeLines(logging.Handler):
    """A logging handler that appends each record to a new file as one whole line (files.RecordFile).
    mllog catches any error of a write and logs "Failed to encode" in its place: the handler keeps
    the error instead (`failed`), writes no such line, and MLPerfLog raises it to the loop."""

    def __init__(self, path: Path):
        super().__init__()
        self.file = files.RecordFile(path)
        self.failed: Optional[Exception] = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.failed is not None:
            return  # mllog's account of the failure: not a record
        if record.levelno >= logging.ERROR:
            self.failed = ValueError(f"mlperf.log: {record.getMessage().splitlines()[0]}")
            return
        try:
            self.file.write_line(self.format(record))
        except OSError as err:  # DiskFull: the file ends at its last whole line
            self.failed = err

    def close(self) -> None:
        self.file.close()
        super().close()


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


# Re-exported so the loop names every key through mllog's own constants.
C = constants
TRACKED_STATS = "tracked_stats"  # per-epoch throughput and loss, the key NVIDIA's logs use
