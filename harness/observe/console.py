"""Where each process's log lines go.

A single run: Hydra's logging config (conf/hydra/job_logging/harness.yaml) sends progress and results
to stdout, warnings and errors to stderr, and everything to train.log in the run directory.
Several ranks: rank 0 keeps that (train.log is rank 0's log, with the launcher's lines); every other
rank writes its full log to rank_<r>.log and shows only its warnings and errors, prefixed with its
rank, on stderr. So the console reads like one run, and nothing a rank said is lost.
A record logged with `extra=FILE_ONLY` (a traceback) goes to the log file alone: the console says
the cause in one line.
"""
from __future__ import annotations

import logging
import sys
from pathlib import Path

from harness.signals import readable_console

FILE_FORMAT = "[%(asctime)s %(levelname)s %(name)s] %(message)s"


FILE_ONLY = {"file_only": True}


class BelowWarning(logging.Filter):
    """stdout: progress and results (warnings and errors go to stderr)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.WARNING and not getattr(record, "file_only", False)


class NotFileOnly(logging.Filter):
    """stderr: everything but what belongs in the log file alone."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, "file_only", False)


def rank_log_name(rank: int) -> str:
    return "train.log" if rank == 0 else f"rank_{rank}.log"


def setup_rank_logging(rank: int, run_dir: Path) -> None:
    """Replace this process's log handlers with the ones its rank gets (see the module docstring)."""
    readable_console()  # a spawned rank did not start as a command (harness.signals.command_start)
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    root.setLevel(logging.INFO)
    file_handler = logging.FileHandler(run_dir / rank_log_name(rank), mode="a", encoding="utf-8", errors="surrogateescape")
    file_handler.setFormatter(logging.Formatter(FILE_FORMAT.replace("[", f"[rank {rank} ", 1)))
    root.addHandler(file_handler)
    err = logging.StreamHandler(sys.stderr)
    err.setLevel(logging.WARNING)
    err.addFilter(NotFileOnly())
    err.setFormatter(logging.Formatter("%(message)s" if rank == 0 else f"[rank {rank}] %(message)s"))
    root.addHandler(err)
    if rank == 0:
        out = logging.StreamHandler(sys.stdout)
        out.addFilter(BelowWarning())
        out.setFormatter(logging.Formatter("%(message)s"))
        root.addHandler(out)
    from harness import files

    files.watch_logging()  # a full disk ends the run instead of a traceback per line
