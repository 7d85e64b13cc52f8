"""What a log must pass besides the official checker: the screen before the checker sees it (log
content is data, never a path or code), and the harness's own sanity pass over what the checker lets
through.

The screen:

- Rules files choose further rules files by a logged value: common.yaml's POST for
  `submission_division` runs `enqueue_config('training_0.7.0/{}_common.yaml'.format(v['value']))`,
  and the checker then execs that file's `BEGIN: CODE`. A division of `../../../../tmp/evil` would run
  /tmp/evil_common.yaml's code. So every key whose value a rule formats into `enqueue_config` (found
  by reading the rules files, not by a fixed list) must hold one of the values that rule's own CHECK
  allows (`v['value'] in [...]`, read with ast.literal_eval); any other value, or a key whose
  allowed values cannot be read, refuses the log before the checker runs.
- A line that holds a log record may be at most MAX_LINE characters: mlperf_logging strips prefixes
  with `re.sub(".*:::MLLOG ", ...)`, which is quadratic in the line's length (a valid 10 MB line ran
  past 300 s). The checker here gets lines already cut at their last token, and a longer line is
  refused, naming it.

    python -m harness.check.show rules training_0.7.0/common.yaml   # the keys that choose rules files, and their values

Used by `harness.check` and by `harness.report` (which runs the official checker on official logs).

The sanity pass:

- the timed events (init_stop, run_start, blocks, epochs, evaluations, run_stop) in time order:
  a timestamp earlier than an event logged before it means a clock that went backwards or lines
  that were edited. init_start is left out: every rank logs it, and ranks on different nodes
  disagree by their clocks' skew (16 s on v0.6's 16-node DGX-2H runs);
- run_stop not before run_start;
- epoch numbers of epochs and evaluations never going backwards.

Each finding is one line naming the log lines. They are warnings: `harness.check` prints them
beside the official verdict and `harness.report` lists them on the run, which is still scored, as
MLPerf's scores are what its own checker and summarizer say (real rounds have such logs: stable
diffusion's offline evaluations are logged after a run_stop with an earlier timestamp).
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path
from typing import Any, Optional, Sequence

import yaml

from harness.results.read.formats import Record
from harness.results.read.rules import CHECKER_DIR

MAX_LINE = 1 << 20  # characters; a real log line is a few hundred, v0.6's system entry about 1,600
_ALLOWED = re.compile(r"v\[\s*'value'\s*\]\s+in\s+(\[[^\]]*\])")
_ENQUEUE = re.compile(r"enqueue_config\(\s*'([^']+)'")


def long_line(lines: Sequence[str], limit: int = MAX_LINE) -> Optional[str]:
    """One line saying which record line is too long, or None."""
    for lineno, line in enumerate(lines, start=1):
        if len(line) > limit and ":::ML" in line:
            return (f"line {lineno} is {len(line):,} characters long; a log line may be at most {limit:,}: "
                    "not checked (split or remove it)")
    return None


def _keys(path: Path) -> list[dict]:
    try:
        records = yaml.safe_load(path.read_text()) or []
    except (OSError, yaml.YAMLError):
        return []
    return [r["KEY"] for r in records if isinstance(r, dict) and isinstance(r.get("KEY"), dict)] \
        if isinstance(records, list) else []


@functools.lru_cache(maxsize=None)
def path_choosing_keys(path: str) -> dict[str, tuple[Optional[frozenset], tuple[str, ...]]]:
    """{key: (the values its CHECK allows, the enqueue_config templates of its POST)} for the keys of
    one rules file whose POST enqueues a further rules file; allowed is None where the rule states no
    list (then no value is accepted)."""
    out: dict[str, tuple[Optional[frozenset], tuple[str, ...]]] = {}
    for key in _keys(Path(path)):
        templates = tuple(_ENQUEUE.findall(str(key.get("POST", ""))))
        if templates:
            out[str(key.get("NAME"))] = (_allowed(key.get("CHECK")), templates)
    return out


def rules_start(rules: str) -> Path:
    return Path(rules) if Path(rules).is_absolute() else CHECKER_DIR / rules


def _allowed(check: Any) -> Optional[frozenset]:
    for text in check if isinstance(check, list) else [check]:
        m = _ALLOWED.search(str(text))
        if m:
            try:
                values = ast.literal_eval(m.group(1))
            except (ValueError, SyntaxError):
                return None
            if isinstance(values, list) and all(isinstance(v, str) for v in values):
                return frozenset(values)
    return None


def refused_value(loglines: Sequence[Any], rules: str) -> Optional[str]:
    """One line naming a logged value that would choose a rules file it may not, or None. Follows
    the files the checker would enqueue for this log's (allowed) values, as the checker does."""
    queue, seen = [rules_start(rules)], set()
    while queue:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        for name, (allowed, templates) in path_choosing_keys(str(path)).items():
            for ll in (ll for ll in loglines if ll.key == name):
                value = ll.value.get("value") if isinstance(ll.value, dict) else None
                if "{" in "".join(templates) and (allowed is None or not isinstance(value, str) or value not in allowed):
                    choices = ", ".join(sorted(allowed)) if allowed else "none that can be read from the rules"
                    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:40] + "..." + repr(value)[-12:]
                    return (f"{name} is {shown} (record {ll.lineno + 1} of the log), not one of {choices}: "
                            "log content may not choose the rules the checker runs; not checked")
                queue += [CHECKER_DIR / (t.format(value) if "{" in t else t) for t in templates]
    return None


TIMED = frozenset({"init_stop", "run_start", "block_start", "block_stop", "epoch_start", "epoch_stop", "eval_start",
                   "eval_accuracy", "eval_stop", "run_stop", "train_epoch"})
EPOCH_KEYS = frozenset({"epoch_start", "epoch_stop", "eval_accuracy", "train_epoch"})


def epoch_of(r: Record) -> Optional[float]:
    """The epoch a record names: metadata epoch_num (v0.6 on), or v0.5's value."""
    if "epoch_num" in r.meta:
        e: Any = r.meta["epoch_num"]
    elif r.key == "train_epoch":
        e = r.value
    elif r.key == "eval_accuracy" and isinstance(r.value, dict):
        e = r.value.get("epoch")
    else:
        return None
    return float(e) if isinstance(e, (int, float)) and not isinstance(e, bool) else None


def sanity_check(records: Sequence[Record]) -> list[str]:
    problems: list[str] = []
    start = next((r for r in records if r.key == "run_start"), None)
    stop = next((r for r in records if r.key == "run_stop"), None)
    stop_first = start is not None and stop is not None and stop.t < start.t
    latest: Optional[Record] = None
    for r in records:
        if r.key not in TIMED or (stop_first and r is stop):  # that one has its own message below
            continue
        if latest is not None and r.t < latest.t:
            problems.append(f"timestamps go backwards: line {r.lineno} ({r.key}) is {(latest.t - r.t) / 1000:.3f} s "
                            f"before line {latest.lineno} ({latest.key})")
            break
        latest = r
    if stop_first and start is not None and stop is not None:
        problems.append(f"run_stop (line {stop.lineno}) is {(start.t - stop.t) / 1000:.3f} s before run_start "
                        f"(line {start.lineno})")
    for key in sorted(EPOCH_KEYS):
        last: Optional[tuple[float, Record]] = None
        for r in records:
            if r.key != key or (epoch := epoch_of(r)) is None:
                continue
            if last is not None and epoch < last[0]:
                problems.append(f"epochs go backwards: {key} at line {r.lineno} has epoch {epoch:g} after "
                                f"epoch {last[0]:g} at line {last[1].lineno}")
                break
            last = (epoch, r)
    return problems

