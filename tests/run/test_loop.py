"""The one training loop, as a user sees its ends: the run stops at the first evaluation that reaches
the target, evaluates on the model's schedule, and a run that reaches its epoch cap first ends
aborted, its log closed with that status.

    python -m harness.train model=ncf +debug=ncf device=cpu seed=1 max_epochs=2 model.target=0.999
"""
from __future__ import annotations

import json

from tests.helpers import run_cli

NCF = ["model=ncf", "+debug=ncf", "device=cpu", "seed=1", "progress=false", "tensorboard=false"]


def _run(tmp_path, *extra: str) -> tuple[dict, list[dict]]:
    proc = run_cli("harness.train", *NCF, *extra, f"data_root={tmp_path / 'data'}",
                   f"output_root={tmp_path / 'out'}", timeout=300)
    (result,) = (tmp_path / "out").rglob("result.json")
    (log,) = (tmp_path / "out").rglob("mlperf.log")
    events = [json.loads(line.split(":::MLLOG ", 1)[1]) for line in log.read_text().splitlines() if ":::MLLOG " in line]
    return {**json.loads(result.read_text()), "_rc": proc.returncode}, events


def test_a_run_that_reaches_its_epoch_cap_first_ends_aborted_and_its_log_says_so(tmp_path):
    result, events = _run(tmp_path, "max_epochs=2", "model.target=0.999")
    assert result["status"] == "aborted" and result["epochs_run"] == 2 and result["epochs_to_converge"] is None
    assert [e["metadata"]["epoch_num"] for e in events if e["key"] == "eval_accuracy"] == [1, 2]
    (stop,) = [e for e in events if e["key"] == "run_stop"]
    assert stop["metadata"]["status"] == "aborted"


def test_the_run_stops_at_the_first_evaluation_that_reaches_the_target(tmp_path):
    """The debug preset evaluates HR@10 about 0.26 after its first epoch (seed 1): a target of 0.2 is
    reached there, and the run stops, three epochs under its cap."""
    result, events = _run(tmp_path, "max_epochs=4", "model.target=0.2")
    assert result["_rc"] == 0 and result["status"] == "success"
    evals = [e for e in events if e["key"] == "eval_accuracy"]
    assert [e["metadata"]["epoch_num"] for e in evals] == [1] and evals[0]["value"] >= 0.2
    assert result["epochs_to_converge"] == 1 and result["epochs_run"] == 1
    assert [e["metadata"]["epoch_num"] for e in events if e["key"] == "epoch_start"] == [1]  # none after it
    (stop,) = [e for e in events if e["key"] == "run_stop"]
    assert stop["metadata"]["status"] == "success"
