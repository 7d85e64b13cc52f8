"""mlperf_logging's own tools on one log: the compliance checker's verdict with the log's ruleset
(harness.results.rules.choose), and the RCP checker's reading of its convergence.

The checker runs here, called as mlperf_logging's ComplianceChecker.check_file runs it, with two
differences that keep log content from choosing code or costing unbounded time
(harness.results.screen): a line over 1 MiB refuses the log, and so does a logged value that would
choose a rules file its rule does not list (the rules `exec` what a chosen file holds). The checker
is given the ruleset parser's own LogLine records of each line cut at its last token, so it sees
exactly the lines that were screened. Its messages are taken from the checker object, not from the
logging module, so no handler and no log file is left behind.

Verdicts: pass, fail (the checker's messages), refused (the screen), crash (the checker itself
raised, as 5.0.0's stable diffusion rules do on a v4.0 log: KeyError 'samples_count'; that is the
checker's failure, not the log's), unchecked (no official checker reads it: v0.5, or a benchmark no
ruleset has).

Convergence is read by rcp_checker.read_submission_file itself (called, not rewritten): epoch_num of
the last eval_accuracy before a successful run_stop rounded to 3 places, samples_count for the
benchmarks it counts in samples, and for stable diffusion the first evaluation whose FID <= 90 and
CLIP >= 0.15 (step_num under 3.1.0, samples_count later). It reads MLLOG files only.
"""
from __future__ import annotations

import contextlib
import importlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional, Sequence

from mlperf_logging.compliance_checker import mlp_compliance

from harness.results import screen
from harness.results.rules import Ruleset
from harness.results.summary import CRASH, FAIL, PASS, REFUSED, UNCHECKED

# The benchmarks whose convergence rcp_checker.read_submission_file counts in samples_count; the set is
# written inside that function (mlperf-logging 4.1.68), so it cannot be imported: kept in step by the
# side-by-side test, which calls the function on every fixture log.
SAMPLES_BENCHMARKS = frozenset({"llama2_70b_lora", "flux1", "llama31_405b", "llama31_8b", "gpt_oss_20b",
                                "deepseekv3_671b", "qwen35_397b_grpo", "dlrmv4"})
NOT_CONVERGED = 1e9  # what read_submission_file returns for a run that did not converge


@dataclass
class Verdict:
    status: str  # PASS, FAIL, REFUSED, CRASH, UNCHECKED
    ruleset: Ruleset
    messages: list[str] = field(default_factory=list)  # the checker's messages, as it wrote them
    warnings: list[str] = field(default_factory=list)  # the checker's own warnings (put_warning): not failures

    @property
    def reason(self) -> str:
        return brief(self.messages) if self.status != PASS else ""


def brief(messages: Sequence[str], first: int = 2, width: int = 110) -> str:
    """The first messages, one line each and cut to `width`, then how many more there are: a line a
    terminal shows whole. A CHECK message's first line names the key; its failed test follows."""
    parts = []
    for m in messages[:first]:
        lines = [x.strip() for x in m.strip().splitlines() if x.strip()]
        if not lines:
            continue
        text = lines[0]
        test = next((x for x in lines[1:] if x.startswith("failed test:")), None)
        if test and text.endswith(":"):
            text = f"{text} {test}"
        parts.append(text if len(text) <= width else text[: width - 3].rstrip() + "...")
    rest = len(messages) - first
    text = " | ".join(parts) or "failed"
    return text + (f" (+{rest} more)" if rest > 0 else "")


class _Quiet(logging.Handler):
    """A handler on the root logger while official code runs: its module-level logging.warning calls
    would otherwise add logging's stderr handler to the root logger for good."""

    def emit(self, record: logging.LogRecord) -> None:
        pass


@contextlib.contextmanager
def quiet_root() -> Iterator[None]:
    handler = _Quiet()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


def judge(lines: Sequence[str], ruleset: Ruleset, seconds_based: bool = False) -> Verdict:
    """The official verdict on a log's lines under `ruleset` (screened first)."""
    if ruleset.version is None or ruleset.rules is None:
        return Verdict(UNCHECKED, ruleset, [ruleset.source])
    too_long = screen.long_line(lines)
    if too_long:
        return Verdict(REFUSED, ruleset, [too_long])
    try:
        loglines, errors = loglines_of(lines, ruleset.version)
    except KeyError as err:  # the 0.7.0-on parsers index time_ms and metadata without a check
        return Verdict(FAIL, ruleset, [
            f"the official {ruleset.version} parser cannot read this log: a line lacks {err}"
            + (" (its timestamps are seconds, 'time_s')" if seconds_based else "")])
    refused = screen.refused_value(loglines, ruleset.rules)
    if refused:
        return Verdict(REFUSED, ruleset, [refused])
    return _run_checker(ruleset, loglines, errors)


def loglines_of(lines: Sequence[str], version: str) -> tuple[list, list]:
    """The checker's own LogLine records, made by its own parser for the ruleset from each line cut at
    its last token: mlp_parser's strip_and_dedup does the cut with a regex that is quadratic in the
    line's length, and reading the file again would let the checker see other lines than these."""
    parser = importlib.import_module(
        f"mlperf_logging.compliance_checker.mlp_parser.ruleset_{version.replace('.', '')}")
    token = parser.TOKEN
    loglines: list = []
    errors: list[tuple[str, str]] = []
    for line in lines:
        if token not in line:
            continue
        text = line[line.rfind(token):].strip()
        try:
            loglines.append(parser.string_to_logline(len(loglines) + len(errors), text))
        except ValueError as err:
            errors.append((text, str(err)))
    return loglines, errors


def _run_checker(ruleset: Ruleset, loglines: list, errors: list) -> Verdict:
    assert ruleset.version is not None and ruleset.rules is not None
    mlp_compliance.enqueued_configs.clear()  # module-level queue: never inherit a previous check's
    try:
        with quiet_root():
            checker = mlp_compliance.make_checker("training", ruleset.version, quiet=False, werror=False)
            if errors:  # as ComplianceChecker.check_file reports them
                checker.put_message("Log lines had parsing errors.")
                for line, error in errors[:3]:
                    checker.put_message(f"parsing error ({error}): {line[:200]}")
            checker.check_loglines(loglines, ruleset.rules)
    except Exception as err:  # the checker evaluates rule code; when it raises, the log was not judged
        return Verdict(CRASH, ruleset, [f"the official checker crashed: {type(err).__name__}: {err}"])
    finally:
        mlp_compliance.enqueued_configs.clear()
    messages = [*checker.overwritable.values(), *checker.not_overwritable]
    return Verdict(FAIL if checker.has_messages() else PASS, ruleset, messages, list(checker.warnings.values()))


def convergence_unit(benchmark: Optional[str], version: Optional[str]) -> str:
    """What the RCP checker counts convergence in for a benchmark under a ruleset."""
    if benchmark == "stable_diffusion":
        return "steps" if version == "3.1.0" else "samples"
    return "samples" if benchmark in SAMPLES_BENCHMARKS else "epochs"


def rcp_convergence(path: str | Path, version: str) -> tuple[Optional[float], Optional[str]]:
    """(convergence as the RCP checker reads it, or None when it did not converge; a note when the
    reading itself fails). The caller screens the file's line lengths first (the reader's prefix regex
    is quadratic in a line's length)."""
    from mlperf_logging.rcp_checker import rcp_checker

    try:
        with quiet_root():
            not_converged, value, _, _ = rcp_checker.read_submission_file(str(path), version, False)
    except Exception as err:  # e.g. a stable diffusion evaluation without its FID or CLIP part
        return None, f"the official RCP checker's reading of this log fails ({type(err).__name__}: {err})"
    if not_converged or value is None or value >= NOT_CONVERGED:
        return None, None
    return float(value), None
