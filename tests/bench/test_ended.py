"""A bench cell whose process a signal ended before it wrote its result.json (harness/bench/ended.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import harness.bench as bench
from harness.bench import ended
from harness.bench.suite import Cell


@pytest.mark.parametrize("returncode, name", [(-9, "SIGKILL"), (137, "SIGKILL"), (143, "SIGTERM"), (-15, "SIGTERM"),
                                              (1, None), (2, None), (0, None), (None, None), (255, None)])
def test_the_signal_that_ended_a_process_is_read_from_either_convention(returncode, name):
    stopped = ended.signal_of(returncode)
    assert (stopped.name if stopped else None) == name


def test_a_cell_killed_before_its_result_is_aborted_with_the_signal_and_its_reserve_removed(tmp_path, monkeypatch):
    """A run killed where it could not write its own record (a SIGTERM it could not act on in the bench's
    grace, then SIGKILL) read `failed`, its reason the log's last line, and left its .reserve behind."""
    def tiny_cell(argv: list[str], log_path: Path, env: dict[str, str], starter: object) -> subprocess.Popen:
        # what such a run leaves: its reserve, an initialisation line, then the kill
        code = ("import os, pathlib, signal, sys; d = pathlib.Path(sys.argv[1]); (d / '.reserve').write_bytes(b'0' * 64); "
                "print('initialised in 2.7 s on 1xCPU: global_batch_size=16', flush=True); "
                "os.kill(os.getpid(), signal.SIGKILL)")
        with open(log_path, "w") as log:
            return subprocess.Popen([sys.executable, "-c", code, str(log_path.parent)], stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)

    monkeypatch.setattr(bench.start, "start", tiny_cell)
    args = bench._parser().parse_args(["--models", "ncf", "--device", "cpu"])
    args.accelerator, args.starter = "CPU", None
    outcome = bench.run_cell(Cell("ncf", None, "fp32", 1), args, tmp_path, "cpu")
    run_dir = tmp_path / "runs" / "ncf-fp32-1gpu"
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == outcome.status == "aborted"
    assert result["reason"] == outcome.reason == (
        "interrupted (SIGKILL): the process ended before it wrote its result.json")
    assert not (run_dir / ".reserve").exists()


def test_a_cell_that_failed_on_its_own_keeps_its_logs_error_line(tmp_path, monkeypatch):
    def failing(argv: list[str], log_path: Path, env: dict[str, str], starter: object) -> subprocess.Popen:
        with open(log_path, "w") as log:
            return subprocess.Popen([sys.executable, "-c", "import sys; print('ValueError: no'); sys.exit(1)"],
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    monkeypatch.setattr(bench.start, "start", failing)
    args = bench._parser().parse_args(["--models", "ncf", "--device", "cpu"])
    args.accelerator, args.starter = "CPU", None
    outcome = bench.run_cell(Cell("ncf", None, "fp32", 1), args, tmp_path, "cpu")
    assert (outcome.status, outcome.reason) == ("failed", "ValueError: no")
