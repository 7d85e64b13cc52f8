"""Accelerator against accelerator on a round's official results: A100 against H100 per benchmark at equal
accelerator counts, with the geometric means per category and overall, as the seeds' platform studies
(T4 against V100, A6000 against 3090) compare two platforms.

- closed division only: the open division changes the model and the rules, so its times compare nothing;
- per benchmark and count, each chip's fastest official score (its best system), named with its
  submitter, system and availability: a chip's result is the best a submitter showed with it;
- A's speedup over B = B's score / A's score, with the 95% interval and the verdict of
  harness.results.analysis.confidence over the two folders' runs (both sides have runs: every official score
  stands on five or more);
- the chips of a pair are ordered so that A is the faster one overall (its geometric mean above 1);
- geometric means per category (harness.results.read.own) and overall, over the pair's rows;
- a row whose systems differ beyond the chip (form factor: SXM against PCIe; node shape: 2 nodes of 8 against
  8 nodes of 2) says so (`unlike`), and the geometric means count such rows apart.

Two chips that share no benchmark of one round at one count are not compared.

    python -m harness.report training_results_v3.1 --md round.md      # "Accelerator against accelerator"
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any, Optional, Sequence

from harness.results.read.own import category
from harness.results.analysis.confidence import Interval, Judgement, judge as judge_pair
from harness.results.analysis.comparison import ALL, geomean


@dataclass(frozen=True)
class AcceleratorPair:
    a: str  # chip A, the faster overall
    b: str
    benchmark: str
    round: str
    category: str
    accelerators: int
    a_system: str  # submitter/system (availability)
    b_system: str
    a_minutes: float
    b_minutes: float
    time_to_train: float  # A's speedup over B: B's score / A's score
    interval: Optional[Interval] = None
    verdict: str = "n/a"
    judgement: Optional[Judgement] = None  # the permutation test's, where both groups' runs were read
    unlike: str = ""  # what differs beyond the chip: form factor or node shape ("" when like for like)


@dataclass(frozen=True)
class GeoMean:
    a: str
    b: str
    category: str  # a benchmark category, or "overall"
    n: int
    value: Optional[float]
    unlike: int = 0  # of the n rows, those whose systems differ beyond the chip (AcceleratorPair.unlike)


def _best(entries: Sequence[Any]) -> dict[tuple[tuple[str, str], int, str], Any]:
    """((benchmark, round), count, chip) -> the closed-division entry with the fastest score."""
    best: dict[tuple[tuple[str, str], int, str], Any] = {}
    for e in entries:
        if e.division != "closed" or e.minutes is None or not e.accelerators or e.chip in ("CPU", "?"):
            continue
        k = ((e.benchmark, e.round), e.accelerators, e.chip)  # two rounds' rules differ: never compared
        if k not in best or e.minutes < best[k].minutes:
            best[k] = e
    return best


def _name(e: Any) -> str:
    return f"{e.submitter}/{e.system} ({e.availability})"


def compare_accelerators(entries: Sequence[Any], groups: dict, judge: bool = True
                         ) -> tuple[list[AcceleratorPair], list[GeoMean]]:
    """Every pair of chips that share a benchmark at one count, row by row, and their geometric means."""
    best = _best(entries)
    chips = sorted({k[2] for k in best})
    pairs: list[AcceleratorPair] = []
    means: list[GeoMean] = []
    for x, y in itertools.combinations(chips, 2):
        shared = sorted({(b, n) for b, n, c in best if c == x} & {(b, n) for b, n, c in best if c == y})
        if not shared:
            continue
        overall = geomean([best[(b, n, y)].minutes / best[(b, n, x)].minutes for b, n in shared])[1]
        a, b = (x, y) if overall is None or overall >= 1 else (y, x)
        rows = [_row(a, b, best[(bench, n, a)], best[(bench, n, b)], groups, judge) for bench, n in shared]
        pairs += rows
        for cat in list(dict.fromkeys(r.category for r in rows)) + [ALL]:
            members = [r for r in rows if cat == ALL or r.category == cat]
            means.append(GeoMean(a, b, cat, *geomean([r.time_to_train for r in members]),
                                 unlike=sum(1 for r in members if r.unlike)))
    return pairs, means


def shape(e: Any) -> str:
    """'H100 SXM, 2 nodes x 8': what a chip-against-chip row pairs (accelerators.unlike compares two)."""
    chip = f"{e.chip} {e.form}" if e.form else e.chip
    if e.nodes and e.accelerators and e.accelerators % e.nodes == 0:
        return f"{chip}, {e.nodes:,} node{'s' * (e.nodes != 1)} x {e.accelerators // e.nodes}"
    return chip


def unlike(ea: Any, eb: Any) -> str:
    """'' where two entries differ in their chip alone; else both shapes ('H100 SXM, 2 nodes x 8 vs A100 PCIe,
    8 nodes x 2'): a different form factor (power, memory, interconnect) or node shape (more nodes: more
    network) is part of what such a ratio measures."""
    forms = (getattr(ea, "form", None), getattr(eb, "form", None))
    nodes = (getattr(ea, "nodes", None), getattr(eb, "nodes", None))
    known = lambda pair: None not in pair and pair[0] != pair[1]  # noqa: E731 (a chip without a form factor: TPU)
    if not known(forms) and not known(nodes):
        return ""
    return f"{shape(ea)} vs {shape(eb)}"


def _row(a: str, b: str, ea: Any, eb: Any, groups: dict, judge: bool) -> AcceleratorPair:
    row = AcceleratorPair(a, b, ea.benchmark, ea.round, category(ea.benchmark), ea.accelerators, _name(ea),
                          _name(eb), ea.minutes, eb.minutes, eb.minutes / ea.minutes, unlike=unlike(ea, eb))
    if not judge or ea.key not in groups or eb.key not in groups:
        return row
    # time to train only: the throughput figures of two submitters' logs are not read the same way
    j = judge_pair(f"{a} ({ea.submitter})", groups[ea.key], ea.minutes, f"{b} ({eb.submitter})", groups[eb.key],
                   eb.minutes, ea.benchmark, same_unit=False)
    return replace(row, interval=j.time_interval, verdict=j.verdict, judgement=j)
