"""A bench cell whose process ended without writing its own result.json: the record the bench writes for
it, and what the run could not clean up.

A run that a signal stops writes its own record (aborted, `interrupted (SIGTERM)`). One killed before it
could (SIGKILL: a SIGTERM the run could not act on within the bench's grace, such as one landing inside a
long CPU step) wrote nothing: the bench records it as aborted with the signal that ended it, not as a
failure whose reason would be the last line of its log. The run's `.reserve` (harness/files.py Reserve:
room held for its own end, released by the run as it ends) is left behind by such a process; the bench,
which owns the cell's folder, removes it once the process has ended.
"""
from __future__ import annotations

import signal
from pathlib import Path
from typing import Optional

RESERVE = ".reserve"  # harness/run/job.py: files.Reserve(run_dir / ".reserve")


def signal_of(returncode: Optional[int]) -> Optional[signal.Signals]:
    """The signal that ended a process: a negative returncode (subprocess.Popen's, and a forked cell's),
    or 128 + the signal's number (a shell's convention, and harness.train's own status when stopped)."""
    if returncode is None or returncode == 0:
        return None
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    try:
        return signal.Signals(number) if number else None
    except ValueError:  # 128 + a number no signal has: an ordinary exit status
        return None


def reason(returncode: Optional[int], log: Path) -> Optional[str]:
    """Why a cell's process that exited with `returncode` has no result.json of its own: the signal that
    ended it, else its log's last error line (or last line), else its exit status; None for a clean exit."""
    stopped = signal_of(returncode)
    if stopped is not None:
        return f"interrupted ({stopped.name}): the process ended before it wrote its result.json"
    if returncode == 0:
        return None
    return last_line(log) or f"exit status {returncode}"


def last_line(path: Path) -> Optional[str]:
    """The log's last line that names an error, else its last line; None for an empty or missing log."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines)[-1] if errors or lines else None


def drop_reserve(run_dir: Path) -> None:
    """Remove the run's reserve once its process has ended (a run that ended normally removed it already)."""
    try:
        (run_dir / RESERVE).unlink(missing_ok=True)
    except OSError:  # a folder gone or unwritable: nothing more the bench can do about it
        pass
