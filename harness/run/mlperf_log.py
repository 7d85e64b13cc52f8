"""Rank 0's MLPerf log for one run, written through mlperf_logging.mllog.

mllog's module-level logger is shared by the whole process and appends to whatever files were
configured before, so two runs in one process (a Hydra sweep) would mix their lines. Each run
therefore gets its own MLLogger around a private logging.Logger whose only handler writes a new
file, opened with mode "x" so that an existing log is never appended to.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Optional

from mlperf_logging.mllog import constants, mllog

_REPO_ROOT = str(Path(__file__).resolve().parent.parent)


class MLPerfLog:
    """Events of one run; a disabled log (other ranks) accepts the same calls and writes nothing."""

    def __init__(self, path: Optional[Path]):
        self.path = path
        self._handler: Optional[logging.Handler] = None
        self._mllog: Optional[mllog.MLLogger] = None
        if path is None:
            return
        logger = logging.Logger(f"mlperf_log[{path}]")  # not registered with logging: nothing else writes here
        logger.propagate = False
        self._handler = logging.FileHandler(path, mode="x", encoding="utf-8")
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
        if self._mllog is not None:
            getattr(self._mllog, kind)(key, value, metadata=metadata, time_ms=time_ms)
        return time_ms

    def close(self) -> None:
        if self._handler is not None:
            self._handler.close()
            self._handler = None
            self._mllog = None


# Re-exported so the loop names every key through mllog's own constants.
C = constants
TRACKED_STATS = "tracked_stats"  # per-epoch throughput and loss, the key NVIDIA's logs use
