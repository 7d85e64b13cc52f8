"""Checking a log, a step of its own after reading it (harness.results.read.parse says what the log
says): the harness's sanity pass (harness.results.read.screen), and on an official log (anything but a
harness run's own mlperf.log, which `harness.check` judges) MLPerf's own tools as they judge it
(harness.results.read.official): the compliance checker with the ruleset of its round
(harness.results.read.submission), and the RCP checker's convergence reading in its unit. A v0.5 log, which
no official checker reads, is held to the eval_target it states, as the summarizer held it.

`join` puts what the checkers say beside what the log says, as the report's run: a run is voided only
where the official checker rejects a log that claims success; what it passes is scored, the parser's
own findings then warnings; the sanity findings are warnings.

    python -m harness.check.show checked FILE...   # each log as the report has it, one JSON object each
    python -m harness.report DIR        # each log read, checked, and the two joined (analysis.collect)
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional, Sequence

from harness.results.read import formats, official, screen

from harness.results.read import submission
from harness.results.read import v05 as v05_rules
from harness.results.read.official import Verdict
from harness.results.read.parse import NO_EPOCH, ReadLog, read_file, round_in_path
from harness.results.read.rules import Ruleset
from harness.results.read.summary import CRASH, FAIL, PASS, REFUSED, SUCCESS, RunSummary


@dataclass(frozen=True)
class RcpReading:
    """Convergence as the official RCP checker reads it."""

    unit: str  # what it counts: "epochs", "samples", "steps" (official.convergence_unit)
    value: Optional[float]  # None: the run did not converge, or the reading failed
    note: Optional[str]  # why the reading failed, as the official reader fails


@dataclass(frozen=True)
class LogCheck:
    """What the checkers say of one log."""

    sanity: list[str] = field(default_factory=list)  # the harness's sanity findings: warnings, never a failure
    ruleset: Optional[Ruleset] = None  # the ruleset the official checker ran with; None: not run
    verdict: Optional[Verdict] = None
    rcp: Optional[RcpReading] = None  # MLLOG logs with a ruleset only


def official_check(facts: RunSummary, lines: Sequence[str], path: Path, explicit: Optional[str] = None,
                   harness_run: bool = False) -> tuple[Ruleset, Verdict]:
    """The ruleset a log is checked with (its round's, or the one `explicit` names) and the official
    checker's verdict under it."""
    chosen = submission.choose(facts.benchmark, lines, facts.run_start_ms, explicit=explicit,
                              path_round=None if harness_run else round_in_path(path), log_format=facts.log_format,
                              harness_run=harness_run, seconds_based=facts.timestamp_unit == "s")
    return chosen, official.judge(lines, chosen, facts.timestamp_unit == "s")


def check(log: ReadLog, ruleset: Optional[str] = None) -> LogCheck:
    """Every checker that applies to a log as read; `ruleset` forces the official ruleset (else its round's)."""
    if not log.readable:
        return LogCheck()
    facts = log.facts
    findings = screen.sanity_check(log.records)
    path = Path(facts.path)
    if path.name == "mlperf.log" or facts.interrupted is not None:
        return LogCheck(findings)
    chosen, verdict = official_check(facts, log.lines, path, ruleset)
    rcp = None
    if facts.log_format == "MLLOG" and chosen.version is not None:
        places = 3 if official.has_rcps(chosen.version) else None
        value, note = official.rcp_convergence(log.lines, chosen.version, places=places)
        batch = facts.global_batch_size if isinstance(facts.global_batch_size, int) else 1000
        if facts.benchmark == "bert" and value is not None and value < batch:
            # no count of samples (v1.1's NVIDIA BERT code writes epoch_num 1 at every evaluation): the RCP
            # checker's --bert_train_samples reading, which the submitters of those logs ran
            counted, failed = official.rcp_convergence(log.lines, chosen.version, places=places, train_samples=True)
            if counted is not None and failed is None:
                note = (f"its evaluations give epoch_num {value:g}, no count of samples: convergence is its "
                        f"train_samples ({counted:,.0f}), as the official RCP checker reads it with --bert_train_samples")
                value = counted
        rcp = RcpReading(official.convergence_unit(facts.benchmark, chosen.version), value, note)
    return LogCheck(findings, chosen, verdict, rcp)


def join(facts: RunSummary, checked: LogCheck) -> RunSummary:
    """The run as the report scores it: the log's facts with the checkers' verdicts, a new RunSummary."""
    run = replace(facts, warnings=[*checked.sanity, *facts.warnings], problems=list(facts.problems))
    run.warnings += [f"the official checker warns: {w}" for w in (checked.verdict.warnings if checked.verdict else [])]
    if run.log_format == formats.NAME_OF[formats.V05] and run.status == SUCCESS:
        _v05_target(run)
    chosen, verdict = checked.ruleset, checked.verdict
    if chosen is None or verdict is None:
        return run
    run.check, run.check_ruleset, run.check_source = verdict.status, chosen.label, chosen.source
    if chosen.from_log and chosen.version:  # the round the log itself shows: its target and convergence rules
        run.round = "v" + ".".join(chosen.version.split(".")[:2])
    run.check_reason = verdict.reason or None
    who = f"the official checker ({chosen.label})"
    if verdict.status == PASS:
        # what the checker accepts is scored: the parser's own findings are no longer reasons to drop it
        run.warnings[:0] = [p for p in run.problems if p not in run.faults]
        run.problems = list(run.faults)
        if run.status != SUCCESS and run.time_to_train_min is not None:
            run.warnings.append(f"run_stop says {run.status!r}, but {who} passes the log: the official summarizer "
                                "scores its time (the rules of its division state no target), and so does this report")
    elif verdict.status in (FAIL, REFUSED) and run.status == SUCCESS and not run.problems:  # one reason is enough
        run.problems.append(f"{who} {'rejects' if verdict.status == FAIL else 'was not run on'} it: {verdict.reason}")
    elif verdict.status == CRASH:
        run.warnings.append(f"{who} crashes on this log, so it is not judged ({verdict.reason})")
    if checked.rcp is not None:
        _rcp_reading(run, checked.rcp)
    return run


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _v05_target(run: RunSummary) -> None:
    """v0.5 has no official checker: a success whose last evaluation is below the eval_target the log
    states is dropped, as the summarizer drops a success the checker's target test rejects."""
    quality = run.final_quality
    if _number(run.target) and _number(quality) and not v05_rules.reached(quality, run.target):
        run.problems.append(f"success, but its last evaluation ({quality:g}) is below the eval_target it logs "
                            f"({run.target:g}): not a converged run")


def _rcp_reading(run: RunSummary, rcp: RcpReading) -> None:
    """Convergence in the RCP checker's unit, in place of the parser's epoch count."""
    run.epoch_unit = rcp.unit
    run.warnings = [w for w in run.warnings if w != NO_EPOCH]  # the reader counts in its own unit
    if rcp.note:
        run.warnings.append(rcp.note)
    own = run.epochs_to_converge
    run.epochs_to_converge = rcp.value if run.status == SUCCESS else None
    if rcp.value is None and run.status == SUCCESS and own is not None and rcp.note is None:
        run.warnings.append("the official RCP checker finds no convergence point in this log")


def checked_file(path: str | Path, ruleset: Optional[str] = None) -> RunSummary:
    """One log file read, checked and joined: the run as the report has it (read_file's LogError aside)."""
    log = read_file(path)
    return join(log.facts, check(log, ruleset))
