"""How a run ends when it does not end by itself: SIGTERM (what `timeout`, SLURM and `docker stop`
send) like Ctrl-C, Ctrl-C before the timed region, a rank stopped or failing. Each leaves a
result.json that names what happened, one line on the console, and nothing outside its root."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.helpers import REPO, said

pytestmark = pytest.mark.e2e
TPUT2 = ["model=tputonly", "mode=throughput", "device=cpu", "gpus=2", "warmup_steps=0", "throughput_steps=1000000",
         "throughput_repeats=1", "progress=false", "output_root=out"]


def _start(cwd: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    full = {**os.environ, "PYTHONUNBUFFERED": "1", "HARNESS_MODELS": "tests.models.tputonly",
            "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "harness.train", *args], cwd=cwd, env=full,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait(root: Path, pattern: str, needle: str, timeout: float = 240) -> Path:
    deadline = time.time() + timeout
    while time.time() < deadline:
        for p in root.rglob(pattern):
            try:
                if needle in p.read_text(errors="replace"):
                    return p
            except OSError:
                pass  # replaced while read
        time.sleep(0.05)
    raise AssertionError(f"{needle!r} never appeared in {pattern} under {root}")


def _result(root: Path) -> dict:
    (path,) = root.rglob("result.json")
    return json.loads(path.read_text())


def _last_mllog(log: Path) -> dict:
    return json.loads(log.read_text().splitlines()[-1][len(":::MLLOG "):])


def _rank_pid(root: Path, rank: int) -> int:
    beat = _wait(root, f"rank_{rank}.json", '"phase": "train"')
    return json.loads(beat.read_text())["pid"]


def test_sigterm_to_a_single_rank_run_ends_it_as_ctrl_c_does(tmp_path):
    proc = _start(tmp_path, "model=ncf", "seed=1", "model.target=0.99", "progress=false", "output_root=out")
    log = _wait(tmp_path / "out", "mlperf.log", '"key": "run_start"')
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "harness.train: stopped by SIGTERM; the run is marked aborted in its result.json" in err
    result = _result(tmp_path / "out")
    assert result["status"] == "aborted" and result["reason"] == "interrupted (SIGTERM)"
    last = _last_mllog(log)
    assert last["key"] == "run_stop" and last["metadata"]["status"] == "aborted"
    assert last["metadata"]["reason"] == "SIGTERM" and "before_run_start" not in last["metadata"]


def test_ctrl_c_during_initialisation_still_ends_the_log_with_run_stop(tmp_path):
    """MLPerf's run_stop closes a run_start: before run_start there is no time to train, and the
    closing run_stop says so (docs/results.md)."""
    proc = _start(tmp_path, "model=ncf", "seed=1", "progress=false", "output_root=out")
    log = _wait(tmp_path / "out", "mlperf.log", '"key": "init_start"')
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert '"key": "run_start"' not in log.read_text()
    last = _last_mllog(log)
    assert last["key"] == "run_stop" and last["metadata"]["status"] == "aborted"
    assert last["metadata"]["reason"] == "SIGINT" and last["metadata"]["before_run_start"] is True
    result = _result(tmp_path / "out")
    assert result["status"] == "aborted" and result["time_to_train_s"] is None
    assert result["reason"] == "interrupted (SIGINT) before run_start: no time to train"


def test_sigterm_to_one_rank_of_two_is_named(tmp_path):
    proc = _start(tmp_path, *TPUT2)
    os.kill(_rank_pid(tmp_path / "out", 1), signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "stopped by SIGTERM to rank 1" in err and "To enable traceback" not in out + err
    assert _result(tmp_path / "out")["reason"] == "interrupted (SIGTERM to rank 1)"


def test_sigterm_to_the_launcher_is_called_sigterm(tmp_path):
    proc = _start(tmp_path, *TPUT2)
    _rank_pid(tmp_path / "out", 1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert _result(tmp_path / "out")["reason"] == "interrupted (SIGTERM)"


def test_a_stopped_rank_ends_the_run_within_its_limit_naming_the_rank(tmp_path):
    proc = _start(tmp_path, *TPUT2, "progress_timeout_s=5")
    pid = _rank_pid(tmp_path / "out", 1)
    os.kill(pid, signal.SIGSTOP)
    stopped_at = time.time()
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)  # gone already, unless the watchdog failed
        except ProcessLookupError:
            pass
    assert time.time() - stopped_at < 5 + 30
    assert proc.returncode == 1, err
    result = _result(tmp_path / "out")
    assert result["status"] == "failed" and result["error"]["rank"] == 1
    assert result["reason"].startswith("rank 1 made no progress for 5 s")
    assert "error: rank 1 made no progress for 5 s" in err
    assert not list((tmp_path / "out").rglob(".heartbeat"))


def test_a_failing_rank_is_one_line_and_leaves_nothing_outside_the_output_root(tmp_path):
    """The console gets the cause, not the launcher's tracebacks (they are in train.log), and the
    spawned ranks' temporary error files stay in the run directory."""
    (tmp_path / "tmp").mkdir()
    args = [a.replace("device=cpu", "device=auto") for a in TPUT2] + ["model.crash_on_rank=1"]
    proc = _start(tmp_path, *args, env={"TMPDIR": str(tmp_path / "tmp")})
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 1, err
    assert said(err) == ["error: rank 1 failed: RuntimeError: crash_on_rank=1: this rank fails on purpose"]
    assert "Traceback" not in out
    assert list((tmp_path / "tmp").iterdir()) == []  # no pytorch-errorfile-*.pickle left there
    (train_log,) = (tmp_path / "out").rglob("train.log")
    assert "Traceback" in train_log.read_text() and "fails on purpose" in train_log.read_text()
    if not torch.cuda.is_available():
        assert "no GPU on this host: gpus=2 runs 2 CPU ranks (device=cpu, gloo)" in out
