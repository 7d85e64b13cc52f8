"""Every statistic of a group and of a comparison with 0, 1 and 2 runs per side: a side with one run gets
"n/a (one run)" (scipy's permutation test refuses a one-run sample), never a crash; and a comparison of one
published v0.7 log against two, which crashed the report before."""
from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from harness.results.report import export
from harness.results.analysis.confidence import ONE_RUN, group_confidence, judge
from harness.results.read.summary import RunSummary
from harness.results.report.verdicts import describe, describe_group
from tests.helpers import run_cli


def _runs(n: int, minutes: float = 10.0) -> list[RunSummary]:
    return [RunSummary(path=f"r{i}", benchmark="gnmt", status="success", seed=i, time_to_train_min=minutes + i / 10,
                       epochs_to_converge=3 + i, evals=[(3, 0.25)], throughput=100.0 + i, energy_j=5.0 + i)
            for i in range(n)]


@pytest.mark.parametrize("n_sub", [0, 1, 2])
@pytest.mark.parametrize("n_ref", [0, 1, 2])
def test_every_comparison_statistic_with_0_1_and_2_runs_a_side(n_sub, n_ref):
    j = judge("A", _runs(n_sub, 10.0), None, "B", _runs(n_ref, 12.0), None)
    if not n_sub or not n_ref:
        assert j.time_to_train is None and j.verdict == "cannot be judged" and j.throughput is None
        assert describe(j).startswith("cannot be judged")
        return
    assert j.time_to_train == pytest.approx((12.0 + (n_ref - 1) / 20) / (10.0 + (n_sub - 1) / 20))
    assert j.throughput is not None and j.epochs_ratio is not None
    if min(n_sub, n_ref) == 1:
        assert j.p_value is None and j.throughput_p is None and j.time_interval is None
        assert j.verdict == ONE_RUN and j.throughput_verdict == ONE_RUN and j.runs_needed is None
        assert describe(j).startswith(f"n/a (one run): {j.time_to_train:.2f}x with {n_sub} and {n_ref} runs")
    else:  # 2 and 2: 6 relabellings, the smallest p 2/6: never a verdict, but a p; too few runs for an interval
        assert j.p_value == pytest.approx(1 / 3) and j.verdict == "not distinguishable"
        assert j.time_interval is None and j.throughput_interval is None and j.throughput_p is not None
        assert ("no 95% interval: a bootstrap interval of a mean needs 4 runs a side, A 2 and B 2 here"
                in describe(j))
    assert json.loads(json.dumps(export.strict(asdict(j)), allow_nan=False))["verdict"] == j.verdict


@pytest.mark.parametrize("n", [0, 1, 2])
def test_every_group_statistic_with_0_1_and_2_runs(n):
    runs = _runs(n)
    g = group_confidence(runs, None, "gnmt")
    if n == 0:
        assert g.minutes is None and g.throughput is None and describe_group(g) == "no time to train: no converged run"
        return
    assert g.minutes == pytest.approx(sum(r.time_to_train_min for r in runs) / n)
    assert g.throughput == pytest.approx(100.0 + (n - 1) / 2) and g.energy_j is not None
    if n == 1:
        assert g.interval is None and g.throughput_interval is None and g.energy_interval is None
        assert describe_group(g) == (f"{g.minutes:.4g} min (no 95% interval: a bootstrap interval of a mean "
                                     "needs 4 runs a side, 1 here)")
    else:  # two runs resample to their own range: not a 95% interval
        assert g.interval is None and g.throughput_interval is None and "needs 4 runs a side, 2 here" in describe_group(g)


def test_one_published_log_against_two_is_reported_not_a_crash(fixtures_dir, tmp_path):
    gnmt = fixtures_dir / "nvidia_dgx1" / "gnmt"
    two = tmp_path / "two"
    two.mkdir()
    for name in ("result_1.txt", "result_2.txt"):
        (two / name).write_bytes((gnmt / name).read_bytes())
    out = run_cli("harness.report", str(gnmt / "result_0.txt"), str(two), "--compare", "--json", str(tmp_path / "c.json"))
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert f"{ONE_RUN}: " in out.stdout and "with 1 and 2 runs" in out.stdout
    (conf,) = [p["confidence"] for p in json.loads((tmp_path / "c.json").read_text())["pairs"]]
    assert conf["verdict"] == ONE_RUN and conf["p_value"] is None and conf["runs"] == [1, 2]
