"""mode=throughput: synthetic batches, no dataset, no MLPerf log; repeated windows and their median."""
from __future__ import annotations

import json
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
    # FLOPs counted through the contract for every model (GNMT's LSTMs too); a CPU has no MFU, and says why
    assert result["model_flops_per_sample"] > 0 and result["achieved_tflops"] > 0
    assert result["mfu"] is None and result["mfu_note"] == "no GPU: MFU is a GPU's figure"
    assert "FLOP a sample" in out.stdout and "MFU n/a (no GPU" in out.stdout


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
