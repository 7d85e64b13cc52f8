"""The three MLPerf log line formats, read into one kind of record.

    :::MLPv0.5.0 gnmt 1544232771.436 (estimator.py:502) run_start           v0.5: seconds, JSON value or none
    :::MLPv0.5.0 ncf 1542310145.614 (NeuralCFexample.scala:509) run_stop: {"success": true}
    :::MLL 1560822378.320 run_start: {"value": null, "metadata": {"file": "train.py", ...}}     v0.6: seconds
    :::MLLOG {"namespace": "", "time_ms": 1593019143723, "key": "run_start", ...}              v0.7 and later

Each line is read the way mlperf_logging's parsers read it (the record starts at the last token of
the line, so a rank prefix or shell noise before it is ignored); unlike them, one unreadable line is
counted and named, not fatal, so a report over many files can keep what can be trusted.

    python -m harness.check.show format FILE     # the format and the first records of a log

JSON a user's files hold (`loads`), a log line's record too, is read as one kind of failure: a value nested
deeper than Python's parser can follow (a 6 kB line of 3000 brackets) raises RecursionError, which every reader
would otherwise let through as a traceback; such a line is counted as one that is not valid JSON.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional


def loads(text: str) -> Any:
    """json.loads, with nesting too deep to parse raised as the ValueError any other bad JSON raises."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deep to read") from None


MLLOG, MLL, V05 = ":::MLLOG ", ":::MLL ", ":::MLPv0.5.0 "
ROUND_OF = {V05: "v0.5", MLL: "v0.6", MLLOG: "v0.7+"}  # MLLOG is every round from v0.7 on
NAME_OF = {V05: "MLPv0.5.0", MLL: "MLL", MLLOG: "MLLOG"}
# v0.5: "<benchmark> <unix seconds> (<file>:<line>) <key>[: <value>]"
# Google's v0.5 ResNet logs write a space before the colon of their deferred values ("opt_learning_rate : {...}")
_V05 = re.compile(r"(\S+) ([0-9.]+) \((.*?)\) ([A-Za-z0-9_]+)(?:\s*:\s*(.*))?$")
# v0.6: "<unix seconds> <key>: <json>", as mlperf_logging's ruleset_060 parser reads it
_MLL = re.compile(r"([0-9.]+) ([A-Za-z0-9_]+) ?:\s+(.+)$")


@dataclass(slots=True)
class Record:
    lineno: int
    key: str
    value: Any
    meta: dict
    t: float  # milliseconds since the epoch, whatever unit the line used


@dataclass
class Lines:
    """What a log's lines hold: its format (the token of its records), the records, and the lines
    that could not be read, by kind."""

    token: Optional[str] = None
    records: list[Record] = field(default_factory=list)
    bad_json: list[int] = field(default_factory=list)
    no_time: list[int] = field(default_factory=list)
    seconds_based: bool = False  # MLLOG records with 'time_s' instead of 'time_ms'
    mixed: list[str] = field(default_factory=list)  # other tokens met in a file of one format
    benchmark: Optional[str] = None  # v0.5 names it on every line

    @property
    def round(self) -> Optional[str]:
        return ROUND_OF.get(self.token) if self.token else None

    @property
    def format(self) -> Optional[str]:
        return NAME_OF.get(self.token) if self.token else None


# The JSON of the last file's MLLOG records, by their text: the official checker's parser decodes the same
# lines again (harness.results.read.official reads them from here), and one text decodes to one value whichever
# file it came from, so the cache can never give a line another's value.
_DECODED: dict[str, Any] = {}
MISSING = object()


def decoded(text: str) -> Any:
    """The value json.loads gave the record text `text` (stripped) in the last file read, or MISSING."""
    return _DECODED.get(text, MISSING)


def read(lines: Iterable[str]) -> Lines:
    out = Lines()
    _DECODED.clear()
    echo: tuple[int, str] = (-1, "")  # the last v0.5 record's line and text, and what came before its token
    echo_prefix = ""
    for lineno, line in enumerate(lines, start=1):
        if ":::ML" not in line:  # one search for the many lines that are not log records
            continue
        at = line.rfind(MLLOG)
        if at >= 0:
            _mllog(out, lineno, line[at + len(MLLOG):])
            token = MLLOG
        elif (at := line.rfind(MLL)) >= 0:
            _mll(out, lineno, line[at + len(MLL):])
            token = MLL
        elif (at := line.find(V05)) >= 0:
            text = line[at + len(V05):].strip()
            # NVIDIA's v0.5 MXNet logs print each record twice, once bare and once through Python's logging
            # ("INFO:mlperf_compliance::::MLPv0.5.0 ..."): the same text on the next line, prefixed otherwise, is
            # that record's echo, not a second event (two run_starts made each log read as two runs)
            if echo == (lineno - 1, text) and line[:at] != echo_prefix:
                continue
            echo, echo_prefix = (lineno, text), line[:at]
            _v05(out, lineno, text)
            token = V05
        else:
            continue
        if out.token is None:
            out.token = token
        elif token != out.token and NAME_OF[token] not in out.mixed:
            out.mixed.append(NAME_OF[token])
    return out


def _mllog(out: Lines, lineno: int, text: str) -> None:
    try:
        r = loads(text)
    except ValueError:
        out.bad_json.append(lineno)
        return
    _DECODED[text.strip()] = r
    if not isinstance(r, dict) or not isinstance(r.get("key"), str):
        out.bad_json.append(lineno)
        return
    if "time_ms" in r:
        t = r["time_ms"]
    elif "time_s" in r:
        out.seconds_based = True
        t = r["time_s"] * 1000.0 if _number(r["time_s"]) else None
    else:
        t = None
    if not _number(t):
        out.no_time.append(lineno)
        return
    meta = r.get("metadata")
    out.records.append(Record(lineno, r["key"], r.get("value"), meta if isinstance(meta, dict) else {}, float(t)))


def _mll(out: Lines, lineno: int, text: str) -> None:
    m = _MLL.match(text.strip())
    if m is None:
        out.bad_json.append(lineno)
        return
    try:
        body = loads(m.group(3))
        t = float(m.group(1)) * 1000.0
    except ValueError:
        out.bad_json.append(lineno)
        return
    if not isinstance(body, dict):
        out.bad_json.append(lineno)
        return
    meta = body.get("metadata")
    out.records.append(Record(lineno, m.group(2), body.get("value"), meta if isinstance(meta, dict) else {}, t))


def _v05(out: Lines, lineno: int, text: str) -> None:
    m = _V05.match(text.strip())
    if m is None:
        out.bad_json.append(lineno)
        return
    try:
        t = float(m.group(2)) * 1000.0
    except ValueError:
        out.no_time.append(lineno)
        return
    raw = m.group(5)
    value: Any = None
    if raw is not None:
        try:
            value = loads(raw)
        except ValueError:
            value = raw.strip()  # v0.5 loggers wrote some values as bare words: kept as text
    out.benchmark = out.benchmark or m.group(1)
    out.records.append(Record(lineno, m.group(4), value, {}, t))


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)
