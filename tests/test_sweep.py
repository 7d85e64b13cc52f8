"""A sweep's summary counts the SLURM tasks that never ran a run (tests/e2e/test_sweep.py runs sweeps)."""
from __future__ import annotations

import json

from omegaconf import OmegaConf

from harness import sweep


def test_a_slurm_task_that_never_ran_is_counted_in_the_summary(tmp_path, capsys):
    tasks = [{"num": 0, "job_id": "12_0", "overrides": ["seed=1"], "state": "CANCELLED", "ran": False,
              "run_dir": None, "stopped_by": None, "note": "cannot start (PartitionConfig): cancelled"}]
    (tmp_path / sweep.SLURM_TASKS).write_text(json.dumps(tasks))
    sweep.SweepSummary().on_multirun_end(OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path)}}}))
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith("sweep: 0 run(s), 0 converged, 0 failed; SLURM: 1 task(s), 0 ran to their end; "
                           "task 12_0 CANCELLED: cannot start (PartitionConfig): cancelled; summary in ")
    assert "| 12_0 | seed=1 | CANCELLED | no |" in (tmp_path / "summary.md").read_text()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["slurm_tasks"] == tasks and summary["unfinished"] == 1  # harness.train's exit status reads it


def test_a_sweep_summary_the_disk_cannot_hold_is_one_line_and_the_sweep_exits_non_zero(fixtures_dir, tmp_path,
                                                                                        monkeypatch, capsys):
    from harness import train
    from tests.helpers import fill_disk

    run = tmp_path / "0"
    run.mkdir()
    log = (fixtures_dir / "nvidia_dgx1" / "gnmt" / "result_0.txt").read_bytes()
    (run / "result_0.txt").write_bytes(log)
    fill_disk(monkeypatch, room=0)
    sweep.SweepSummary().on_multirun_end(OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path)}}}))
    monkeypatch.undo()
    err = capsys.readouterr().err.splitlines()
    assert err == [f"sweep: error: cannot write {tmp_path / 'summary.md'}: the disk is full (No space left on device); "
                   f"free space or write the files elsewhere; the runs are in {tmp_path} (python -m harness.report "
                   f"{tmp_path} rebuilds the summary)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0"] and (run / "result_0.txt").read_bytes() == log
    assert train._unfinished(tmp_path) == 1  # harness.train -m exits 1
