"""The round of a published log kept outside its round's folder, read from the log itself.

Without a `vX.Y` folder on the way to it (and without --ruleset), an official log used to be checked
against the newest ruleset that has its benchmark: a v0.7 SSD-ResNet34 log against 4.1.0's RetinaNet
rules, rejected, its run voided. Among the rulesets that have the benchmark, the log's own evidence
chooses, in this order, and the choice says which evidence it was:

1. its dates: the round whose window holds the run's start (a round's window runs from the previous
   round's publication to its own: its runs were made before its results were published), where that
   round's ruleset has the benchmark and passes the log;
2. its keys: the one ruleset whose rules pass the log (the official checker's verdict under each); where
   several pass, the one nearest the round of its dates (else the newest); where the dates' round has
   the benchmark and none passes, that round's;
3. else, as before, the newest ruleset with the benchmark, saying the round was not known.

`--ruleset` still decides over all of this. Only MLLOG logs (v0.7 on) are read this way: :::MLL is
v0.6's and :::MLPv0.5.0 v0.5's by their format.

    python -c "from harness.results.read.log_round import window_of; print(window_of(1593019143723))"
"""
from __future__ import annotations

import datetime
from typing import Optional, Sequence

from harness.results.read import official, rules
from harness.results.read.rules import Ruleset
from harness.results.read.summary import PASS

# The day each MLPerf Training round's results were published (mlcommons.org); a round's window ends
# there and starts at the previous one's. A run after the last date falls in no known window.
PUBLISHED = (("v0.6", "2019-07-10"), ("v0.7", "2020-07-29"), ("v1.0", "2021-06-30"), ("v1.1", "2021-12-01"),
             ("v2.0", "2022-06-29"), ("v2.1", "2022-11-09"), ("v3.0", "2023-06-27"), ("v3.1", "2023-11-08"),
             ("v4.0", "2024-06-12"), ("v4.1", "2024-11-13"), ("v5.0", "2025-06-04"), ("v5.1", "2025-11-12"))


def window_of(start_ms: Optional[float]) -> Optional[tuple[str, str, str]]:
    """(round, first day, last day) of the window that holds a run started at `start_ms` (ms since 1970)."""
    if start_ms is None or not start_ms > 0:
        return None
    try:
        day = datetime.datetime.fromtimestamp(start_ms / 1000, datetime.timezone.utc).date().isoformat()
    except (OverflowError, OSError, ValueError):
        return None
    previous = PUBLISHED[0][1]
    for round_, published in PUBLISHED[1:]:
        if previous < day <= published:
            return round_, previous, published
        previous = published
    return None


def choose(benchmark: Optional[str], lines: Sequence[str], start_ms: Optional[float], *,
           explicit: Optional[str] = None, path_round: Optional[str] = None, log_format: Optional[str] = None,
           harness_run: bool = False, seconds_based: bool = False) -> Ruleset:
    """rules.choose, with the log's own evidence where it would otherwise take the newest ruleset."""
    chosen = rules.choose(benchmark, explicit=explicit, path_round=path_round, log_format=log_format,
                          harness_run=harness_run)
    if not chosen.fallback or log_format != "MLLOG":
        return chosen
    having = rules.having(benchmark)
    window = window_of(start_ms)
    dated = rules.ruleset_of_round(window[0]) if window else None
    where = f"its dates fall in {window[0]}'s window ({window[1]} to {window[2]})" if window else ""

    def ruleset(version: str, why: str) -> Ruleset:
        return Ruleset(version, version, f"training_{version}/common.yaml", f"{rules.round_named(path_round)}: {why}",
                       from_log=True)

    def passes(version: str) -> bool:
        return official.judge(lines, ruleset(version, ""), seconds_based).status == PASS

    if dated in having and passes(dated):
        return ruleset(dated, f"{where} and {dated}'s rules pass it")
    passing = [v for v in having if v != dated and passes(v)]
    if len(passing) == 1:
        return ruleset(passing[0], f"its keys pass {passing[0]}'s rules alone of the rulesets with {benchmark}")
    if passing:
        best = min(passing, key=lambda v: abs(_number(v) - _number(dated))) if dated else passing[-1]
        nearest = f"the nearest to {dated}, the round of its dates" if dated else "the newest"
        return ruleset(best, f"its keys pass the rules of {', '.join(passing)}; {best} is {nearest}")
    if dated in having:
        return ruleset(dated, f"{where}; no ruleset's rules pass it")
    return chosen


def _number(version: Optional[str]) -> float:
    major, minor, *_ = (version or "0.0").split(".")
    return int(major) + int(minor) / 10
