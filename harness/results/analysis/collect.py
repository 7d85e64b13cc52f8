"""Everything the report says about a set of paths, computed once: runs, groups, scores with their 95%
intervals, speedups and precision ratios with their verdicts and chances, seed spreads, throughput
results, the prices for cost, and the runs counted as not converged, for harness.report to print.

A result.json with a badly typed field is named among the errors and skipped (runfiles.problems), and so is a
config.yaml that cannot be read as the harness writes one (runfiles.read_settings)."""
from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Optional

from harness.interface.quality import QualityError, QualitySpec
from harness.results.analysis import confidence, throughput
from harness.results.read import checking, rules, runfiles
from harness.results.read import v05 as v05_rules
from harness.results.analysis.speedups import PrecisionRatio, Speedup, precision_ratios, world_speedups
from harness.results.read.find import find_logs
from harness.results.read.parse import MAX_LOG_BYTES, LogError, RunSummary, from_result_json, read_file
from harness.results.read.summary import Shortfall
from harness.results.analysis.score import Score, round_score
from harness.results.analysis.stats import GroupKey, GroupStats, group_key, group_runs, group_stats
from harness.results.analysis.stats import SeedSpread, seed_spread

SKIPPED = "skipped"
SKIPPED_BESIDE_LOG = "skipped: the run is read from its mlperf.log alone"
SKIPPED_CONFIG = "skipped: the run is grouped without its settings"

PARALLEL_FROM = 64  # files; below this, a worker pool costs more than it saves


@dataclass
class Report:
    runs: list[RunSummary]
    groups: dict[GroupKey, list[RunSummary]]
    stats: list[GroupStats]
    scores: dict[GroupKey, Score]
    speedups: list[Speedup]
    precisions: list[PrecisionRatio]
    errors: list[tuple[str, str]] = field(default_factory=list)
    spreads: dict[GroupKey, SeedSpread] = field(default_factory=dict)
    tput_runs: list[throughput.ThroughputRun] = field(default_factory=list)
    tput_groups: list[throughput.ThroughputGroup] = field(default_factory=list)
    scalings: list[throughput.Scaling] = field(default_factory=list)
    gains: list[throughput.PrecisionGain] = field(default_factory=list)
    # runs whose success is counted as not converged (each one's short_of_target says why); the report's notes
    # say so, with the groups' notes (harness.results.report.sections): worth knowing, not a reason to fail
    short: list[RunSummary] = field(default_factory=list)
    confidence: dict[GroupKey, confidence.GroupConfidence] = field(default_factory=dict)
    prices: dict[str, float] = field(default_factory=dict)  # --price: platform, system or accelerator -> USD/h
    rank_by: str = "time"  # the cost table's order: time, cost or energy

    @property
    def failed(self) -> bool:
        """Any unreadable file, any run with a problem, any failed throughput measurement."""
        return bool(self.errors or any(not r.scorable for r in self.runs)
                    or any(t.status != "success" for t in self.tput_runs))


def _parse(path: Path, max_bytes: Optional[int] = MAX_LOG_BYTES) -> tuple[Optional[RunSummary], Optional[str],
                                                                         list[tuple[str, str]]]:
    """(run, why the log cannot be read, (file, problem) for the run files beside it that cannot be read: its
    result.json, its config.yaml): the log read, then checked (the official and RCP checkers, the sanity pass),
    and the two joined."""
    try:
        log = read_file(path, max_bytes)
    except LogError as err:
        return None, str(err), []
    run = checking.join(log.facts, checking.check(log))
    if path.name != "mlperf.log":
        return run, None, []
    beside: list[tuple[str, str]] = []  # read_result and read_settings are cached: read_file has just read them
    found = runfiles.read_result(path.parent / "result.json")[1]
    if found:
        beside.append((str(path.parent / "result.json"), f"{runfiles.describe(found)}: {SKIPPED_BESIDE_LOG}"))
    bad_config = runfiles.read_settings(path.parent / "config.yaml")[1]
    if bad_config:
        beside.append((str(path.parent / "config.yaml"), f"{bad_config}: {SKIPPED_CONFIG}"))
    return run, None, beside


def _warm() -> None:
    """Import before the workers fork what each would import for itself (the summarizer, with pandas and
    scipy, for the tree's benchmark names; the registry, for rulesets): about 1.5 s per process."""
    from mlperf_logging.result_summarizer import result_summarizer  # noqa: F401

    rules.warm()


def build(paths: list[str], baseline_world: Optional[int] = None, baseline_precision: str = "fp32",
          jobs: Optional[int] = None, max_log_bytes: Optional[int] = MAX_LOG_BYTES) -> Report:
    """The report on every log and run under `paths`; a log over `max_log_bytes` is named among the errors,
    not read (None: no limit)."""
    logs, orphans, errors = find_logs(paths)
    parse = partial(_parse, max_bytes=max_log_bytes)
    if len(logs) >= PARALLEL_FROM and (jobs is None or jobs > 1):
        from harness.signals import forking_workers, leave_signals_to_parent

        _warm()  # what every worker needs, imported once before the fork
        # parsing is CPU-bound: one process per core
        with ProcessPoolExecutor(max_workers=jobs, initializer=leave_signals_to_parent) as pool:
            try:
                with forking_workers():  # the first submit forks every worker
                    chunks = pool.map(parse, logs, chunksize=16)
                parsed = list(chunks)
            except KeyboardInterrupt:
                pool.shutdown(wait=True, cancel_futures=True)  # the workers end their chunk, start no other
                raise
    else:
        parsed = [parse(p) for p in logs]
    runs = []
    for path, (run, err, beside) in zip(logs, parsed):
        if run is None:
            errors.append((str(path), err or "cannot be read"))
        else:
            runs.append(run)
        errors += beside
    readable = []
    for path in orphans:
        try:
            orphan = from_result_json(path)
        except LogError as err:
            errors.append((str(path), f"{err}: {SKIPPED}"))
            continue
        readable.append(path)
        if orphan is not None:
            runs.append(orphan)
    groups = group_runs(runs)  # a tree's runs by their folder; interrupted runs in none
    short = short_of_target(groups)  # before any count: such a run is not converged
    keys = sorted(groups, key=str)
    stats = [group_stats(k, groups[k]) for k in keys]
    scores = {k: round_score(k.benchmark, groups[k]) for k in keys}
    minutes = {k: s.minutes for k, s in scores.items()}
    factors = {k: s.scaling for k, s in scores.items()}  # scaling.json, in each score
    tput_runs = throughput.read_runs(readable)
    tput_groups = throughput.groups(tput_runs)
    return Report(
        runs=sorted(runs, key=lambda r: (str(group_key(r)), r.path)), groups=groups, stats=stats, scores=scores,
        speedups=world_speedups(stats, minutes, baseline_world, groups, factors),
        precisions=precision_ratios(stats, minutes, baseline_precision, groups, factors), errors=errors,
        spreads={k: seed_spread(k, groups[k]) for k in keys}, tput_runs=tput_runs, tput_groups=tput_groups,
        scalings=throughput.scaling(tput_groups), gains=throughput.precision_gains(tput_groups, baseline_precision),
        short=short,
        confidence={k: confidence.group_confidence(groups[k], scores[k].minutes, k.benchmark, scores[k].rule,
                                                         scores[k].scaling)
                    for k in keys},
    )


def target_for(key: GroupKey, runs: list[RunSummary]) -> Any:
    """A group's quality target: what its runs state (result.json's target, v0.5's eval_target), else
    the rules of its round (v0.6's rules name none; an MLLOG log outside a tree uses pick_rules' choice)."""
    stated = next((r.target for r in runs if r.target is not None), None)
    if stated is not None:
        return stated
    round_ = next((r.round for r in runs if r.round), None)
    if round_ == "v0.5":
        return None
    return rules.quality_target(key.benchmark, rules.ruleset_of_round(round_))


def _direction(key: GroupKey, runs: list[RunSummary]) -> bool:
    """Higher is better, unless a run or the rules say lower."""
    stated = next((r.quality_direction for r in runs if r.quality_direction), None)
    if stated is not None:
        return stated == "higher"
    if next((r.round for r in runs if r.round), None) == "v0.5":
        return True
    found = rules.rules_target(key.benchmark, rules.ruleset_of_round(next((r.round for r in runs if r.round), None)))
    return True if found is None else found.higher_is_better


def short_of_target(groups: dict[GroupKey, list[RunSummary]]) -> list[RunSummary]:
    """A run whose status says success but whose last evaluation does not reach the target (compared in
    the metric's direction: at or above it, or at or below it for a lower-is-better metric), or that
    cannot be compared with it (NaN, not a number, other parts than the target's): MLPerf scores no
    such run as a success, so it is marked not converged (its short_of_target says why); those runs, in order."""
    out = []
    for key, runs in groups.items():
        target = target_for(key, runs)
        if target is None:
            continue
        parts = tuple(target) if isinstance(target, Mapping) else ()
        name = next((r.quality_metric for r in runs if r.quality_metric), None) or rules.metric_name(key.benchmark)
        spec = QualitySpec(name, _direction(key, runs), parts)
        for r in runs:
            if r.status != "success" or r.final_quality is None:
                continue
            if spec.higher_is_better and v05_rules.reached_as_logged(r.log_format, r.final_quality, target):
                continue  # v0.5's loggers wrote float32 values at length: 21.8 as 21.799999237 (read.v05)
            try:
                if not spec.reached(r.final_quality, target):
                    r.short_of_target = Shortfall(spec, r.final_quality, target)
            except QualityError as err:
                r.short_of_target = Shortfall(spec, r.final_quality, target, str(err))
            if r.short_of_target is not None:
                out.append(r)
    return out


def label_for(report: Report):
    """benchmark -> the quality metric's name (result.json's quality_metric, else the rules')."""
    named = {r.benchmark: r.quality_metric for r in report.runs if r.benchmark and r.quality_metric}
    return lambda benchmark: named.get(benchmark) or rules.metric_name(benchmark)
