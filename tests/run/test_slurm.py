"""The SLURM launcher's watch over its tasks, without a cluster: a task pending for a reason that
never clears is cancelled and reported, one that ends without a result is counted, and SLURM's
stopping signals raise Stopped in the task (tests/e2e/test_slurm.py runs all of it for real)."""
from __future__ import annotations

import os
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.run import slurm, slurm_queue
from harness.signals import Stopped
from harness.run.slurm_queue import JobState


def _job(tmp_path: Path, job_id: str = "12_1"):
    paths = SimpleNamespace(result_pickle=tmp_path / f"{job_id}_0_result.pkl", stderr=tmp_path / f"{job_id}_0_log.err")
    job = SimpleNamespace(job_id=job_id, num_tasks=1, paths=paths)
    job.task = lambda t: job
    return job


def test_a_task_that_can_never_start_is_cancelled_and_reported(tmp_path, monkeypatch):
    cancelled = []
    monkeypatch.setattr(slurm_queue, "cancel", cancelled.append)
    seen: dict = {}
    assert slurm._ended(_job(tmp_path), JobState("PENDING", "Resources"), 1, ["seed=2"], seen) is None
    end = slurm._ended(_job(tmp_path), JobState("PENDING", "PartitionConfig"), 1, ["seed=2"], seen)
    assert cancelled == ["12_1"]
    assert (end.state, end.ran, end.run_dir) == ("CANCELLED", False, None)
    assert end.note == "cannot start (PartitionConfig): cancelled; fit the request to the partition"


def test_a_task_that_ended_without_a_result_is_counted(tmp_path, monkeypatch):
    monkeypatch.setattr(slurm.time, "sleep", lambda s: None)
    end = slurm._ended(_job(tmp_path), JobState("CANCELLED"), 1, ["seed=2"], {})
    assert (end.state, end.ran) == ("CANCELLED", False) and "ended without a result" in end.note


def test_a_task_that_returned_waits_for_slurms_last_word(tmp_path, monkeypatch):
    job = _job(tmp_path)
    job.paths.result_pickle.write_bytes(b"")
    outcomes = []
    monkeypatch.setattr(slurm, "_outcome", lambda job, state, num, overrides: outcomes.append(state) or state)
    seen: dict = {}
    assert slurm._ended(job, JobState("COMPLETING"), 1, [], seen) is None  # a cancelled job still completing
    assert slurm._ended(job, JobState("CANCELLED"), 1, [], seen) == "CANCELLED"


@pytest.mark.parametrize("sig, name", [(signal.SIGTERM, "SIGTERM"), (signal.SIGUSR2, "SIGUSR2")])
def test_slurms_stopping_signals_raise_stopped(sig, name):
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGUSR2)}
    try:
        slurm.stop_on_slurm_signals()
        with pytest.raises(Stopped) as err:
            os.kill(os.getpid(), sig)
        assert err.value.signal_name == name
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
