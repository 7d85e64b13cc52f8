"""mlperf_logging's own tools on one log: the compliance checker's verdict with the log's ruleset
(harness.results.read.rules.choose), and the RCP checker's reading of its convergence.

The checker runs here, called as mlperf_logging's ComplianceChecker.check_file runs it, with two
differences that keep log content from choosing code or costing unbounded time
(harness.results.read.screen): a line over 1 MiB refuses the log, and so does a logged value that would
choose a rules file its rule does not list (the rules `exec` what a chosen file holds). The checker
is given the ruleset parser's own LogLine records of each line cut at its last token, so it sees
exactly the lines that were screened. Its messages are taken from the checker object, not from the
logging module, so no handler and no log file is left behind. Importing this module changes nothing
in mlperf_logging: what makes the checker fast (each rules file parsed once, each rule compiled once,
each record decoded once) is given to it for the duration of each call (fast_checker).

Verdicts: pass, fail (the checker's messages), refused (the screen), crash (the checker itself
raised, as 5.0.0's stable diffusion rules do on a v4.0 log: KeyError 'samples_count'; that is the
checker's failure, not the log's), unchecked (no official checker reads it: v0.5, or a benchmark no
ruleset has).

Convergence is read as rcp_checker.read_submission_file reads it (rcp_convergence says why that
reading is redone here, and the tests hold it equal to the official function): epoch_num of the last
eval_accuracy before a successful run_stop rounded to 3 places (unrounded for rulesets the RCP checker
holds no reference points for, v0.6 and v0.7, whose figure is the log's own: has_rcps), samples_count for the benchmarks it
counts in samples (what the figure counts, per benchmark: convergence_unit), and for stable diffusion the first evaluation whose FID <= 90 and CLIP >= 0.15
(step_num under 3.1.0, samples_count later). It reads MLLOG files only.
"""
from __future__ import annotations

import contextlib
import copy
import importlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import yaml
from mlperf_logging.compliance_checker import mlp_compliance

from harness.results.read import formats, screen
from harness.results.read.rules import Ruleset, cached_eval, cached_exec
from harness.results.read.summary import CRASH, FAIL, PASS, REFUSED, UNCHECKED
from harness.signals import shielded

# The benchmarks whose convergence rcp_checker.read_submission_file counts in samples_count; the set is
# written inside that function (mlperf-logging 4.1.68), so it cannot be imported: kept in step by the
# side-by-side test, which calls the function on every fixture log.
SAMPLES_BENCHMARKS = frozenset({"llama2_70b_lora", "flux1", "llama31_405b", "llama31_8b", "gpt_oss_20b",
                                "deepseekv3_671b", "qwen35_397b_grpo", "dlrmv4"})
# What the figure the RCP checker reads counts, benchmark by benchmark: epoch_num is an epoch count in
# most benchmarks' logs, but bert's logs count samples in it, gpt3's tokens (its RCPs: 1,157,627,904 = 368
# steps of 1,536 sequences of 2,048 tokens), and unet3d's samples from 3.1.0 on (its RCPs went from ~2,000
# to ~200,000). Every benchmark of every ruleset the installed mlperf-logging ships an RCP file for must be
# named here (tests/results/read/test_official.py derives that list from the package).
EPOCH_NUM_COUNTS = {
    "resnet": "epochs", "ssd": "epochs", "retinanet": "epochs", "maskrcnn": "epochs", "rnnt": "epochs",
    "dlrm": "epochs", "dlrm_dcnv2": "epochs", "gnn": "epochs", "rgat": "epochs", "unet3d": "epochs",
    "minigo": "epochs", "gnmt": "epochs", "transformer": "epochs", "ncf": "epochs",
    "bert": "samples", "gpt3": "tokens",
}


class _RulesYaml:
    """Stands in for the yaml module inside mlp_compliance, which parses every rules file again, with the
    pure-Python loader, for every log it checks: three quarters of its time over a round's logs. Here each
    rules file is parsed once per process, by the same yaml.load and loader, and every call gets its own
    deep copy, so what the checker reads is what it would have read; anything else goes to yaml itself."""

    def __init__(self) -> None:
        self._parsed: dict[tuple[str, int], Any] = {}

    def load(self, stream: Any, Loader: Any = None) -> Any:
        name = getattr(stream, "name", None)
        if not isinstance(name, str) or Loader is not yaml.BaseLoader:
            return yaml.load(stream, Loader=Loader)
        key = (name, os.stat(name).st_mtime_ns)
        if key not in self._parsed:
            self._parsed[key] = yaml.load(stream, Loader=Loader)
        return copy.deepcopy(self._parsed[key])

    def __getattr__(self, name: str) -> Any:
        return getattr(yaml, name)


_RULES_YAML = _RulesYaml()  # its parsed rules files last the process; mlp_compliance sees it only while it checks


@contextlib.contextmanager
def _patched(module: Any, **names: Any) -> Iterator[None]:
    """`module`'s globals `names` set for the duration of the block, then as they were (a name it did not
    have is removed again): importing this module changes nothing in mlperf_logging, and its own command
    and functions, called outside these blocks, run as they ship."""
    missing = object()
    before = {name: getattr(module, name, missing) for name in names}
    for name, value in names.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is missing:
                delattr(module, name)
            else:
                setattr(module, name, value)


def fast_checker() -> contextlib.AbstractContextManager[None]:
    """While the compliance checker runs: each rules file parsed once per process (_RulesYaml) and each
    rule string compiled once (rules.cached_eval), not once per log and once per log line. Both for speed
    alone (three quarters and half of the checker's time over a round); what keeps log content from choosing
    code is the screen before the checker is called (harness.results.read.screen)."""
    return _patched(mlp_compliance, yaml=_RULES_YAML, eval=cached_eval, exec=cached_exec)


class _SharedJson:
    """Stands in for the json module inside the checker's line parsers (mlp_parser.ruleset_*): a record's
    text that harness.results.read.formats has just decoded is not decoded again (a third of the time a round's
    logs take); the value is the one json.loads gives that text, so parse_line returns what it would have,
    and anything else goes to json itself."""

    def loads(self, text: str) -> Any:
        found = formats.decoded(text.strip())
        return formats.loads(text) if found is formats.MISSING else found  # too deep: a ValueError, a bad line

    def __getattr__(self, name: str) -> Any:
        return getattr(json, name)


_SHARED_JSON = _SharedJson()


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
    # parse_line: json.loads(line[len(TOKEN):]), given the value already decoded, for speed alone
    with _patched(parser, json=_SHARED_JSON) if token == formats.MLLOG else contextlib.nullcontext():
        for line in lines:
            if token not in line:
                continue
            text = line[line.rfind(token):].strip()
            try:
                loglines.append(parser.string_to_logline(len(loglines) + len(errors), text))
            except (ValueError, RecursionError) as err:  # v0.6's parser decodes with json itself: too deep recurses
                errors.append((text, str(err) if isinstance(err, ValueError) else "nested too deep to read"))
    return loglines, errors


def _run_checker(ruleset: Ruleset, loglines: list, errors: list) -> Verdict:
    assert ruleset.version is not None and ruleset.rules is not None
    mlp_compliance.enqueued_configs.clear()  # module-level queue: never inherit a previous check's
    # Ctrl-C and SIGTERM are held while the checker runs, and land as it returns: it evaluates each rule under a
    # bare `except:` (mlp_compliance's run_check_eval and run_check_exec), which would swallow the
    # KeyboardInterrupt, record "Failed executing CHECK code" against a sound log and go on to the next one.
    # Outside the try: a crash it catches must not drop the held signal with it.
    with shielded():
        try:
            with quiet_root(), fast_checker():
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
    """What the figure the RCP checker reads for a benchmark under a ruleset counts (EPOCH_NUM_COUNTS)."""
    if benchmark == "stable_diffusion":
        return "steps" if version == "3.1.0" else "samples"
    if benchmark in SAMPLES_BENCHMARKS:
        return "samples"
    if benchmark == "unet3d" and version and tuple(int(x) for x in version.split(".")) >= (3, 1, 0):
        return "samples"
    return EPOCH_NUM_COUNTS.get(benchmark or "", "epochs")


def has_rcps(version: Optional[str]) -> bool:
    """Whether the installed RCP checker holds reference convergence points for a training ruleset: none
    before 1.0.0, whose rounds had no RCP check, so their convergence is the log's own figure, unrounded."""
    from mlperf_logging import rcp_checker

    return version is not None and (Path(rcp_checker.__file__).parent / f"training_{version}").is_dir()


def rcp_convergence(lines: Sequence[str], version: str, places: Optional[int] = 3, train_samples: bool = False
                    ) -> tuple[Optional[float], Optional[str]]:
    """(convergence as the RCP checker reads it, or None when it did not converge; a note when the
    reading fails, as the official reader raises on such a log).

    rcp_checker.read_submission_file's reading, line for line, on the lines already read: the official
    function reads the file again and cuts each line with re.sub(".*:::MLLOG ", ...), which rescans the
    rest of the line from every position after the token (about 40 us a line, the largest cost of reading
    a round); cutting at the last token gives the same text. Kept equal to it by the tests, which call the
    official function on every fixture log and on generated logs of each kind it reads differently.

    `train_samples`: BERT's convergence read from its `train_samples` line, as the checker's --bert_train_samples
    reads it (v1.1's NVIDIA BERT code, and its users', logs `epoch_num: 1` at every evaluation).
    """
    try:
        return _rcp_reading(lines, version, places, train_samples)
    except Exception as err:  # as the official reader fails: e.g. an evaluation without its FID or CLIP part
        return None, f"the official RCP checker's reading of this log fails ({type(err).__name__}: {err})"


def _rcp_reading(lines: Sequence[str], version: str, places: Optional[int],
                 train_samples: bool = False) -> tuple[Optional[float], Optional[str]]:
    token = ":::MLLOG "
    benchmark = None
    conv: Any = None
    seen_eval = False
    result: Optional[float] = None
    converged = False
    sd_results: dict[Any, dict[Any, Any]] = {}
    for line in lines:
        if token not in line:
            continue
        text = line[line.rfind(token) + len(token):].strip()
        if "submission_benchmark" in text:
            benchmark = json.loads(text)["value"]
        is_eval = "eval_error" in text or "eval_accuracy" in text
        if benchmark == "stable_diffusion" and is_eval:
            record = json.loads(text)
            unit = "step_num" if version in ["3.1.0"] else "samples_count"
            sd_results.setdefault(record["metadata"][unit], {})[record["metadata"]["metric"]] = record["value"]
        elif benchmark in SAMPLES_BENCHMARKS and is_eval:
            conv, seen_eval = json.loads(text)["metadata"]["samples_count"], True
        elif is_eval and not (train_samples and benchmark == "bert"):
            epoch = json.loads(text)["metadata"]["epoch_num"]
            conv, seen_eval = (epoch if places is None else round(epoch, places)), True
        elif train_samples and benchmark == "bert" and "train_samples" in text:
            conv, seen_eval = json.loads(text)["value"], True
        if "run_stop" in text and json.loads(text)["key"] == "run_stop":
            if json.loads(text)["metadata"]["status"] == "success":
                if benchmark == "stable_diffusion":
                    conv = min(step for step, r in sd_results.items() if r["FID"] <= 90.0 and r["CLIP"] >= 0.15)
                elif not seen_eval:
                    raise UnboundLocalError("no evaluation before a successful run_stop")
                converged, result = True, conv
            else:
                converged, result = False, None
    # the official reader's not_converged flag, not its 1e9 stand-in: gpt3 converges past 1e9 tokens
    if not converged or result is None:
        return None, None
    return float(result), None
