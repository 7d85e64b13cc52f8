"""Speedups between groups, decomposed so that they explain themselves.

Across world sizes (same benchmark, system and precision; baseline: the smallest world size, or the
one asked for): time-to-train speedup = throughput speedup x epochs ratio x the rest (evaluation,
start-up), each shown. Scaling efficiency = throughput speedup / GPU ratio. When a log carries no
throughput (official logs), the throughput speedup is implied by the other two. A time-to-train
speedup beyond the GPU ratio is flagged as superlinear, one far below the throughput speedup as a
convergence cost, saying how much came from needing fewer (or more) epochs.

Across precisions (same benchmark, system and world size): throughput ratio against time-to-train
ratio, amp or bf16 or tf32 against fp32.

On MLPerf GNMT, 4 T4s trained 10.4x faster than one because the runs needed 12, 7, 5 and 4 epochs:
throughput scaled about linearly and the rest was convergence. These tables show exactly that.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from harness.results.stats import GroupStats, RCPVerdict, platform_kind, rcp_check


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


def _time(g: GroupStats, score: Optional[float]) -> Optional[float]:
    """MLPerf's score when the group has one, else the mean time of its converged runs."""
    return score if score is not None else g.time_to_train_min.mean


def _epochs(g: GroupStats) -> Optional[float]:
    e = g.epochs
    return e.olympic_mean if e.olympic_mean is not None else e.mean


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def world_speedups(groups: Sequence[GroupStats], scores: dict, baseline_world: Optional[int] = None) -> list[Speedup]:
    """Every group against the baseline world size of its (benchmark, system, precision, per-rank batch)."""
    families: dict[tuple, list[GroupStats]] = {}
    for g in groups:
        bench, platform, world, precision, batch = g.key
        if world is None:
            continue
        per_rank = batch // world if batch and world else None
        families.setdefault((bench, platform_kind(platform), precision, per_rank), []).append(g)
    out = []
    for (bench, system, precision, _), members in sorted(families.items(), key=lambda kv: str(kv[0])):
        worlds = sorted({g.key[2] for g in members})
        base_world = baseline_world if baseline_world in worlds else worlds[0]
        base = next(g for g in members if g.key[2] == base_world)
        for g in sorted(members, key=lambda g: g.key[2]):
            if g is base:
                continue
            out.append(_speedup(bench, system, precision, base, g, scores))
    return out


def _speedup(bench: str, system: str, precision: Optional[str], base: GroupStats, g: GroupStats,
             scores: dict) -> Speedup:
    ttt = _ratio(_time(base, scores.get(base.key)), _time(g, scores.get(g.key)))
    epochs = _ratio(_epochs(base), _epochs(g))
    tput = _ratio(g.throughput.mean, base.throughput.mean)
    implied = tput is None and ttt is not None and epochs is not None
    if implied:
        tput = ttt / epochs
    rest = ttt / (tput * epochs) if not implied and None not in (ttt, tput, epochs) else None
    gpus = g.key[2] / base.key[2]
    efficiency = tput / gpus if tput is not None else None
    return Speedup(bench, system, precision, base.key[2], g.key[2], ttt, tput, implied, epochs, rest, efficiency,
                   rcp_check(base, g), _flag(ttt, tput, epochs, rest, gpus, base, g))


def _flag(ttt, tput, epochs, rest, gpus, base: GroupStats, g: GroupStats) -> str:
    if ttt is None or tput is None or epochs is None:
        return ""
    from_epochs = f"epochs {_epochs(base):.3g} -> {_epochs(g):.3g} ({epochs:.2f}x)"
    if ttt > gpus * 1.05:
        return (f"superlinear: {ttt:.1f}x faster on {gpus:g}x the GPUs; throughput gave {tput:.2f}x, "
                f"needing fewer epochs gave {epochs:.2f}x ({from_epochs}): convergence, not hardware")
    if ttt < 0.8 * tput:
        # Name each factor that took its share, so that a slow evaluation is not blamed on convergence.
        costs = []
        if epochs < 0.95:
            costs.append(f"more epochs cost {1 / epochs:.2f}x ({_epochs(base):.3g} -> {_epochs(g):.3g})")
        if rest is not None and rest < 0.95:
            costs.append(f"time outside the training loop (evaluation, start-up) cost {1 / rest:.2f}x")
        return f"time to train gained {ttt:.2f}x of the {tput:.2f}x throughput: " + "; ".join(costs or [from_epochs])
    return ""


def precision_ratios(groups: Sequence[GroupStats], scores: dict, baseline: str = "fp32") -> list[PrecisionRatio]:
    """Each non-baseline precision against the baseline at the same benchmark, system and world size."""
    by_key: dict[tuple, dict[str, GroupStats]] = {}
    for g in groups:
        bench, platform, world, precision, _ = g.key
        if precision:
            by_key.setdefault((bench, platform_kind(platform), world), {})[precision] = g
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
                _ratio(g.throughput.mean, base.throughput.mean),
                _ratio(_time(base, scores.get(base.key)), _time(g, scores.get(g.key))),
                _ratio(_epochs(base), _epochs(g)),
            ))
    return out
