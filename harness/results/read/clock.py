"""Whether a log's clock can be an MLPerf round's: milliseconds since 1970, between the first round (2018)
and 2100. A clock outside that span is a fault that keeps the run out of every score (seconds written as
time_ms read as January 1970, and would make a run 1000x faster than it was), with one exception a
published round holds: timed records that count milliseconds from a clock in seconds.

NVIDIA's v0.7 HugeCTR DLRM logs (training_results_v0.7, `*_merlin_hugectr/dlrm`) were written after the run
by a formatter that stamps its own records in real milliseconds (cache_clear, submission_*, 2020-06-20) and
the run's events at the run's start in seconds plus each event's milliseconds from HugeCTR's own timer
(init_start 1592669539, run_start 1592985147 = +315,608 ms, run_stop +514,802 ms). Read as milliseconds from
that start, the run ends before the formatter wrote its records; read as seconds it would end days after
them. The official summarizer reads such a run's time in milliseconds (3.32 minutes, the published result),
and so does the report, with a warning that its dates are not real."""
from __future__ import annotations

import datetime
from typing import Sequence

from harness.results.read.formats import Record
from harness.results.read.summary import RunSummary

FIRST_ROUND_MS = 1_514_764_800_000  # 2018-01-01 UTC: MLPerf Training's first round (v0.5) ran in 2018
LAST_PLAUSIBLE_MS = 4_102_444_800_000  # 2100-01-01 UTC: microseconds written as time_ms read as the year 50,000
EPOCH_LIMIT_MS = 253_402_300_799_000  # 9999-12-31: a date beyond it has no calendar day to name
SLACK_MS = 60_000  # how far the run, read from a seconds clock, may stray outside the log's real-clock records


def _day(t: float) -> str:
    if -EPOCH_LIMIT_MS < t < EPOCH_LIMIT_MS:
        return datetime.datetime.fromtimestamp(t / 1000, datetime.timezone.utc).strftime("%Y-%m-%d")
    return f"time {t:g} ms"


def _plausible(t: float) -> bool:
    return FIRST_ROUND_MS <= t <= LAST_PLAUSIBLE_MS


def _offsets_from_seconds(records: Sequence[Record]) -> bool:
    """Whether the log's early-clock records are milliseconds counted from a start written in seconds: read so,
    the first of them falls among the records stamped in real milliseconds and the last does not end after
    them; read as seconds, it would."""
    real = [r.t for r in records if _plausible(r.t)]
    low = [r.t for r in records if 0 < r.t < FIRST_ROUND_MS]
    if not real or not low:
        return False
    start, first, last = min(low) * 1000, min(low), max(low)
    lo, hi = min(real) - SLACK_MS, max(real) + SLACK_MS
    return lo <= start <= hi and start + (last - first) <= hi < last * 1000


def judge(run: RunSummary, records: Sequence[Record]) -> None:
    """A fault (or, for milliseconds counted from a seconds clock, a warning) where run_start's clock cannot be
    a round's."""
    t = run.run_start_ms
    if t is None or _plausible(t):
        return
    if t < FIRST_ROUND_MS and _offsets_from_seconds(records):
        real = min(r.t for r in records if _plausible(r.t))
        run.warnings.append(f"its clock reads {_day(t)} at run_start: its timed records count milliseconds from a "
                            f"start written in seconds (its records stamped in milliseconds date it {_day(real)}); "
                            "its time is read in milliseconds, as the official summarizer reads it, its dates are not")
        return
    why = "before MLPerf's first round (2018)" if t < FIRST_ROUND_MS else "after 2100"
    run.faults.append(f"its clock reads {_day(t)} at run_start, {why}: not scored (its timestamps are not "
                      "milliseconds since 1970; seconds written as time_ms?)")
    run.throughput = None  # a rate over a clock that is not milliseconds is no rate
