"""A bench folder's files read back, for --resume and --tables-only: bench.json (the machine that ran the
cells), bench.jsonl (one line per cell run) and each cell's runs/<cell>/result.json. A file or line that a
kill or a full disk left damaged (cut short, NUL bytes, JSON that is not an object) is named in one line
on stderr and skipped: the tables are made from the good cells, and --resume runs a damaged cell again.

    python -c "from harness.bench.readback import damaged_results; print(damaged_results('outputs/bench/X'))"
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional


def _warn(text: str) -> None:
    print(f"harness.bench: warning: {text}", file=sys.stderr)


def _object(text: str) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    """(the JSON object the text holds, None) or (None, why it holds none)."""
    try:
        data = json.loads(text)
    except ValueError as err:
        return None, f"not JSON ({err})"
    if not isinstance(data, dict):
        return None, f"a JSON {type(data).__name__}, not an object"
    return data, None


def _text(path: Path) -> tuple[Optional[str], Optional[str]]:
    try:
        return path.read_text(encoding="utf-8", errors="replace"), None
    except OSError as err:
        return None, f"cannot be read ({err.strerror or err})"


def saved_machine(out: Path) -> dict[str, Any]:
    """bench.json's description of the machine that ran the cells ({} where there is none or it is damaged)."""
    path = out / "bench.json"
    if not path.is_file():
        return {}
    text, why = _text(path)
    data, why = _object(text) if text is not None else (None, why)
    if data is None:
        _warn(f"{path}: {why}: skipped; the tables name this machine instead")
        return {}
    return {k: v for k, v in data.items() if k != "cells"}


def cell_lines(path: Path) -> list[dict[str, Any]]:
    """bench.jsonl's cells, one JSON object a line; each damaged line is named and skipped."""
    if not path.is_file():
        return []
    text, why = _text(path)
    if text is None:
        _warn(f"{path}: {why}: skipped")
        return []
    cells = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        data, why = _object(line) if "\0" not in line else (None, "NUL bytes (a write cut short)")
        if data is None:
            _warn(f"{path} line {number}: {why}: skipped")
        else:
            cells.append(data)
    return cells


def seconds(cells: list[dict[str, Any]]) -> float:
    """The cells' wall time, counting what is a number of seconds."""
    return sum(c["seconds"] for c in cells if isinstance(c.get("seconds"), (int, float))
               and not isinstance(c.get("seconds"), bool) and c["seconds"] >= 0)


def succeeded(path: Path, planned: Optional[list[str]] = None) -> bool:
    """A cell's result.json says success (a damaged one does not: --resume runs the cell again), is a
    throughput measurement with every field well typed, and, given `planned` (the overrides the cell runs
    with now), was measured with them: a cell measured at another batch, window or seed is measured again."""
    from harness import record

    text, _ = _text(path) if path.is_file() else (None, None)
    data, _ = _object(text) if text is not None else (None, None)
    if data is None or data.get("status") != "success" or data.get("mode") != "throughput" or record.problems(data):
        return False
    ran = [c for c in data.get("command") or () if not str(c).startswith(("output_root=", "hydra."))]
    return planned is None or ran == planned


def damaged_results(out: str | Path) -> list[Path]:
    """The cells' result.json files under OUT/runs that hold no JSON object, or one with a badly typed field,
    each named on stderr: the tables leave them out."""
    from harness import record

    bad = []
    for path in sorted(Path(out).glob("runs/*/result.json")):
        text, why = _text(path)
        data, why = _object(text) if text is not None else (None, why)
        if data is not None and record.problems(data):
            data, why = None, "; ".join(record.problems(data))
        if data is None:
            _warn(f"{path}: {why}: the cell is left out of the tables (--resume runs it again)")
            bad.append(path)
    return bad
