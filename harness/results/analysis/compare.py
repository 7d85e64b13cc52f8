"""Speedups between groups, decomposed so that they explain themselves.

Across world sizes (same benchmark, system and precision; baseline: the smallest world size, or the
one asked for): time-to-train speedup = throughput speedup x epochs ratio x the rest (evaluation,
start-up), each shown. Scaling efficiency = throughput speedup / GPU ratio. Official logs carry
their throughput derived from their epoch intervals (harness.results.read.intervals); where no throughput
can be had at all, the throughput speedup is implied by the other two. A time-to-train speedup beyond
the GPU ratio is flagged as superlinear, one far below the throughput speedup as a shortfall, and
`attribution` names the factor behind each: throughput beyond the GPU ratio (hardware), epochs
(convergence) or the rest, each with its share.

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
from harness.results.analysis.distribution import summary
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
    flag: str  # plain-language note, "" when unremarkable
    confidence: Optional[Judgement] = None  # interval, verdict, runs to resolve (given the groups' runs)
    chances: Optional[Chances] = None  # the expected speedup from the epoch spreads, and how likely this one is
    family: Optional[str] = None  # submission trees: lineage.VOUCHED, or what keeps the pair from being one family
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


def judged(subject: str, g: GroupStats, reference: str, base: GroupStats, scores: dict, runs: Runs
           ) -> tuple[Optional[Judgement], Optional[Chances]]:
    """g against base, how sure and as chances; (None, None) without the groups' runs."""
    if runs is None or g.key not in runs or base.key not in runs:
        return None, None
    same = g.throughput_unit == base.throughput_unit
    j = judge(subject, runs[g.key], scores.get(g.key), reference, runs[base.key], scores.get(base.key),
              g.key.benchmark, same)
    return j, chances(subject, runs[g.key], reference, runs[base.key], j.time_to_train)


def time_of(g: GroupStats, score: Optional[float]) -> Optional[float]:
    """MLPerf's score when the group has one, else the mean time of its converged runs."""
    return score if score is not None else g.time_to_train_min.mean


def epochs_of(g: GroupStats) -> Optional[float]:
    e = g.epochs
    return e.olympic_mean if e.olympic_mean is not None else e.mean


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def world_speedups(groups: Sequence[GroupStats], scores: dict, baseline_world: Optional[int] = None,
                   runs: Runs = None) -> list[Speedup]:
    """Every group against the baseline world size of its family: the same benchmark, accelerator
    (its chip: V100, A100, H200, CPU; the platform without its count when no accelerator is named) and
    precision. Where a family holds two groups at one world size, it is split by MLPerf round, then
    framework, then per-rank batch, then platform, so that each world size appears once. A submission
    tree's groups pair within one submitter and division only, and each pair says whether it is one
    system family (harness.results.analysis.lineage) or what differs."""
    families: dict[tuple, list[GroupStats]] = {}
    for g in groups:
        if not g.key.world:  # unknown, or 0: a CPU system with no accelerator to count
            continue
        kind = accelerator_kind(g.key.accelerator, g.key.platform)
        families.setdefault((g.key.benchmark, kind, g.key.precision, *lineage.submitter_key(g.key)), []).append(g)
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
                    out.append(replace(_speedup(bench, name, precision, base, g, scores, runs), family=mark,
                                       platforms=None if mark is None else (base.key.platform, g.key.platform)))
    return out


def _per_rank(g: GroupStats):
    return g.key.batch // g.key.world if g.key.batch and g.key.world else None


_SPLITS = (lambda g: g.rounds, lambda g: g.key.framework, _per_rank, lambda g: g.key.platform)


def _split(members: list[GroupStats], splits) -> list[list[GroupStats]]:
    worlds = [g.key.world for g in members]
    if len(set(worlds)) == len(worlds) or not splits:
        return [members]
    parts: dict = {}
    for g in members:
        parts.setdefault(str(splits[0](g)), []).append(g)
    return [family for part in parts.values() for family in _split(part, splits[1:])]


def _speedup(bench: str, system: str, precision: Optional[str], base: GroupStats, g: GroupStats,
             scores: dict, runs: Runs = None) -> Speedup:
    ttt = ratio(time_of(base, scores.get(base.key)), time_of(g, scores.get(g.key)))
    epochs = ratio(epochs_of(base), epochs_of(g))
    same_unit = g.throughput_unit == base.throughput_unit
    tput = ratio(g.throughput.mean, base.throughput.mean) if same_unit else None
    implied = tput is None and ttt is not None and epochs is not None
    if implied and ttt is not None and epochs:
        tput = ttt / epochs
    rest = ttt / (tput * epochs) if not implied and ttt is not None and tput and epochs else None
    world, base_world = g.key.world or 0, base.key.world or 1  # families hold known world sizes only
    gpus = world / base_world
    efficiency = tput / gpus if tput is not None else None
    conf, odds = judged(count_label(g.key.world, system), g, count_label(base.key.world, system), base, scores, runs)
    return Speedup(bench, system, precision, base_world, world, ttt, tput, implied, epochs, rest, efficiency,
                   rcp_check(base, g), attribution(ttt, tput, epochs, rest, gpus, base, g, implied), conf, odds)


def _share(x: float, whole: float) -> str:
    return f"{math.log(x) / math.log(whole):.0%}" if whole > 0 and abs(math.log(whole)) > 1e-9 and x > 0 else "n/a"


def attribution(ttt, tput, epochs, rest, gpus, base: GroupStats, g: GroupStats, implied: bool = False) -> str:
    """Name what made a speedup superlinear (above the GPU ratio) or fall short of its throughput
    speedup, each factor with its share of the gap on a log scale: throughput beyond the GPU ratio
    (hardware: caches, contention, thread counts), epochs (convergence), and the rest (evaluation,
    start-up), so that time to train = throughput x epochs x rest reads as causes."""
    if ttt is None or tput is None or epochs is None:
        return ""
    span = f"{epochs_of(base):.3g} -> {epochs_of(g):.3g}"
    if ttt > gpus * 1.05:
        beyond = ttt / gpus
        hardware, causes, costs = tput / gpus, [], []
        tput_text = f"throughput {tput:.2f}x" + (" (implied)" if implied else "")
        if hardware > 1.02:
            causes.append(f"{tput_text}, {hardware:.2f}x beyond the GPU ratio (hardware: caches, contention, "
                          f"thread counts; {_share(hardware, beyond)} of the gain)")
        elif hardware < 0.98:
            costs.append(f"{tput_text} is {hardware:.0%} of linear ({_share(hardware, beyond)})")
        if epochs > 1.02:
            causes.append(f"needing fewer epochs gave {epochs:.2f}x (epochs {span}: convergence; "
                          f"{_share(epochs, beyond)} of the gain)")
        elif epochs < 0.98:
            costs.append(f"more epochs cost {1 / epochs:.2f}x (epochs {span}; {_share(epochs, beyond)})")
        if rest is not None and abs(rest - 1) > 0.02:
            (causes if rest > 1 else costs).append(f"the rest (evaluation, start-up) {rest:.2f}x "
                                                   f"({_share(rest, beyond)})")
        named = ("convergence, not hardware" if epochs > 1.02 and hardware <= 1.02 else
                 "hardware, not convergence" if hardware > 1.02 and epochs <= 1.02 else
                 "both hardware and convergence" if hardware > 1.02 else "the rest")
        text = f"superlinear: {ttt:.1f}x faster on {gpus:g}x the GPUs ({beyond:.2f}x beyond linear): " + "; ".join(causes)
        if costs:
            text += "; against it: " + "; ".join(costs)
        return text + f". Cause: {named}"
    if ttt < 0.95 * tput:
        # Name each factor that took its share, so that a slow evaluation is not blamed on convergence.
        lost, costs = ttt / tput, []
        if epochs < 0.98:
            runs = summary(g.epochs.counts)
            costs.append(f"more epochs cost {1 / epochs:.2f}x ({span}), {_share(epochs, lost)} of the shortfall "
                         f"(epochs: runs {runs})")
        if rest is not None and rest < 0.98:
            costs.append(f"time outside the training loop (evaluation, start-up) cost {1 / rest:.2f}x, "
                         f"{_share(rest, lost)} of the shortfall")
        return (f"time to train gained {ttt:.2f}x of the {tput:.2f}x throughput: "
                + "; ".join(costs or [f"epochs {span} ({epochs:.2f}x)"]))
    return ""


def precision_ratios(groups: Sequence[GroupStats], scores: dict, baseline: str = "fp32",
                     runs: Runs = None) -> list[PrecisionRatio]:
    """Each non-baseline precision against the baseline at the same benchmark, system and world size."""
    by_key: dict[tuple, dict[str, GroupStats]] = {}
    for g in groups:
        if g.key.precision:
            kind = accelerator_kind(g.key.accelerator, g.key.platform)
            by_key.setdefault((g.key.benchmark, kind, g.key.world), {})[g.key.precision] = g
    out = []
    for (bench, system, world), members in sorted(by_key.items(), key=lambda kv: str(kv[0])):
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
                ratio(epochs_of(base), epochs_of(g)), *judged(precision, g, baseline, base, scores, runs),
            ))
    return out
