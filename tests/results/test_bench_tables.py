"""Throughput runs -> groups, scaling, precision gains and the bench's tables and charts."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from harness.results import bench_tables
from harness.results import record as rec
from harness.results.throughput import groups, precision_gains, read_runs, scaling, table_rows


def write_run(root: Path, model: str, precision: str, world: int, windows: list[float], workload: str | None = None,
              status: str = "success", accelerator: str = "NVIDIA H200") -> Path:
    path = root / f"{model}-{workload}-{precision}-{world}" / "result.json"
    rec.write(rec.RunRecord(
        status=status, mode="throughput", model=model, precision=precision, world_size=world,
        accelerator=accelerator, platform=f"{world}x{accelerator}", throughput_unit="sequences/s", global_batch_size=32 * world,
        throughput=sorted(windows)[len(windows) // 2] if status == "success" and windows else None,
        epochs=[{"epoch": i + 1, "throughput": w} for i, w in enumerate(windows)],
        hyperparameters={"global_batch_size": 32 * world, **({"workload": workload} if workload else {})},
        reason=None if status == "success" else "CUDA out of memory"), path)
    return path


@pytest.fixture
def suite(tmp_path) -> Path:
    for model, base in (("bert_base", 900.0), ("bert_large", 300.0)):
        for precision, gain in (("fp32", 1.0), ("amp", 2.5)):
            for world, eff in ((1, 1.0), (2, 0.95 if model == "bert_large" else 0.9)):
                tput = base * gain * world * eff
                write_run(tmp_path, model, precision, world, [tput * 0.99, tput, tput * 1.01], "squad384")
    write_run(tmp_path, "waveglow", "amp", 1, [], status="failed")
    (tmp_path / "train-run").mkdir()
    (tmp_path / "train-run" / "result.json").write_text(json.dumps({"mode": "train", "model": "ncf"}))
    return tmp_path


def test_runs_of_one_workload_keep_their_models_apart(suite):
    runs = read_runs([suite])
    assert len(runs) == 9 and {r.workload for r in runs} == {"squad384", "waveglow"}  # the train run is not one
    failed = [r for r in runs if r.status == "failed"]
    assert [(r.model, r.throughput, r.reason) for r in failed] == [("waveglow", None, "CUDA out of memory")]
    gs = groups(runs)
    large = next(g for g in gs if (g.model, g.precision, g.world_size) == ("bert_large", "amp", 2))
    assert large.median == pytest.approx(300 * 2.5 * 2 * 0.95) and large.runs == 1 and large.global_batch_size == 64
    eff = {(s.model, s.precision): s.efficiency for s in scaling(gs)}
    assert eff[("bert_large", "amp")] == pytest.approx(0.95) and eff[("bert_base", "fp32")] == pytest.approx(0.9)
    gains = {(p.model, p.world_size): p.ratio for p in precision_gains(gs)}
    assert gains[("bert_base", 1)] == pytest.approx(2.5) and len(gains) == 4
    header, rows = table_rows(gs)
    assert len(rows) == len(gs) and header[0] == "workload"


def test_the_summary_has_both_views_their_means_the_machine_and_charts(suite, tmp_path):
    out = tmp_path / "summary"
    meta = {"machine": "2x NVIDIA H200", "driver": "570.1", "torch": "2.14", "command": "python -m harness.bench"}
    written = bench_tables.summarise(read_runs([suite]), meta, out, order=["bert_large", "bert_base"])
    assert {p.name for p in written} >= {"results.md", "throughput.csv", "scaling.csv", "precision.csv", "scaling.png",
                                         "precision.png"}
    md = (out / "results.md").read_text()
    assert "2x NVIDIA H200" in md and "driver 570.1" in md and "`python -m harness.bench`" in md
    assert "- mean efficiency, amp, 2 vs 1 GPUs: 0.925 over 2 models" in md
    assert "- mean amp / fp32 on 1 GPU(s): 2.500x" in md
    assert "## Failed cells\n\n- waveglow amp 1 GPU(s): CUDA out of memory" in md
    rows = list(csv.reader((out / "throughput.csv").read_text().splitlines()))
    assert rows[1][1] == "bert_large"  # the suite's order
    assert rows[0][-1] == "windows (spread)" and "3 windows" in rows[1][-1]
    scaling_rows = list(csv.reader((out / "scaling.csv").read_text().splitlines()))
    assert ["bert_large squad384", "NVIDIA H200", "amp", "2 vs 1", "1.90x", "95%"] in scaling_rows


def test_the_precision_gain_is_over_tf32_where_a_model_ran_it_and_over_fp32_otherwise_saying_which(tmp_path):
    """The studies' "FP32" is TF32: amp is set against tf32 when the model ran in tf32 (IEEE fp32 beside
    it is then a gain of its own over tf32), against IEEE fp32 when that is all the model ran."""
    for precision, tput in (("fp32", 100.0), ("tf32", 200.0), ("amp", 300.0)):
        write_run(tmp_path / "runs", "bert_large", precision, 1, [tput], "squad384")
    for precision, tput in (("fp32", 50.0), ("amp", 100.0)):
        write_run(tmp_path / "runs", "txl_large", precision, 1, [tput])
    gains = {(p.model, p.precision): (p.baseline, p.ratio) for p in precision_gains(groups(read_runs([tmp_path])),
                                                                                    bench_tables.BASELINES)}
    assert gains == {("bert_large", "amp"): ("tf32", pytest.approx(1.5)), ("bert_large", "fp32"): ("tf32", 0.5),
                     ("txl_large", "amp"): ("fp32", 2.0)}
    bench_tables.summarise(read_runs([tmp_path]), {"machine": "1x NVIDIA H200"}, tmp_path / "s")
    md = (tmp_path / "s" / "results.md").read_text()
    assert "## Precision gain over tf32 (over fp32 where a model ran no tf32)" in md
    assert "| bert_large squad384 | NVIDIA H200 | 1 | amp / tf32 | 1.50x |" in md
    assert "| txl_large | NVIDIA H200 | 1 | amp / fp32 | 2.00x |" in md
    assert "- mean amp / tf32 on 1 GPU(s): 1.500x" in md and "- mean amp / fp32 on 1 GPU(s): 2.000x" in md
    rows = list(csv.reader((tmp_path / "s" / "precision.csv").read_text().splitlines()))
    assert rows[0] == ["workload", "accelerator", "GPUs", "gain", "throughput ratio"]
