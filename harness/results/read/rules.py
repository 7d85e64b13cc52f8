"""Which MLPerf rules a log answers to, the quality target those rules hold it to, and the official
checker's rule code compiled once.

The ruleset of a log (`choose`), in this order: the one asked for (`--ruleset`); the round of a
`vX.Y` folder on the way to an official log (`training_results_v4.1/...` -> 4.1.0), as the official
tools are run per round; the log's own format (`:::MLPv0.5.0`: v0.5, which mlperf_logging has no
checker for; `:::MLL`: 0.6.0); for a harness run, its registered model's ruleset (and rules file,
where MLPerf ships none); else the newest ruleset that has the benchmark, saying that the round
was not known (harness.results.read.submission then reads the round from the log itself: its dates, its
keys). A benchmark that no ruleset has is not checked. Nothing a log holds forms a path:
the version always comes from mlperf_logging's own list.

The target is read from the rules file's `ATLEAST_ONE_CHECK` for `eval_accuracy` (mlperf_logging's
own rules, or the rules file a registered model ships, its rules_file), by a regular
expression over the expression's text: no rule code is evaluated to find it. The first `>=` or `<=`
comparison of each part is its target (the rules put the target first and a sanity bound after it):

    "v['value'] >= 0.240 and v['value'] < 1"                         -> 0.24, higher is better
    "v['value']['BBOX'] >= 0.377 and ... v['value']['SEGM'] >= 0.339"  -> {"BBOX": 0.377, "SEGM": 0.339}
    "v['value'] <= 0.058 and v['value'] > 0.0"                       -> 0.058, lower is better

    python -m harness.check.show targets gnmt maskrcnn rnnt    # each benchmark's rules file and target

The official checker's rule code, compiled once per process (`cached_eval`, `cached_exec`):
mlp_compliance evaluates each rule of its rules files as a string, `eval(test.strip(), state, {...})`
and `exec(code.strip(), ...)`, for every log line its key matches: Python compiles the same few hundred
strings again for each of a round's million lines, which was about half of the time the checker took
over a whole published round (v3.1: 1.7 million evaluations). While it checks a log
(harness.results.read.official.fast_checker), mlp_compliance is given an `eval` and an `exec` that
compile each distinct string once, with the same mode and no inherited compiler flags (mlp_compliance's
only future import, print_function, is the default in Python 3), and run the compiled code with the
globals and locals the checker passes: the checker runs the same code on the same state, so its verdicts
and messages are unchanged (tests/results/read/test_official_checker.py holds them equal to the checker's
own command). A string that does not compile raises the same SyntaxError in the same place, which
the checker reports as it always has.

    python -m harness.report ROUND        # every log checked, each rule compiled once
"""
from __future__ import annotations

import builtins
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from types import CodeType
from typing import Any, Optional

from mlperf_logging.benchmark_meta import get_allowed_benchmarks
from mlperf_logging.compliance_checker import mlp_compliance

from harness.results.read import own

DEFAULT_RULESET = "0.7.0"
CHECKER_DIR = Path(mlp_compliance.__file__).parent
_COMPARISON = re.compile(r"v\[\s*'value'\s*\](?:\[\s*'([^']+)'\s*\])?\s*(>=|<=)\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)")

# What eval_accuracy measures, for axis labels and tables, in MLPerf's training rules benchmark by
# benchmark: the benchmarks no model here registers (a registered model names its own: ModelSpec.metric).
METRICS = {
    "minigo": "win rate", "bert": "masked-LM accuracy", "dlrm": "AUC",
    "rnnt": "WER", "unet3d": "mean DICE", "gpt3": "log perplexity",
    "stable_diffusion": "FID", "gnn": "accuracy",
}


@dataclass(frozen=True)
class Target:
    value: Any  # a number, or one number per named part
    higher_is_better: bool
    source: str  # the rules file it was read from

    @property
    def direction(self) -> str:
        return "higher" if self.higher_is_better else "lower"


@functools.lru_cache(maxsize=1)
def _rulesets() -> tuple[str, ...]:
    return tuple(sorted(mlp_compliance.rule_choices(), key=lambda v: tuple(int(x) for x in v.split("."))))


def training_rulesets() -> list[str]:
    return list(_rulesets())


@functools.lru_cache(maxsize=None)
def _allowed(version: str) -> list[str]:
    try:
        return get_allowed_benchmarks("training", version)
    except ValueError:
        return []


def having(benchmark: Optional[str]) -> list[str]:
    """The official rulesets whose benchmark list names it, oldest first; 0.6.0 reads only :::MLL
    logs, which choose it by their format, so it is left out here."""
    return [v for v in _rulesets() if v != "0.6.0" and benchmark and benchmark in _allowed(v)]


@dataclass(frozen=True)
class Ruleset:
    """The rules one log is checked against, and why those."""

    version: Optional[str]  # the official ruleset (and parser) version, "4.0.0"; None: no official checker reads it
    label: str  # what the check prints: "4.0.0", "harness-ncf-0.7.0", or why there is none ("v0.5")
    rules: Optional[str]  # the rules file the checker starts from
    source: str  # why: "--ruleset", "v4.0 in the path", "the :::MLL format (v0.6)", ...
    fallback: bool = False  # the newest ruleset with the benchmark, for want of a round (submission.choose refines it)
    from_log: bool = False  # chosen by the log's own dates or keys (harness.results.read.submission)


def choose(benchmark: Optional[str], *, explicit: Optional[str] = None, path_round: Optional[str] = None,
           log_format: Optional[str] = None, harness_run: bool = False) -> Ruleset:
    """The ruleset for one log (the order is the module docstring's)."""
    if log_format == "MLPv0.5.0":
        return Ruleset(None, "v0.5", None, "a v0.5 log: mlperf_logging has no checker for this format")
    named = benchmark if isinstance(benchmark, str) and re.fullmatch(r"[A-Za-z0-9_]+", benchmark) else None
    spec = _spec(named) if named else None
    of_round = ruleset_of_round(path_round)
    version: str
    if explicit is not None:
        version, source = explicit, "--ruleset"
    elif path_round and of_round:
        version, source = of_round, f"{path_round} in the path"
    elif log_format == "MLL":
        version, source = "0.6.0", "the :::MLL format (v0.6)"
    elif spec is not None and (harness_run or not having(named)):
        if spec.rules_file is not None:
            return Ruleset(spec.ruleset, f"harness-{named}-{spec.ruleset}", spec.rules_file,
                           f"the {spec.name} model's rules file")
        version, source = str(spec.ruleset), f"the {spec.name} model's ruleset"
    else:
        found = having(named)
        if not found:
            what = f"benchmark {benchmark!r}" if benchmark else "a log that names no benchmark"
            return Ruleset(None, "no ruleset", None, f"no official ruleset has {what}")
        version = found[-1]
        source = f"{round_named(path_round)}: the newest ruleset with {named} (give --ruleset, or keep the log " \
            "under its round's vX.Y folder)"
        return Ruleset(version, version, f"training_{version}/common.yaml", source, fallback=True)
    return Ruleset(version, version, f"training_{version}/common.yaml", source)


def warm() -> None:
    """Read what choosing a ruleset needs (the harness's own models), so that forked checks share it."""
    _spec("")


def _spec(benchmark: str) -> Optional[own.OwnBenchmark]:
    return own.by_benchmark(benchmark)


def pick_rules(benchmark: str, ruleset: Optional[str] = None) -> tuple[str, str, str]:
    """(ruleset version for the parser, label, rules file) for a benchmark. A registered model's own
    ruleset (and rules file, where MLPerf ships none); else 0.7.0 if it has the benchmark, else the
    newest ruleset that does. The benchmark only ever selects from these: it never forms a path."""
    spec = _spec(benchmark)
    if ruleset is None and spec is not None:
        if spec.rules_file is not None:
            return str(spec.ruleset), f"harness-{benchmark}-{spec.ruleset}", spec.rules_file
        ruleset = spec.ruleset
    if ruleset is None:
        listed = [v for v in training_rulesets() if benchmark in _allowed(v)]
        ruleset = DEFAULT_RULESET if DEFAULT_RULESET in listed else (listed[-1] if listed else DEFAULT_RULESET)
    return ruleset, ruleset, f"training_{ruleset}/common.yaml"


def parse_check(expression: str) -> Optional[tuple[Any, bool]]:
    """(target, higher is better) from an ATLEAST_ONE_CHECK expression, or None if it names none."""
    parts: dict[Optional[str], tuple[float, bool]] = {}
    for part, op, number in _COMPARISON.findall(expression):
        parts.setdefault(part or None, (float(number), op == ">="))
    if not parts:
        return None
    directions = {higher for _, higher in parts.values()}
    higher = directions.pop() if len(directions) == 1 else True
    if None in parts:
        return parts[None][0], parts[None][1]
    return {name: value for name, (value, _) in parts.items()}, higher


@functools.lru_cache(maxsize=None)
def _target_in(path: str) -> Optional[Target]:
    import yaml

    try:
        rules = yaml.safe_load(Path(path).read_text()) or []
    except (OSError, yaml.YAMLError):
        return None
    for rule in rules if isinstance(rules, list) else []:
        key = rule.get("KEY") if isinstance(rule, dict) else None
        if isinstance(key, dict) and key.get("NAME") == "eval_accuracy" and key.get("ATLEAST_ONE_CHECK"):
            found = parse_check(str(key["ATLEAST_ONE_CHECK"]))
            if found is not None:
                return Target(found[0], found[1], path)
    return None


def rules_target(benchmark: str, ruleset: Optional[str] = None) -> Optional[Target]:
    """The target the rules hold a benchmark's eval_accuracy to: a registered model's rules file, or
    mlperf_logging's closed-division rules of the ruleset (chosen as pick_rules does)."""
    if not isinstance(benchmark, str) or not re.fullmatch(r"[A-Za-z0-9_]+", benchmark):
        return None  # a name from a log is looked up, never made into a path
    version, _, rules = pick_rules(benchmark, ruleset)
    if Path(rules).is_absolute():
        return _target_in(rules)
    if _spec(benchmark) is None and benchmark not in _allowed(version):
        return None  # only the ruleset's own benchmarks have a rules file to read
    for name in (f"closed_{benchmark}.yaml", f"{benchmark}.yaml"):
        path = CHECKER_DIR / f"training_{version}" / name
        if path.is_file():
            return _target_in(str(path))
    return None


def quality_target(benchmark: str, ruleset: Optional[str] = None) -> Any:
    """The target value alone (a number or a mapping of parts), or None."""
    target = rules_target(benchmark, ruleset)
    return None if target is None else target.value


def metric_name(benchmark: Optional[str]) -> str:
    """HR@10, BLEU, ...: the registered model's own metric name, else MLPerf's, else eval_accuracy."""
    if not benchmark:
        return "eval_accuracy"
    spec = _spec(benchmark)
    if spec is not None and spec.metric:
        return spec.metric
    return METRICS.get(benchmark, "eval_accuracy")


def round_named(path_round: Optional[str]) -> str:
    """Why no round's rules were taken from the path: none is named, or the one named is not known."""
    if not path_round:
        return "no round in the path"
    known = [f"v{'.'.join(v.split('.')[:2])}" for v in _rulesets()]
    return f"{path_round} in the path is not a round mlperf_logging has rules for (it has {', '.join(known)})"


def ruleset_of_round(round_: Optional[str]) -> Optional[str]:
    """The official ruleset a round's logs follow: v0.6 -> 0.6.0, v1.0 -> 1.0.0; None when the round
    is not known exactly (MLLOG logs outside a tree) or has no ruleset in mlperf_logging (v0.5)."""
    if not round_:
        return None
    m = re.fullmatch(r"v(\d+)\.(\d+)", round_)
    version = f"{m.group(1)}.{m.group(2)}.0" if m else None
    return version if version in _rulesets() else None


LIMIT = 4096  # distinct strings kept: the rules files of every ruleset hold far fewer

_compiled: dict[tuple[str, str], CodeType] = {}


def _code(source: Any, mode: str) -> Any:
    """The compiled code of a string (cached); anything else (a code object) as it is."""
    if not isinstance(source, str):
        return source
    key = (source, mode)
    code = _compiled.get(key)
    if code is None:
        code = compile(source, "<string>", mode, dont_inherit=True)
        if len(_compiled) < LIMIT:
            _compiled[key] = code
    return code


def cached_eval(source: Any, globals: Optional[dict] = None, locals: Optional[Any] = None) -> Any:
    return builtins.eval(_code(source, "eval"), globals, locals)


def cached_exec(source: Any, globals: Optional[dict] = None, locals: Optional[Any] = None) -> None:
    builtins.exec(_code(source, "exec"), globals, locals)
