"""mode=throughput: synthetic batches, no dataset, no MLPerf log; repeated windows and their median."""
from __future__ import annotations

import json
import os
import statistics

import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("model,extra", [
    ("ncf", ["model.synthetic.n_users=5000", "model.synthetic.n_items=2000"]),
    ("gnmt", ["model.hidden_size=32", "model.vocab_size=512", "model.batch_size=16"]),
    ("transformer", ["model.hidden_size=32", "model.num_layers=1", "model.num_heads=2", "model.filter_size=64",
                     "model.vocab_size=512", "model.batch_size=64", "model.synthetic.src_len=8",
                     "model.synthetic.tgt_len=8"]),
])
def test_throughput_mode_measures_windows_without_data(tmp_path, model, extra):
    out = run_cli(
        "harness.train", f"model={model}", "mode=throughput", "warmup_steps=2", "throughput_steps=3",
        "throughput_repeats=3", "output_root=out", "data_root=nowhere", "progress=false", *extra, cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    (result_path,) = (tmp_path / "out").rglob("result.json")
    result = json.loads(result_path.read_text())
    assert result["mode"] == "throughput" and result["status"] == "success"
    windows = [e["throughput"] for e in result["epochs"]]
    assert len(windows) == 3 and all(w > 0 for w in windows)
    assert result["throughput"] == statistics.median(windows)
    assert not (tmp_path / "nowhere").exists()  # no dataset generated or read
    assert not list((tmp_path / "out").rglob("mlperf.log"))
    assert "THROUGHPUT:" in out.stdout


def test_the_benchmark_script_gives_each_variant_its_row_and_labels_master_weights(tmp_path):
    """scripts/lab/benchmark_gpu.py: one run per variant, the median and spread of its windows, the
    precision as the run recorded it, one JSON line per run, and a failed run as a failed row."""
    import subprocess
    import sys

    from tests.helpers import REPO

    out_md = tmp_path / "bench.md"
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "lab" / "benchmark_gpu.py"), "--models", "ncf", "--precisions", "bf16",
         "--gpus", "1", "--variants", "", "master_weights=true", "model.batch_size=0",
         "--set", "device=cpu", "warmup_steps=1", "throughput_steps=2", "throughput_repeats=2",
         "model.synthetic.n_users=3000", "model.synthetic.n_items=1000",
         "--root", str(tmp_path / "runs"), "--out", str(out_md)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 1  # the third variant cannot run
    rows = [json.loads(line) for line in out_md.with_suffix(".jsonl").read_text().splitlines()]
    assert [r["variant"] for r in rows] == ["", "master_weights=true", "model.batch_size=0"]
    assert [r.get("run_precision") for r in rows[:2]] == ["bf16", "bf16+master"]
    assert all(r["windows"] == 2 and r["min"] <= r["median"] <= r["max"] for r in rows[:2])
    assert "error" in rows[2]
    table = out_md.read_text()
    assert "| ncf | bf16+master | 1 |" in table and "failed:" in table


def test_the_ddp_overhead_script_sets_each_variant_beside_plain_steps_on_two_ranks(tmp_path):
    """scripts/lab/ddp_overhead.py under torchrun (2 gloo ranks): a row per variant with its cost over
    plain steps, every rank's step times, and the lockstep cost computed from them as documented."""
    import subprocess
    import sys

    from tests.helpers import REPO

    out_json = tmp_path / "ddp.json"
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         str(REPO / "scripts" / "lab" / "ddp_overhead.py"), "model=ncf", "device=cpu",
         "model.synthetic.n_users=3000", "model.synthetic.n_items=1000",
         "--variants", "plain", "ddp", "ddp-noop", "ddp:1", "--warmup", "1", "--steps", "3", "--repeats", "2",
         "--out", str(out_json)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out_json.read_text())
    assert report["world_size"] == 2
    rows = {r["variant"]: r for r in report["rows"]}
    assert list(rows) == ["plain", "ddp", "ddp-noop", "ddp:1"]
    assert rows["plain"]["over_plain_ms"] == 0
    for name, row in rows.items():
        assert row["min"] <= row["ms_per_step"] <= row["max"] and row["throughput_all_ranks"] > 0
        per_rank = [rank[name] for rank in report["step_ms_per_rank"]]
        assert [len(steps) for steps in per_rank] == [6, 6]  # 2 windows of 3 steps on each rank
        expected = statistics.fmean(max(pair) - statistics.fmean(pair) for pair in zip(*per_rank))
        assert row["lockstep_cost_ms"] == pytest.approx(expected)
    assert "| ddp-noop |" in proc.stdout


def test_the_plain_transformer_baseline_measures_source_and_target_tokens(tmp_path):
    """scripts/lab/transformer_baseline.py, the nn.Transformer that mode=throughput is compared with, at a
    CPU's tiny shapes: one JSON line with every window and their median, in source + target tokens/s."""
    import subprocess
    import sys

    from tests.helpers import REPO

    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "lab" / "transformer_baseline.py"), "--device", "cpu", "--precision",
         "fp32", "--batch", "4", "--src-len", "8", "--tgt-len", "6", "--d-model", "32", "--heads", "2", "--ffn", "64",
         "--layers", "1", "--vocab", "100", "--warmup", "1", "--steps", "2", "--repeats", "3"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    (line,) = proc.stdout.splitlines()
    row = json.loads(line)
    assert row["model"] == "nn.Transformer" and row["batch"] == "4 x (8 + 6) tokens"
    assert len(row["windows"]) == 3 and row["tokens_per_s"] == statistics.median(row["windows"]) > 0


def test_two_ranks_agree_on_windows_sized_from_the_measured_step(tmp_path):
    """warmup_s and throughput_window_s on two CPU ranks: the ranks take the same number of warm-up
    and window steps (a rank that stepped alone would hang DDP), and a window's samples are both ranks'."""
    out = run_cli("harness.train", "model=tputonly", "mode=throughput", "device=cpu", "gpus=2", "seed=1",
                  "model.sleep_s=0.02", "warmup_steps=1", "warmup_s=0.3", "throughput_window_s=0.2",
                  "throughput_repeats=2", "progress=false", "tensorboard=false", "telemetry=false", "output_root=out",
                  cwd=tmp_path, env={"HARNESS_MODELS": "tests.models.tputonly"}, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    (result_path,) = (tmp_path / "out").rglob("result.json")
    r = json.loads(result_path.read_text())
    assert r["status"] == "success" and r["warmup_steps"] >= 3 and r["throughput_steps"] >= 1
    assert [(e["steps"], e["samples"]) for e in r["epochs"]] == [(r["throughput_steps"], 2 * 32 * r["throughput_steps"])] * 2
