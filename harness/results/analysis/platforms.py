"""Two platforms side by side: time to train and throughput, per benchmark and per category.

Time to train: groups of A and B of one benchmark at equal GPU counts (and precision, where the logs
say it) are paired; A's speedup over B = B's time / A's time (MLPerf scores where both have one) =
throughput ratio (A / B) x epochs ratio (B's olympic-mean epochs / A's) x rest. Throughput results
(mode=throughput) pair by workload, precision, GPU count and global batch: ratio = A's median / B's.
Each ratio's geometric mean is given per category (harness.results.analysis.categories) and overall.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Optional, Sequence

from harness.results.analysis.categories import category
from harness.results.analysis.compare import ratio
from harness.results.analysis.stats import GroupStats
from harness.results.analysis.throughput import ThroughputGroup

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


def unpaired(a: Sequence, b: Sequence, pairs: Sequence, name) -> list[Unpaired]:
    """What one side has and the other lacks, so that a missing benchmark is not silently dropped."""
    paired = Counter(getattr(p, "benchmark", None) or getattr(p, "workload", None) for p in pairs)
    out = []
    for side, groups in (("A", a), ("B", b)):
        for n in sorted({name(g) for g in groups} - set(paired)):
            out.append(Unpaired(n, side))
    return out
