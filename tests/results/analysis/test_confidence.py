"""How sure a comparison is: 95% intervals by bootstrap over runs, a verdict that agrees with a permutation
test computed here by hand, the runs per side that would resolve the difference, and the group scores'
intervals; on the v0.7 DGX A100 against the DGX-1 (GNMT), an interval and a verdict in one command."""
from __future__ import annotations

import itertools
import json
import math
import statistics

import pytest

from harness.results.analysis import confidence
from harness.results.analysis.confidence import group_confidence, judge
from harness.results.read.summary import RunSummary
from harness.results.report.verdicts import describe, describe_group, ratio_range
from tests.helpers import run_cli


def _runs(minutes, epochs=None, failed=0, **kw):
    out = [RunSummary(path=f"r{i}", benchmark="gnmt", status="success", seed=i, time_to_train_min=m,
                      epochs_to_converge=(epochs or [3] * len(minutes))[i], evals=[(3, 0.25)], **kw)
           for i, m in enumerate(minutes)]
    return out + [RunSummary(path=f"f{i}", benchmark="gnmt", status="aborted") for i in range(failed)]


def _olympic(x):
    x = sorted(x)
    return statistics.fmean(x[1:-1])


def direct_permutation_p(sub, ref, stat=_olympic):
    """Every relabelling of the pooled times into sides of the same sizes: the share whose |log ratio|
    is at least the observed one (the observed labelling included)."""
    pooled = list(sub) + list(ref)
    observed = abs(math.log(stat(ref) / stat(sub)))
    hits = total = 0
    for chosen in itertools.combinations(range(len(pooled)), len(sub)):
        s = [pooled[i] for i in chosen]
        r = [pooled[i] for i in range(len(pooled)) if i not in chosen]
        total += 1
        hits += abs(math.log(stat(r) / stat(s))) >= observed - 1e-12
    return hits / total


@pytest.mark.parametrize("sub, ref", [
    ([10.0, 10.5, 9.8, 10.2, 10.1], [12.0, 12.4, 11.9, 12.2, 12.8]),  # clearly apart
    ([10.0, 11.5, 9.2, 10.9, 12.1], [10.8, 12.4, 9.9, 11.2, 11.9]),  # overlapping
    ([10.0, 10.1, 10.2, 10.3, 13.0], [10.25, 10.35, 10.45, 10.55, 10.6]),  # near the line
])
def test_the_verdict_is_the_permutation_tests_where_the_interval_agrees(sub, ref):
    j = judge("A", _runs(sub), _olympic(sub), "B", _runs(ref), _olympic(ref))
    p = direct_permutation_p(sub, ref)
    assert j.p_value == pytest.approx(p)  # 5 and 5 runs: all 252 relabellings
    assert j.estimator == confidence.OLYMPIC
    assert j.time_to_train == pytest.approx(_olympic(ref) / _olympic(sub))
    lo, hi = j.time_interval.low, j.time_interval.high
    assert lo <= j.time_to_train <= hi
    apart = p < 0.05 and not lo <= 1 <= hi
    expected = "not distinguishable" if not apart else ("faster" if j.time_to_train > 1 else "slower")
    assert j.verdict == expected
    if expected == "not distinguishable" and p < 0.05:
        assert "a verdict claims no more than its interval" in describe(j)
    elif expected == "not distinguishable":
        assert describe(j).startswith("not distinguishable with 5 and 5 runs") and "runs per side would resolve" in describe(j)
        assert j.runs_needed is not None and j.runs_needed >= confidence.MIN_RUNS
    else:
        assert describe(j).startswith("A is faster: ") and "95% interval" in describe(j)


def test_intervals_are_reproducible_and_say_their_method():
    sub, ref = [10.0, 11.5, 9.2, 10.9, 12.1, 10.4], [10.8, 12.4, 9.9, 11.2, 11.9, 13.0]
    a = judge("A", _runs(sub), _olympic(sub), "B", _runs(ref), _olympic(ref))
    b = judge("A", _runs(sub), _olympic(sub), "B", _runs(ref), _olympic(ref))
    assert a == b and a.time_interval.method == "BCa bootstrap"


def test_more_spread_needs_more_runs_and_a_clear_gap_fewer():
    tight = judge("A", _runs([10.0, 10.1, 9.9, 10.05, 9.95]), None, "B", _runs([10.4, 10.5, 10.3, 10.45, 10.35]), None)
    loose = judge("A", _runs([10.0, 11.1, 8.9, 10.55, 9.45]), None, "B", _runs([10.4, 11.5, 9.3, 10.95, 9.85]), None)
    assert tight.estimator == confidence.MEAN  # no scores given: the mean of converged runs
    assert tight.runs_needed < loose.runs_needed
    assert tight.verdict == "faster" and loose.verdict == "not distinguishable"
    assert f"about {loose.runs_needed} runs per side" in describe(loose)
    # with three runs a side no relabelling test can reach 0.05 (the smallest p is 2/20)
    three = judge("A", _runs([10.0, 10.1, 9.9]), None, "B", _runs([20.0, 20.1, 19.9]), None)
    assert three.p_value == pytest.approx(0.1) and three.verdict == "not distinguishable"
    assert three.runs_needed == confidence.MIN_RUNS


def test_a_run_that_did_not_converge_counts_as_the_slowest_as_mlperf_scores():
    ref = _runs([12.0, 12.4, 11.9, 12.2], failed=1)
    sub = _runs([10.0, 10.5, 9.8, 10.2, 10.1])
    j = judge("A", sub, _olympic([10.0, 10.5, 9.8, 10.2, 10.1]), "B", ref, statistics.fmean([12.0, 12.2, 12.4]))
    assert j.runs == (5, 5) and j.estimator == confidence.OLYMPIC
    assert j.time_to_train == pytest.approx(statistics.fmean([12.0, 12.2, 12.4]) / 10.1)
    assert j.time_interval.method == "percentile bootstrap"  # a resample with two failures voids B: no upper bound
    assert j.time_interval.high is None and ratio_range(j.time_interval).endswith("-unbounded")
    nothing = judge("A", sub, None, "B", _runs([], failed=3), None)
    assert nothing.verdict == "cannot be judged" and describe(nothing).startswith("cannot be judged")


def test_a_verdict_never_claims_more_than_an_interval_left_open_by_void_resamples():
    """10 runs against 10, one of the faster side's not counted (as tinycorp's v5.0 RTX 4090 BERT): every
    relabelling keeps one void run on a side, so p is tiny, but a resample that draws it twice voids the
    olympic mean (1 - 0.9^10 - 0.9^9 = 26% of them): the interval is open below and holds 1x."""
    fast = [10.0 + 0.1 * i for i in range(9)]
    slow = [14.0 + 0.1 * i for i in range(10)]
    j = judge("A", _runs(fast, failed=1), _olympic(fast[1:] + [math.inf]), "B", _runs(slow), _olympic(slow))
    assert j.p_value < 0.05 and j.time_to_train > 1.3
    iv = j.time_interval
    assert iv.low is None and iv.high is not None and iv.void_low == pytest.approx(1 - 0.9 ** 10 - 0.9 ** 9, abs=0.02)
    assert iv.void_high == 0 and j.verdict == "not distinguishable"
    text = describe(j)
    assert "95% interval 0x-" in text and f"open below: {iv.void_low:.0%} of the bootstrap's resamples void A's score" in text
    assert "a verdict claims no more than its interval" in text and "runs per side would resolve" not in text
    # the same speed gap with every run counted: the interval leaves 1x out, and the verdict stands
    whole = judge("A", _runs(fast + [10.9]), _olympic(fast + [10.9]), "B", _runs(slow), _olympic(slow))
    assert whole.verdict == "faster" and whole.time_interval.low > 1 and "open" not in describe(whole)
    # a group's minutes: open above, and said why
    g = group_confidence(_runs(fast, failed=1), _olympic(fast[1:] + [math.inf]))
    assert g.interval.high is None and "unbounded min" in describe_group(g)
    assert f"open above: {g.interval.void_high:.0%} of the bootstrap's resamples void the score" in describe_group(g)
    assert g.interval.void_high == pytest.approx(1 - 0.9 ** 10 - 0.9 ** 9, abs=0.02)


def test_throughput_and_epochs_get_their_own_intervals():
    sub = _runs([5.0, 5.2, 5.1, 5.3, 4.9], epochs=[3, 3, 4, 3, 3])
    ref = _runs([10.0, 10.4, 10.2, 10.6, 9.8], epochs=[3, 3, 3, 3, 3])
    for r, tput in zip(sub + ref, [200.0, 205, 198, 202, 199, 100, 101, 99, 100.5, 99.5]):
        r.throughput = tput
    j = judge("A", sub, None, "B", ref, None)
    assert j.throughput == pytest.approx(200.8 / 100.0)
    assert j.throughput_interval.low < j.throughput < j.throughput_interval.high
    assert j.throughput_verdict == "faster" and "throughput 2.01x (" in describe(j)
    assert j.epochs_ratio == pytest.approx(3 / 3) and j.epochs_interval is not None


def test_a_group_score_gets_an_interval_and_an_input_bound_flag():
    runs = _runs([10.0, 10.5, 9.8, 10.2, 10.1, 13.0], data_wait_share=0.12)
    g = group_confidence(runs, _olympic([10.0, 10.5, 9.8, 10.2, 10.1, 13.0]), "gnmt")
    assert g.minutes == pytest.approx(10.2) and g.estimator == confidence.OLYMPIC
    assert g.interval.low <= g.minutes <= g.interval.high
    assert g.input_bound and g.data_wait_share == pytest.approx(0.12)
    assert "input-bound: the numbers measure the loader (data wait 12% of training time)" in describe_group(g)
    assert not group_confidence(_runs([10.0, 10.5, 9.8], data_wait_share=0.05), None).input_bound  # over 5% only


def test_a100_against_v100_gnmt_has_an_interval_and_a_verdict(trees_dir, tmp_path):
    base = trees_dir / "v0.7" / "NVIDIA" / "results"
    out = run_cli("harness.report", str(base / "dgxa100_ngc20.06_pytorch"), str(base / "dgx1_ngc20.06_pytorch"),
                  "--compare", "--json", str(tmp_path / "c.json"), "--csv", str(tmp_path / "c.csv"))
    assert out.returncode == 0, out.stderr
    data = json.loads((tmp_path / "c.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert data["schema"] == "harness.compare/2"
    (pair,) = data["pairs"]
    conf = pair["confidence"]
    assert conf["verdict"] == "faster" and conf["runs"] == [10, 10] and conf["p_value"] < 0.001
    low, high = conf["time_interval"]["low"], conf["time_interval"]["high"]
    assert 1.5 < low < pair["time_to_train"] < high < 3.5
    assert conf["text"].startswith(f"A is faster: 2.37x (95% interval {low:.2f}x-{high:.2f}x")
    assert conf["throughput_interval"]["low"] < 2.39 < conf["throughput_interval"]["high"]
    assert pair["chances"]["expected"] == pytest.approx(2.37, abs=0.05)
    assert f"gnmt 8 GPUs: A is faster: 2.37x (95% interval {low:.2f}x-{high:.2f}x" in out.stdout
    (row,) = [r for r in (tmp_path / "c.csv").read_text().splitlines() if r.startswith("time_to_train,gnmt")]
    assert ",faster," in row and f"{low}" in row
