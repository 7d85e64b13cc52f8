"""Speedups between groups, decomposed so that they explain themselves.

Across world sizes (same benchmark, system and precision; baseline: the smallest world size, or the
one asked for): time-to-train speedup = throughput speedup x epochs ratio x the rest (evaluation,
start-up), each shown. Scaling efficiency = throughput speedup / GPU ratio. Official logs carry
their throughput derived from their epoch intervals (harness.results.read.intervals); where no throughput
can be had at all, the throughput speedup is implied by the other two. A time-to-train speedup beyond
the GPU ratio is flagged as superlinear, one far below the throughput speedup as a shortfall, and
`attribution` names the factor behind each: throughput beyond the GPU ratio (hardware), epochs
(convergence) or the rest, each with its share (in words: harness.results.report.explain).

Across precisions (same benchmark, system and world size): throughput ratio against time-to-train
ratio, amp or bf16 or tf32 against fp32.

Given each group's runs, every speedup and precision ratio also says how sure it is
(harness.results.analysis.confidence: a 95% interval, a permutation verdict, the runs that would resolve it) and
where it comes from as chances (harness.results.analysis.chances: the expected speedup from each side's epoch
spread and the probability of one as large as observed).

On MLPerf GNMT, 4 T4s trained 10.4x faster than one because the runs needed 12, 7, 5 and 4 epochs:
throughput scaled about linearly and the rest was convergence. These tables show exactly that.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional, Sequence

from harness.results.analysis import lineage
from harness.results.analysis.chances import Chances, chances
from harness.results.analysis.confidence import Judgement, judge
from harness.results.analysis.stats import GroupKey, GroupStats, RCPVerdict, accelerator_kind, rcp_check
from harness.results.read.summary import RunSummary

Runs = Optional[dict[GroupKey, list[RunSummary]]]


@dataclass(frozen=True)
class Speedup:
    benchmark: str
    system: str
    precision: Optional[str]
    baseline_world: int
    world: int
    time_to_train: Optional[float]  # baseline time / this time (MLPerf scores where both have one)
    throughput: Optional[float]  # this throughput / baseline's
    throughput_implied: bool  # no throughput in the logs: time-to-train speedup / epochs ratio
    epochs_ratio: Optional[float]  # baseline epochs / these epochs
    rest: Optional[float]  # time-to-train speedup / (throughput x epochs): evaluation, start-up, overheads
    efficiency: Optional[float]  # throughput speedup / world ratio
    rcp: Optional[RCPVerdict]  # this group's convergence against the baseline's, as MLPerf's RCP checker
    attribution: Optional[Attribution]  # why it is superlinear or short of its throughput; None when unremarkable
    confidence: Optional[Judgement] = None  # interval, verdict, runs to resolve (given the groups' runs)
    chances: Optional[Chances] = None  # the expected speedup from the epoch spreads, and how likely this one is
    family: Optional[lineage.Kinship] = None  # submission trees: whether the pair is one system family
    platforms: Optional[tuple[str, str]] = None  # submission trees: the baseline's and this group's platform

    @property
    def gpu_ratio(self) -> float:
        return self.world / self.baseline_world


@dataclass(frozen=True)
class PrecisionRatio:
    benchmark: str
    system: str
    world: Optional[int]
    precision: str
    baseline_precision: str
    throughput: Optional[float]
    time_to_train: Optional[float]
    epochs_ratio: Optional[float]
    confidence: Optional[Judgement] = None
    chances: Optional[Chances] = None


def count_label(world: Optional[int], system: str) -> str:
    """'4 GPUs', '1 GPU', '2 CPU ranks': what a world size counts."""
    if world is None:
        return "n/a GPUs"
    what = "CPU rank" if system == "CPU" else "GPU"
    return f"{world} {what}{'' if world == 1 else 's'}"


def judged(subject: str, g: GroupStats, reference: str, base: GroupStats, scores: dict, runs: Runs,
           scalings: Optional[dict] = None) -> tuple[Optional[Judgement], Optional[Chances]]:
    """g against base, how sure and as chances; (None, None) without the groups' runs. `scalings`: each
    group's scaling.json factor, which its score holds (1 where absent)."""
    if runs is None or g.key not in runs or base.key not in runs:
        return None, None
    same = g.throughput_unit == base.throughput_unit
    scale = scalings or {}
    j = judge(subject, runs[g.key], scores.get(g.key), reference, runs[base.key], scores.get(base.key),
              g.key.benchmark, same, (scale.get(g.key, 1.0), scale.get(base.key, 1.0)))
    return j, chances(subject, runs[g.key], reference, runs[base.key], j.time_to_train)


def time_of(g: GroupStats, score: Optional[float]) -> Optional[float]:
    """MLPerf's score when the group has one, else the mean time of its converged runs."""
    return score if score is not None else g.time_to_train_min.mean


def epochs_of(g: GroupStats) -> Optional[float]:
    e = g.epochs
    return e.olympic_mean if e.olympic_mean is not None else e.mean


def epochs_ratio(base: GroupStats, g: GroupStats) -> Optional[float]:
    """base's epochs to converge over g's; None where they count different things (stable diffusion
    converges in steps under 3.1.0 and in samples from 4.0.0: no ratio of the two means anything)."""
    return ratio(epochs_of(base), epochs_of(g)) if base.epoch_unit == g.epoch_unit else None


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def world_speedups(groups: Sequence[GroupStats], scores: dict, baseline_world: Optional[int] = None,
                   runs: Runs = None, scalings: Optional[dict] = None) -> list[Speedup]:
    """Every group against the baseline world size of its family: the same benchmark, accelerator
    (its chip: V100, A100, H200, CPU; the platform without its count when no accelerator is named) and
    precision. Where a family holds two groups at one world size, it is split by MLPerf round, then
    system family (lineage), then framework, then per-rank batch, then platform, so that each world size
    appears once. A submission
    tree's groups pair within one submitter and division only, and each pair says whether it is one
    system family (harness.results.analysis.lineage) or what differs."""
    families: dict[tuple, list[GroupStats]] = {}
    for g in groups:
        if not g.key.world:  # unknown, or 0: a CPU system with no accelerator to count
            continue
        kind = accelerator_kind(g.key.accelerator, g.key.platform)
        families.setdefault((g.key.benchmark, kind, g.key.precision, *lineage.submitter_key(g.key), g.key.target,
                             g.key.settings), []).append(g)  # a speedup compares times to one target, alike set
    out = []
    for (bench, system, precision, *_), members in sorted(families.items(), key=lambda kv: str(kv[0])):
        for family in _split(members, _SPLITS):
            worlds = sorted({g.key.world or 0 for g in family})
            base_world = baseline_world if baseline_world in worlds else worlds[0]
            base = next(g for g in family if g.key.world == base_world)
            for g in sorted(family, key=lambda g: g.key.world or 0):
                if g is not base:
                    mark = lineage.vouch(base.key, g.key)
                    name = system if mark is None else lineage.pair_label(base.key, g.key)
                    out.append(replace(_speedup(bench, name, precision, base, g, scores, runs, scalings), family=mark,
                                       platforms=None if mark is None else (base.key.platform, g.key.platform)))
    return out


def _per_rank(g: GroupStats):
    return g.key.batch // g.key.world if g.key.batch and g.key.world else None


def _line(g: GroupStats):
    """A tree group's system family (its system line, accelerator model and framework); None outside a tree."""
    family = lineage.family_of(g.key)
    return None if family is None else (family.line, family.accelerator, family.framework)


# the system family before the batch and the platform: Dell's v1.0 ResNet at 8, 16 and 24 A100-PCIe (one
# line) beside an A100-SXM server at 8 was split down to one folder a part, and its scaling pairs vanished
_SPLITS = (lambda g: g.rounds, _line, lambda g: g.key.framework, _per_rank, lambda g: g.key.platform)


def _split(members: list[GroupStats], splits) -> list[list[GroupStats]]:
    worlds = [g.key.world for g in members]
    if len(set(worlds)) == len(worlds) or not splits:
        return [members]
    parts: dict = {}
    for g in members:
        parts.setdefault(str(splits[0](g)), []).append(g)
    return [family for part in parts.values() for family in _split(part, splits[1:])]


def _speedup(bench: str, system: str, precision: Optional[str], base: GroupStats, g: GroupStats,
             scores: dict, runs: Runs = None, scalings: Optional[dict] = None) -> Speedup:
    ttt = ratio(time_of(base, scores.get(base.key)), time_of(g, scores.get(g.key)))
    epochs = epochs_ratio(base, g)
    same_unit = g.throughput_unit == base.throughput_unit
    tput = ratio(g.throughput.mean, base.throughput.mean) if same_unit else None
    implied = tput is None and ttt is not None and epochs is not None
    if implied and ttt is not None and epochs:
        tput = ttt / epochs
    rest = ttt / (tput * epochs) if not implied and ttt is not None and tput and epochs else None
    world, base_world = g.key.world or 0, base.key.world or 1  # families hold known world sizes only
    gpus = world / base_world
    efficiency = tput / gpus if tput is not None else None
    conf, odds = judged(count_label(g.key.world, system), g, count_label(base.key.world, system), base, scores, runs,
                       scalings)
    return Speedup(bench, system, precision, base_world, world, ttt, tput, implied, epochs, rest, efficiency,
                   rcp_check(base, g), attribution(ttt, tput, epochs, rest, gpus, base, g, implied), conf, odds)


SUPERLINEAR = "superlinear"  # time to train gained more than the GPU ratio
SHORTFALL = "shortfall"  # time to train gained well under the throughput speedup
NOTABLE = 0.02  # a factor within 2% of 1 takes no part in the explanation


@dataclass(frozen=True)
class Factor:
    """One factor of time to train = throughput x epochs x rest, as it bears on the gap explained."""

    what: str  # "throughput" (beyond the GPU ratio: hardware), "epochs" (convergence) or "rest"
    ratio: float  # throughput / GPU ratio, epochs ratio, or rest
    share: Optional[float]  # its share of the gap on a log scale; None where the gap is nil
    gain: bool  # it made the speedup larger


@dataclass(frozen=True)
class Attribution:
    """What made a speedup superlinear or fall short of its throughput speedup, as numbers and causes;
    the sentence: harness.results.report.explain."""

    kind: str  # SUPERLINEAR or SHORTFALL
    time_to_train: float
    throughput: float
    throughput_implied: bool
    epochs_ratio: float
    gpu_ratio: float
    epochs: tuple[float, float]  # the baseline's (olympic) mean epochs, this group's
    epoch_counts: dict[str, int]  # this group's {epochs: runs}
    factors: tuple[Factor, ...]  # in the order throughput, epochs, rest
    cause: str  # superlinear: "convergence", "hardware", "both" or "rest"; "" for a shortfall

    @property
    def gap(self) -> float:
        """Superlinear: time to train beyond linear; shortfall: the share of the throughput speedup kept."""
        return self.time_to_train / (self.gpu_ratio if self.kind == SUPERLINEAR else self.throughput)


def _share(x: float, whole: float) -> Optional[float]:
    return math.log(x) / math.log(whole) if whole > 0 and abs(math.log(whole)) > 1e-9 and x > 0 else None


def attribution(ttt, tput, epochs, rest, gpus, base: GroupStats, g: GroupStats,
                implied: bool = False) -> Optional[Attribution]:
    """Name what made a speedup superlinear (above the GPU ratio) or fall short of its throughput
    speedup, each factor with its share of the gap on a log scale: throughput beyond the GPU ratio
    (hardware: caches, contention, thread counts), epochs (convergence), and the rest (evaluation,
    start-up), so that time to train = throughput x epochs x rest reads as causes. None when unremarkable."""
    if ttt is None or tput is None or epochs is None:
        return None
    span = (epochs_of(base) or 0.0, epochs_of(g) or 0.0)  # both known where the epochs ratio is
    lo, hi = 1 - NOTABLE, 1 + NOTABLE
    if ttt > gpus * 1.05:
        beyond, hardware = ttt / gpus, tput / gpus
        factors = [Factor(what, x, _share(x, beyond), x > 1) for what, x, shown in (
            ("throughput", hardware, not lo <= hardware <= hi), ("epochs", epochs, not lo <= epochs <= hi),
            ("rest", 1.0 if rest is None else rest, rest is not None and abs(rest - 1) > NOTABLE)) if shown]
        cause = ("convergence" if epochs > hi and hardware <= hi else "hardware" if hardware > hi and epochs <= hi
                 else "both" if hardware > hi else "rest")
        return Attribution(SUPERLINEAR, ttt, tput, implied, epochs, gpus, span, g.epochs.counts, tuple(factors), cause)
    if ttt < 0.95 * tput:
        # Name each factor that took its share, so that a slow evaluation is not blamed on convergence.
        lost = ttt / tput
        factors = [Factor(what, x, _share(x, lost), False) for what, x, shown in (
            ("epochs", epochs, epochs < lo), ("rest", 1.0 if rest is None else rest, rest is not None and rest < lo)) if shown]
        return Attribution(SHORTFALL, ttt, tput, implied, epochs, gpus, span, g.epochs.counts, tuple(factors), "")
    return None


def precision_ratios(groups: Sequence[GroupStats], scores: dict, baseline: str = "fp32",
                     runs: Runs = None, scalings: Optional[dict] = None) -> list[PrecisionRatio]:
    """Each non-baseline precision against the baseline at the same benchmark, system and world size."""
    by_key: dict[tuple, dict[str, GroupStats]] = {}
    for g in groups:
        if g.key.precision:
            kind = accelerator_kind(g.key.accelerator, g.key.platform)
            by_key.setdefault((g.key.benchmark, kind, g.key.world, g.key.target, g.key.settings), {})[g.key.precision] = g
    out = []
    for (bench, system, world, *_), members in sorted(by_key.items(), key=lambda kv: str(kv[0])):
        base = members.get(baseline)
        if base is None:
            continue
        for precision, g in sorted(members.items()):
            if precision == baseline:
                continue
            out.append(PrecisionRatio(
                bench, system, world, precision, baseline,
                ratio(g.throughput.mean, base.throughput.mean) if g.throughput_unit == base.throughput_unit else None,
                ratio(time_of(base, scores.get(base.key)), time_of(g, scores.get(g.key))),
                epochs_ratio(base, g), *judged(precision, g, baseline, base, scores, runs, scalings),
            ))
    return out
