"""How sure a comparison is: 95% intervals by bootstrap, a verdict by permutation test, and how many
runs would settle it. Definitions are in docs/report.md ("How sure a comparison is").

- A side's time to train is the estimator its speedup uses: MLPerf's olympic mean where both sides have
  a score (a run that did not converge counts as infinitely slow, so one is dropped as the slowest and
  two void the score, exactly as mlperf_logging's summarizer scores), else the mean of converged runs.
- Interval: a bootstrap of each side's runs (harness.results.analysis.resampling): BCa, or percentile; it
  always holds its estimate, and needs 4 runs a side for a mean, 5 for an olympic mean.
- Verdict: scipy.stats.permutation_test of |log speedup| over relabellings of the two sides' pooled runs,
  two-sided: exact when there are at most 9,999 relabellings (5 and 5 runs have 252), else 9,999 drawn
  from SEED. p < 0.05 with a 95% interval that leaves out 1x (or no interval) says which side is faster;
  otherwise "not distinguishable with m and n runs": a verdict never claims more than its interval.
- Runs to resolve: the fewest runs per side for which a two-sided t-test at 0.05 on log time to train
  has 80% power against a difference of the observed size, with the sides' pooled spread of log time
  (noncentral t); never fewer than 4, the fewest with which a permutation test can reach 0.05.

The verdicts and intervals in words: harness.results.report.verdicts.

    python -m harness.report A B --compare         # every pair's interval and verdict
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from harness.results.analysis.chances import same_epochs
from harness.results.analysis.resampling import RESAMPLES, SEED, Interval, bootstrap, holds, interval_runs
from harness.results.analysis.resampling import finite as _finite
from harness.record import INPUT_BOUND
from harness.results.read.summary import RunSummary

ALPHA = 0.05
POWER = 0.8
MIN_RUNS = 4  # with 3 and 3 runs the smallest two-sided permutation p is 2/20 = 0.1
MAX_RUNS = 10_000
OLYMPIC, MEAN = "olympic mean", "mean of converged runs"


@dataclass(frozen=True)
class Judgement:
    """One side (the subject: "A", "4 GPUs", "amp") against the other (the reference)."""

    subject: str
    reference: str
    runs: tuple[int, int]  # runs of the subject and of the reference
    estimator: str  # OLYMPIC or MEAN
    time_to_train: Optional[float]  # the reference's time / the subject's: above 1, the subject is faster
    time_interval: Optional[Interval]
    p_value: Optional[float]
    verdict: str  # "faster", "slower" (the subject), "not distinguishable", ONE_RUN or "cannot be judged"
    runs_needed: Optional[int]  # per side, to resolve a difference of this size at 95%
    throughput: Optional[float]  # the subject's mean throughput / the reference's
    throughput_interval: Optional[Interval]
    throughput_p: Optional[float]
    throughput_verdict: str
    epochs_ratio: Optional[float]  # the reference's epochs / the subject's (olympic means where both have 3 runs)
    epochs_interval: Optional[Interval]
    input_bound: list[tuple[str, float]] = field(default_factory=list)  # (side, mean data wait share) per input-bound side
    resampled: tuple[int, int] = (0, 0)  # the runs the time interval resamples, subject and reference
    interval_needs: int = 4  # runs a side needs for the time interval (interval_runs)


@dataclass(frozen=True)
class GroupConfidence:
    """A group's score and throughput with their 95% intervals, and its data wait."""

    minutes: Optional[float]
    estimator: str
    interval: Optional[Interval]
    throughput: Optional[float]
    throughput_interval: Optional[Interval]
    energy_j: Optional[float]
    energy_interval: Optional[Interval]
    data_wait_share: Optional[float]  # mean over the runs that report it
    input_bound: bool
    resampled: int  # the runs its interval resamples
    interval_needs: int = 4  # runs it needs for an interval (interval_runs)


def dropped_per_end(benchmark: Optional[str]) -> int:
    return 4 if benchmark == "unet3d" else 1  # as mlperf_logging's summarizer


def olympic(x: np.ndarray, drop: int = 1, axis: int = -1) -> np.ndarray:
    """Mean without the `drop` fastest and slowest values; infinite while an infinite value remains."""
    s = np.sort(x, axis=axis)
    n = s.shape[-1]
    return s[..., drop:n - drop].mean(axis=-1)


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def times(runs: Sequence[RunSummary], estimator: str) -> np.ndarray:
    """Minutes per run as the estimator reads them: every run, inf for one that did not converge
    (olympic mean), or the converged runs alone (mean)."""
    if estimator == OLYMPIC:
        return np.array([r.time_to_train_min if r.converged and r.time_to_train_min is not None else math.inf
                         for r in runs], dtype=float)
    return np.array([r.time_to_train_min for r in runs if r.converged and r.time_to_train_min is not None],
                    dtype=float)


def estimator_for(sides: Sequence[tuple[Sequence[RunSummary], Optional[float]]], drop: int) -> str:
    """OLYMPIC where every side has a score (its olympic mean) and enough runs to drop from, else MEAN."""
    if all(score is not None and len(runs) >= 2 * drop + 1 for runs, score in sides):
        return OLYMPIC
    return MEAN


def _stat(estimator: str, drop: int) -> Callable[[np.ndarray], np.ndarray]:
    if estimator == OLYMPIC:
        return lambda x: olympic(x, drop)
    return _mean


def _log_ratio(t_ref: np.ndarray, t_sub: np.ndarray) -> np.ndarray:
    """log(reference time / subject time); 0 where both are void (both infinite)."""
    with np.errstate(all="ignore"):
        out = np.log(t_ref) - np.log(t_sub)
    return np.where(np.isinf(t_ref) & np.isinf(t_sub), 0.0, out)


def permutation_p(sub: np.ndarray, ref: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray]) -> Optional[float]:
    """Two-sided permutation p of |log(statistic(ref) / statistic(sub))| over relabellings of the pooled runs;
    None with fewer than two runs on a side (scipy refuses such a sample, and one run has no spread to test)."""
    from scipy import stats

    if len(sub) < 2 or len(ref) < 2:
        return None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        res = stats.permutation_test((sub, ref), lambda x, y, axis=-1: np.abs(_log_ratio(statistic(y), statistic(x))),
                                     permutation_type="independent", vectorized=True, n_resamples=RESAMPLES,
                                     alternative="greater", batch=1000, rng=np.random.default_rng(SEED))
    return float(res.pvalue)


def runs_needed(sub: np.ndarray, ref: np.ndarray, log_effect: Optional[float]) -> Optional[int]:
    """Runs per side for 80% power at 0.05 (two-sided t-test on log times) against the observed effect;
    None when there is no difference to resolve or no spread to judge it by."""
    from scipy import stats

    sub, ref = sub[np.isfinite(sub)], ref[np.isfinite(ref)]
    if log_effect is None or not math.isfinite(log_effect) or abs(log_effect) < 1e-12:
        return None
    if len(sub) < 2 or len(ref) < 2:
        return None
    ls, lr = np.log(sub), np.log(ref)
    dof = len(ls) + len(lr) - 2
    sd = math.sqrt((float(np.sum((ls - ls.mean()) ** 2)) + float(np.sum((lr - lr.mean()) ** 2))) / dof)
    if sd == 0:
        return MIN_RUNS
    # the normal approximation is a few runs low for small n: start there and walk up the t-test's power
    z = float(stats.norm.ppf(1 - ALPHA / 2) + stats.norm.ppf(POWER))
    start = 2 * (z * sd / abs(log_effect)) ** 2
    if start > MAX_RUNS:
        return MAX_RUNS + 1
    for n in range(max(2, int(start) - 2), MAX_RUNS + 1):
        df = 2 * n - 2
        crit = float(stats.t.ppf(1 - ALPHA / 2, df))
        nc = abs(log_effect) / (sd * math.sqrt(2 / n))
        power = float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))
        if power >= POWER:
            return max(n, MIN_RUNS)
    return MAX_RUNS + 1


def input_bound(share: Optional[float]) -> bool:
    """A data wait over 5% of training time (a mean of 0.05s that rounds a hair above counts as 0.05)."""
    return share is not None and share > INPUT_BOUND + 1e-9


def startup_share(run: RunSummary) -> Optional[float]:
    """The warm-up steps' wait for batches (the loaders' start-up) over the run's time to train, or None."""
    if run.data_wait_warmup_s is None or not run.time_to_train_s:
        return None
    return run.data_wait_warmup_s / run.time_to_train_s


def data_wait(runs: Sequence[RunSummary]) -> Optional[float]:
    """Mean data_wait_share of the runs that report it (result.json), or None."""
    shares = [float(r.data_wait_share) for r in runs if r.data_wait_share is not None]
    return float(np.mean(shares)) if shares else None


def input_bound_side(label: str, runs: Sequence[RunSummary]) -> Optional[tuple[str, float]]:
    """(label, mean data wait share) where the side is input-bound, else None."""
    share = data_wait(runs)
    if share is None or not input_bound(share):
        return None
    return label, share


def _reported(score: Optional[float], t: np.ndarray) -> float:
    return score if score is not None else float(np.mean(t[np.isfinite(t)]))


def judge(subject: str, sub_runs: Sequence[RunSummary], sub_score: Optional[float], reference: str,
          ref_runs: Sequence[RunSummary], ref_score: Optional[float], benchmark: Optional[str] = None,
          same_unit: bool = True, scaling: tuple[float, float] = (1.0, 1.0)) -> Judgement:
    """The subject against the reference: intervals, the permutation verdict and the runs to resolve it.
    `scaling`: each side's scaling.json factor, already in its score: the runs' times take it too."""
    drop = dropped_per_end(benchmark)
    estimator = estimator_for([(sub_runs, sub_score), (ref_runs, ref_score)], drop)
    stat = _stat(estimator, drop)
    scale = scaling if estimator == OLYMPIC else (1.0, 1.0)
    ts, tr = times(sub_runs, estimator) * scale[0], times(ref_runs, estimator) * scale[1]
    kept = drop if estimator == OLYMPIC else 0
    point: Optional[float] = None
    interval = p = needed = None
    if np.isfinite(ts).any() and np.isfinite(tr).any():
        log_point = float(_log_ratio(stat(tr), stat(ts)))
        # the speedup as the tables give it (harness.results.analysis.speedups.time_of: each side's score, else
        # its converged runs' mean), which can differ from the resampled estimator's (a counted run that did
        # not converge): the interval must hold the figure printed beside it, or there is none
        reported = (_reported(ref_score, tr), _reported(sub_score, ts))
        same = all(math.isclose(r, float(stat(t)), rel_tol=1e-9) for r, t in zip(reported, (tr, ts)))
        shown = math.exp(log_point) if same else reported[0] / reported[1]
        point = _finite(shown) if math.isfinite(log_point) else None
        interval = bootstrap((ts, tr), lambda x, y: stat(y) / stat(x), point, kept)
        p = permutation_p(ts, tr, stat)
        needed = runs_needed(ts, tr, log_point)
    tput = tput_int = tput_p = None
    xs = np.array([r.throughput for r in sub_runs if r.throughput], dtype=float)
    xr = np.array([r.throughput for r in ref_runs if r.throughput], dtype=float)
    if same_unit and xs.size and xr.size:
        tput = float(xs.mean() / xr.mean())
        tput_int = bootstrap((xs, xr), lambda x, y: _mean(x) / _mean(y), tput)
        tput_p = permutation_p(xs, xr, _mean)
    es = np.array([r.epochs_to_converge for r in sub_runs if r.converged and r.epochs_to_converge is not None], float)
    er = np.array([r.epochs_to_converge for r in ref_runs if r.converged and r.epochs_to_converge is not None], float)
    epochs = epochs_int = None
    if es.size and er.size and same_epochs(sub_runs, ref_runs):
        both = min(es.size, er.size) >= 2 * drop + 1
        estat = (lambda x: olympic(x, drop)) if both else _mean
        epochs = _finite(float(estat(er)) / float(estat(es))) if float(estat(es)) else None
        epochs_int = bootstrap((es, er), lambda x, y: estat(y) / estat(x), epochs, drop if both else 0)
    verdict = _word(point, p, interval)
    bound = [n for n in (input_bound_side(subject, sub_runs), input_bound_side(reference, ref_runs)) if n]
    return Judgement(subject, reference, (len(sub_runs), len(ref_runs)), estimator, point, interval, p, verdict, needed,
                     tput, tput_int, tput_p, _word(tput, tput_p, tput_int), epochs, epochs_int, bound,
                     (len(ts), len(tr)), interval_runs(kept))


ONE_RUN = "n/a (one run)"  # a side with one run: no spread to test or resample, never a verdict


def claims_more(p: Optional[float], interval: Optional[Interval]) -> bool:
    """The test rules equal speed out while the 95% interval holds 1x (an open bound holds everything beyond
    it): a verdict would claim more than the interval supports, so there is none."""
    return p is not None and p < ALPHA and interval is not None and holds(interval, 1.0)


def _word(point: Optional[float], p: Optional[float], interval: Optional[Interval]) -> str:
    """A side is faster where both the permutation test (p < 0.05) and the interval (1x left out) say so;
    requiring both can only lower the chance of a false verdict below each method's own 5%."""
    if point is None:
        return "cannot be judged"
    if p is None:
        return ONE_RUN
    if p >= ALPHA or claims_more(p, interval):
        return "not distinguishable"
    return "faster" if point > 1 else "slower"


def group_confidence(runs: Sequence[RunSummary], score: Optional[float], benchmark: Optional[str] = None,
                     scored_rule: str = "", scaling: float = 1.0) -> GroupConfidence:
    """A group's score (its olympic mean, times its scaling.json factor, else the mean of converged runs) and
    throughput with 95% intervals. Under v0.5's NCF rule (the first 50 converged runs) the converged runs are
    resampled."""
    drop = dropped_per_end(benchmark)
    estimator = estimator_for([(runs, score)], drop)
    v05_ncf = scored_rule.startswith("MLPerf v0.5 NCF")
    t = times(runs, MEAN if v05_ncf else estimator) * (scaling if score is not None else 1.0)
    olympic_stat = (OLYMPIC if v05_ncf and len(t) >= 2 * drop + 1 else estimator) == OLYMPIC
    stat = _stat(OLYMPIC if olympic_stat else MEAN, drop)
    minutes = score if score is not None else (_finite(float(t.mean())) if t.size else None)
    kept = drop if olympic_stat else 0
    interval = bootstrap((t,), stat, minutes, kept) if np.isfinite(t).any() else None
    tp = np.array([r.throughput for r in runs if r.throughput], dtype=float)
    en = np.array([r.energy_j for r in runs if r.converged and r.energy_j is not None], dtype=float)
    tput = float(tp.mean()) if tp.size else None
    energy = float(en.mean()) if en.size else None
    share = data_wait(runs)
    bound = input_bound(share)
    return GroupConfidence(minutes, OLYMPIC if score is not None else MEAN, interval,
                           tput, bootstrap((tp,), _mean, tput) if tp.size else None,
                           energy, bootstrap((en,), _mean, energy) if en.size else None,
                           share, bound, len(t), interval_runs(kept))
