"""The report's notes (harness.results.report.sections): a seed several runs share, runs on a busy machine,
and runs that waited for data, whether the group as a whole did or only some of its runs."""
from __future__ import annotations

from harness.results.analysis.stats import group_runs, group_stats
from harness.results.read.summary import RunSummary
from harness.results.report.sections import group_notes, input_bound_notes


def _run(i, seed, share=None, busy=False):
    return RunSummary(path=f"r{i}", benchmark="ncf", status="success", platform="1xCPU", world_size=1, seed=seed,
                      time_to_train_min=10.0 + i, epochs_to_converge=4, evals=[(4, 0.64)], data_wait_share=share,
                      busy=busy)


def test_a_shared_seed_and_a_busy_machine_are_noted_for_their_group():
    groups = group_runs([_run(0, 7), _run(1, 7, busy=True), _run(2, 8)])
    (said_seed, said_busy) = group_notes([group_stats(k, v) for k, v in groups.items()])
    assert said_seed == ("ncf 1xCPU 1 n/a n/a: seed 7 was used by 2 runs: they are not independent samples of the "
                         "seed spread")
    assert said_busy.endswith(": 1 of 3 run(s) ran on a busy machine (marked !)")


def test_runs_over_the_data_wait_bound_are_named_when_the_group_s_mean_is_not():
    (said,) = input_bound_notes(group_runs([_run(0, 1, 0.09), _run(1, 2, 0.01), _run(2, 3, 0.01)]))
    assert said == ("ncf 1xCPU 1 n/a n/a: 1 run(s) input-bound: the numbers measure the loader (data wait over 5%: 9%)")
    (whole,) = input_bound_notes(group_runs([_run(0, 1, 0.2), _run(1, 2, 0.1)]))
    assert whole.endswith("input-bound: the numbers measure the loader (data wait 15% of training time, mean of 2 "
                          "run(s))")
    assert input_bound_notes(group_runs([_run(0, 1, 0.01)])) == []
