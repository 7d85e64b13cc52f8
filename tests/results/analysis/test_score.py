"""MLPerf's olympic scoring and run counts, checked against the official scores of real logs."""
from __future__ import annotations

import pytest

from harness.results.read.parse import RunSummary
from harness.results.read.checking import checked_file
from harness.results.analysis.score import NOT_CONVERGED, TOO_MANY_DROPPED, olympic_score, required_runs
from harness.results.report.verdicts import score_note

OFFICIAL_SCORES = {"gnmt": 18.501885416666664, "transformer": 18.811895833333335}


@pytest.mark.parametrize("benchmark", ["gnmt", "transformer"])
def test_fixture_scores_equal_the_official_ones(fixtures_dir, benchmark):
    runs = [checked_file(p) for p in (fixtures_dir / "nvidia_dgx1" / benchmark).glob("result_*.txt")]
    score = olympic_score(benchmark, runs)
    assert score.minutes == pytest.approx(OFFICIAL_SCORES[benchmark], abs=1e-9)
    assert score.count_ok and score.required == 10 and score.converged == 10


def _runs(minutes, failed=0):
    runs = [RunSummary(path=f"r{i}", benchmark="gnmt", status="success", time_to_train_min=m)
            for i, m in enumerate(minutes)]
    runs += [RunSummary(path=f"f{i}", benchmark="gnmt", status="aborted", time_to_train_min=99.0)
             for i in range(failed)]
    return runs


def test_olympic_mean_drops_the_fastest_and_the_slowest():
    assert olympic_score("gnmt", _runs([1, 2, 3, 4, 100])).minutes == pytest.approx(3.0)


def test_one_failed_run_counts_as_the_slowest():
    # the failure is dropped as the slowest: only the fastest converged run goes
    assert olympic_score("gnmt", _runs([1, 2, 3, 4], failed=1)).minutes == pytest.approx(3.0)


def test_two_failed_runs_void_the_score():
    score = olympic_score("gnmt", _runs([1, 2, 3, 4], failed=2))
    assert score.minutes is None and score.void == TOO_MANY_DROPPED and score.dropped == ((NOT_CONVERGED, 2),)
    assert score_note(score) == "void: 2 did not converge; MLPerf allows 1 such run(s)"


def test_required_counts_are_mlperfs():
    assert required_runs("gnmt") == 10 and required_runs("resnet") == 5 and required_runs("ncf") == 10
    assert not olympic_score("gnmt", _runs([1, 2, 3, 4, 5])).count_ok


def _v05_ncf(converged_at, n=100, listed=None):
    runs = []
    for i in range(n):
        ok = i in converged_at
        runs.append(RunSummary(path=f"ncf/result_{i}.txt", benchmark="ncf", round="v0.5",
                               status="success" if ok else "aborted", time_to_train_min=float(100 + i),
                               submitter_scored=None if listed is None else i in listed))
    return runs


def test_v05_ncf_scores_the_first_50_converged_runs_by_result_number():
    from harness.results.analysis.score import round_score

    converged = set(range(0, 120, 2))  # 50 converged among the 100: 0, 2, ..., 98
    score = round_score("ncf", _v05_ncf(converged))
    # the first 50 converged are 0..98 even: olympic mean drops 100 and 198
    assert score.minutes == pytest.approx(sum(100 + i for i in range(2, 98, 2)) / 48)
    assert score.required == 100 and score.count_ok and "first 50" in score.rule
    assert score_note(score) == "olympic mean of 48 of the first 50 converged runs (by result number)"
    assert round_score("ncf", _v05_ncf(set(range(0, 98, 2)))).minutes is None  # 49 converged: void


def test_v05_ncf_uses_the_submitter_s_list_only_when_the_logs_agree_with_it():
    from harness.results.analysis.score import round_score

    converged = set(range(60))
    listed = set(range(10, 60))
    score = round_score("ncf", _v05_ncf(converged, listed=listed))
    assert score.ncf is not None and score.ncf.used_list and "the submitter's first_50_success_file" in score_note(score)
    assert score.minutes == pytest.approx(sum(100 + i for i in range(11, 59)) / 48)
    wrong = round_score("ncf", _v05_ncf(converged, listed=set(range(50, 100))))
    assert wrong.ncf is not None and (wrong.ncf.used_list, wrong.ncf.listed, wrong.ncf.failed) == (False, 50, 40)
    assert score_note(wrong).endswith("lists 50 runs, 40 of which did not converge in these logs: not used)")
    assert wrong.minutes == pytest.approx(sum(100 + i for i in range(1, 49)) / 48)
