"""Run MLPerf's official compliance checker on logs, each with the ruleset that fits its benchmark.

The checker runs in this process (no compliance_checker.log is left in the working directory)
and its own verdict is reported unchanged. Benchmarks the harness runs use the ruleset their model
declares (harness/registry.py), with the harness's rules file where MLPerf ships none (NCF); any
other benchmark uses 0.7.0 if that ruleset has it, else the newest ruleset that does.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from mlperf_logging.benchmark_meta import get_allowed_benchmarks
from mlperf_logging.compliance_checker import mlp_compliance

from harness import registry
from harness.results.parse import LogError, parse_file

DEFAULT_RULESET = "0.7.0"
_SEPARATOR = "\n" + "-" * 30 + "\n"  # how mlp_compliance joins its messages


@dataclass
class CheckResult:
    path: str
    passed: bool
    benchmark: Optional[str] = None
    ruleset: Optional[str] = None  # e.g. "0.7.0", or "harness-ncf-0.7.0" for a harness rules file
    rules: Optional[str] = None  # the rules file the checker started from
    messages: list[str] = field(default_factory=list)  # the checker's messages, as it wrote them

    @property
    def reason(self) -> str:
        if self.passed:
            return ""
        firsts = [m.strip().splitlines()[0] for m in self.messages if m.strip()]
        return " | ".join(firsts) if firsts else "failed"


def quality_target(benchmark: str, ruleset: Optional[str] = None) -> Optional[float]:
    """The quality target the rules hold a benchmark's eval_accuracy to (their ATLEAST_ONE_CHECK)."""
    import re
    from pathlib import Path

    import yaml

    version, _, rules = pick_rules(benchmark, ruleset)
    base = Path(mlp_compliance.__file__).parent
    candidates = [Path(rules)] if Path(rules).is_absolute() else [base / f"training_{version}" / f"closed_{benchmark}.yaml"]
    for path in candidates:
        if not path.is_file():
            continue
        for rule in yaml.safe_load(path.read_text()) or []:
            check = rule.get("KEY", {}).get("ATLEAST_ONE_CHECK", "") if isinstance(rule, dict) else ""
            found = re.search(r">=\s*([0-9.]+)", str(check))
            if rule.get("KEY", {}).get("NAME") == "eval_accuracy" and found:
                return float(found.group(1))
    return None


def training_rulesets() -> list[str]:
    return sorted(mlp_compliance.rule_choices(), key=lambda v: tuple(int(x) for x in v.split(".")))


def pick_rules(benchmark: str, ruleset: Optional[str] = None) -> tuple[str, str, str]:
    """(ruleset version for the parser, label, rules file) for a benchmark."""
    spec = registry.by_benchmark(benchmark)
    if ruleset is None and spec is not None:
        task = spec.task
        if task.rules_file is not None:
            return task.ruleset, f"harness-{benchmark}-{task.ruleset}", str(task.rules_file)
        ruleset = task.ruleset
    if ruleset is None:
        having = [v for v in training_rulesets() if benchmark in _allowed(v)]
        ruleset = DEFAULT_RULESET if DEFAULT_RULESET in having else (having[-1] if having else DEFAULT_RULESET)
    return ruleset, ruleset, f"training_{ruleset}/common.yaml"


def _allowed(version: str) -> list[str]:
    try:
        return get_allowed_benchmarks("training", version)
    except ValueError:
        return []


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def check_log(path: str | Path, ruleset: Optional[str] = None) -> CheckResult:
    path = Path(path)
    try:
        summary = parse_file(path)
    except LogError as err:
        return CheckResult(str(path), False, messages=[str(err)])
    if summary.benchmark is None:
        return CheckResult(str(path), False, messages=["no submission_benchmark: cannot tell which rules apply"])
    version, label, rules = pick_rules(summary.benchmark, ruleset)
    result = CheckResult(str(path), False, summary.benchmark, label, rules)

    capture = _Capture()
    root = logging.getLogger()
    # The checker reports through the root logger; a handler of ours on it also keeps logging from
    # adding its own stderr handler for good (what a module-level logging.warning does to a bare root).
    root.addHandler(capture)
    mlp_compliance.enqueued_configs.clear()  # module-level queue: never inherit a previous check's
    try:
        checker = mlp_compliance.make_checker("training", version, quiet=False, werror=False)
        result.passed = bool(checker.check_file(str(path), rules))
        for message in capture.messages:
            result.messages.extend(m for m in message.split(_SEPARATOR) if m.strip())
    except KeyError as err:
        result.messages = [
            f"the official {version} parser cannot read this log: a line lacks {err}"
            + (" (its timestamps are seconds, 'time_s')" if summary.timestamp_unit == "s" else "")
        ]
    except Exception as err:  # the checker evaluates rule code; a crash is a failed check, not ours
        result.messages = [f"the official checker crashed: {type(err).__name__}: {err}"]
    finally:
        root.removeHandler(capture)
        mlp_compliance.enqueued_configs.clear()
    if not result.passed and not result.messages:
        result.messages = ["failed (the checker gave no message)"]
    return result
