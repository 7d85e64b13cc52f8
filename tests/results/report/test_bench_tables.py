"""Throughput runs -> groups, scaling, precision gains and the bench's tables and charts."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from harness import record as rec
from harness.results.report import bench_tables
from harness.run.record_file import write as write_record
from harness.results.analysis.throughput import fast_vs_eager, groups, precision_gains, read_runs, scaling
from harness.results.report.sections import table_rows


def write_run(root: Path, model: str, precision: str, world: int, windows: list[float], workload: str | None = None,
              status: str = "success", accelerator: str = "NVIDIA H200", unit: str = "sequences/s",
              reason: str = "CUDA out of memory", cell: str | None = None, **keys) -> Path:
    """A cell's result.json through the run's own record writer; `keys` are added to the written
    record as fields the writer does not know yet (the fast path's "path" and "fallback")."""
    path = root / (cell or f"{model}-{workload}-{precision}-{world}") / "result.json"
    write_record(rec.RunRecord(
        status=status, mode="throughput", model=model, precision=precision, world_size=world,
        accelerator=accelerator, platform=f"{world}x{accelerator}", throughput_unit=unit, global_batch_size=32 * world,
        throughput=sorted(windows)[len(windows) // 2] if status == "success" and windows else None,
        epochs=tuple(rec.Epoch(epoch=i + 1, throughput=w) for i, w in enumerate(windows)),
        hyperparameters={"global_batch_size": 32 * world, **({"workload": workload} if workload else {})},
        reason=None if status == "success" else reason), path)
    if keys:
        path.write_text(json.dumps({**rec.read(path), **keys}))
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


def test_each_fast_path_is_set_against_the_eager_step_of_its_cell_where_both_ran(tmp_path):
    """Fast / eager per model, GPUs and base precision; a fast path with no eager step beside it (waveglow)
    has no ratio; amp+master's paths are set against amp+master's eager step, not amp's."""
    for precision, world, tput in (("tf32", 1, 100.0), ("tf32+graph", 1, 400.0), ("amp", 1, 95.0),
                                   ("amp+graph", 1, 500.0), ("amp+compile", 1, 150.0), ("amp", 2, 180.0),
                                   ("amp+graph", 2, 900.0)):
        write_run(tmp_path / "runs", "tacotron2", precision, world, [tput * 0.98, tput], unit="mel frames/s")
    write_run(tmp_path / "runs", "waveglow", "amp+graph", 1, [750.0])
    for precision, tput in (("amp", 280.0), ("amp+master", 300.0), ("amp+master+compile+graph", 450.0)):
        write_run(tmp_path / "runs", "bert_large", precision, 1, [tput], "squad384")
    fast = {(f.model, f.base, f.path, f.world_size): f.ratio for f in fast_vs_eager(groups(read_runs([tmp_path])))}
    assert fast == {("tacotron2", "tf32", "graph", 1): pytest.approx(4.0), ("tacotron2", "amp", "graph", 1): pytest.approx(500 / 95),
                    ("tacotron2", "amp", "compile", 1): pytest.approx(150 / 95), ("tacotron2", "amp", "graph", 2): 5.0,
                    ("bert_large", "amp+master", "compile+graph", 1): 1.5}
    written = bench_tables.summarise(read_runs([tmp_path]), {"machine": "1x NVIDIA H200"}, tmp_path / "s",
                                     order=["bert_large", "tacotron2"])
    assert {p.name for p in written} >= {"fast_path.csv", "fast_path.png", "results.html"}
    md = (tmp_path / "s" / "results.md").read_text()
    fast_md = md[md.index("## Fast path vs eager"):]
    assert "| tacotron2 | NVIDIA H200 | 1 | amp | graph | 500 | 95 | mel frames/s | 5.26x |" in fast_md
    assert "| bert_large squad384 | NVIDIA H200 | 1 | amp+master | compile+graph | 450 | 300 | sequences/s | 1.50x |" in fast_md
    assert "- mean amp+graph / amp on 1 GPU(s): 5.263x" in fast_md and "waveglow" not in fast_md
    # the precision gain sets like paths against each other: tf32+graph for amp+graph, never eager tf32
    gain_md = md[md.index("## Precision gain"):md.index("## Fast path vs eager")]
    assert "| tacotron2 | NVIDIA H200 | 1 | amp+graph / tf32+graph | 1.25x |" in gain_md
    assert "| tacotron2 | NVIDIA H200 | 1 | amp / tf32 | 0.95x |" in gain_md and "amp+compile /" not in gain_md
    with open(tmp_path / "s" / "fast_path.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["workload", "accelerator", "GPUs", "precision", "path", "fast", "eager", "unit", "fast / eager"]
    assert len(rows) == 1 + len(fast)
    assert not [p for p in (tmp_path / "s").iterdir() if p.name.endswith(".tmp")]  # every file replaced whole


def test_a_record_naming_its_base_precision_alone_takes_its_path_key_and_a_fallback_is_said(tmp_path):
    """A record whose label is the base precision and whose "path" key names the fast path is that path's
    run; a fast path that fell back to the eager step is an eager run, its reason in the tables."""
    write_run(tmp_path, "txl_base", "amp", 1, [212_250.0], unit="tokens/s", cell="fast",
              path="compile(reduce-overhead)")
    write_run(tmp_path, "txl_base", "amp", 1, [86_489.0], unit="tokens/s", cell="eager", path="eager")
    reason = "CUDA graph capture failed: Cannot copy between CPU and CUDA tensors during CUDA graph capture"
    write_run(tmp_path, "gnmt", "amp", 1, [808_170.0], unit="tokens/s", path="eager", fallback=reason + "\nTraceback")
    runs = read_runs([tmp_path])
    assert sorted((r.model, r.precision, r.fallback) for r in runs) == [
        ("gnmt", "amp", reason), ("txl_base", "amp", None), ("txl_base", "amp+compile(reduce-overhead)", None)]
    (gain,) = fast_vs_eager(groups(runs))
    assert (gain.model, gain.path, gain.ratio) == ("txl_base", "compile(reduce-overhead)", pytest.approx(212_250 / 86_489))
    bench_tables.summarise(runs, {"machine": "1x NVIDIA H200"}, tmp_path / "s")
    md = (tmp_path / "s" / "results.md").read_text()
    assert f"## Fell back to the eager step\n\n- gnmt amp 1 GPU(s): {reason} (" in md


def test_a_smoke_run_s_tables_say_they_are_debug_presets_and_not_a_benchmark(suite, tmp_path):
    meta = {"machine": "CPU", "gpu_count": 0, "device": "CPU", "cuda": "13.0", "torch": "2.14", "smoke": True,
            "command": "python -m harness.bench --smoke"}
    bench_tables.summarise(read_runs([suite]), meta, tmp_path / "smoke", order=["bert_large", "bert_base"])
    md = (tmp_path / "smoke" / "results.md").read_text()
    head, banner = md.split("\n## ", 2)[:2]
    assert head.startswith("# GPU benchmark suite smoke run: debug presets, not a benchmark: CPU")
    assert "ran on the CPU" in head and "CUDA" not in head  # torch's build says 13.0; no GPU ran anything
    assert banner.startswith("Smoke run: debug presets, not a benchmark") and "not the real sizes" in banner
    assert "a large model's debug preset can outrun a small one's" in banner
    assert "## Throughput (smoke run: debug presets, not a benchmark)" in md
    page = (tmp_path / "smoke" / "results.html").read_text()
    assert "<h1>GPU benchmark suite smoke run: debug presets, not a benchmark: CPU</h1>" in page
    assert 'id="smoke-run-debug-presets-not-a-benchmark"' in page and "CUDA" not in page.split("Throughput")[0]


def test_the_throughput_table_shows_flops_tflops_and_mfu(tmp_path):
    write_run(tmp_path / "runs", "bert_large", "amp", 1, [400.0, 417.0, 420.0], "squad384",
              model_flops_per_sample=740e9, achieved_tflops=308.6, mfu=0.3119, mfu_note=None)
    write_run(tmp_path / "runs", "ncf", "fp32", 1, [1e6], accelerator="CPU", model_flops_per_sample=15552.0,
              achieved_tflops=0.0156, mfu=None, mfu_note="no GPU: MFU is a GPU's figure")
    bench_tables.summarise(read_runs([tmp_path / "runs"]), {"machine": "1x NVIDIA H200"}, tmp_path)
    rows = list(csv.reader((tmp_path / "throughput.csv").read_text().splitlines()))
    cols = [rows[0].index(c) for c in ("GFLOP a sample", "TFLOP/s", "MFU")]
    assert {r[1]: [r[c] for c in cols] for r in rows[1:]} == {"bert_large": ["740", "308.6", "31.2%"],
                                                             "ncf": ["1.555e-05", "0.0156", "n/a"]}
    md = (tmp_path / "results.md").read_text()
    assert "MFU n/a: no GPU: MFU is a GPU's figure." in md and "| GFLOP a sample | TFLOP/s | MFU |" in md
    assert "31.2%" in (tmp_path / "results.html").read_text()
