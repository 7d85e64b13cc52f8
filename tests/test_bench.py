"""python -m harness.bench: the matrix, one process per cell, failed cells recorded, resume and budget,
the tables; and --smoke, every suite model at its debug preset on the CPU."""
from __future__ import annotations

import json
import platform

import pytest

from harness.bench import _parser, machine, plan
from harness.observe.system import cpu_model
from harness.bench.suite import Cell, default_gpus, suite_models
from tests.helpers import REPO, run_cli


def test_the_default_matrix_is_the_registered_suite_in_tf32_and_amp_on_each_power_of_two():
    assert default_gpus(1) == [1] and default_gpus(2) == [1, 2] and default_gpus(6) == [1, 2, 4]
    assert suite_models()[:8] == ["bert_base", "bert_large", "txl_base", "txl_large", "tacotron2", "waveglow",
                                  "ncf", "gnmt"]
    cells = plan(_parser().parse_args([]), available=2)
    assert len(cells) == len(suite_models()) * 2 * 2
    assert {(c.precision, c.gpus) for c in cells} == {("tf32", 1), ("tf32", 2), ("amp", 1), ("amp", 2)}
    ieee = plan(_parser().parse_args(["--precisions", "fp32"]), available=1)  # IEEE fp32 stays available
    assert {c.precision for c in ieee} == {"fp32"}


def test_the_suite_is_what_the_model_specs_declare_throughput_only_models_first():
    from harness import registry

    listed = [s for s in registry.MODELS if s.suite is not None]
    assert suite_models() == [s.name for s in listed if s.throughput_only] + [s.name for s in listed if s.task]
    ncf = Cell("ncf", None, "amp", 1).overrides("cuda", smoke=False, window_s=3.0, warmup_s=3.0, repeats=3)
    assert "model.batch_size=1048576" in ncf and "throughput_window_s=3" in ncf
    assert Cell("ncf", None, "fp32", 1).step_s() == registry.get("ncf").suite.step_s[1]


def test_smoke_is_a_check_of_each_model_not_the_matrix():
    """--smoke runs every suite model once, at its debug preset, fp32 on one CPU rank: it says so."""
    args = _parser().parse_args(["--smoke"])
    cells = plan(args, available=0, device="cpu")
    assert [(c.model, c.precision, c.gpus) for c in cells] == [(m, "fp32", 1) for m in suite_models()]
    assert "not the matrix" in _parser().format_help() and "fp32 on one CPU rank" in _parser().format_help()
    readme = (REPO / "README.md").read_text()
    assert "same matrix" not in readme and "--smoke" in readme


def test_a_cell_runs_the_real_scale_preset_with_windows_aimed_at_seconds():
    gnmt = Cell("gnmt", None, "amp", 2).overrides("cuda", smoke=False, window_s=3.0, warmup_s=3.0, repeats=3)
    assert {"model=gnmt", "dataset=wmt16", "mode=throughput", "precision=amp", "gpus=2", "model.batch_size=512",
            "seed=1", "warmup_steps=1", "warmup_s=3", "throughput_window_s=3", "throughput_repeats=3"} <= set(gnmt)
    assert not any(o.startswith("throughput_steps=") for o in gnmt)  # sized by the run, not by a guess
    bert = Cell("bert_large", "pretrain512", "fp32", 1).overrides("cuda", smoke=False, window_s=3.0, warmup_s=3.0,
                                                                  repeats=3)
    assert "model.workload=pretrain512" in bert and not any("dataset" in o for o in bert)
    smoke = Cell("ncf", None, "fp32", 1).overrides("cpu", smoke=True, window_s=3.0, warmup_s=3.0, repeats=3)
    assert {"+debug=ncf", "device=cpu", "warmup_steps=1", "throughput_steps=1"} <= set(smoke)
    assert Cell("bert_large", "pretrain512", "amp", 2).name == "bert_large-pretrain512-amp-2gpu"


def test_an_unknown_model_is_a_one_line_error(tmp_path):
    out = run_cli("harness.bench", "--models", "bert_huge", "--out", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 2 and "unknown model 'bert_huge'" in out.stderr and len(out.stderr.splitlines()) == 1


@pytest.mark.e2e
def test_a_failed_cell_is_recorded_and_the_matrix_goes_on_then_resumes_within_a_budget(tmp_path):
    env = {"HARNESS_MODELS": "tests.models.tputonly"}
    args = ["harness.bench", "--models", "tputonly", "--precisions", "fp32", "amp", "--gpus", "1", "--device", "cpu",
            "--window-s", "0.3", "--warmup-s", "0.3", "--repeats", "2", "--out", str(tmp_path / "b")]
    out = run_cli(*args, cwd=tmp_path, env=env)
    assert out.returncode == 1, out.stderr  # amp needs CUDA: that cell fails, the fp32 one still runs
    lines = [json.loads(line) for line in (tmp_path / "b" / "bench.jsonl").read_text().splitlines()]
    assert [(c["cell"], c["status"]) for c in lines] == [("tputonly-fp32-1gpu", "success"),
                                                        ("tputonly-amp-1gpu", "failed")]
    assert len(lines[0]["windows"]) == 2 and "precision=amp needs a CUDA device" in lines[1]["reason"]
    failed = json.loads((tmp_path / "b" / "runs" / "tputonly-amp-1gpu" / "result.json").read_text())
    assert failed["mode"] == "throughput" and failed["status"] == "failed"  # readable by the report
    assert "ETA" in out.stdout and "[2/2]" in out.stdout
    md = (tmp_path / "b" / "results.md").read_text()
    assert "| tputonly | tputonly | CPU | fp32 | 1 |" in md and "## Failed cells" in md

    again = run_cli(*args, "--resume", "--budget-min", "0.01", cwd=tmp_path, env=env)
    assert again.returncode == 3 and "1 kept" in again.stdout and "--resume to continue" in again.stdout
    assert len((tmp_path / "b" / "bench.jsonl").read_text().splitlines()) == 2  # nothing ran


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_smoke_runs_every_suite_model_at_its_debug_preset_on_the_cpu(tmp_path):
    out = run_cli("harness.bench", "--smoke", "--jobs", "2", "--out", str(tmp_path / "smoke"), cwd=tmp_path,
                  timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    cells = [json.loads(line) for line in (tmp_path / "smoke" / "bench.jsonl").read_text().splitlines()]
    assert sorted(c["model"] for c in cells) == sorted(suite_models())
    assert all(c["status"] == "success" and c["throughput"] > 0 and "+debug=" in c["command"] for c in cells)
    md = (tmp_path / "smoke" / "results.md").read_text()
    head = md.split("\n## ", 1)[0]  # the heading names the CPU that ran the cells, and no GPU, driver or CUDA
    assert head.startswith("# GPU benchmark suite smoke run: debug presets, not a benchmark") and "CUDA" not in head
    assert "\n## Smoke run: debug presets, not a benchmark\n" in md and "not the real sizes" in md


def test_cells_side_by_side_hold_gpus_of_their_own_and_the_budget_stops_new_ones(tmp_path, monkeypatch):
    import threading
    import time

    import harness.bench as bench

    held, lock, most = {}, threading.Lock(), [0]
    busy: set[int] = set()

    def fake_run_cell(cell, args, out, device, gpus):
        with lock:
            assert not busy & set(gpus) and len(gpus) == cell.gpus  # no GPU is lent twice
            busy.update(gpus)
            most[0] = max(most[0], len(busy))
        held[cell.name] = list(gpus)
        time.sleep(0.3)
        with lock:
            busy.difference_update(gpus)
        return bench.Outcome(cell.name, cell.model, None, cell.precision, cell.gpus, "success", 1.0, "samples/s",
                             [1.0], 0.3, None, "", "")

    monkeypatch.setattr(bench, "run_cell", fake_run_cell)
    args = bench._parser().parse_args(["--models", "ncf", "gnmt", "--jobs", "2"])
    args.jobs = 2
    cells = bench.plan(args, available=2)
    assert [c.gpus for c in cells] == [1, 1, 1, 1, 2, 2, 2, 2]  # fewest GPUs first
    outcomes, stopped, _ = bench._run_all(cells, [0.3] * 8, args, tmp_path, "cuda", gpu_count=2)
    assert stopped == 0 and len(outcomes) == 8 and most[0] == 2  # two one-GPU cells ran side by side
    assert sorted(map(tuple, (held[c.name] for c in cells[:4]))) == [(0,), (0,), (1,), (1,)]
    assert all(sorted(held[c.name]) == [0, 1] for c in cells[4:])
    args.budget_min = 0.3 * 2.5 / 60
    outcomes, stopped, _ = bench._run_all(cells, [0.3] * 8, args, tmp_path, "cuda", gpu_count=2)
    assert 0 < stopped < 8 and len(outcomes) == 8 - stopped


def test_tables_only_rebuilds_the_tables_under_the_machine_that_ran_the_cells(tmp_path):
    from harness.bench import main
    from tests.results.report.test_bench_tables import write_run

    for precision, tput in (("fp32", 100.0), ("amp", 250.0)):
        write_run(tmp_path / "runs", "txl_large", precision, 1, [tput])
    (tmp_path / "bench.json").write_text(json.dumps({"machine": "2x NVIDIA H200", "driver": "580.159.04",
                                                     "command": "python -m harness.bench --gpus 1", "cells": []}))
    assert main(["--tables-only", "--out", str(tmp_path)]) == 0
    md = (tmp_path / "results.md").read_text()
    assert md.startswith("# GPU benchmark suite: 2x NVIDIA H200") and "driver 580.159.04" in md
    assert "- mean amp / fp32 on 1 GPU(s): 2.500x" in md and (tmp_path / "precision.png").is_file()


def test_the_machine_read_without_torch_is_what_torch_says():
    """Where torch can see no GPU, machine() reads torch's versions from its files instead of starting it."""
    import torch

    from harness.observe.system import torch_files

    found = torch_files()
    assert found is None or (found == {"torch": torch.__version__, "cuda": torch.version.cuda}
                             and not torch.cuda.is_available())
    if found is not None:
        assert {k: v for k, v in machine().items() if k != "date"} == {
            "machine": "CPU", "accelerator": "CPU", "gpu_count": 0, "driver": None, **found, "cudnn": None,
            "python": platform.python_version(), "host": platform.node(), "cpu": cpu_model()}


def _result(run_dir) -> dict:
    return json.loads((run_dir / "result.json").read_text())


@pytest.mark.e2e
def test_a_bench_cell_and_the_direct_call_it_prints_count_the_same_samples_over_the_same_steps(tmp_path):
    """The cell's command line, typed by hand, is the same measurement: the same synthetic batch (the
    bench's seed), the same warm-up and window steps, the same mel frames counted per step. Windows
    and warm-up of a millisecond make the window step counts exact: after one step of one-off work and
    at least three timed ones (the fewest whose times can be seen to settle), windows of one step."""
    out = run_cli("harness.bench", "--models", "tacotron2", "--precisions", "fp32", "--gpus", "1", "--device", "cpu",
                  "--window-s", "0.001", "--warmup-s", "0.001", "--repeats", "2", "--set", "+debug=tacotron2",
                  "--out", str(tmp_path / "b"), cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    cell = json.loads((tmp_path / "b" / "bench.jsonl").read_text().splitlines()[0])
    assert cell["command"].startswith("python -m harness.train ") and "seed=1" in cell["command"]
    direct = run_cli("harness.train", *cell["command"].split()[3:], f"output_root={tmp_path / 'd'}",
                     "telemetry=false", cwd=tmp_path)
    assert direct.returncode == 0, direct.stderr[-2000:]
    bench, alone = _result(tmp_path / "b" / "runs" / "tacotron2-fp32-1gpu"), _result(next((tmp_path / "d" / "runs").iterdir()))
    for r in (bench, alone):
        # 1 untimed, at least 3 timed (more while a loaded machine's step times have not settled)
        assert r["warmup_steps"] >= 4 and r["throughput_steps"] == 1
    frames = bench["hyperparameters"]["mel_frames_per_batch"]
    assert alone["hyperparameters"]["mel_frames_per_batch"] == frames
    assert [(e["steps"], e["samples"]) for e in bench["epochs"]] == [(e["steps"], e["samples"]) for e in alone["epochs"]] \
        == [(1, frames)] * 2


def test_windows_are_sized_from_the_step_time_the_warm_up_measured(tmp_path):
    """A step of 50 ms and a window of 0.5 s: ten steps a window (rounding of a loaded machine's
    sleep allowed), after a warm-up of at least 0.3 s of timed steps."""
    out = run_cli("harness.train", "model=tputonly", "mode=throughput", "device=cpu", "seed=1", "model.sleep_s=0.05",
                  "warmup_steps=1", "warmup_s=0.3", "throughput_window_s=0.5", "throughput_repeats=2", "progress=false",
                  "tensorboard=false", "telemetry=false", f"output_root={tmp_path}", cwd=tmp_path,
                  env={"HARNESS_MODELS": "tests.models.tputonly"})
    assert out.returncode == 0, out.stderr[-2000:]
    r = _result(next((tmp_path / "runs").iterdir()))
    assert 8 <= r["throughput_steps"] <= 10 and r["warmup_steps"] >= 1 + 0.3 / 0.06
    assert [e["steps"] for e in r["epochs"]] == [r["throughput_steps"]] * 2
    assert all(e["samples"] == 32 * e["steps"] for e in r["epochs"])
    assert f"{r['warmup_steps']} warm-up steps left out" in out.stdout + out.stderr


def test_windows_are_not_sized_from_warm_up_steps_that_were_still_doing_one_off_work(tmp_path):
    """Steps 1-3 take 0.3 s (as the first steps after torch.compile record CUDA graphs), later ones
    30 ms: the warm-up's 0.2 s are over after its first timed step, yet it goes on until three steps
    agree, and a 0.3 s window holds about ten of the fast steps, not one of the slow ones."""
    out = run_cli("harness.train", "model=tputonly", "mode=throughput", "device=cpu", "seed=1", "model.sleep_s=0.03",
                  "model.slow_steps=3", "warmup_steps=1", "warmup_s=0.2", "throughput_window_s=0.3",
                  "throughput_repeats=1", "progress=false", "tensorboard=false", "telemetry=false",
                  f"output_root={tmp_path}", cwd=tmp_path, env={"HARNESS_MODELS": "tests.models.tputonly"})
    assert out.returncode == 0, out.stderr[-2000:]
    r = _result(next((tmp_path / "runs").iterdir()))
    assert r["warmup_steps"] >= 6 and 7 <= r["throughput_steps"] <= 10
    assert "still differed" not in out.stdout + out.stderr


def test_without_a_gpu_the_default_matrix_is_fp32_not_cells_that_cannot_run():
    cells = plan(_parser().parse_args(["--models", "ncf"]), available=0, device="cpu")
    assert [c.precision for c in cells] == ["fp32"]
    asked = plan(_parser().parse_args(["--models", "ncf", "--precisions", "amp"]), available=0, device="cpu")
    assert [c.precision for c in asked] == ["amp"]  # asked for by name: it runs, and fails with its reason


def test_the_fast_path_is_the_default_and_the_eager_step_runs_beside_it_when_asked():
    fast = plan(_parser().parse_args(["--models", "tacotron2", "--gpus", "1"]), available=1)
    assert [c.name for c in fast] == ["tacotron2-tf32-1gpu", "tacotron2-amp-1gpu"]
    assert "eager=true" not in fast[0].overrides("cuda", smoke=False, window_s=3.0, warmup_s=3.0, repeats=3)
    both = plan(_parser().parse_args(["--models", "tacotron2", "--gpus", "1", "--precisions", "amp", "--paths",
                                      "fast", "eager"]), available=1)
    assert [c.name for c in both] == ["tacotron2-amp-1gpu", "tacotron2-amp-eager-1gpu"]
    assert "eager=true" in both[1].overrides("cuda", smoke=False, window_s=3.0, warmup_s=3.0, repeats=3)
    eager = plan(_parser().parse_args(["--models", "tacotron2", "--gpus", "1", "--eager"]), available=1)
    assert all(c.eager for c in eager)


@pytest.mark.parametrize("given, line", [
    (["--timeout", "-1"], "--timeout -1 must be above 0"),
    (["--repeats", "0"], "--repeats 0 must be at least 1"),
    (["--jobs", "0"], "--jobs 0 must be at least 1"),
    (["--window-s", "nan"], "--window-s nan must be above 0"),
    (["--models", "ncf", "--set", "model.batch_size=abc"],
     "--set model.batch_size=abc: model.batch_size: Value 'abc' of type 'str' could not be converted to Integer"),
    (["--models", "ncf", "--set", "model.no_such_option=1"], None),
])
def test_bad_numbers_and_a_bad_set_are_one_usage_line_before_any_cell(tmp_path, capsys, given, line):
    from harness.bench import main

    out = tmp_path / "bench"
    assert main([*given, "--device", "cpu", "--out", str(out)]) == 2
    (said,) = capsys.readouterr().err.splitlines()
    if line is None:  # Hydra's wording for a key that is not there; the key named
        assert said.startswith("harness.bench: error: --set model.no_such_option=1: ") and "no_such_option" in said[40:]
    else:
        assert said == f"harness.bench: error: {line}"
    assert not out.exists()  # no folder, no cell


def test_tables_only_on_a_folder_without_bench_runs_is_one_line_and_writes_nothing(tmp_path, capsys):
    from harness.bench import main

    (tmp_path / "notes.txt").write_text("a user's file\n")
    assert main(["--tables-only", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"harness.bench: error: --tables-only: {tmp_path} holds no bench runs (runs/<cell>/result.json); give --out "
        "of a folder that harness.bench ran cells into"]
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]  # no four empty tables


def test_a_damaged_bench_folder_names_each_damaged_file_or_line_and_tabulates_the_good_cells(tmp_path, capsys):
    from harness.bench import main
    from tests.results.report.test_bench_tables import write_run

    for model, tput in (("txl_base", 90.0), ("bert_base", 40.0), ("txl_large", 30.0)):
        write_run(tmp_path / "runs", model, "fp32", 1, [tput])
    broken = next(p for p in (tmp_path / "runs").glob("*/result.json") if "bert_base" in str(p))
    broken.write_bytes(broken.read_bytes()[:-20] + b"\0\0\0")  # a kill while the file was written
    (tmp_path / "bench.jsonl").write_text('{"cell": "a", "seconds": 60}\nnull\n{"cell": "b", "seco\n\0\0\n')
    (tmp_path / "bench.json").write_text('{"machine": "1x NVIDIA H2')
    assert main(["--tables-only", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 5 and all(line.startswith("harness.bench: warning: ") for line in err)
    assert "bench.json: not JSON" in err[0] and f"{broken}: not JSON" in err[1]
    assert [line.rsplit(": ", 1)[-1] for line in err[2:]] == ["skipped"] * 3 and "line 4: NUL bytes" in err[4]
    md = (tmp_path / "results.md").read_text()
    assert "txl_base" in md and "txl_large" in md and "bert_base" not in md
    (tmp_path / "file").write_text("not a folder")
    for flag in ("--tables-only", "--resume"):
        assert main([flag, "--out", str(tmp_path / "file")]) == 2
        assert capsys.readouterr().err == (f"harness.bench: error: --out {tmp_path / 'file'} is a file, not a folder: "
                                           "name a folder for the cells' runs and tables\n")


def test_ctrl_c_stops_the_running_cell_rather_than_waiting_for_its_windows(tmp_path):
    # the pool's `with` waited for the cell's thread, which waited for the cell: its windows ran on, and Ctrl-C
    # could hang for the cell's --timeout (600 s by default)
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.helpers import child_env

    proc = subprocess.Popen([sys.executable, "-m", "harness.bench", "--device", "cpu", "--models", "ncf",
                             "--precisions", "fp32", "--gpus", "1", "--repeats", "8", "--window-s", "3",
                             "--warmup-s", "1", "--set", "model.batch_size=4096", "--out", str(tmp_path / "b")],
                            cwd=REPO, env=child_env(), start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    log = tmp_path / "b" / "runs" / "ncf-fp32-1gpu" / "bench.log"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (log.is_file() and "initialised" in log.read_text()):
        time.sleep(0.2)
    time.sleep(2)  # into its windows: 8 of 3 s each are left
    os.killpg(proc.pid, signal.SIGINT)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and time.monotonic() - sent < 12, err
    result = json.loads((tmp_path / "b" / "runs" / "ncf-fp32-1gpu" / "result.json").read_text())
    assert result["status"] == "aborted" and "SIGTERM" in result["reason"]


def test_a_cell_named_twice_runs_once():
    # --gpus 1 1 ran one cell twice into one folder, the second over the first
    cells = plan(_parser().parse_args(["--models", "ncf", "ncf", "--precisions", "fp32", "fp32", "--gpus", "1", "1"]),
                 available=2, device="cpu")
    assert [c.name for c in cells] == ["ncf-fp32-1gpu"]


def test_resume_keeps_only_a_throughput_result_measured_as_the_cell_is_now(tmp_path):
    from harness.bench import readback

    planned = ["model=ncf", "mode=throughput", "model.batch_size=4096"]
    path = tmp_path / "result.json"
    good = {"status": "success", "mode": "throughput", "model": "ncf", "throughput": 1000.0,
            "command": [*planned, "output_root=x"]}
    cases = [(good, True), ({**good, "command": ["model=ncf", "mode=throughput", "model.batch_size=2048"]}, False),
             ({**good, "mode": "train"}, False), ({**good, "model": 5}, False), ({**good, "status": "failed"}, False)]
    for data, kept in cases:
        path.write_text(json.dumps(data))
        assert readback.succeeded(path, planned) is kept, data


def test_tables_only_on_a_training_output_is_refused(tmp_path):
    from harness.bench.suite import usage_error

    (tmp_path / "runs" / "2026-12-05_ncf").mkdir(parents=True)
    (tmp_path / "runs" / "2026-12-05_ncf" / "result.json").write_text('{"status": "success", "mode": "train"}')
    args = _parser().parse_args(["--tables-only", "--out", str(tmp_path)])
    assert "holds no bench runs" in usage_error(args, tmp_path)
