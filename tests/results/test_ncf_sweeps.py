"""Two sweeps of NCF at its debug preset, five drawn seeds each, at 1 and at 2 CPU ranks, made with the real
command; the report's verdict on 2 ranks against 1 (in one report, and with --compare of the two sweep
folders, which must compare the GPU counts) is the one a permutation test computed here gives."""
from __future__ import annotations

import itertools
import json
import math
import statistics

import pytest

from tests.helpers import run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("ncf_sweeps")
    made = []
    for gpus in (1, 2):
        # NCF's debug preset, its target where its runs reach it in 1-7 epochs: a spread of epochs to converge
        # and of times, which is what the verdict is about, in a fraction of the embedded preset's time
        out = run_cli("harness.sweep", "model=ncf", "+debug=ncf", "model.target=0.27", "max_epochs=12", "runs=5",
                      f"gpus={gpus}", "device=cpu", "output_root=out", "progress=false", cwd=root, timeout=900)
        assert out.returncode == 0, out.stderr[-3000:]
        made.append(max((root / "out" / "sweeps").iterdir(), key=lambda p: p.stat().st_mtime))
    assert made[0] != made[1]
    return made


def _minutes(run):
    converged = run["status"] == "success" and run["scorable"] and run["time_to_train_min"] is not None
    return run["time_to_train_min"] if converged else math.inf


def _estimate(times, olympic):
    if olympic:
        kept = sorted(times)[1:-1]
        return math.inf if math.inf in kept else statistics.fmean(kept)
    finite = [t for t in times if math.isfinite(t)]
    return statistics.fmean(finite)


def _log_ratio(ref, sub, olympic):
    a, b = _estimate(ref, olympic), _estimate(sub, olympic)
    if math.isinf(a) and math.isinf(b):
        return 0.0
    return math.log(a) - math.log(b)


def permutation_verdict(sub, ref, olympic):
    """(p, verdict) of the subject against the reference: every relabelling of the pooled runs; under the plain
    mean (no olympic score on a side) the runs that did not converge are left out before pooling, as the
    report's estimator reads them (harness/results/analysis/confidence.py: times)."""
    if not olympic:
        sub, ref = [t for t in sub if math.isfinite(t)], [t for t in ref if math.isfinite(t)]
    pooled = list(sub) + list(ref)
    observed = abs(_log_ratio(ref, sub, olympic))
    hits = total = 0
    for chosen in itertools.combinations(range(len(pooled)), len(sub)):
        s = [pooled[i] for i in chosen]
        r = [pooled[i] for i in range(len(pooled)) if i not in chosen]
        total += 1
        hits += abs(_log_ratio(r, s, olympic)) >= observed - 1e-12
    p = hits / total
    if p >= 0.05:
        return p, "not distinguishable"
    return p, "faster" if _log_ratio(ref, sub, olympic) > 0 else "slower"


def with_interval(verdict, interval):
    """docs/report.md's rule over the permutation test's word: a p under 0.05 names a side only where the
    report's 95% interval leaves out 1x (an open bound holds everything beyond it; no interval, no limit)."""
    holds_one = interval is not None and (interval["low"] is None or interval["low"] <= 1) and (
        interval["high"] is None or 1 <= interval["high"])
    return "not distinguishable" if holds_one else verdict


def test_the_verdict_on_two_ranks_against_one_is_the_permutation_tests(sweeps, tmp_path):
    out = run_cli("harness.report", str(sweeps[0]), str(sweeps[1]), "--json", str(tmp_path / "r.json"))
    assert out.returncode in (0, 1), out.stderr  # 1 only where a run has a problem: it is then named
    data = json.loads((tmp_path / "r.json").read_text())
    by_world = {w: [r for r in data["runs"] if r["world_size"] == w] for w in (1, 2)}
    assert [len(v) for v in by_world.values()] == [5, 5]
    (s,) = data["speedups"]
    assert (s["world"], s["baseline_world"]) == (2, 1)
    scores = {g["world_size"]: g["score"]["minutes"] for g in data["groups"]}
    olympic = all(v is not None for v in scores.values())
    p, verdict = permutation_verdict([_minutes(r) for r in by_world[2]], [_minutes(r) for r in by_world[1]], olympic)
    conf = s["confidence"]
    assert conf["estimator"] == ("olympic mean" if olympic else "mean of converged runs")
    assert conf["p_value"] == pytest.approx(p)
    assert conf["verdict"] == with_interval(verdict, conf["time_interval"])
    assert (conf["subject"], conf["reference"]) == ("2 CPU ranks", "1 CPU rank")
    iv = conf["time_interval"]  # a bound is None where resamples leave a side with no converged run: open
    assert (iv["low"] is None or iv["low"] <= s["time_to_train"]) and (iv["high"] is None or s["time_to_train"] <= iv["high"])
    assert s["chances"]["expected"] > 0 and "expected about" in s["chances"]["text"]
    assert "2 vs 1: " + conf["text"] in out.stdout
    for sweep in sweeps:  # each sweep's own summary has its score's interval
        assert "Scores with 95% intervals" in (sweep / "summary.md").read_text()


def test_compare_of_a_one_rank_and_a_two_rank_sweep_compares_the_gpu_counts(sweeps, tmp_path):
    out = run_cli("harness.report", str(sweeps[0]), str(sweeps[1]), "--compare", "--json", str(tmp_path / "c.json"),
                  "--md", str(tmp_path / "c.md"), "--html", str(tmp_path / "c.html"), "--plots", str(tmp_path / "p"))
    assert out.returncode == 0, out.stderr
    data = json.loads((tmp_path / "c.json").read_text())
    (pair,) = data["pairs"]
    assert (pair["a_world"], pair["b_world"], pair["gpus"]) == (1, 2, "A 1 CPU rank, B 2 CPU ranks")
    a = [r for r in json.loads(run_cli("harness.report", str(sweeps[0]), "--json", "-").stdout)["runs"]]
    b = [r for r in json.loads(run_cli("harness.report", str(sweeps[1]), "--json", "-").stdout)["runs"]]
    olympic = pair["confidence"]["estimator"] == "olympic mean"
    p, verdict = permutation_verdict([_minutes(r) for r in a], [_minutes(r) for r in b], olympic)
    assert pair["confidence"]["p_value"] == pytest.approx(p)
    assert pair["confidence"]["verdict"] == with_interval(verdict, pair["confidence"]["time_interval"])
    assert "| ncf | recommendation | 1 vs 2 |" in (tmp_path / "c.md").read_text()
    assert "nothing to compare" not in out.stdout and data["unpaired"] == []
    assert (tmp_path / "p" / "compare.png").is_file() and (tmp_path / "c.html").stat().st_size > 10_000
