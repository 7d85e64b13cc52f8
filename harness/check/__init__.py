"""Run MLPerf's official compliance checker on logs, each with the ruleset that fits its benchmark.

The checker runs in this process, or, with a time limit, in a forked child that is stopped at the
limit (no compliance_checker.log is left in the working directory); its own verdict is reported
unchanged. Benchmarks the harness runs use the ruleset their model declares (harness/registry.py),
with the harness's rules file where MLPerf ships none (NCF); any other benchmark uses 0.7.0 if that
ruleset has it, else the newest ruleset that does. v0.6 logs (:::MLL) are checked with 0.6.0; v0.5
logs (:::MLPv0.5.0) have no checker in mlperf_logging and are reported as not checked.

Before the checker sees a log (harness.check.screen): no record line over 1 MiB, and no logged value
that would choose the rules file the checker runs next (a crafted submission_division would make it
exec another file's code). After it: the harness's own sanity pass (harness.results.sanity:
timestamps and epochs that go backwards, run_stop before run_start), which the checker lets through.
"""
from __future__ import annotations

import importlib
import logging
import multiprocessing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from mlperf_logging.compliance_checker import mlp_compliance

from harness.results import formats, sanity
from harness.results.parse import LogError, parse_lines
from harness.results.rules import DEFAULT_RULESET, pick_rules, quality_target, training_rulesets

__all__ = ["CheckResult", "check_log", "pick_rules", "quality_target", "training_rulesets", "DEFAULT_RULESET"]
_SEPARATOR = "\n" + "-" * 30 + "\n"  # how mlp_compliance joins its messages


@dataclass
class CheckResult:
    path: str
    passed: bool
    benchmark: Optional[str] = None
    ruleset: Optional[str] = None  # e.g. "0.7.0", or "harness-ncf-0.7.0" for a harness rules file
    rules: Optional[str] = None  # the rules file the checker started from
    messages: list[str] = field(default_factory=list)  # the checker's messages, as it wrote them
    checked: bool = True  # False: no checker reads this log's format (v0.5)

    @property
    def reason(self) -> str:
        if self.passed:
            return ""
        firsts = [m.strip().splitlines()[0] for m in self.messages if m.strip()]
        return " | ".join(firsts) if firsts else "failed"


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def check_log(path: str | Path, ruleset: Optional[str] = None, timeout: Optional[float] = None) -> CheckResult:
    """The official verdict on one log; with `timeout` (seconds) the check runs in a child process
    that is stopped when the time is up, and the log then fails saying so."""
    if timeout is None:
        return _check(Path(path), ruleset)
    ctx = multiprocessing.get_context("fork")  # the child inherits the imported checker: no start-up cost
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, Path(path), ruleset), daemon=True)
    child.start()
    send.close()
    stopped = False
    try:
        if receive.poll(timeout):
            return receive.recv()
    except EOFError:  # the child died without an answer
        pass
    finally:
        if child.is_alive():
            stopped = True
            child.kill()
        child.join()
        receive.close()
    if stopped:
        return CheckResult(str(path), False, messages=[f"the check took longer than {timeout:g} s: stopped"])
    return CheckResult(str(path), False, messages=[f"the check ended with exit code {child.exitcode}"])


def _child(send, path: Path, ruleset: Optional[str]) -> None:
    try:
        send.send(_check(path, ruleset))
    finally:
        send.close()


def _check(path: Path, ruleset: Optional[str]) -> CheckResult:
    from harness.check import screen  # here, so that `python -m harness.check.screen` imports it once

    try:
        with open(path, encoding="latin-1") as f:  # as mlp_parser reads: never a decode error
            lines = f.readlines()
    except OSError as err:
        return CheckResult(str(path), False, messages=[f"cannot read: {err.strerror or err}"])
    too_long = screen.long_line(lines)
    if too_long:
        return CheckResult(str(path), False, messages=[too_long])
    try:
        summary = parse_lines(lines, str(path))
    except LogError as err:
        return CheckResult(str(path), False, messages=[str(err)])
    if summary.log_format == "MLPv0.5.0":
        return CheckResult(str(path), True, summary.benchmark, "v0.5", None, checked=False,
                           messages=["a v0.5 log: mlperf_logging has no checker for this format"])
    if summary.benchmark is None:
        return CheckResult(str(path), False, messages=["no submission_benchmark: cannot tell which rules apply"])
    if ruleset is None and summary.log_format == "MLL":
        ruleset = "0.6.0"  # the :::MLL format is v0.6's, and so are its rules
    version, label, rules = pick_rules(summary.benchmark, ruleset)
    result = CheckResult(str(path), False, summary.benchmark, label, rules)
    try:
        loglines, errors = _loglines(lines, version)
    except KeyError as err:
        result.messages = [
            f"the official {version} parser cannot read this log: a line lacks {err}"
            + (" (its timestamps are seconds, 'time_s')" if summary.timestamp_unit == "s" else "")
        ]
        return result
    refused = screen.refused_value(loglines, rules)
    if refused:
        result.messages = [refused]
        return result
    _run_checker(result, version, loglines, errors, rules)
    findings = sanity.check(formats.read(lines).records)
    if findings:
        result.passed = False
        result.messages += [f"harness sanity check: {f}" for f in findings]
    if not result.passed and not result.messages:
        result.messages = ["failed (the checker gave no message)"]
    return result


def _loglines(lines: list[str], version: str) -> tuple[list, list]:
    """The checker's own LogLine records, made by its own parser for the ruleset from each line cut at
    its last token: mlp_parser's strip_and_dedup does the cut with a regex that is quadratic in the
    line's length, and reading the file again would let the checker see other lines than these."""
    parser = importlib.import_module(
        f"mlperf_logging.compliance_checker.mlp_parser.ruleset_{version.replace('.', '')}")
    token = parser.TOKEN
    loglines, errors = [], []
    for line in lines:
        at = line.rfind(token)
        if at < 0:
            continue
        text = line[at:].strip()
        try:
            loglines.append(parser.string_to_logline(len(loglines) + len(errors), text))
        except ValueError as err:
            errors.append((text, str(err)))
    return loglines, errors


def _run_checker(result: CheckResult, version: str, loglines: list, errors: list, rules: str) -> None:
    capture = _Capture()
    root = logging.getLogger()
    # The checker reports through the root logger; a handler of ours on it also keeps logging from
    # adding its own stderr handler for good (what a module-level logging.warning does to a bare root).
    root.addHandler(capture)
    mlp_compliance.enqueued_configs.clear()  # module-level queue: never inherit a previous check's
    try:
        checker = mlp_compliance.make_checker("training", version, quiet=False, werror=False)
        if errors:  # as ComplianceChecker.check_file reports them
            logging.warning(" Found parsing errors:")
            for line, error in errors:
                logging.warning("  %s", line)
                logging.warning("   ^^  %s", error)
            checker.put_message("Log lines had parsing errors.")
        checker.check_loglines(loglines, rules)
        checker.log_messages()
        result.passed = not checker.has_messages()
        for message in capture.messages:
            result.messages.extend(m for m in message.split(_SEPARATOR) if m.strip())
    except Exception as err:  # the checker evaluates rule code; a crash is a failed check, not ours
        result.messages = [f"the official checker crashed: {type(err).__name__}: {err}"]
    finally:
        root.removeHandler(capture)
        mlp_compliance.enqueued_configs.clear()
