"""A log that says success is a converged run only where its quality reaches the target: NaN, a value that
is not a number, or one short of the target is counted as not converged, with a warning that says why."""
from __future__ import annotations

import pytest

from harness.results.analysis.collect import build
from harness.results.report.export import to_json
from harness.results.report.sections import notes, shortfall_text
from harness.results.report.verdicts import score_note

BEST = '"value": 0.24350000000000002'  # result_0's last BLEU, the one at run_stop


@pytest.mark.parametrize("value, why", [
    ("NaN", "its quality cannot be compared with the target 0.24: quality is NaN"),
    ('"high"', "its quality cannot be compared with the target 0.24: quality must be a number, got 'high'"),
    ("0.2", "its last evaluation (BLEU 0.2000) does not reach the target (>= 0.24)"),
])
def test_a_success_short_of_its_target_is_not_converged(fixtures_dir, tmp_path, value, why):
    gnmt = fixtures_dir / "nvidia_dgx1" / "gnmt"
    for i in range(5):
        text = (gnmt / f"result_{i}.txt").read_text(encoding="latin-1")
        if i == 0:
            assert text.count(BEST) == 1
            text = text.replace(BEST, f'"value": {value}')
        (tmp_path / f"result_{i}.txt").write_text(text, encoding="latin-1")
    report = build([str(tmp_path)])
    bad = next(r for r in report.runs if r.path.endswith("result_0.txt"))
    assert bad.status == "success" and not bad.converged and not bad.counted
    assert bad.short_of_target is not None and report.short == [bad]
    assert shortfall_text(bad.short_of_target) == f"status success, but {why}"
    assert f"{tmp_path / 'result_0.txt'}: status success, but {why}: counted as not converged" in notes(report)
    runs = {r["path"]: r["short_of_target"] for r in to_json(report)["runs"]}
    assert runs == {r.path: f"status success, but {why}" if r is bad else None for r in report.runs}
    (stats,) = report.stats
    (score,) = report.scores.values()
    assert sum(r.converged for r in report.runs) == 4 and score.converged == 4
    # the slowest, as MLPerf counts a run that did not converge (or one its checker rejects, NaN and 0.2)
    assert score.minutes is not None and "counted as the slowest" in score_note(score)
    assert ("1 did not converge" in score_note(score)) == (not bad.problems)
    assert not any(r.short_of_target for r in report.runs if r is not bad)
