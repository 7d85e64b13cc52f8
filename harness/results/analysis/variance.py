"""The seed-variance view: how much of a group's spread in time to train its epochs explain.

Per group of converged runs: the epochs-to-converge distribution, the time to train at the fewest and
at the most epochs, and the share of the variance of time to train that epochs explain: R^2 of the
least-squares line of time to train on epochs (the squared Pearson correlation). 1.0 means the spread
is all convergence (seed luck in epochs); 0 means none of it is (every run needed the same epochs, or
the time per epoch varies as much). The rest is throughput and time outside the training loop. The table and
the words: harness.results.report.spread.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Optional, Sequence

from harness.results.analysis.stats import GroupKey
from harness.results.read.summary import RunSummary


@dataclass(frozen=True)
class SeedSpread:
    key: GroupKey
    runs: int
    converged: int
    epochs: dict  # epochs -> runs
    ttt_std: Optional[float]  # minutes, ddof=0
    ttt_cv: Optional[float]  # std / mean
    explained: Optional[float]  # share of the variance of time to train that epochs explain (R^2)
    ttt_at_fewest: Optional[float]  # mean minutes of the runs at the fewest epochs
    ttt_at_most: Optional[float]  # ... at the most epochs
    slowest: Optional[str]  # the slowest converged run's log
    slowest_epochs: Optional[float] = None
    slowest_min: Optional[float] = None
    unit: str = "epochs"  # what convergence is counted in (samples, steps: the RCP checker's unit)


def seed_spread(key: GroupKey, runs: Sequence[RunSummary]) -> SeedSpread:
    # (epochs, minutes, log) of each converged run
    conv = [(float(r.epochs_to_converge), float(r.time_to_train_min), r.path) for r in runs
            if r.converged and r.epochs_to_converge is not None and r.time_to_train_min is not None]
    by_epochs: dict[str, list[float]] = {}
    for e, minutes, _ in conv:
        by_epochs.setdefault(_label(e), []).append(minutes)
    counts = {k: len(v) for k, v in sorted(by_epochs.items(), key=lambda kv: float(kv[0]))}
    if len(conv) < 2:
        return SeedSpread(key, len(runs), len(conv), counts, None, None, None, None, None, None)
    x = [e for e, _, _ in conv]
    y = [m for _, m, _ in conv]
    std, mean = statistics.pstdev(y), statistics.fmean(y)
    explained = 0.0
    if statistics.pstdev(x) > 0 and std > 0:
        explained = statistics.correlation(x, y) ** 2
    lo, hi = min(counts, key=float), max(counts, key=float)
    slowest = max(conv, key=lambda c: c[1])
    unit = next((r.epoch_unit for r in runs if r.path == slowest[2]), "epochs")
    return SeedSpread(key, len(runs), len(conv), counts, std, std / mean if mean else None, explained,
                      statistics.fmean(by_epochs[lo]), statistics.fmean(by_epochs[hi]), slowest[2],
                      slowest[0], slowest[1], unit)


def _label(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"
