"""MLPerf's score for a set of runs of one benchmark, by the rules of the round its logs come from.

v0.6 on: the olympic mean of time to train. The arithmetic is mlperf_logging's own
(result_summarizer._compute_olympic_average, with the dropped-run rule of
_compute_strong_score_standalone), called rather than rewritten so the numbers are the official ones
to the last bit; the required run counts come from mlperf_logging's benchmark_meta. Both are private
to mlperf-logging, which is why its version is pinned exactly. The runs that count are the
summarizer's (RunSummary.counted: the logs its compliance checker passes); every other run of the
group is a dropped one. A submission folder's scaling.json multiplies the olympic mean, as the
summarizer does (from v2.0 on: harness.results.read.tree.scaling_factor).

v0.5 (its training rules): 5 runs for the vision benchmarks, 10 for translation and minigo, olympic
mean; NCF ran 100 times and scored the first 50 that converged (the submitter's first_50_success_file
where the tree has one, else the first 50 by result number), olympic mean of those 50.
Each score says which rule it applied, and records what its note stands on (harness.results.report.verdicts
writes the note).
"""
from __future__ import annotations

import re

from dataclasses import dataclass, replace
from typing import Optional, Sequence

from mlperf_logging.benchmark_meta import get_result_file_counts

from harness.results.read import tree
from harness.results.read.summary import RunSummary

V05_RUNS = {"resnet": 5, "ssd": 5, "maskrcnn": 5, "gnmt": 10, "transformer": 10, "minigo": 10, "ncf": 100}
V05_NCF_SCORED = 50
# the scoring rules, as labels
OLYMPIC, OLYMPIC_V05 = "olympic mean (MLPerf v0.6 on)", "olympic mean (MLPerf v0.5)"
NCF_V05 = f"MLPerf v0.5 NCF: the first {V05_NCF_SCORED} runs that converged, olympic mean"
# why a run of the group does not count
REJECTED, UNSCORABLE, NOT_CONVERGED = "rejected", "unscorable", "not converged"
# why a score is void
NO_RUNS, TOO_MANY_DROPPED, TOO_FEW_LEFT, TOO_FEW_CONVERGED = "no runs", "too many dropped", "too few left", "too few converged"


@dataclass(frozen=True)
class NcfChoice:
    """v0.5 NCF: which converged runs were scored: the submitter's first_50_success_file where it agrees with the
    logs, else the first by result number; a list that disagrees is not used (how many runs it names, and how
    many of those did not converge in these logs)."""

    used_list: bool
    listed: Optional[int] = None
    failed: Optional[int] = None


@dataclass(frozen=True)
class Score:
    benchmark: str
    runs: int
    converged: int
    required: Optional[int]  # MLPerf's run count for this benchmark; None if MLPerf names none
    minutes: Optional[float]  # olympic mean of time to train; None when void
    void: Optional[str] = None  # why there is no score (NO_RUNS, TOO_MANY_DROPPED, ...); None when scored
    kept: Optional[int] = None  # the runs the olympic mean averages
    dropped: tuple[tuple[str, int], ...] = ()  # the runs that do not count, by kind (REJECTED, ...), as first met
    max_dropped: int = 1  # the runs that may not count before the score is void
    ncf: Optional[NcfChoice] = None  # v0.5 NCF: which runs were scored
    rule: str = OLYMPIC  # the scoring rule applied
    scaling: float = 1.0  # the folder's scaling.json factor, already in `minutes`
    unscaled: Optional[float] = None  # the olympic mean before that factor
    scaling_problem: Optional[str] = None  # scaling.json cannot be applied: read.tree.scaling_factor's line

    @property
    def count_ok(self) -> bool:
        return self.required is not None and self.runs >= self.required


def required_runs(benchmark: str, round_: Optional[str] = None) -> Optional[int]:
    if round_ == "v0.5":
        return V05_RUNS.get(benchmark)
    return get_result_file_counts("training").get(benchmark)


def round_score(benchmark: str, runs: Sequence[RunSummary]) -> Score:
    """The score by the rules of the runs' round (v0.5 when every run comes from a v0.5 log)."""
    rounds = {r.round for r in runs}
    if rounds != {"v0.5"}:
        return scaled(olympic_score(benchmark, runs), runs)
    if benchmark != "ncf":
        return replace(olympic_score(benchmark, runs, V05_RUNS.get(benchmark)), rule=OLYMPIC_V05)
    return _v05_ncf(runs)


def _result_number(run: RunSummary) -> tuple:
    m = re.search(r"(\d+)\D*$", run.path)
    return (int(m.group(1)) if m else 1 << 60, run.path)


def _v05_ncf(runs: Sequence[RunSummary]) -> Score:
    converged = sorted((r for r in runs if r.converged), key=_result_number)
    chosen, choice = converged[:V05_NCF_SCORED], NcfChoice(False)
    if any(r.submitter_scored is not None for r in runs):
        listed = sorted((r for r in runs if r.submitter_scored), key=_result_number)
        failed = [r for r in listed if not r.converged]
        if len(listed) == V05_NCF_SCORED and not failed:
            chosen, choice = listed, NcfChoice(True)
        else:  # a list that disagrees with the logs it names cannot be what was scored
            choice = NcfChoice(False, len(listed), len(failed))
    required = V05_RUNS["ncf"]
    if len(chosen) < V05_NCF_SCORED:
        return Score("ncf", len(runs), len(converged), required, None, TOO_FEW_CONVERGED, ncf=choice, rule=NCF_V05)
    from mlperf_logging.result_summarizer.result_summarizer import _compute_olympic_average

    value = _compute_olympic_average(sorted(r.time_to_train_min or 0.0 for r in chosen), 0, 1)  # converged: timed
    return Score("ncf", len(runs), len(converged), required, value, kept=V05_NCF_SCORED - 2, ncf=choice, rule=NCF_V05)


def scaled(score: Score, runs: Sequence[RunSummary]) -> Score:
    """The score times its folder's scaling.json factor, where the runs are one submission folder's. In
    every round, as the installed summarizer applies it (_get_scaling_factor asks no version): the file
    came with v2.0's RCP rules, and no published tree before holds one."""
    folders = {r.folder for r in runs}
    if len(folders) != 1 or None in folders:
        return score
    (folder,) = folders
    factor, problem = tree.scaling_factor(str(folder))
    if problem:
        return replace(score, scaling_problem=problem)
    if factor == 1.0:
        return score
    if score.minutes is None:
        return replace(score, scaling=factor)
    # the summarizer's order: the olympic mean, then `score *= scaling_factor`
    return replace(score, minutes=score.minutes * factor, unscaled=score.minutes, scaling=factor)


def dropped_kinds(runs: Sequence[RunSummary]) -> tuple[tuple[str, int], ...]:
    """Why the runs that do not count were dropped, by kind, as first met: ((NOT_CONVERGED, 2), (REJECTED, 1))."""
    kinds: dict[str, int] = {}
    for r in runs:
        if r.counted:
            continue
        if r.problems and r.problems[0].startswith("the official checker"):
            kind = REJECTED
        elif r.problems:
            kind = UNSCORABLE
        else:
            kind = NOT_CONVERGED
        kinds[kind] = kinds.get(kind, 0) + 1
    return tuple(kinds.items())


def olympic_score(benchmark: str, runs: Sequence[RunSummary], required: Optional[int] = None) -> Score:
    """Drop the fastest and the slowest counted run; one run that does not count (it did not
    converge, or the official checker rejects it) counts as the slowest, and more than one voids the
    score, as MLPerf's summarizer scores. Interrupted runs are no runs of the group."""
    from mlperf_logging.result_summarizer.result_summarizer import _compute_olympic_average

    runs = [r for r in runs if r.interrupted is None]
    minutes = [r.time_to_train_min for r in runs if r.counted and r.time_to_train_min is not None]
    dropped = len(runs) - len(minutes)
    required = required if required is not None else required_runs(benchmark)
    max_dropped = 4 if benchmark == "unet3d" else 1  # as MLPerf's summarizer
    if not runs:
        return Score(benchmark, 0, 0, required, None, NO_RUNS)
    kinds = dropped_kinds(runs) if dropped else ()
    if dropped > max_dropped:
        return Score(benchmark, len(runs), len(minutes), required, None, TOO_MANY_DROPPED, dropped=kinds,
                     max_dropped=max_dropped)
    value = _compute_olympic_average(sorted(minutes), dropped, max_dropped)
    if value is None:
        return Score(benchmark, len(runs), len(minutes), required, None, TOO_FEW_LEFT, dropped=kinds,
                     max_dropped=max_dropped)
    return Score(benchmark, len(runs), len(minutes), required, value, kept=len(runs) - 2 * max_dropped,
                 dropped=kinds, max_dropped=max_dropped)
