"""A score's note (harness.results.report.score_render): what scaling.json did to the olympic mean, said after it:
applied, given for a void score, not applied to logs that predate it, or not applied with the file's problem."""
from __future__ import annotations

import json

import pytest

from harness.results.analysis.score import round_score
from harness.results.read.summary import RunSummary
from harness.results.report.score_render import score_json, score_note


def _runs(folder, round_, failed=0):
    return [RunSummary(path=f"{folder}/result_{i}.txt", benchmark="gnmt", round=round_, folder=str(folder),
                       status="success" if i >= failed else "aborted", time_to_train_min=float(10 + i))
            for i in range(10)]


@pytest.mark.parametrize("scaling, round_, failed, said", [
    (1.02, "v3.0", 0, "olympic mean of 8 runs, x 1.02 (scaling.json)"),
    (1.02, "v3.0", 2, "void: 2 did not converge; MLPerf allows 1 such run(s); scaling.json gives 1.02"),
    (1.02, "v1.0", 0, "olympic mean of 8 runs; scaling.json not applied: the summarizer reads it from v2.0 on, "
                      "these logs are v1.0's"),
    (-1, "v3.0", 0, "olympic mean of 8 runs; {path} gives no positive scaling_factor (-1): not applied"),
])
def test_the_note_says_what_scaling_json_did(tmp_path, scaling, round_, failed, said):
    (tmp_path / "scaling.json").write_text(json.dumps({"scaling_factor": scaling}))
    score = round_score("gnmt", _runs(tmp_path, round_, failed))
    note = said.format(path=tmp_path / "scaling.json")
    assert score_note(score) == note and score_json(score)["note"] == note
    assert score.minutes == (None if failed else pytest.approx(14.5 * (scaling if round_ == "v3.0" and scaling > 0 else 1)))
