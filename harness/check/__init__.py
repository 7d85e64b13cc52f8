"""Run MLPerf's official compliance checker on logs, each with the ruleset of its round.

The ruleset (harness.results.read.rules.choose): `--ruleset`; else the round of a `vX.Y` folder on the way
to an official log (training_results_v4.1/... -> 4.1.0), as MLCommons runs the checker per round;
else the log's own format (:::MLL is v0.6's, 0.6.0; :::MLPv0.5.0 has no checker in mlperf_logging);
else, for a harness run's mlperf.log, the ruleset its model declares (with the harness's rules file
where MLPerf ships none, NCF); else the round the log itself shows (harness.results.read.submission: its
dates, its keys), saying which; else the newest ruleset that has the benchmark, saying the round was
not known. The verdict is the official checker's, unchanged (harness.results.read.official): pass, fail,
or, where the checker itself raises, "the official checker crashed", which is not a failure of the log.

Before the checker sees a log (harness.results.read.screen): no record line over 1 MiB, and no logged value
that would choose the rules file the checker runs next (a crafted submission_division would make it
exec another file's code). After it, the harness's own sanity pass (harness.results.read.screen:
timestamps and epochs that go backwards, run_stop before run_start) adds warnings, which do not
change the verdict. A harness run stopped by Ctrl-C or SIGTERM is not a completed run: it is listed
as such and not checked; nor is a harness run still in progress (no run_stop yet, no result.json, and a heartbeat
written within the last LIVE_S seconds): it is listed as in progress, to be checked when it ends. A log
without run_stop whose run no longer beats (a killed run) is judged. Checks run in forked workers, one log at a time each, and a worker whose log
takes longer than the time limit is stopped and replaced; no compliance_checker.log is left behind.
"""
from __future__ import annotations

import multiprocessing
import os
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Iterator, Optional, Sequence

from harness import registry
from harness.results.read import formats, official, rules, screen
from harness.results.read.checking import official_check
from harness.results.read.formats import loads
from harness.results.read.parse import LogError, parse_lines
from harness.results.read.runfiles import read_text
from harness.results.read.rules import DEFAULT_RULESET, pick_rules, quality_target, training_rulesets
from harness.results.read.summary import CRASH, FAIL, INCOMPLETE, PASS, REFUSED, UNCHECKED, interrupted_by
from harness.signals import forking_workers, leave_signals_to_parent

__all__ = ["CheckResult", "check_log", "check_logs", "pick_rules", "quality_target", "training_rulesets", "DEFAULT_RULESET",
           "INTERRUPTED", "IN_PROGRESS", "WARNED", "PASS", "FAIL", "CRASH", "REFUSED", "UNCHECKED"]
INTERRUPTED = "interrupted"
IN_PROGRESS = "in progress"
LIVE_S = 60.0  # a heartbeat (written every second) or a log write this recent: the run is still going
# passed by the official checker, with its own warnings or a fault of the log's clock or timed region
# (harness.results.read.summary's faults): nothing a score may stand on, so not a plain pass
WARNED = "warned"


@dataclass
class CheckResult:
    path: str
    passed: bool
    benchmark: Optional[str] = None
    ruleset: Optional[str] = None  # e.g. "4.0.0", or "harness-ncf-0.7.0" for a harness rules file
    rules: Optional[str] = None  # the rules file the checker started from
    messages: list[str] = field(default_factory=list)  # the checker's messages, as it wrote them
    checked: bool = True  # False: not judged (v0.5, no ruleset has the benchmark, interrupted, the checker crashed)
    status: str = FAIL  # PASS, WARNED, FAIL, REFUSED (screened), CRASH, UNCHECKED, INTERRUPTED
    source: Optional[str] = None  # why this ruleset: "v4.0 in the path", "--ruleset", ...
    warnings: list[str] = field(default_factory=list)  # the harness's sanity findings; never a failure

    @property
    def reason(self) -> str:
        """The first messages, one short line (the full ones: `messages`, or --verbose)."""
        return "" if self.passed else official.brief(self.messages)


def check_log(path: str | Path, ruleset: Optional[str] = None, timeout: Optional[float] = None) -> CheckResult:
    """The official verdict on one log; with `timeout` (seconds) the check runs in a child process
    that is stopped when the time is up, and the log then fails saying so."""
    registry.publish()  # the harness's own models' rules
    if timeout is None:
        return _check(Path(path), ruleset)
    ctx = multiprocessing.get_context("fork")  # the child inherits the imported checker: no start-up cost
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, Path(path), ruleset), daemon=True)
    with forking_workers():
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


def check_logs(paths: Sequence[str | Path], ruleset: Optional[str] = None, timeout: float = 60.0,
               jobs: Optional[int] = None) -> Iterator[CheckResult]:
    """Each log's verdict, in the order given, from `jobs` forked workers (default: one per core) that
    check one log at a time and keep the rules they parsed; a worker whose log takes longer than
    `timeout` seconds is stopped (that log fails, saying so) and replaced."""
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(paths) or 1))
    registry.publish()  # the harness's own models' rules
    rules.warm()  # read once here, not again in every worker
    ctx = multiprocessing.get_context("fork")
    pending = deque(enumerate(Path(p) for p in paths))
    workers = [_Worker(ctx, ruleset) for _ in range(jobs)]
    done: dict[int, CheckResult] = {}
    emitted = 0
    try:
        while pending or any(w.task for w in workers):
            for w in workers:
                if w.task is None and pending:
                    w.give(*pending.popleft(), timeout)
            nearest = min(w.task[2] for w in workers if w.task is not None)
            busy = [w for w in workers if w.task is not None]
            ready = wait([w.results for w in busy], timeout=max(0.0, nearest - time.monotonic()))
            for i, w in enumerate(workers):
                if w.task is None:
                    continue
                index, path, deadline = w.task
                if w.results in ready:
                    try:
                        done[index] = w.results.recv()[1]
                        w.task = None
                        continue
                    except EOFError:
                        w.proc.join()
                        done[index] = CheckResult(str(path), False,
                                                  messages=[f"the check ended with exit code {w.proc.exitcode}"])
                elif time.monotonic() >= deadline:
                    done[index] = CheckResult(str(path), False,
                                              messages=[f"the check took longer than {timeout:g} s: stopped"])
                else:
                    continue
                w.stop(kill=True)
                workers[i] = _Worker(ctx, ruleset)
            while emitted in done:
                yield done.pop(emitted)
                emitted += 1
    finally:
        for w in workers:
            w.stop(kill=bool(w.task))


class _Worker:
    """A forked process that checks the logs it is sent, one at a time, until it is sent None."""

    def __init__(self, ctx, ruleset: Optional[str]) -> None:
        tasks, self.tasks = ctx.Pipe(duplex=False)
        self.results, results = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=_serve, args=(tasks, results, ruleset), daemon=True)
        with forking_workers():
            self.proc.start()
        tasks.close()
        results.close()
        self.task: Optional[tuple[int, Path, float]] = None

    def give(self, index: int, path: Path, timeout: float) -> None:
        self.task = (index, path, time.monotonic() + timeout)
        self.tasks.send((index, path))

    def stop(self, kill: bool = False) -> None:
        if kill and self.proc.is_alive():
            self.proc.kill()
        elif self.proc.is_alive():
            try:
                self.tasks.send(None)  # a forked worker holds the pipe's other end too: EOF alone never comes
            except OSError:
                self.proc.kill()
        self.proc.join()
        self.tasks.close()
        self.results.close()


def _serve(tasks, results, ruleset: Optional[str]) -> None:
    leave_signals_to_parent()
    while True:
        try:
            task = tasks.recv()
        except EOFError:
            return
        if task is None:
            return
        index, path = task
        results.send((index, _check(path, ruleset)))


def _stopped_by(result_json: Path) -> Optional[str]:
    """The signal a harness run's result.json says stopped it, if it says so (a pipe by that name is not read:
    it would wait for a writer for ever)."""
    try:
        data = loads(read_text(result_json))
    except (OSError, ValueError):
        return None
    return interrupted_by(data.get("reason")) if isinstance(data, dict) and data.get("status") == "aborted" else None


def _still_written(path: Path, status: str) -> Optional[str]:
    """What shows that a harness run's log without run_stop is still being written ('its heartbeat 0.8 s
    ago'), or None: it has run_stop, its run left a result.json, or no rank of it beat within LIVE_S (a
    killed run leaves its last beat behind). A log no harness run writes has no heartbeat to show."""
    beats = path.parent / ".heartbeat"  # harness/observe/heartbeat.py: rewritten every second while a rank lives
    if status != INCOMPLETE or path.name != "mlperf.log" or (path.parent / "result.json").exists():
        return None
    ages = []
    for beat in sorted(beats.glob("rank_*.json")) if beats.is_dir() else []:
        try:
            ages.append(time.time() - beat.stat().st_mtime)
        except OSError:  # removed as its rank ended
            continue
    return f"its heartbeat {max(min(ages), 0.0):.1f} s ago" if ages and min(ages) <= LIVE_S else None


def _child(send, path: Path, ruleset: Optional[str]) -> None:
    leave_signals_to_parent()
    try:
        send.send(_check(path, ruleset))
    finally:
        send.close()


def _check(path: Path, ruleset: Optional[str]) -> CheckResult:
    try:
        with open(path, encoding="latin-1") as f:  # as mlp_parser reads: never a decode error
            lines = f.readlines()
    except OSError as err:
        return CheckResult(str(path), False, messages=[f"cannot read: {err.strerror or err}"])
    too_long = screen.long_line(lines)
    if too_long:
        return CheckResult(str(path), False, messages=[too_long], status=REFUSED)
    try:
        summary = parse_lines(lines, str(path))
    except LogError as err:
        return CheckResult(str(path), False, messages=[str(err)])
    if path.name == "mlperf.log" and summary.interrupted is None:  # a log cut off by the signal: result.json says
        summary.interrupted = _stopped_by(path.parent / "result.json")
    if summary.interrupted is not None and summary.log_format == "MLLOG":
        return CheckResult(str(path), True, summary.benchmark, None, None, checked=False, status=INTERRUPTED,
                           messages=[f"stopped by {summary.interrupted}: not a completed run (MLPerf checks and "
                                     "scores completed runs only)"])
    going = _still_written(path, summary.status)
    if going is not None:
        return CheckResult(str(path), True, summary.benchmark, None, None, checked=False, status=IN_PROGRESS,
                           messages=[f"in progress: no run_stop yet and {going}; check it when the run ends"])
    if summary.benchmark is None and summary.log_format != "MLPv0.5.0":
        return CheckResult(str(path), False, messages=["no submission_benchmark: cannot tell which rules apply"])
    chosen, verdict = official_check(summary, lines, path, ruleset, harness_run=path.name == "mlperf.log")
    result = CheckResult(str(path), verdict.status == PASS, summary.benchmark, chosen.label, chosen.rules,
                         verdict.messages, verdict.status not in (UNCHECKED, CRASH), verdict.status, chosen.source)
    if verdict.status in (UNCHECKED, CRASH):
        result.passed = True  # not judged: neither a pass nor a failure of the log
    if verdict.status in (PASS, FAIL):
        result.warnings = [f"harness sanity check: {f}" for f in screen.sanity_check(formats.read(lines).records)]
        result.warnings += [f"the official checker warns: {w}" for w in verdict.warnings]
    doubts = summary.faults + [f"the official checker warns: {w}" for w in verdict.warnings]
    if verdict.status == PASS and doubts:  # the official pass stands, but not as a plain one
        result.status, result.passed, result.messages = WARNED, False, doubts
    elif summary.faults:
        result.messages = summary.faults + result.messages
    if verdict.status == FAIL and not result.messages:
        result.messages = ["failed (the checker gave no message)"]
    return result
