"""95% intervals (harness.results.analysis.resampling, through confidence's judge and group_confidence): over
many seeded random inputs, lumpy ones included (runs that all needed the same epochs, a side that did not
converge), every interval holds its estimate as computed and as printed, and none comes from fewer runs
than interval_runs() says the bootstrap needs."""
from __future__ import annotations

import re

import numpy as np
import pytest

from harness.results.analysis.confidence import group_confidence, judge
from harness.results.analysis.resampling import Interval, bootstrap, holds, interval_runs
from harness.results.read.summary import RunSummary
from harness.results.report.verdicts import describe, describe_group, ratio_number, ratio_range

RNG_SEED = 45


def test_the_fewest_runs_are_those_whose_tails_are_not_the_runs_own_extremes():
    assert (interval_runs(0), interval_runs(1), interval_runs(4)) == (4, 5, 9)
    # a mean of 3 runs: 3 copies of the fastest is 1 resample in 27 (3.7%), above a 95% interval's 2.5% tail
    assert 1 / 3 ** 3 > 0.025 > 1 / 4 ** 4


def _minutes(rng: np.random.Generator, n: int) -> list[float]:
    """Times of n runs: smooth, or lumpy (a few epoch counts, a hair of noise), as real sweeps give them."""
    if rng.random() < 0.5:
        return [float(x) for x in rng.lognormal(rng.uniform(0, 3), rng.choice([0.001, 0.05, 0.3]), n)]
    per_epoch = rng.uniform(0.5, 5)
    return [float(per_epoch * e * (1 + rng.normal(0, 1e-4))) for e in rng.choice([3, 3, 4, 6], n)]


def _runs(rng: np.random.Generator, n: int, failed: int = 0) -> list[RunSummary]:
    times = _minutes(rng, n)
    runs = [RunSummary(path=f"r{i}", benchmark="gnmt", status="success", seed=i, time_to_train_min=t,
                       epochs_to_converge=3, evals=[(3, 0.25)], throughput=float(rng.normal(1000, 30)),
                       energy_j=float(rng.uniform(1, 2)) * 1e5) for i, t in enumerate(times)]
    return runs + [RunSummary(path=f"f{i}", benchmark="gnmt", status="aborted") for i in range(failed)]


def _printed_holds(text: str) -> None:
    """Every 'P (95% interval Lx-Hx' a sentence prints: L <= P <= H as printed."""
    for point, low, high in re.findall(r"([\d.]+)x \(95% interval ([\d.]+)x-([\d.]+|unbounded)x?", text):
        assert float(low) <= float(point) and (high == "unbounded" or float(point) <= float(high)), text


def test_every_bootstrap_interval_holds_its_estimate_and_needs_enough_runs():
    rng = np.random.default_rng(RNG_SEED)
    drawn = 0
    for _ in range(60):
        drop = int(rng.integers(0, 2))
        stat = (lambda x: np.mean(np.sort(x, axis=-1)[..., 1:-1], axis=-1)) if drop else (lambda x: np.mean(x, axis=-1))
        a, b = (np.array(_minutes(rng, int(rng.integers(2 + drop, 9)))) for _ in range(2))
        if drop and rng.random() < 0.3:
            a[0] = np.inf  # a run that did not converge counts as the slowest
        point = float(stat(b) / stat(a))
        iv = bootstrap((a, b), lambda x, y, s=stat: s(y) / s(x), point, drop)
        if min(len(a), len(b)) < interval_runs(drop):
            assert iv is None
        elif iv is not None:
            drawn += 1
            assert holds(iv, point), (a, b, iv)
            shown = ratio_range(iv).replace("unbounded", "inf").replace("x", "").split("-")
            assert float(shown[0]) <= float(ratio_number(point)) <= float(shown[1])
    assert drawn >= 20  # the property was tried on intervals, not only on refusals
    assert bootstrap((np.array([1.0, 2, 3, 4]),), lambda x: np.mean(x, axis=-1), 9.0) is None  # not its estimate


@pytest.mark.parametrize("case", range(6))
def test_judgements_and_group_scores_print_intervals_that_hold_their_figures(case):
    rng = np.random.default_rng([RNG_SEED, case])
    sub, ref = _runs(rng, int(rng.integers(3, 9)), int(rng.integers(0, 2))), _runs(rng, int(rng.integers(3, 9)))
    j = judge("A", sub, None, "B", ref, None, "gnmt")
    for point, iv in ((j.time_to_train, j.time_interval), (j.throughput, j.throughput_interval),
                      (j.epochs_ratio, j.epochs_interval)):
        assert iv is None or holds(iv, point)
    if min(j.resampled) < j.interval_needs:
        assert j.time_interval is None and f"needs {j.interval_needs} runs a side" in describe(j)
    _printed_holds(describe(j))
    g = group_confidence(sub, None, "gnmt")
    for point, iv in ((g.minutes, g.interval), (g.throughput, g.throughput_interval), (g.energy_j, g.energy_interval)):
        assert iv is None or holds(iv, point)
    if g.interval is None:
        assert "no 95% interval" in describe_group(g)


def test_an_open_bound_holds_everything_beyond_it():
    assert holds(Interval(None, 2.0, "percentile bootstrap"), 0.001) and holds(Interval(1.0, None, "p"), 1e9)
    assert not holds(Interval(1.0, 2.0, "BCa bootstrap"), None)


def test_a_score_scaled_by_scaling_json_gets_an_interval_on_its_own_scale():
    """A folder's scaling.json multiplies its olympic mean (the summarizer's score): the runs' times take the
    factor too, so the interval is of the figure the tables print."""
    rng = np.random.default_rng(RNG_SEED)
    sub, ref = _runs(rng, 5), _runs(rng, 5)

    def olympic(runs, k=1.0):
        return float(np.mean(sorted(r.time_to_train_min for r in runs)[1:-1])) * k

    j = judge("A", sub, olympic(sub, 1.5), "B", ref, olympic(ref), "gnmt", scaling=(1.5, 1.0))
    assert j.time_to_train == pytest.approx(olympic(ref) / olympic(sub, 1.5))
    assert j.time_interval is not None and holds(j.time_interval, j.time_to_train)
    g = group_confidence(sub, olympic(sub, 1.5), "gnmt", scaling=1.5)
    assert g.interval is not None and holds(g.interval, g.minutes)
