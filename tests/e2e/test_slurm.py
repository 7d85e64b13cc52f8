"""The harness under a real SLURM: a single-node cluster started on this host (Debian's slurm-wlm
and munge: tests/e2e/slurm_cluster.py), `srun -n2`, an sbatch script cancelled mid-run, and the
documented submitit sweep with one of its tasks cancelled mid-run. Skipped, with the reason, where
SLURM is not installed or cannot start.

    python -m pytest -q tests/e2e/test_slurm.py
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.slurm_cluster import SingleNodeSlurm, unavailable
from tests.helpers import run_cli, said

pytestmark = pytest.mark.e2e
# the embedded NCF at its debug scale; an unreachable target keeps a run going until it is cancelled
NCF = ["model=ncf", "device=cpu", "+debug=ncf", "progress=false", "output_root=out"]
ENDLESS = ["model.target=0.99", "max_epochs=1000"]


@pytest.fixture(scope="module")
def slurm():
    why = unavailable()
    if why:
        pytest.skip(why)
    cluster = SingleNodeSlurm()
    try:
        cluster.start()
    except (RuntimeError, subprocess.SubprocessError, OSError) as err:
        cluster.stop()
        pytest.skip(f"a single-node SLURM did not start here: {err}")
    yield cluster
    cluster.stop()


def _python(*args: str) -> list[str]:
    return [sys.executable, "-m", *args]


def _wait_for(ready, timeout_s: float, what: str, poll_s: float = 0.5):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        found = ready()
        if found:
            return found
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def _started(run_dirs) -> Path | None:
    """The first run directory whose mlperf.log has begun the timed region."""
    for d in run_dirs:
        log = d / "mlperf.log"
        if log.is_file() and '"key": "run_start"' in log.read_text(errors="replace"):
            return d
    return None


def _ended_aborted_by_sigterm(run_dir: Path) -> None:
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "aborted" and "SIGTERM" in result["reason"], result["reason"]
    last = json.loads((run_dir / "mlperf.log").read_text().splitlines()[-1].split(":::MLLOG ", 1)[1])
    assert last["key"] == "run_stop" and last["metadata"]["status"] == "aborted"
    report = run_cli("harness.report", str(run_dir), "--json", "-")
    assert report.returncode == 0, report.stderr  # a scorable run: aborted, not broken
    assert [r["status"] for r in json.loads(report.stdout)["runs"]] == ["aborted"]


def test_srun_two_ranks_join_slurms_world_with_the_thread_policy(slurm, tmp_path):
    out = slurm.run("srun", "-n2", *_python("harness.train", *NCF, "seed=1"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    (run_dir,) = (tmp_path / "out" / "runs").iterdir()
    assert run_dir.name.startswith("slurm-") and run_dir.name.endswith(".0_ncf")  # one directory, the step's
    result = json.loads((run_dir / "result.json").read_text())
    assert result["world_size"] == 2 and result["status"] in ("success", "aborted")
    # srun binds each of the two tasks to one of the two cores: one passive OpenMP thread each
    assert result["threads"]["omp_num_threads"] == 1 and result["threads"]["omp_wait_policy"] == "PASSIVE"
    assert "rank 1/2 (local 1/2, node 0/1, slurm)" in (run_dir / "rank_1.log").read_text()


def test_a_killed_srun_rank_is_named_not_the_rank_that_saw_it(slurm, tmp_path):
    step = subprocess.Popen(["srun", "-n2", *_python("harness.train", *NCF, *ENDLESS, "seed=1")], cwd=tmp_path,
                            env=slurm.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        runs = tmp_path / "out" / "runs"
        run_dir = _wait_for(lambda: runs.is_dir() and _started(runs.iterdir()), 300, "the run to start")
        beat = json.loads((run_dir / ".heartbeat" / "rank_1.json").read_text())
        os.kill(beat["pid"], signal.SIGKILL)
        output, _ = step.communicate(timeout=120)
    finally:
        if step.poll() is None:
            step.kill()
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "failed" and result["error"]["rank"] == 1, output[-2000:]
    assert result["reason"].startswith(f"rank 1 failed: its process {beat['pid']} ended without a word")
    assert not (run_dir / ".heartbeat").exists()


def test_scancel_of_an_sbatch_script_leaves_a_scorable_aborted_run(slurm, tmp_path):
    script = tmp_path / "ncf.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --ntasks=2 --output=slurm-%j.out\n"
                      f"srun {' '.join(_python('harness.train', *NCF, *ENDLESS, 'seed=1'))}\n")
    out = slurm.run("sbatch", "--parsable", str(script), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    job = out.stdout.strip().split(";")[0]
    runs = tmp_path / "out" / "runs"
    run_dir = _wait_for(lambda: runs.is_dir() and _started(runs.iterdir()), 300, "the run to start")
    assert slurm.run("scancel", job).returncode == 0
    _wait_for(lambda: not slurm.run("squeue", "-h", "-j", job).stdout.strip(), 120, "the job to end")
    _wait_for(lambda: (run_dir / "result.json").is_file(), 30, "result.json")
    _ended_aborted_by_sigterm(run_dir)
    assert run_dir.name == f"slurm-{job}.0_ncf"


def test_submitit_sweep_counts_a_cancelled_task_and_goes_on(slurm, tmp_path):
    # the documented command (docs/distributed.md), at the debug scale; task 1 is cancelled mid-run
    sweep = subprocess.Popen(
        _python("harness.train", "-m", "hydra/launcher=slurm", *NCF, "gpus=2", "seed=1,2", "max_epochs=20",
                "model.target=0.99"),
        cwd=tmp_path, env=slurm.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        sweeps = tmp_path / "out" / "sweeps"
        task1 = _wait_for(lambda: sweeps.is_dir() and _started(sweeps.glob("*/1_*")), 420, "task 1's run to start")
        job = next((task1.parent / ".submitit").glob("*_1")).name  # <array job>_1
        assert slurm.run("scancel", job).returncode == 0
        output, _ = sweep.communicate(timeout=300)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 1, output[-3000:]  # a task was cancelled: said, after the summary
    _ended_aborted_by_sigterm(task1)
    sweep_dir = task1.parent
    summary = json.loads((sweep_dir / "summary.json").read_text())
    ends = {t["job_id"].split("_")[1]: t for t in summary["slurm_tasks"]}
    assert ends["0"]["state"] == "COMPLETED" and ends["0"]["ran"]
    assert ends["1"]["state"] == "CANCELLED" and "SIGTERM" in ends["1"]["note"]
    runs = sorted(summary["runs"], key=lambda r: r["seed"])
    assert [r["world_size"] for r in runs] == [2, 2] and runs[1]["status"] == "aborted"
    assert "SLURM: 2 task(s), 1 ran to their end; task" in output
    assert "SLURM request: 1 node(s) x 2 task(s), CPU ranks" in output


def test_a_request_the_partition_cannot_hold_is_refused_before_submission(slurm, tmp_path):
    too_many = slurm.cpus + 1
    out = slurm.run(*_python("harness.train", "-m", "hydra/launcher=slurm", *NCF, f"gpus={too_many}", "seed=1"),
                    cwd=tmp_path)
    assert out.returncode == 2
    assert said(out.stderr) == [
        f"harness.train: error: gpus={too_many} ranks per node but partition debug's nodes have {slurm.cpus} "
        f"CPU(s): one rank needs one CPU at least; ask for gpus<={slurm.cpus}"]
    assert not slurm.run("squeue", "-h").stdout.strip()  # nothing was submitted
