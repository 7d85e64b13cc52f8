"""The seed-variance view: how much of the spread of time to train the epochs explain."""
from __future__ import annotations

import pytest

from harness.results.analysis.stats import GroupKey
from harness.results.read.summary import RunSummary
from harness.results.analysis.variance import seed_spread

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
