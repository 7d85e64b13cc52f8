"""The logs under the paths a user names: what `harness.report` reads and `harness.check` checks.

A file is taken as named; a folder is searched for the harness's `mlperf.log` and MLPerf's
`result_*.txt` (any round's submission tree), and for the `result.json` of harness runs that have no
log (they failed before it began, or they measured throughput only). Links to folders are followed
(a run folder kept elsewhere and linked in is read), each real folder once, and each file once however
many of the paths lead to it (a folder and a link to it, by the file's real path): a link back to a
folder it lies in (a loop) is named and not followed. Only regular files are read: a folder, a pipe or a
device with a log's name is named as such (a pipe would block the reader forever). A harness run folder
(Hydra's .hydra/) with neither mlperf.log nor result.json is named as an incomplete run: killed before
its log began, it would otherwise vanish from a sweep's count.

    python -c "from harness.results.read.find import find_logs; print(find_logs(['outputs']))"
"""
from __future__ import annotations

import fnmatch
import os
import stat
from pathlib import Path
from typing import Iterable, Iterator

LOG_NAMES = ("mlperf.log",)
LOG_GLOBS = ("result_*.txt",)
NOT_A_FILE = "is not a regular file (a folder, a pipe or a device): not read"
NESTED = ("result_*.txt file(s) in a folder inside a benchmark's folder (a tree's results/<system>/<benchmark>/ "
          "holds its runs): outside MLPerf's submission layout, which its summarizer never reads: not read")
INCOMPLETE_RUN = ("a run folder with neither mlperf.log nor result.json: the run was killed before its log began "
                  "(SIGKILL, out of memory) or is still starting: an incomplete run")


def _is_log(name: str) -> bool:
    return name in LOG_NAMES or any(fnmatch.fnmatchcase(name, g) for g in LOG_GLOBS)


def _walk(root: Path, problems: list[tuple[str, str]]) -> Iterator[tuple[Path, bool]]:
    """(path, is a regular file) of every entry under root but folders (folders with a log's name
    too), links to folders followed, each real folder visited once."""
    seen: set[tuple[int, int]] = set()

    def visit(folder: Path, inside: frozenset[tuple[int, int]]) -> Iterator[tuple[Path, bool]]:
        try:
            st = folder.stat()
            key = (st.st_dev, st.st_ino)
            if key in inside:
                problems.append((str(folder), f"a link back to {folder.resolve()}, a folder it lies in (a loop): "
                                              "not followed"))
                return
            if key in seen:
                return  # a second way to a folder already searched: its logs count once
            seen.add(key)
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as err:
            problems.append((str(folder), f"cannot be searched: {err.strerror or err}"))
            return
        for entry in entries:
            path = Path(entry.path)
            try:
                if entry.is_dir(follow_symlinks=True):
                    if _is_log(entry.name):
                        yield path, False  # a folder with a log's name
                    yield from visit(path, inside | {key})
                    continue
                regular = stat.S_ISREG(os.stat(path).st_mode)
            except OSError:
                regular = False  # a dangling link: named below if it has a log's name
            yield path, regular

    yield from visit(root, frozenset())


def _nested(hits: list[tuple[Path, bool]]) -> set[Path]:
    """The `result_*.txt` files that lie in a folder below another folder that holds `result_*.txt` files
    itself: a copy of runs left inside a benchmark's folder (Habana's v1.0 tree has its BERT logs a second
    time under results/SYS-420GH-TNGR/resnet/bert/), which MLPerf's summarizer, reading
    results/*/*/result_*.txt, never sees; scored, they would be a system of their own."""
    results = [q for q, regular in hits if regular and q.name not in LOG_NAMES and "results" in q.parts[:-2]]
    holders = {q.parent for q in results}
    return {q for q in results if any(folder in holders for folder in q.parents[1:])}


def _incomplete_runs(found: list[tuple[Path, bool]]) -> list[Path]:
    """Harness run folders (Hydra's .hydra/config.yaml, written before the run starts) that hold neither
    mlperf.log nor result.json: a run ended by SIGKILL or the OOM killer before its log began writes neither."""
    runs = {q.parent.parent for q, regular in found if regular and q.name == "config.yaml" and q.parent.name == ".hydra"}
    ended = {q.parent for q, regular in found if q.name in ("mlperf.log", "result.json")}
    return sorted(runs - ended)


def _once(files: set[Path]) -> list[Path]:
    """Each file once, however many ways lead to it (a folder and a link to it, a file named twice): the
    first of its paths in sorted order, by the file's real path."""
    by_real: dict[str, Path] = {}
    for p in sorted(files):
        by_real.setdefault(os.path.realpath(p), p)
    return sorted(by_real.values())


def find_logs(paths: Iterable[str]) -> tuple[list[Path], list[Path], list[tuple[str, str]]]:
    """(MLPerf logs, result.json files of runs that have no log, (path, problem) for bad paths); a file
    reached by several paths (a folder and a link to it) is listed once."""
    logs: set[Path] = set()
    orphans: set[Path] = set()
    missing: list[tuple[str, str]] = []
    for name in paths:
        p = Path(name)
        if p.is_file():
            (orphans if p.name == "result.json" else logs).add(p)
        elif p.is_dir():
            found = list(_walk(p, missing))
            hits = [(q, regular) for q, regular in found if _is_log(q.name)]
            nested = _nested(hits)
            for folder in sorted({q.parent for q in nested}):
                missing.append((str(folder), f"{sum(q.parent == folder for q in nested)} {NESTED}"))
            hits = [(q, regular) for q, regular in hits if q not in nested]
            logs |= {q for q, regular in hits if regular}
            missing += [(str(q), NOT_A_FILE) for q, regular in hits if not regular]
            with_log = {q.parent for q, regular in hits if regular and q.name == "mlperf.log"}
            results = {q for q, regular in found if q.name == "result.json" and regular and q.parent not in with_log}
            killed = _incomplete_runs(found)
            if not hits and not results and not killed:
                missing.append((name, "no mlperf.log, result_*.txt or result.json under this folder"))
            missing += [(str(q), INCOMPLETE_RUN) for q in killed]
            orphans |= results
        elif p.exists():
            missing.append((name, NOT_A_FILE))
        elif p.is_symlink():
            missing.append((name, "a link that leads to no file (it loops, or what it names is gone): not read"))
        else:
            missing.append((name, "no such file or folder"))
    logs_once = _once(logs)
    logged = {os.path.realpath(p.parent) for p in logs_once if p.name == "mlperf.log"}
    return logs_once, [p for p in _once(orphans) if os.path.realpath(p.parent) not in logged], missing


def files_read(paths: Iterable[str]) -> set[Path]:
    """Every file, resolved, that reading `paths` may open: the logs and result.json files find_logs
    gives, and beside each log what is read with it (the run's result.json, system.json and config.yaml; a tree's
    scaling.json, entry.json, first_50_success_file and <org>/systems/<system>.json). An output
    written over one of them would change, or remove, the runs it reports."""
    logs, orphans, _ = find_logs(paths)
    found = {Path(p) for p in paths if Path(p).is_file()} | set(orphans)
    for log in logs:
        folder, system = log.parent, log.parent.parent
        found |= {log, folder / "result.json", folder / "system.json", folder / "config.yaml", folder / "scaling.json",
                  system / "entry.json", system / "first_50_success_file",
                  system.parent.parent / "systems" / f"{system.name}.json"}
    return {p.resolve() for p in found if p.is_file()}
