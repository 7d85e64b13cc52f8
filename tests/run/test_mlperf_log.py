"""Each run gets its own fresh MLPerf log file, never appended to another run's."""
from __future__ import annotations

import json

import pytest

from harness.run.mlperf_log import MLPerfLog


def _records(path):
    return [json.loads(line.split(":::MLLOG ", 1)[1]) for line in path.read_text().splitlines()]


def test_two_runs_in_one_process_write_two_clean_files(tmp_path):
    a, b = MLPerfLog(tmp_path / "a.log"), MLPerfLog(tmp_path / "b.log")
    a.event("seed", 1)
    b.event("seed", 2)
    a.start("run_start")
    a.close()
    b.end("run_stop", metadata={"status": "success"})
    b.close()
    assert [(r["key"], r["value"]) for r in _records(tmp_path / "a.log")] == [("seed", 1), ("run_start", None)]
    assert [(r["key"], r["value"]) for r in _records(tmp_path / "b.log")] == [("seed", 2), ("run_stop", None)]


def test_an_existing_log_is_never_appended_to(tmp_path):
    (tmp_path / "mlperf.log").write_text("earlier run\n")
    with pytest.raises(FileExistsError):
        MLPerfLog(tmp_path / "mlperf.log")
    assert (tmp_path / "mlperf.log").read_text() == "earlier run\n"


def test_lines_carry_the_logged_time_and_the_callers_site(tmp_path):
    log = MLPerfLog(tmp_path / "x.log")
    t = log.event("eval_accuracy", 0.5, metadata={"epoch_num": 3})
    log.close()
    (record,) = _records(tmp_path / "x.log")
    assert record["time_ms"] == t
    assert record["metadata"]["epoch_num"] == 3
    assert record["metadata"]["file"].endswith("test_mlperf_log.py")


def test_a_disabled_log_writes_nothing(tmp_path):
    log = MLPerfLog(None)
    assert isinstance(log.event("seed", 1), int) and not log.enabled
    assert list(tmp_path.iterdir()) == []
