"""Where runs write and what they record about the machine: folders that cannot hold a run are
refused in one line before anything is written, no two runs or sweeps share a directory, and a
busy host is measured, said on the console and kept in result.json and system.json."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import child_env, run_cli

pytestmark = pytest.mark.e2e
TPUT = ["model=tputonly", "mode=throughput", "warmup_steps=1", "throughput_steps=5", "throughput_repeats=1",
        "progress=false", "tensorboard=false"]
ENV = {"HARNESS_MODELS": "tests.models.tputonly"}


@pytest.mark.parametrize("override,message", [
    ("output_root=afile", "output_root=afile is a file, not a folder; choose a folder"),
    ("output_root=afile/sub", "output_root=afile/sub lies under afile, which is a file; choose a folder"),
    ("data_root=afile", "data_root=afile is a file, not a folder; choose a folder"),
    ("model.layers.x=1", "model.layers.x=1: model.layers is a list; give a position (model.layers.0=...) "
                         "or the whole list (model.layers=[...])"),
])
def test_a_folder_that_cannot_hold_a_run_is_one_line_and_exit_2(tmp_path, override, message):
    (tmp_path / "afile").write_text("")
    out = run_cli("harness.train", "model=ncf", override, cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"harness.train: error: {message}"]
    assert [p.name for p in tmp_path.iterdir()] == ["afile"]  # nothing written, not even outputs/


def test_a_run_id_names_one_run(tmp_path):
    first = run_cli("harness.train", *TPUT, "run_id=r1", "output_root=out", cwd=tmp_path, env=ENV)
    assert first.returncode == 0, first.stderr
    again = run_cli("harness.train", *TPUT, "run_id=r1", "output_root=out", cwd=tmp_path, env=ENV)
    assert again.returncode == 2
    assert again.stderr.strip().splitlines() == [
        "harness.train: error: out/runs/run-r1_tputonly holds result.json: a run directory names one run; "
        "choose a new run_id"]


def test_two_runs_started_at_once_with_one_run_id_do_not_share_its_directory(tmp_path):
    """Both pass the check that the directory is new; the claim (an atomic mkdir) lets one through."""
    procs = [_popen(tmp_path, "harness.train", *TPUT, "run_id=same", "output_root=out") for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], outs
    refused = next(err for p, (_, err) in zip(procs, outs) if p.returncode == 2)
    assert refused.strip().splitlines()[-1].startswith("harness.train: error: out/runs/run-same_tputonly ")
    run_dir = tmp_path / "out" / "runs" / "run-same_tputonly"
    assert (run_dir / "result.json").is_file() and len((run_dir / "train.log").read_text().split("run dir:")) == 2


def _popen(cwd: Path, module: str, *args: str, env: dict | None = None) -> subprocess.Popen:
    """python -m module, with the test suite's own thread policy left out of the environment."""
    own = {k: v for k, v in os.environ.items() if not k.startswith("OMP_") and k != "HARNESS_THREAD_POLICY"}
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=child_env(own, **ENV, **(env or {})))


def test_sweeps_started_at_once_get_directories_of_their_own(tmp_path):
    """Two Hydra sweeps and two drawn-seed sweeps, each pair started in the same second with the
    same options: four sweep directories, every job's result and every drawn seed kept."""
    procs = [_popen(tmp_path, "harness.train", "-m", *TPUT, "seed=1,2", "output_root=out") for _ in range(2)]
    procs += [_popen(tmp_path, "harness.sweep", *TPUT, "runs=2", "output_root=out") for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    sweeps = sorted((tmp_path / "out" / "sweeps").iterdir())
    assert len(sweeps) == 4
    for sweep in sweeps:
        results = [json.loads(p.read_text()) for p in sweep.rglob("result.json")]
        assert len(results) == 2 and all(r["status"] == "success" for r in results)
        if (sweep / "seeds.txt").exists():
            drawn = [int(x) for x in (sweep / "seeds.txt").read_text().splitlines() if not x.startswith("#")]
            assert sorted(drawn) == sorted(r["seed"] for r in results)


def test_a_busy_host_is_said_and_recorded_and_the_threads_too(tmp_path):
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])  # one core taken from the run
    try:
        # the harness chooses the threads only where the environment does not: run it without the suite's own
        run = _popen(tmp_path, "harness.train", *TPUT, "output_root=out")
        # a user's own thread count is kept whatever the load: that run goes beside it, not after it
        user = _popen(tmp_path, "harness.train", *TPUT, "output_root=mine", env={"OMP_NUM_THREADS": "1"})
        _said_busy(tmp_path / "out", run)
        spinner.kill()  # the run has measured the host; the rest of both runs gets both cores
        stdout, stderr = run.communicate(timeout=300)
        out = subprocess.CompletedProcess(run.args, run.returncode, stdout, stderr)
        user.communicate(timeout=300)
    finally:
        spinner.kill()
        spinner.wait()
    assert out.returncode == 0, out.stderr
    assert "warning: the machine is busy: other processes used" in out.stderr
    (run_dir,) = [p.parent for p in (tmp_path / "out").rglob("result.json")]
    result = json.loads((run_dir / "result.json").read_text())
    load = result["host_load"]
    assert load["busy"] is True and load["cpus"] == len(os.sched_getaffinity(0))
    assert load["other_cpu_pct_start"] >= 50 and len(load["load_avg_start"]) == 3
    assert load["other_cpu_pct_mean"] is None or load["other_cpu_pct_mean"] >= 0
    assert "time to train measures the machine's neighbours too" in load["note"]
    system = json.loads((run_dir / "system.json").read_text())
    assert system["harness_host_load"]["other_cpu_pct_start"] == load["other_cpu_pct_start"]
    assert system["harness_host_load"]["other_cpu_pct_mean"] is None  # as at the start
    threads = result["threads"]
    assert threads["chosen_by"] == "harness" and threads["omp_wait_policy"] == "PASSIVE"
    assert threads["torch_threads"] == threads["omp_num_threads"]
    if len(os.sched_getaffinity(0)) == 2:  # the spinner's core is left to it
        assert threads["omp_num_threads"] == 1
    assert user.returncode == 0
    (mine,) = (tmp_path / "mine").rglob("result.json")
    assert json.loads(mine.read_text())["threads"] == {
        "omp_num_threads": 1, "omp_wait_policy": None, "torch_threads": 1, "chosen_by": "user",
        "reason": "set by the user: OMP_NUM_THREADS=1"}


def _said_busy(root: Path, run: subprocess.Popen, timeout: float = 300) -> None:
    """Until the run's train.log says the machine is busy (its start-of-run measurement is then taken,
    harness/run/job.py's _watch_host), or the run ends."""
    deadline = time.monotonic() + timeout
    while run.poll() is None and time.monotonic() < deadline:
        if any("the machine is busy" in p.read_text(errors="replace") for p in root.rglob("train.log")):
            return
        time.sleep(0.05)


def test_printing_the_config_writes_nothing_and_is_never_refused(tmp_path):
    (tmp_path / "out" / "runs" / "run-r1_ncf").mkdir(parents=True)  # a taken run_id: only a run is refused
    out = run_cli("harness.train", "--cfg", "job", "model=ncf", "run_id=r1", "output_root=out", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "model:" in out.stdout and "progress_timeout_s: 300" in out.stdout
    assert [p.name for p in (tmp_path / "out" / "runs").iterdir()] == ["run-r1_ncf"]
