"""mode=throughput results: runs read from result.json, groups, scaling, precision gains, and the report's tables."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.results.analysis import throughput as tp
from harness.results.report.sections import table_rows
from tests.helpers import run_cli


def write_result(path: Path, model="bert", precision="fp32", world=1, batch=32, windows=(100.0, 110.0, 105.0),
                 status="success", accelerator="NVIDIA H200", workload=None, unit="samples/s") -> Path:
    median = sorted(windows)[len(windows) // 2] if windows else None
    hp = {"global_batch_size": batch, **({"workload": workload} if workload else {})}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "mode": "throughput", "model": model, "precision": precision, "world_size": world, "global_batch_size": batch,
        "throughput": median if status == "success" else None, "throughput_unit": unit,
        "epochs": [{"throughput": w} for w in windows], "platform": f"{world}x{accelerator}",
        "accelerator": accelerator, "status": status, "reason": None if status == "success" else "CUDA out of memory",
        "hyperparameters": hp, "versions": {}, "started_at": "2026-12-01T00:00:00+00:00"}))
    return path


@pytest.fixture()
def suite(tmp_path):
    for i, (precision, world, scale) in enumerate([("fp32", 1, 1.0), ("fp32", 2, 1.9), ("amp", 1, 2.5),
                                                   ("amp", 2, 4.6), ("fp32", 1, 1.02)]):
        write_result(tmp_path / f"r{i}" / "result.json", precision=precision, world=world, batch=32 * world,
                     windows=tuple(w * scale for w in (100.0, 110.0, 105.0)), workload="pretrain128")
    write_result(tmp_path / "bad" / "result.json", precision="amp", world=4, batch=128, windows=(), status="failed",
                 workload="pretrain128")
    (tmp_path / "train" / "result.json").parent.mkdir()
    (tmp_path / "train" / "result.json").write_text(json.dumps({"mode": "train", "status": "failed"}))
    return tmp_path


def test_runs_groups_scaling_and_precision_gains(suite):
    runs = tp.read_runs([suite])
    assert len(runs) == 6 and {r.workload for r in runs} == {"pretrain128"}
    assert sum(r.status == "failed" and r.throughput is None for r in runs) == 1
    groups = {(g.precision, g.world_size): g for g in tp.groups(runs)}
    fp32 = groups[("fp32", 1)]
    assert (fp32.runs, fp32.failed, fp32.median) == (2, 0, pytest.approx(105.0 * 1.01))
    assert (fp32.min, fp32.max) == (105.0, pytest.approx(107.1)) and fp32.windows_min == 100.0
    assert groups[("amp", 4)].failed == 1 and groups[("amp", 4)].median is None
    scaling = {(s.precision, s.world): s for s in tp.scaling(list(groups.values()))}
    assert scaling[("fp32", 2)].speedup == pytest.approx(1.9 / 1.01)
    assert scaling[("fp32", 2)].efficiency == pytest.approx(1.9 / 1.01 / 2)
    gains = {(g.precision, g.world_size): g.ratio for g in tp.precision_gains(list(groups.values()))}
    assert gains[("amp", 1)] == pytest.approx(2.5 / 1.01) and gains[("amp", 2)] == pytest.approx(4.6 / 1.9)
    header, rows = table_rows(tp.groups(runs))
    assert header[:5] == ["workload", "model", "accelerator", "precision", "GPUs"] and len(rows) == 5


def test_the_report_prints_the_throughput_tables_and_a_failed_measurement_fails_it(suite, capsys):
    from harness.report import main

    out = run_cli("harness.report", str(suite))
    assert out.returncode == 1  # the failed measurement and the failed train run
    assert "Throughput (mode=throughput)" in out.stdout and "Scaling efficiency across GPU counts" in out.stdout
    assert "pretrain128  bert" in out.stdout and "94%" in out.stdout  # fp32 2 vs 1: 1.9 / 1.01 / 2
    assert "failed: CUDA out of memory" in out.stdout
    capsys.readouterr()
    assert main([str(suite), "--json", "-"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert len(data["throughput"]["runs"]) == 6 and len(data["throughput"]["precision_gains"]) == 2
    main([str(suite), "--csv", "-"])
    rows = capsys.readouterr().out.splitlines()
    assert sum(",pretrain128," in r for r in rows) == 6


def test_two_machines_throughput_tables_compare_in_one_command(tmp_path):
    """The seed documents' 'A6000 = 0.92x a 3090 on conv nets in fp32' tables, from two result folders."""
    for machine, accel, speed in (("a6000", "NVIDIA RTX A6000", {"resnet50": 0.92, "bert_large": 1.34}),
                                  ("rtx3090", "NVIDIA GeForce RTX 3090", {"resnet50": 1.0, "bert_large": 1.0})):
        for model, factor in speed.items():
            write_result(tmp_path / machine / model / "result.json", model=model, accelerator=accel,
                         windows=(1000.0 * factor, 1000.0 * factor, 1000.0 * factor))
    out = run_cli("harness.report", str(tmp_path / "a6000"), str(tmp_path / "rtx3090"), "--compare", "--json", "-")
    data = json.loads(out.stdout)
    ratios = {p["workload"]: (p["category"], round(p["ratio"], 2)) for p in data["throughput_pairs"]}
    assert ratios == {"resnet50": ("vision", 0.92), "bert_large": ("language", 1.34)}
    means = {m["category"]: m["value"] for m in data["throughput_geomeans"]}
    assert means["overall"] == pytest.approx((0.92 * 1.34) ** 0.5)


def test_a_fast_step_is_held_to_the_baseline_on_its_own_path_not_the_eager_one(tmp_path):
    """Labels name the path the step ran: amp+graph over tf32+graph, amp+compile(reduce-overhead) over
    tf32+compile(reduce-overhead), amp over tf32, and no ratio between a fast and an eager step (that
    would be the path's gain called precision's); amp+master+graph is a precision of its own on the
    graphed path."""
    for name, precision, scale in [("a", "tf32", 1.0), ("b", "amp", 1.5), ("c", "tf32+graph", 2.0),
                                   ("d", "amp+graph", 4.0), ("e", "amp+master+graph", 5.0),
                                   ("f", "tf32+compile(reduce-overhead)", 3.0), ("g", "amp+compile(reduce-overhead)", 3.3),
                                   ("h", "amp+compile", 2.5)]:  # compiled amp without a compiled tf32: no gain
        write_result(tmp_path / name / "result.json", precision=precision, windows=(100.0 * scale,))
    gains = {(g.precision, g.baseline): g.ratio
             for g in tp.precision_gains(tp.groups(tp.read_runs([tmp_path])), baseline=("tf32", "fp32"))}
    assert gains == {("amp", "tf32"): pytest.approx(1.5), ("amp+graph", "tf32+graph"): pytest.approx(2.0),
                     ("amp+master+graph", "tf32+graph"): pytest.approx(2.5),
                     ("amp+compile(reduce-overhead)", "tf32+compile(reduce-overhead)"): pytest.approx(1.1)}


def test_a_measurement_stopped_before_its_windows_ended_is_counted_aborted_beside_its_siblings(tmp_path, capsys):
    """A seed of a sweep stopped by SLURM's time limit or Ctrl-C is aborted, not a failure of the system, and
    stays in the group of the runs it was measured beside."""
    from harness.report import main

    write_result(tmp_path / "a" / "result.json")
    stopped = write_result(tmp_path / "b" / "result.json", windows=(), status="aborted")
    data = json.loads(stopped.read_text())
    stopped.write_text(json.dumps({**data, "reason": "interrupted (SIGTERM)"}))
    write_result(tmp_path / "c" / "result.json", windows=(), status="failed")
    (group,) = tp.groups(tp.read_runs([tmp_path]))
    assert (group.runs, group.failed, group.aborted, group.median) == (3, 1, 1, 105.0)
    main([str(tmp_path)])
    out = capsys.readouterr().out
    assert "3 (1 failed, 1 aborted)" in out
    assert "b/result.json: bert fp32 1 GPU(s) aborted: interrupted (SIGTERM)" in out
    assert "c/result.json: bert fp32 1 GPU(s) failed: CUDA out of memory" in out
