"""Console routing for the logging config in conf/hydra/job_logging: warnings and errors go to
stderr, everything else to stdout, so `2>/dev/null` keeps the progress and `>/dev/null` the errors."""
from __future__ import annotations

import logging


class BelowWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.WARNING
