"""Sweeps: drawn seeds recorded before the runs, one directory per job, a summary at the end, and
a failed job counted rather than ending the sweep."""
from __future__ import annotations

import json

import pytest

from omegaconf import OmegaConf

from harness.outputs import sweep_name
from harness.sweep import main, planned_runs
from tests.helpers import run_cli

pytestmark = pytest.mark.e2e


def test_drawn_seed_sweep_records_its_seeds_and_writes_its_summary(tmp_path):
    out = run_cli("harness.sweep", "model=ncf", "+debug=ncf", "runs=2", "max_epochs=1", "output_root=out", "progress=false",
                  cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    (sweep,) = (tmp_path / "out" / "sweeps").iterdir()
    assert sweep.name.endswith("_ncf_1xcpu_fp32_2seeds")  # which runs these are, beside when
    seeds = [int(l) for l in (sweep / "seeds.txt").read_text().splitlines() if not l.startswith("#")]
    assert len(seeds) == 2 and len(set(seeds)) == 2
    results = [json.loads(p.read_text()) for p in sweep.rglob("result.json")]
    assert sorted(r["seed"] for r in results) == sorted(seeds)
    for r in results:  # each run under the thread policy harness.train applies (tests/run/test_threads.py)
        assert r["threads"]["torch_threads"] == r["threads"]["omp_num_threads"]
        assert r["threads"]["chosen_by"] == "user" or "1 local rank(s)" in r["threads"]["reason"]
    assert {p.name for p in sweep.iterdir()} >= {"seeds.txt", "summary.md", "summary.json", "summary.csv", "plots"}
    assert sorted(p.name for p in (sweep / "plots").iterdir()) == ["epochs.png", "quality.png", "time_to_train.png"]
    summary = json.loads((sweep / "summary.json").read_text())
    assert len(summary["runs"]) == 2 and summary["groups"][0]["runs"] == 2
    assert "sweep: 2 run(s)" in out.stdout


def test_a_failed_job_is_counted_and_the_sweep_goes_on(tmp_path):
    """A job whose loss turns NaN fails (what no check before the sweep can see); the other runs."""
    out = run_cli("harness.train", "-m", "model=twopart", "model.nan_at_step=5,-1", "max_epochs=1",
                  "model.target={A: 0.999, B: 0.999}", "output_root=out", "progress=false", cwd=tmp_path,
                  env={"HARNESS_MODELS": "tests.models.twopart"})
    assert out.returncode == 1, out.stderr  # a job failed: the sweep says so, after running every job
    statuses = sorted(json.loads(p.read_text())["status"] for p in (tmp_path / "out").rglob("result.json"))
    assert statuses == ["aborted", "failed"]
    (summary,) = (tmp_path / "out").rglob("summary.json")
    assert json.loads(summary.read_text())["unfinished"] == 1
    assert "1 failed" in out.stdout


def test_a_sweep_with_a_missing_dataset_starts_no_job(tmp_path):
    out = run_cli("harness.train", "-m", "dataset=ml20m,ncf_embedded", "max_epochs=1", "output_root=out",
                  "progress=false", cwd=tmp_path)
    assert out.returncode == 2 and "harness.train: error: no ratings.csv in out/datasets/ml-20m" in out.stderr
    assert not (tmp_path / "out" / "sweeps").exists()


def test_seed_count_defaults_to_mlperfs_requirement():
    assert planned_runs("gnmt", None) == 10 and planned_runs("ncf", None) == 10
    assert planned_runs("resnet", None) == 5 and planned_runs("gnmt", 3) == 3


def test_a_sweeps_folder_names_the_model_ranks_device_and_precision_it_runs():
    cfg = OmegaConf.create({"model": {"name": "gnmt"}, "gpus": 1, "precision": None})
    assert sweep_name(cfg, ["model=gnmt"], "cpu") == "gnmt_1xcpu_fp32"
    assert sweep_name(cfg, ["gpus=1,2", "hydra.job.chdir=false"], "cuda") == "gnmt_1+2xcuda_amp"  # the model's GPU default
    cfg.precision = "fp32"
    assert sweep_name(cfg, ["precision=fp32, bf16"], "cpu") == "gnmt_1xcpu_fp32+bf16"


def test_sweep_help_says_what_it_runs_its_options_folder_and_exit_status(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for said in ("runs=N", "python -m harness.train --help model=<name>", "seeds.txt", "ncf_1xcpu_fp32_5seeds",
                 "--compare", "Exit status", "thread policy"):
        assert said in out, said


def test_a_sweep_over_an_option_is_one_group_per_value_each_scored_on_its_own(tmp_path):
    # one group of four mixed two learning rates' seeds into one score and one seed spread
    out = run_cli("harness.train", "-m", "model=twopart", "seed=1,2", "model.learning_rate=0.05,0.2", "max_epochs=2",
                  "output_root=out", "progress=false", cwd=tmp_path, env={"HARNESS_MODELS": "tests.models.twopart"})
    assert out.returncode == 0, out.stderr
    (summary,) = (tmp_path / "out").rglob("summary.json")
    groups = json.loads(summary.read_text())["groups"]
    assert sorted((g["settings_group"], g["runs"]) for g in groups) == [("model.learning_rate=0.05", 2),
                                                                       ("model.learning_rate=0.2", 2)]
    report = run_cli("harness.report", str(tmp_path / "out"), env={"HARNESS_MODELS": "tests.models.twopart"})
    assert "twopart (model.learning_rate=0.2) 1xCPU 1 fp32 64: runs alike but for model.learning_rate are scored " \
           "apart: these runs have model.learning_rate=0.2" in report.stdout
