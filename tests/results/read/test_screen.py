"""The harness's own sanity pass: what the official checker lets through is a warning on the run, which is
still scored (issue 23: MLPerf's scores are what its checker and summarizer say)."""
from __future__ import annotations

from harness.results.read import checking
from harness.results.read.parse import parse_lines, read_lines
from harness.results.read.summary import RunSummary
from tests.results.read.test_parse import _good_run, _line


def _checked(lines: list[str]) -> RunSummary:
    """The run as the report has it: read, then checked (a harness run's own log: the sanity pass alone)."""
    log = read_lines(lines, "run/mlperf.log")
    return checking.join(log.facts, checking.check(log))


def test_run_stop_before_run_start_is_a_warning_naming_both_lines():
    lines = _good_run()
    lines[-1] = _line("run_stop", t=1000 + 1000 - 60_000, event="INTERVAL_END", status="success")
    run = _checked(lines)
    assert run.scorable and run.problems == []
    assert "run_stop (line 11) is 60.000 s before run_start (line 6)" in run.warnings
    assert parse_lines(lines).warnings == []  # reading says what the log says; the finding is the check's


def test_a_timestamp_going_backwards_is_a_warning_and_the_run_still_counts():
    lines = _good_run()
    lines[9] = _line("eval_accuracy", 0.7, 2500, epoch_num=2)  # before the epoch-1 evaluation at 3000
    run = _checked(lines)
    assert any(w.startswith("timestamps go backwards: line 10 (eval_accuracy) is 0.500 s before line 8")
               for w in run.warnings), run.warnings
    assert run.converged and run.counted


def test_epochs_going_backwards_are_a_warning():
    lines = _good_run()
    lines[9] = _line("eval_accuracy", 0.7, 1000 + 4000, epoch_num=0)
    run = _checked(lines)
    assert "epochs go backwards: eval_accuracy at line 10 has epoch 0 after epoch 1 at line 8" in run.warnings
    assert run.scorable


def test_init_start_from_ranks_with_skewed_clocks_is_not_a_problem():
    """Every rank logs init_start; nodes' clocks differ (16 s on v0.6's 16-node runs)."""
    lines = _good_run()
    lines.insert(4, "[rank 7] " + _line("init_start", t=1000 - 16_000, event="INTERVAL_START"))
    assert _checked(lines).warnings == []
