"""End to end on CPU, as a user runs it: NCF on its embedded data to the MLPerf target, the run
directory's files, the official checker's verdict, and what bad input and Ctrl-C leave behind."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import registry
from tests.helpers import REPO, run_cli, said

pytestmark = pytest.mark.e2e


def _run_dirs(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("result.json"))


@pytest.fixture(scope="module")
def ncf_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("work")
    out = run_cli("harness.train", "model=ncf", "seed=1", "output_root=out", "progress=false", cwd=work)
    (run_dir,) = _run_dirs(work / "out")
    return work, run_dir, out


def test_embedded_ncf_reaches_its_target(ncf_run):
    work, run_dir, out = ncf_run
    assert out.returncode == 0, out.stderr
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "success"
    assert result["final_quality"] >= 0.635 and result["target"] == 0.635
    assert result["seed"] == 1 and result["world_size"] == 1 and result["global_batch_size"] == 2048
    assert 1 <= result["epochs_to_converge"] <= 10
    assert result["time_to_train_s"] > 0 and result["throughput"] > 0
    # the harness's own share of time to train is accounted for, and small
    assert all(e["eval_seconds"] > 0 for e in result["epochs"])
    assert 0 <= result["overhead_fraction"] < 0.05 and "harness overhead" in out.stdout
    assert result["versions"]["torch"] and result["versions"]["mlperf_logging"] == "4.1.68"
    assert "SUCCESS: HR@10" in out.stdout and "run dir:" in out.stdout
    # 3 x the MLP's forward matmuls, 2 x (64x32 + 32x16 + 32x1) a sample, counted after run_stop
    assert result["model_flops_per_sample"] == 3 * 2 * (64 * 32 + 32 * 16 + 32) and "15.6 kFLOP a sample" in out.stdout


def test_run_directory_holds_what_users_rely_on(ncf_run):
    work, run_dir, _ = ncf_run
    names = {p.name for p in run_dir.iterdir()}
    assert {"config.yaml", "mlperf.log", "result.json", "train.log", ".hydra", "system.json", "tb",
            "telemetry.jsonl"} <= names
    assert "seed: 1" in (run_dir / "config.yaml").read_text()
    assert "HR@10" in (run_dir / "train.log").read_text()
    assert {p.name for p in work.iterdir()} == {"out"}  # nothing outside the output root
    lines = (run_dir / "mlperf.log").read_text().splitlines()
    assert all(line.startswith(":::MLLOG ") for line in lines)
    keys = [json.loads(line[9:])["key"] for line in lines]
    order = ["cache_clear", "init_start", "submission_benchmark", "seed", "init_stop", "run_start",
             "block_start", "epoch_start", "epoch_stop", "eval_start", "eval_accuracy", "eval_stop",
             "block_stop", "run_stop"]
    assert [k for k in keys if k in order][: len(order) - 1] == order[:-1]
    assert keys[-1] == "run_stop" and keys.count("run_start") == 1


def test_its_log_passes_harness_check_and_the_official_checker(ncf_run, tmp_path):
    _, run_dir, _ = ncf_run
    out = run_cli("harness.check", str(run_dir))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("PASS") and "harness-ncf-0.7.0" in out.stdout
    official = run_cli(
        "mlperf_logging.compliance_checker", "--ruleset", "0.7.0",
        "--config", str(REPO / "reference_models" / "ncf" / "rules_0.7.0.yaml"),
        "--log_output", str(tmp_path / "checker.log"), str(run_dir / "mlperf.log"), cwd=tmp_path,
    )
    assert official.returncode == 0, official.stdout + official.stderr
    assert "SUCCESS" in (tmp_path / "checker.log").read_text()


def test_tensorboard_holds_the_run_in_its_own_folder(ncf_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _, run_dir, _ = ncf_run
    tb = run_dir / "tb"
    assert [p.is_file() for p in tb.iterdir()] == [True]  # one event file, no timestamped subfolder
    events = EventAccumulator(str(tb))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"train/loss", "train/lr", "train/samples_per_s", "eval/HR@10", "process/rss_mib",
            "result/time_to_train_min", "result/epochs_to_converge", "result/status"} <= tags
    result = json.loads((run_dir / "result.json").read_text())
    quality = [(e.step, e.value) for e in events.Scalars("eval/HR@10")]
    assert quality == [(e["epoch"], pytest.approx(e["quality"], abs=1e-6)) for e in result["evals"]]  # float32
    assert [e.value for e in events.Scalars("result/status")] == [1.0]  # success
    assert set(events.PluginTagToContent("hparams")) == {
        "_hparams_/experiment", "_hparams_/session_start_info", "_hparams_/session_end_info"}


def test_a_cpu_run_records_its_process_and_system(ncf_run, tmp_path):
    _, run_dir, _ = ncf_run
    telemetry = json.loads((run_dir / "result.json").read_text())["telemetry"]
    assert telemetry["source"] == "process" and telemetry["samples"] >= 1
    assert telemetry["rss_peak_mib"] > 50 and telemetry["cpu_seconds"] > 0
    samples = [json.loads(l) for l in (run_dir / "telemetry.jsonl").read_text().splitlines()]
    assert samples and all(s["process"]["rss_mib"] > 0 for s in samples)
    system = json.loads((run_dir / "system.json").read_text())
    assert system["accelerator_model_name"] == "CPU" and system["system_name"] == "1xCPU"
    official = run_cli("mlperf_logging.system_desc_checker", str(run_dir / "system.json"), "training", "0.7.0",
                       "--log_output", str(tmp_path / "desc.log"), cwd=tmp_path)
    assert official.returncode == 0 and "passed" in (tmp_path / "desc.log").read_text(), official.stderr


def test_report_reads_the_run(ncf_run):
    _, run_dir, _ = ncf_run
    out = run_cli("harness.report", str(run_dir), "--json", "-")
    assert out.returncode == 0, out.stderr
    (run,) = json.loads(out.stdout)["runs"]
    result = json.loads((run_dir / "result.json").read_text())
    assert run["status"] == "success" and run["seed"] == 1 and run["world_size"] == 1
    assert run["time_to_train_s"] == result["time_to_train_s"]
    assert run["epochs_to_converge"] == result["epochs_to_converge"]
    assert run["throughput"] == pytest.approx(result["throughput"])
    text = run_cli("harness.report", str(run_dir)).stdout.splitlines()
    # a CPU run has no energy counter: the hardware columns say so rather than vanish
    assert text[2].split()[9:12] == ["gpu", "energy_kJ", "power_W"] and text[3].split()[9:12] == ["CPU", "n/a", "n/a"]


def test_same_seed_gives_the_same_evaluations(ncf_run):
    work, run_dir, _ = ncf_run
    first = json.loads((run_dir / "result.json").read_text())["evals"]
    out = run_cli("harness.train", "model=ncf", "seed=1", "output_root=again", "progress=false", cwd=work)
    assert out.returncode == 0, out.stderr
    (again,) = _run_dirs(work / "again")
    assert json.loads((again / "result.json").read_text())["evals"] == first


def test_missing_dataset_is_one_line_before_any_run_directory_is_made(tmp_path):
    out = run_cli("harness.train", "dataset=ml20m", "output_root=out", cwd=tmp_path)
    assert out.returncode == 2
    assert said(out.stderr) == [
        "harness.train: error: no ratings.csv in out/datasets/ml-20m: point dataset.path at an unpacked MovieLens "
        "folder (scripts/download_ml20m.sh fetches ml-20m) or use dataset=ncf_embedded"]
    assert not (tmp_path / "out" / "runs").exists()


def test_bad_option_exits_2_before_anything_is_written(tmp_path):
    out = run_cli("harness.train", "model=gnmtt", "output_root=out", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"harness.train: error: unknown model 'gnmtt'; choose one of: {', '.join(sorted(spec.name for spec in registry.MODELS))}"]
    assert list(tmp_path.iterdir()) == []


def test_sweep_of_runs_that_miss_the_target(tmp_path):
    """Two runs in one process: each its own directory and log; missing the target exits 0, and
    the official checker fails such a log, as it should."""
    out = run_cli("harness.train", "-m", "+debug=ncf", "seed=1,2", "max_epochs=1", "output_root=out", "progress=false",
                  "tensorboard=false", "telemetry=false", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    dirs = _run_dirs(tmp_path / "out")
    assert len(dirs) == 2
    for d, seed in zip(dirs, (1, 2)):
        assert not (d / "tb").exists() and not (d / "telemetry.jsonl").exists()  # both switched off
        result = json.loads((d / "result.json").read_text())
        assert (result["status"], result["seed"], result["epochs_run"]) == ("aborted", seed, 1)
        log = (d / "mlperf.log").read_text()
        assert log.count('"key": "run_start"') == 1 and '"status": "aborted"' in log
    check = run_cli("harness.check", str(tmp_path / "out"))
    assert check.returncode == 1 and check.stdout.count("FAIL") == 2 and "eval_accuracy" in check.stdout


def test_ctrl_c_marks_the_run_aborted_and_exits_130(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.train", "seed=3", "model.target=0.99", "output_root=out", "progress=false"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    deadline = time.time() + 120
    log = None
    while time.time() < deadline:
        logs = list((tmp_path / "out").rglob("mlperf.log"))
        if logs and '"key": "run_start"' in logs[0].read_text():
            log = logs[0]
            break
        time.sleep(0.2)
    assert log is not None, "the run never started"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted" in err
    result = json.loads((log.parent / "result.json").read_text())
    assert result["status"] == "aborted" and "interrupted" in result["reason"]
    last = json.loads(log.read_text().splitlines()[-1][9:])
    assert last["key"] == "run_stop" and last["metadata"]["status"] == "aborted"
