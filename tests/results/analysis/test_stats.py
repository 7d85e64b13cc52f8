"""Group statistics as MLPerf reads them, the RCP checker's significance test in closed form, and the
seed-variance view: how much of the spread of time to train the epochs explain."""
from __future__ import annotations

import numpy as np
import pytest
from mlperf_logging.rcp_checker.rcp_checker import RCP_Checker

from harness.results.analysis.stats import (EpochStats, GroupKey, Spread, group_key, group_stats, min_acceptable_mean,
                                            seed_spread)
from harness.results.read.checking import checked_file
from harness.results.read.summary import RunSummary


def test_transformer_fixture_epochs_are_eight_at_3_and_two_at_4(fixtures_dir):
    runs = [checked_file(p) for p in (fixtures_dir / "nvidia_dgx1" / "transformer").glob("result_*.txt")]
    (key,) = {group_key(r) for r in runs}
    g = group_stats(key, runs)
    assert g.epochs.counts == {"3": 8, "4": 2}
    assert g.epochs.olympic_mean == pytest.approx(3.125)  # 3,3,3,3,3,3,3,4 after dropping a 3 and a 4
    assert g.epochs.std == pytest.approx(np.std([3] * 8 + [4] * 2))  # ddof=0, as the RCP checker
    assert g.converged == 10 and g.time_to_train_min.min == pytest.approx(17.836066666666667)


def test_spread_and_epoch_stats():
    s = Spread.of([1.0, 2.0, 3.0, 10.0])
    assert (s.n, s.mean, s.median, s.min, s.max) == (4, 4.0, 2.5, 1.0, 10.0)
    assert s.std == pytest.approx(np.std([1, 2, 3, 10]))
    e = EpochStats.of([5, 4, 4, 6, 4])
    assert e.olympic_mean == pytest.approx(13 / 3) and e.counts == {"4": 3, "5": 1, "6": 1}
    assert Spread.of([]).mean is None and EpochStats.of([]).olympic_mean is None


@pytest.mark.parametrize("mean,std,n_ref,n_sub", [(4.0, 0.3, 8, 8), (12.0, 1.5, 8, 3), (3.125, 0.4, 18, 8)])
def test_closed_form_equals_the_rcp_checkers_binary_search(mean, std, n_ref, n_sub):
    checker = object.__new__(RCP_Checker)  # only the search's own attributes are needed
    checker.alpha, checker.tolerance, checker.submission_runs = 0.05, 1e-7, n_sub + 2
    assert min_acceptable_mean(mean, std, n_ref, n_sub) == pytest.approx(
        checker._find_min_acceptable_mean(mean, std, n_ref), abs=1e-5)


def test_rcp_verdict_is_plain_json(fixtures_dir):
    """A reference with spread (std > 0) goes through scipy: the verdict must still serialise."""
    import json
    from dataclasses import asdict

    from harness.results.analysis.stats import rcp_check

    runs = [checked_file(p) for p in (fixtures_dir / "nvidia_dgx1" / "transformer").glob("result_*.txt")]
    g = group_stats(group_key(runs[0]), runs)
    verdict = rcp_check(g, g)
    assert verdict.passed and verdict.min_acceptable_mean < verdict.reference_mean == pytest.approx(3.125)
    assert json.loads(json.dumps(asdict(verdict)))["passed"] is True


KEY = GroupKey("gnmt", "1xT4", 1, "amp", 256)


def _run(i, epochs, minutes):
    return RunSummary(path=f"r{i}", benchmark="gnmt", status="success", epochs_to_converge=epochs,
                      time_to_train_min=minutes, evals=[(epochs, 0.25)])


def test_epochs_that_set_the_time_explain_all_of_its_spread():
    runs = [_run(i, e, 10.0 * e) for i, e in enumerate([4, 4, 4, 5, 7])]
    s = seed_spread(KEY, runs)
    assert s.explained == pytest.approx(1.0) and s.epochs == {"4": 3, "5": 1, "7": 1}
    assert (s.ttt_at_fewest, s.ttt_at_most, s.slowest, s.slowest_epochs) == (40.0, 70.0, "r4", 7)


def test_equal_epochs_explain_nothing_and_failures_are_counted():
    runs = [_run(i, 4, m) for i, m in enumerate([10.0, 11.0, 12.5])]
    runs.append(RunSummary(path="f", benchmark="gnmt", status="aborted"))
    s = seed_spread(KEY, runs)
    assert s.explained == 0.0 and s.converged == 3 and s.runs == 4
    assert seed_spread(KEY, runs[:1]).explained is None


def test_harness_runs_set_differently_are_one_group_per_setting_named_by_what_differs():
    from harness.results.analysis.stats import group_name, group_runs

    def run(i, lr, layers="[16, 8]", folder=None):
        return RunSummary(path=f"r{i}/mlperf.log", benchmark="ncf", platform="1xCPU", world_size=1, precision="fp32",
                          global_batch_size=512, status="success", folder=folder,
                          settings=(("model.layers", layers), ("model.learning_rate", lr), ("seed_free", "1")))
    swept = group_runs([run(i, lr) for i, lr in enumerate(["0.0015", "0.006"] * 3)])
    assert sorted((group_name(k), len(v)) for k, v in swept.items()) == [
        ("ncf (model.learning_rate=0.0015)", 3), ("ncf (model.learning_rate=0.006)", 3)]
    two = group_runs([run(0, "0.1", "[8]"), run(1, "0.2", "[16, 8]")])
    assert sorted(k.settings for k in two) == ["model.layers=[16, 8], model.learning_rate=0.2",
                                               "model.layers=[8], model.learning_rate=0.1"]
    assert [k.settings for k in group_runs([run(i, "0.1") for i in range(3)])] == [None]  # alike: one group
    folder = group_runs([run(i, lr, folder="Org/results/sys/ncf") for i, lr in enumerate(["0.1", "0.2"])])
    assert [len(v) for v in folder.values()] == [2]  # a submission folder is scored whole, as the summarizer does
    bare = RunSummary(path="x/mlperf.log", benchmark="ncf", platform="1xCPU", world_size=1, precision="fp32",
                      global_batch_size=512, status="success")
    assert len(group_runs([bare, run(1, "0.1"), run(2, "0.2")])) == 1  # a run without its config is not split
