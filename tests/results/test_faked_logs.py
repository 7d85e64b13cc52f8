"""A log cannot fake its score: a run_stop inside the run, or a clock that cannot be a round's dates (times in
seconds where milliseconds belong), passes the official checker but is no plain PASS in harness.check, and the
report names it and scores no such run; the time it shows comes from the run_stop after the last evaluation."""
from __future__ import annotations

import json
import re

import pytest

from harness.check import WARNED, check_log
from harness.results.analysis.collect import build
from harness.results.read.parse import parse_lines
from tests.helpers import run_cli
from tests.results.roundlogs import retinanet_log, write_folder


def _early_stop(text: str) -> str:
    """A second run_stop, status success, two seconds after run_start."""
    out = []
    for line in text.splitlines(keepends=True):
        out.append(line)
        if '"key": "run_start"' in line:
            record = json.loads(line[len(":::MLLOG "):])
            record.update(time_ms=record["time_ms"] + 2000, event_type="INTERVAL_END", key="run_stop",
                          metadata={"file": "train.py", "lineno": 9, "status": "success"})
            out.append(":::MLLOG " + json.dumps(record) + "\n")
    return "".join(out)


def _seconds(text: str) -> str:
    return re.sub(r'"time_ms": (\d+)', lambda m: f'"time_ms": {int(m.group(1)) // 1000}', text)


def _logs(epoch_ms: int = 90_000) -> list[str]:
    return [retinanet_log([0.3, 0.345], seed=s, epoch_ms=epoch_ms + 700 * s) for s in range(5)]


def test_a_run_stop_inside_the_run_is_no_plain_pass_and_no_score(tmp_path):
    folder = write_folder(tmp_path, "v3.1", "sys_a", "ssd", [_early_stop(t) for t in _logs()])
    out = run_cli("harness.check", str(folder))
    assert out.returncode == 1, out.stdout
    lines = [line for line in out.stdout.splitlines() if "result_" in line]
    assert len(lines) == 5 and all(line.startswith("WARN") and "2 run_stop records" in line for line in lines)
    assert "Required EXACTLY_ONE occurrence of 'run_stop' but found 2" in check_log(folder / "result_0.txt").messages[1]
    report = build([str(tmp_path)], jobs=1)
    (score,) = report.scores.values()
    assert score.minutes is None  # void: no run of the folder counts
    for run, seed in zip(sorted(report.runs, key=lambda r: r.path), range(5)):
        assert not run.counted and run.problems == run.faults and "before the run's evaluations" in run.faults[0]
        assert run.time_to_train_min == pytest.approx((2 * (90_000 + 700 * seed + 5000) + 1) / 60_000)  # the real one


def test_a_clock_in_seconds_is_named_as_such_and_not_scored(tmp_path):
    folder = write_folder(tmp_path, "v4.0", "sys_b", "ssd", [_seconds(t) for t in _logs(120_000)])
    result = check_log(folder / "result_2.txt")
    assert result.status == WARNED and not result.passed
    assert result.messages[0].startswith("its clock reads 1970-01-20 at run_start, before MLPerf's first round (2018)")
    report = build([str(tmp_path)], jobs=1)
    assert not any(r.counted for r in report.runs) and all(r.throughput is None for r in report.runs)
    assert next(iter(report.scores.values())).minutes is None


def _offsets_from_seconds(text: str, t0: int) -> str:
    """As NVIDIA's v0.7 HugeCTR DLRM logs: the run's events at its start in seconds plus milliseconds, the
    formatter's own records (submission_*) in real milliseconds, written after the run."""
    def stamp(m: re.Match) -> str:
        record = json.loads(m.group(1))
        if record["key"].startswith("submission_"):
            record["time_ms"] = t0 + 600_000
        elif record["key"] != "cache_clear":
            record["time_ms"] = t0 // 1000 + (record["time_ms"] - t0)
        return ":::MLLOG " + json.dumps(record)
    return re.sub(r":::MLLOG (\{.*\})", stamp, text)


def test_milliseconds_counted_from_a_start_in_seconds_are_scored_in_milliseconds_with_a_warning(tmp_path):
    logs = [_offsets_from_seconds(retinanet_log([0.3, 0.345], seed=s, epoch_ms=90_000 + 700 * s,
                                                t0=1_600_000_000_000 + s * 10**7), 1_600_000_000_000 + s * 10**7)
            for s in range(5)]
    folder = write_folder(tmp_path, "v3.1", "sys_a", "ssd", logs)
    assert check_log(folder / "result_2.txt").status == "pass"
    report = build([str(tmp_path)], jobs=1)
    for run, seed in zip(sorted(report.runs, key=lambda r: r.path), range(5)):
        assert run.counted and not run.faults and not run.problems, run.problems
        assert run.time_to_train_min == pytest.approx((2 * (90_000 + 700 * seed + 5000) + 1) / 60_000)
        assert any(w.startswith("its clock reads 1970-01-19 at run_start: its timed records count milliseconds from "
                                "a start written in seconds (its records stamped in milliseconds date it 2020-09-1")
                   for w in run.warnings), run.warnings
    assert next(iter(report.scores.values())).minutes is not None


def test_duplicated_run_stops_after_the_last_evaluation_are_a_warning_and_the_first_one_counts():
    text = retinanet_log([0.3, 0.345], epoch_ms=60_000)
    stop = text.splitlines(keepends=True)[-1]
    run = parse_lines((text + stop.replace('"time_ms": ', '"time_ms": 5')).splitlines(keepends=True))
    assert run.faults == [] and run.time_to_train_min == pytest.approx((2 * 65_000 + 1) / 60_000)
    assert run.warnings[-1].startswith("2 run_stop records (lines 32, 33): the time to train is read from the first")
