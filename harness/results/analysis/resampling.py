"""95% intervals by bootstrap that hold their estimate, from enough runs: what harness.results.analysis.confidence
draws every interval with (docs/report.md, "How sure a comparison is").

scipy.stats.bootstrap, RESAMPLES resamples of each sample drawn independently, from a fixed seed (SEED) so that a
report is reproducible; bias-corrected and accelerated (BCa), or the percentile interval where BCa is undefined
(every resample equal, or runs that did not converge in a side) or leaves out the estimate itself (BCa's
corrections on a few lumpy resamples can shift it past it). An interval always holds its estimate: where neither
does, there is none. Nor is there one from fewer runs a side than interval_runs(): 4 for a mean, 5 for an
olympic mean.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

SEED = 20_261_201  # the resampling seed: the same runs give the same intervals and verdicts
RESAMPLES = 9_999
LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    low: Optional[float]  # None: no bound (resamples where a side's score is void)
    high: Optional[float]
    method: str  # "BCa bootstrap" or "percentile bootstrap"
    # the shares of resamples whose statistic is 0 and infinite (a void score on one side): over 2.5%, they
    # leave that bound open, and the words say so (harness.results.report.verdicts.open_bounds)
    void_low: float = 0.0
    void_high: float = 0.0


def finite(x: object) -> Optional[float]:
    if isinstance(x, (int, float, np.floating)) and not isinstance(x, bool) and math.isfinite(float(x)):
        return float(x)
    return None


def interval_runs(drop: int = 0) -> int:
    """The fewest runs a side needs for a 95% bootstrap interval of its mean without `drop` runs at each
    end. With fewer, the resamples whose kept values are all the fastest run (or all the slowest) are more
    than the 2.5% a 95% interval leaves in each tail, and the "interval" is the runs' own range: the mean of
    3 runs resamples to 3 copies of the fastest once in 27 (3.7%), of 4 runs once in 256."""
    from scipy import stats

    n = max(2, 2 * drop + 1)
    while float(stats.binom.sf(n - drop - 1, n, 1 / n)) > (1 - LEVEL) / 2:
        n += 1
    return n


def holds(iv: Interval, point: Optional[float]) -> bool:
    """The interval holds the point (an open bound holds everything beyond it)."""
    return point is not None and (iv.low is None or iv.low <= point) and (iv.high is None or point <= iv.high)


def bootstrap(samples: Sequence[np.ndarray], statistic: Callable[..., np.ndarray], point: Optional[float],
              drop: int = 0) -> Optional[Interval]:
    """A 95% interval of statistic(*samples), whose estimate is `point`, by resampling each sample
    independently; None with fewer values in a sample than interval_runs(drop), or where no interval
    holds the point."""
    from scipy import stats

    if point is None or any(len(s) < interval_runs(drop) for s in samples):
        return None
    infinite = any(not np.all(np.isfinite(s)) for s in samples)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # a degenerate BCa interval falls back below; the warning says no more
        res = stats.bootstrap(tuple(samples), lambda *xs, axis=-1: statistic(*xs), n_resamples=RESAMPLES,
                              vectorized=True, method="percentile" if infinite else "BCa", batch=1000,
                              confidence_level=LEVEL, rng=np.random.default_rng(SEED))
    low, high = res.confidence_interval
    if not infinite and not (math.isnan(low) or math.isnan(high)):
        bca = Interval(finite(low), finite(high), "BCa bootstrap")
        if holds(bca, point):
            return bca
    dist = np.asarray(res.bootstrap_distribution, dtype=float)
    drawn = dist.size
    dist = dist[~np.isnan(dist)]
    if not dist.size:
        return None
    void = (float(np.sum(dist == 0)) / drawn, float(np.sum(np.isinf(dist))) / drawn) if infinite else (0.0, 0.0)
    # inverted_cdf: no interpolation, so an infinite resample makes an open bound rather than a NaN
    low, high = np.quantile(dist, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], method="inverted_cdf")
    # a ratio over a resample whose run did not converge (inf) is 0: as open a bound as the inf above it
    percentile = Interval(None if infinite and low == 0 else finite(low), finite(high), "percentile bootstrap", *void)
    return percentile if holds(percentile, point) else None
