"""The logs under the paths a user names: what `harness.report` reads and `harness.check` checks.

A file is taken as named; a folder is searched for the harness's `mlperf.log` and MLPerf's
`result_*.txt` (any round's submission tree), and for the `result.json` of harness runs that have no
log (they failed before it began, or they measured throughput only).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

LOG_NAMES = ("mlperf.log",)
LOG_GLOBS = ("result_*.txt",)


def find_logs(paths: Iterable[str]) -> tuple[list[Path], list[Path], list[tuple[str, str]]]:
    """(MLPerf logs, result.json files of runs that have no log, (path, problem) for bad paths)."""
    logs: set[Path] = set()
    orphans: set[Path] = set()
    missing: list[tuple[str, str]] = []
    for name in paths:
        p = Path(name)
        if p.is_file():
            (orphans if p.name == "result.json" else logs).add(p)
        elif p.is_dir():
            hits = {q for n in LOG_NAMES for q in p.rglob(n)} | {q for g in LOG_GLOBS for q in p.rglob(g)}
            results = {q for q in p.rglob("result.json") if not (q.parent / "mlperf.log").exists()}
            if not hits and not results:
                missing.append((name, "no mlperf.log, result_*.txt or result.json under this folder"))
            logs |= {q for q in hits if q.is_file()}
            orphans |= results
        else:
            missing.append((name, "no such file or folder"))
    return sorted(logs), sorted(orphans), missing
