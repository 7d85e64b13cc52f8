"""A sweep's summary counts the SLURM tasks that never ran a run (tests/e2e/test_sweep.py runs sweeps)."""
from __future__ import annotations

import json

import pytest

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


@pytest.mark.parametrize("args, line", [
    (["runs=0"], "runs=0: runs must be at least 1"),
    (["runs=-2"], "runs=-2: runs must be at least 1"),
    (["runs=2.5"], "runs=2.5: runs is a whole number of runs"),
    (["runs=500"], "runs=500 is more than 100 runs (MLPerf asks for at most 10 a benchmark); add max_runs=500"),
    (["runs=300", "max_runs=200"], "runs=300 is more than 200 runs"),
    (["model.layers=[8,4"], "cannot parse model.layers=[8,4"),
])
def test_a_run_count_out_of_bounds_or_an_unparsable_option_is_one_line_before_anything_is_written(
        tmp_path, monkeypatch, capsys, args, line):
    monkeypatch.chdir(tmp_path)
    assert sweep.main(["model=ncf", *args]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith(f"harness.sweep: error: {line}") and out.err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_a_list_option_sweeps_as_one_value_and_a_large_count_says_what_it_launches(tmp_path, monkeypatch, capsys):
    from harness import train

    launched = []
    monkeypatch.setattr(train, "main", lambda args: launched.append(args) or 0)
    assert sweep.main(["model=ncf", "runs=150", "max_runs=150", "model.layers=[16,8]", "device=cpu",
                       f"output_root={tmp_path}"]) == 0
    assert capsys.readouterr().out.startswith("harness.sweep: 150 drawn seeds -> ")
    (args,) = launched
    assert len(args[1].split(",")) == 150 and "model.layers=[16,8]" in args



def test_a_sweep_its_launcher_refuses_leaves_no_folder_of_seeds(tmp_path):
    """harness.sweep writes its drawn seeds before harness.train's launcher checks SLURM: refused there (one
    line, exit 2), the claimed folder holds those seeds alone and goes. In a process of its own: Hydra's
    logging, set up by the refused launch, would outlive this test's captured streams."""
    import os
    import subprocess
    import sys

    from tests.helpers import REPO, child_env

    env = child_env(PATH=f"{tmp_path / 'no-slurm'}{os.pathsep}{os.path.dirname(sys.executable)}")  # no sinfo
    done = subprocess.run([sys.executable, "-m", "harness.sweep", "hydra/launcher=slurm", "model=ncf", "device=cpu",
                           "runs=2", f"output_root={tmp_path / 'out'}"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "hydra/launcher=slurm needs SLURM's commands" in done.stderr.strip().splitlines()[-1]
    assert not list((tmp_path / "out").rglob("seeds.txt"))
    assert not (tmp_path / "out" / "sweeps").exists() or not list((tmp_path / "out" / "sweeps").iterdir())
