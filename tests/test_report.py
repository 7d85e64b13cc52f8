"""`python -m harness.report` as a user runs it: tables, JSON, CSV, and bad files named."""
from __future__ import annotations

import csv
import io
import json

from tests.helpers import run_cli
from tests.results.test_parse import _good_run


def test_report_on_the_official_fixtures(fixtures_dir):
    out = run_cli("harness.report", str(fixtures_dir), "--json", "-")
    report = json.loads(out.stdout)
    assert report["schema"] == "harness.report/3"
    groups = {g["benchmark"]: g for g in report["groups"]}
    assert groups["gnmt"]["score"]["minutes"] == 18.501885416666664
    assert groups["transformer"]["score"]["minutes"] == 18.811895833333335
    assert groups["transformer"]["epochs"]["counts"] == {"3": 8, "4": 2}
    assert groups["resnet"]["score"]["minutes"] is None and "cannot be scored" in groups["resnet"]["score"]["note"]
    # the seconds-based alibaba logs are named on stderr and make the exit status 1
    assert out.returncode == 1
    assert out.stderr.count("alibaba_v100-1280/resnet/result_") == 5
    assert "time_s" in out.stderr


def test_text_table_lists_runs_and_scores(fixtures_dir):
    out = run_cli("harness.report", str(fixtures_dir / "nvidia_dgx1"))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[2].split()[:6] == ["benchmark", "status", "ttt_s", "ttt_min", "epochs", "throughput/s"]
    gnmt5 = next(line for line in lines if line.rstrip().endswith("gnmt/result_5.txt"))
    assert gnmt5.split()[1:5] == ["success", "1394.0", "23.2340", "5"]
    score = next(line for line in lines if line.startswith("gnmt") and "1xNVIDIA DGX-1" in line)
    assert "18.5019" in score and "10/10 yes" in score and "4:9 5:1" in score


def test_each_bad_file_is_named_and_the_others_still_reported(tmp_path):
    good = tmp_path / "good" / "mlperf.log"
    good.parent.mkdir()
    good.write_text("".join(_good_run()))
    (tmp_path / "result_empty.txt").write_text("")
    (tmp_path / "result_two.txt").write_text("".join(_good_run() + _good_run(100_000)))
    (tmp_path / "result_badjson.txt").write_text("".join(_good_run()[:3] + [":::MLLOG {oops\n"] + _good_run()[3:]))
    (tmp_path / "result_nostop.txt").write_text("".join(_good_run()[:-1]))
    secs = [l.replace('"time_ms": ', '"time_s": ') for l in _good_run()]
    (tmp_path / "result_secs.txt").write_text("".join(secs))

    out = run_cli("harness.report", str(tmp_path), "--csv", "-")
    assert out.returncode == 1
    err = out.stderr.splitlines()
    assert any("result_empty.txt: no :::MLLOG lines" in l for l in err)
    assert any("result_two.txt: holds 2 runs" in l for l in err)
    assert any("result_badjson.txt: 1 line(s) are not valid MLLOG JSON (first at line 4)" in l for l in err)
    assert any("result_nostop.txt: no run_stop" in l for l in err)
    assert any("result_secs.txt: timestamps are seconds" in l for l in err)
    rows = {r["path"].rsplit("/", 1)[-1]: r for r in csv.DictReader(io.StringIO(out.stdout))}
    assert set(rows) == {"mlperf.log", "result_badjson.txt", "result_nostop.txt", "result_secs.txt"}
    assert rows["mlperf.log"]["scorable"] == "True" and float(rows["mlperf.log"]["time_to_train_s"]) == 60.0
    assert rows["result_nostop.txt"]["status"] == "incomplete"


def test_missing_path_is_an_error(tmp_path):
    out = run_cli("harness.report", str(tmp_path / "nope"))
    assert out.returncode == 1 and "no such file or folder" in out.stderr


def test_gpu_model_energy_and_power_come_from_the_run_directory(tmp_path):
    from tests.results.test_compare import write_run

    for seed, energy in ((1, 90_000.0), (2, 110_000.0), (3, 100_000.0)):
        run_dir = tmp_path / f"s{seed}"
        write_run(run_dir / "mlperf.log", 1, seed, 3, 1000.0, platform="NVIDIA H200")
        (run_dir / "result.json").write_text(json.dumps({
            "accelerator": "NVIDIA H200",
            "telemetry": {"source": "nvml", "energy_j": energy, "power_mean_w": 600.0 + seed}}))
    bare = tmp_path / "official" / "result_0.txt"  # an official log beside them: n/a, not an error
    write_run(bare, 1, 9, 3, 1000.0, platform="NVIDIA H200")
    out = run_cli("harness.report", str(tmp_path), "--json", "-")
    runs = {r["seed"]: r for r in json.loads(out.stdout)["runs"]}
    assert runs[1]["accelerator"] == "NVIDIA H200" and runs[1]["energy_j"] == 90_000.0
    assert runs[9]["energy_j"] is None and runs[9]["accelerator"] is None
    # the accelerator is part of the group key: the bare log, which names none, is a group of its own
    groups = {g["accelerator"]: g for g in json.loads(out.stdout)["groups"]}
    assert set(groups) == {"NVIDIA H200", None}
    group = groups["NVIDIA H200"]
    assert group["energy_j"]["mean"] == 100_000.0 and group["accelerators"] == ["NVIDIA H200"]
    text = run_cli("harness.report", str(tmp_path)).stdout
    header = text.splitlines()[2].split()
    assert header[9:12] == ["gpu", "energy_kJ", "power_W"]
    row = next(l for l in text.splitlines() if "s1/mlperf.log" in l).split()
    assert row[9:12] == ["NVIDIA", "H200", "90"]
    assert "energy_kJ mean (std)" in text and "100 (8.2)" in text
