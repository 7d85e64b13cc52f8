"""Platform A against platform B, or one GPU count (or precision) against another: two reports paired by
benchmark, with intervals, verdicts, chances, cost and energy, and geometric means per category
(harness.results.read.own) and overall.

    python -m harness.report RESULTS_A RESULTS_B --compare [--md F --csv F --json F --html F --plots DIR]
    python -m harness.report SWEEP_1GPU SWEEP_2GPU --compare --price CPU=0.05

Pairing, per benchmark: groups at equal GPU counts and precision pair first (the one with the most runs
where a side has several); what is left pairs when one side has a single group of the benchmark left,
whatever its GPU count and precision (a 1-rank sweep against a 2-rank one: the GPU count is the study),
with each of the other side's. The rest is listed as unpaired, not dropped silently. A's speedup over B =
B's time / A's time (MLPerf scores where both have one) = throughput ratio (A / B) x epochs ratio (B's
olympic-mean epochs / A's) x rest. Throughput results (mode=throughput) pair by workload, precision, GPU
count and global batch: ratio = A's median / B's. The tables, verdicts and plots of a comparison:
harness.results.report.comparison_render.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from harness.results.analysis import cost
from harness.results.read.own import category
from harness.results.analysis.chances import Chances, chances
from harness.results.analysis.collect import Report, build
from harness.results.analysis.speedups import count_label, epochs_ratio, ratio, time_of
from harness.results.analysis.confidence import Judgement, judge
from harness.results.analysis.stats import GroupKey, GroupStats, accelerator_kind
from harness.results.analysis.throughput import ThroughputGroup
from harness.results.read.parse import MAX_LOG_BYTES


ALL = "overall"


@dataclass(frozen=True)
class Unpaired:
    """What one side has and the other lacks, not compared (the words:
    harness.results.report.comparison_render.unpaired_line)."""

    name: str  # benchmark or workload
    side: str  # "A" or "B": the side that has it
    gpus: Optional[str] = None  # "1 CPU rank": a group's count; None for a throughput workload
    precision: Optional[str] = None
    others: int = 0  # the other side's groups of the benchmark left unpaired (other counts or precisions)


@dataclass(frozen=True)
class Pair:
    benchmark: str
    category: str
    world: Optional[int]
    precision: Optional[str]
    a: str  # A's system: platform and accelerator
    b: str
    time_to_train: Optional[float]  # A's speedup: B's time / A's time
    throughput: Optional[float]  # A / B
    epochs_ratio: Optional[float]  # B's epochs / A's
    rest: Optional[float]


@dataclass(frozen=True)
class ThroughputPair:
    workload: str
    category: str
    world: int
    precision: str
    global_batch_size: Optional[int]
    a: str
    b: str
    ratio: Optional[float]  # A's median / B's


@dataclass(frozen=True)
class GeoMean:
    category: str
    what: str  # "time_to_train", "throughput", "epochs_ratio"
    n: int
    value: Optional[float]


def system_of(g: GroupStats) -> str:
    return g.key.platform + (f" ({g.key.accelerator})" if g.key.accelerator else "")


def pair_throughput(a: Sequence[ThroughputGroup], b: Sequence[ThroughputGroup]) -> list[ThroughputPair]:
    def index(groups):
        return {(g.workload, g.precision, g.world_size, g.global_batch_size, g.unit): g for g in groups}

    left, right = index(a), index(b)
    out = []
    for key in sorted(set(left) & set(right), key=str):
        ga, gb = left[key], right[key]
        out.append(ThroughputPair(key[0], category(ga.model if category(key[0]) == "other" else key[0]), key[2], key[1],
                                  key[3], ga.accelerator, gb.accelerator, ratio(ga.median, gb.median)))
    return out


def geomean(values: Sequence[Optional[float]]) -> tuple[int, Optional[float]]:
    v = [x for x in values if x is not None and x > 0]
    return len(v), (math.exp(sum(map(math.log, v)) / len(v)) if v else None)


def geomeans(rows: Sequence, fields: Sequence[str]) -> list[GeoMean]:
    """Per category (in order of first appearance) and overall, for each field; none without rows."""
    if not rows:
        return []
    cats = list(dict.fromkeys(r.category for r in rows))
    out = []
    for cat in cats + [ALL]:
        members = [r for r in rows if cat == ALL or r.category == cat]
        for what in fields:
            n, value = geomean([getattr(r, what) for r in members])
            out.append(GeoMean(cat, what, n, value))
    return out


def left_unpaired(a: Sequence, b: Sequence, pairs: Sequence, name) -> list[Unpaired]:
    """What one side has and the other lacks, so that a missing benchmark is not silently dropped."""
    paired = Counter(getattr(p, "benchmark", None) or getattr(p, "workload", None) for p in pairs)
    out = []
    for side, groups in (("A", a), ("B", b)):
        for n in sorted({name(g) for g in groups} - set(paired)):
            out.append(Unpaired(n, side))
    return out


TTT_FIELDS = ("time_to_train", "throughput", "epochs_ratio")


@dataclass(frozen=True)
class Matched:
    """One pair's groups and what is known about it beyond Pair's ratios."""

    a_key: GroupKey
    b_key: GroupKey
    a_world: Optional[int]
    b_world: Optional[int]
    gpus: str  # "8 GPUs", or "A 1 CPU rank, B 2 CPU ranks"
    confidence: Optional[Judgement]
    chances: Optional[Chances]
    a_usd_per_hour: Optional[float] = None
    b_usd_per_hour: Optional[float] = None
    cost: Optional[cost.CostRatio] = None  # A's price per hour against B's, beside A's speedup


@dataclass
class Comparison:
    a_paths: list[str]
    b_paths: list[str]
    a: Report
    b: Report
    pairs: list[Pair]
    means: list[GeoMean]
    tput_pairs: list[ThroughputPair]
    tput_means: list[GeoMean]
    unpaired: list[Unpaired] = field(default_factory=list)
    matched: list[Matched] = field(default_factory=list)  # one per pair, in the same order
    prices: dict[str, float] = field(default_factory=dict)
    rank_by: str = "time"

    @property
    def empty(self) -> bool:
        return not self.pairs and not self.tput_pairs

    @property
    def a_name(self) -> str:
        return _name(self.a_paths) + _what(self.a_paths, self.a)

    @property
    def b_name(self) -> str:
        return _name(self.b_paths) + _what(self.b_paths, self.b)

    @property
    def a_what(self) -> str:
        return _what(self.a_paths, self.a)

    @property
    def b_what(self) -> str:
        return _what(self.b_paths, self.b)

    @property
    def busy(self) -> list[tuple[str, int, int]]:
        """(side, its runs made on a busy machine, its runs) for each side that has such runs."""
        sides = (("A", self.a), ("B", self.b))
        return [(side, n, len(rep.runs)) for side, rep in sides if (n := sum(1 for r in rep.runs if r.busy))]


_STAMPED = re.compile(r"\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d")  # a harness run or sweep folder: its time first


def _name(paths: list[str]) -> str:
    return ", ".join(Path(p).name or p for p in paths)


def _what(paths: list[str], side: Report) -> str:
    """' (ncf, 1 CPU rank, fp32)': what the side's runs are, where its folders are named by their time (a
    harness run or sweep folder from before sweep folders named what they run); '' otherwise."""
    if not all(_STAMPED.match(Path(p).name) for p in paths) or not side.stats:
        return ""
    what = [sorted({str(g.key.benchmark) for g in side.stats}),
            sorted({_gpus(g) for g in side.stats}), sorted({g.key.precision or "n/a" for g in side.stats})]
    return f" ({', '.join(' + '.join(values) for values in what)})"


def _pick(groups: list[GroupStats]) -> dict[tuple, GroupStats]:
    """One group per (benchmark, world, precision, the target where runs state several): the one with the most runs."""
    out: dict[tuple, GroupStats] = {}
    for g in sorted(groups, key=lambda g: (-g.runs, str(g.key))):
        out.setdefault((g.key.benchmark, g.key.world, g.key.precision, g.key.target, g.key.settings), g)
    return out


def match(a: list[GroupStats], b: list[GroupStats]
          ) -> tuple[list[tuple[GroupStats, GroupStats]], list[Unpaired]]:
    """(pairs of A's and B's groups, what could not be paired), as the module docstring says."""
    left, right = _pick(a), _pick(b)
    pairs = [(left[k], right[k]) for k in sorted(set(left) & set(right), key=str)]
    unpaired = []
    for bench in sorted({k[0] for k in left} | {k[0] for k in right}):
        la = [g for k, g in sorted(left.items(), key=lambda kv: str(kv[0])) if k[0] == bench and k not in right]
        rb = [g for k, g in sorted(right.items(), key=lambda kv: str(kv[0])) if k[0] == bench and k not in left]
        if la and rb and (len(la) == 1 or len(rb) == 1):
            pairs += [(ga, gb) for ga in la for gb in rb]
        else:
            for side, rest in (("A", la), ("B", rb)):
                for g in rest:
                    unpaired.append(Unpaired(bench, side, _gpus(g), g.key.precision,
                                                       len(rb if side == "A" else la)))
    return pairs, unpaired


def _system_kind(g: GroupStats) -> str:
    return accelerator_kind(g.key.accelerator, g.key.platform)


def _gpus(g: GroupStats) -> str:
    return count_label(g.key.world, _system_kind(g))


def _pair(ga: GroupStats, gb: GroupStats, a: Report, b: Report) -> Pair:
    ttt = ratio(time_of(gb, b.scores[gb.key].minutes), time_of(ga, a.scores[ga.key].minutes))
    tput = ratio(ga.throughput.mean, gb.throughput.mean) if ga.throughput_unit == gb.throughput_unit else None
    epochs = epochs_ratio(gb, ga)
    rest = ttt / (tput * epochs) if ttt is not None and tput is not None and epochs is not None else None
    world = ga.key.world if ga.key.world == gb.key.world else None
    precision = ga.key.precision if ga.key.precision == gb.key.precision else \
        f"{ga.key.precision or 'n/a'} vs {gb.key.precision or 'n/a'}"
    return Pair(ga.key.benchmark, category(ga.key.benchmark), world, precision, system_of(ga),
                          system_of(gb), ttt, tput, epochs, rest)


def compare(a_paths: list[str], b_paths: list[str], jobs: Optional[int] = None,
            prices: Optional[dict[str, float]] = None, rank_by: str = "time",
            max_log_bytes: Optional[int] = MAX_LOG_BYTES) -> Comparison:
    a, b = (build(paths, jobs=jobs, max_log_bytes=max_log_bytes) for paths in (a_paths, b_paths))
    prices = prices or {}
    for rep in (a, b):
        rep.prices, rep.rank_by = prices, rank_by
    groups, unpaired = match(a.stats, b.stats)
    pairs, matched = [], []
    for ga, gb in groups:
        pair = _pair(ga, gb, a, b)
        ra, rb = a.groups[ga.key], b.groups[gb.key]
        j = judge("A", ra, a.scores[ga.key].minutes, "B", rb, b.scores[gb.key].minutes, ga.key.benchmark,
                  ga.throughput_unit == gb.throughput_unit, (a.scores[ga.key].scaling, b.scores[gb.key].scaling))
        gpus = _gpus(ga) if ga.key.world == gb.key.world else f"A {_gpus(ga)}, B {_gpus(gb)}"
        a_usd, b_usd = cost.price_for(ga.key, ra, prices)[0], cost.price_for(gb.key, rb, prices)[0]
        pairs.append(pair)
        matched.append(Matched(ga.key, gb.key, ga.key.world, gb.key.world, gpus, j,
                               chances("A", ra, "B", rb, j.time_to_train), a_usd, b_usd,
                               cost.compare_cost(a_usd, b_usd, pair.time_to_train, j.time_interval)))
    tput = pair_throughput(a.tput_groups, b.tput_groups)
    unpaired += left_unpaired(a.tput_groups, b.tput_groups, tput, lambda g: g.workload)
    return Comparison(a_paths, b_paths, a, b, pairs, geomeans(pairs, TTT_FIELDS), tput,
                      geomeans(tput, ("ratio",)), unpaired, matched, prices, rank_by)


def cost_rows(c: Comparison) -> list[cost.CostRow]:
    """Both sides' groups, each marked A or B, ranked together within each benchmark."""
    from dataclasses import replace

    rows = []
    for side, rep in (("A", c.a), ("B", c.b)):
        for r in cost.cost_rows(rep.stats, rep.groups, rep.confidence, c.prices, c.rank_by, rep.scores):
            rows.append(replace(r, side=side, rank=None))
    rows.sort(key=lambda r: r.key.benchmark)
    return cost.rank(rows, c.rank_by)
