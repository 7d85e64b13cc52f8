"""MLPerf's score for a set of runs of one benchmark: the olympic mean of time to train.

The arithmetic is mlperf_logging's own (result_summarizer._compute_olympic_average, with the
dropped-run rule of _compute_strong_score_standalone), called rather than rewritten so the numbers
are the official ones to the last bit; the required run counts come from mlperf_logging's
benchmark_meta. Both are private to mlperf-logging, which is why its version is pinned exactly.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from mlperf_logging.benchmark_meta import get_result_file_counts

from harness.results.parse import RunSummary


@dataclass(frozen=True)
class Score:
    benchmark: str
    runs: int
    converged: int
    required: Optional[int]  # MLPerf's run count for this benchmark; None if MLPerf names none
    minutes: Optional[float]  # olympic mean of time to train; None when void
    note: str  # why the score is void, or what it stands on

    @property
    def count_ok(self) -> bool:
        return self.required is not None and self.runs >= self.required


def required_runs(benchmark: str) -> Optional[int]:
    return get_result_file_counts("training").get(benchmark)


def olympic_score(benchmark: str, runs: Sequence[RunSummary]) -> Score:
    """Drop the fastest and the slowest converged run; one run that did not converge (or cannot be
    scored) counts as the slowest, and more than one voids the score, as MLPerf scores."""
    from mlperf_logging.result_summarizer.result_summarizer import _compute_olympic_average

    minutes = [r.time_to_train_min for r in runs if r.converged and r.time_to_train_min is not None]
    dropped = len(runs) - len(minutes)
    required = required_runs(benchmark)
    max_dropped = 4 if benchmark == "unet3d" else 1  # as MLPerf's summarizer
    if not runs:
        return Score(benchmark, 0, 0, required, None, "no runs")
    if dropped > max_dropped:
        unscorable = sum(1 for r in runs if not r.scorable)
        why = f"{dropped - unscorable} did not converge" if dropped > unscorable else ""
        if unscorable:
            why = ", ".join(x for x in (why, f"{unscorable} cannot be scored (see problems)") if x)
        return Score(benchmark, len(runs), len(minutes), required, None,
                     f"void: {why}; MLPerf allows {max_dropped} such run(s)")
    value = _compute_olympic_average(sorted(minutes), dropped, max_dropped)
    if value is None:
        return Score(benchmark, len(runs), len(minutes), required, None,
                     "void: too few runs left once the fastest and slowest are dropped")
    kept = len(runs) - 2 * max_dropped
    note = f"olympic mean of {kept} runs"
    if dropped:
        note += f" ({dropped} not converged, counted as the slowest)"
    if required is not None and len(runs) < required:
        note += f"; MLPerf requires {required} runs, found {len(runs)}"
    return Score(benchmark, len(runs), len(minutes), required, value, note)
