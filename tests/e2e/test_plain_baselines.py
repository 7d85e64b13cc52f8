"""The plain PyTorch baselines of scripts/tools/ at tiny shapes on the CPU: each prints one JSON line with
a median over its windows, as the GPU call reads them (docs/tools.md)."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.e2e


def _run(script: str, *args: str, cwd=REPO) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "tools" / script), *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def _line(proc: subprocess.CompletedProcess) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_plain_bert_trains_masked_lm_over_every_token_and_reports_sequences_per_second():
    out = _line(_run("plain_bert.py", "--layers", "2", "--hidden", "64", "--heads", "2", "--seq", "32", "--batch", "4",
                     "--vocab", "1000", "--device", "cpu", "--precision", "fp32", "--warmup", "1", "--steps", "2",
                     "--repeats", "3"))
    assert out["sequences_per_s"] == statistics.median(out["windows"]) and len(out["windows"]) == 3
    # embeddings, 2 encoder layers, the transform and the decoder bias (weights tied)
    layer = 4 * 64 * 64 + 4 * 64 + 2 * 64 * 256 + 256 + 64 + 4 * 64
    assert out["parameters"] == (1000 + 32 + 2) * 64 + 2 * 64 + 2 * layer + 64 * 64 + 64 + 2 * 64 + 1000


def test_plain_loop_runs_a_suite_models_own_batches_without_the_harness_loop():
    out = _line(_run("plain_loop.py", "model=tacotron2", "+debug=tacotron2", "device=cpu", "--warmup", "1", "--steps",
                     "2", "--repeats", "2"))
    assert out["model"] == "tacotron2" and out["unit"] == "mel frames/s" and out["throughput"] > 0
    assert out["throughput"] == statistics.median(out["windows"])


def test_the_plain_resnet_baseline_reports_its_windows(tmp_path):
    proc = _run("resnet_baseline.py", "--device", "cpu", "--batch", "2", "--image-size", "64", "--precision", "fp32",
                "--warmup", "1", "--steps", "1", "--repeats", "2", "--json", "base.json", cwd=tmp_path)
    result = json.loads((tmp_path / "base.json").read_text())
    assert len(result["windows"]) == 2 and result["median"] > 0 and result["channels_last"]
    assert "plain torchvision resnet50 on CPU" in proc.stdout


def test_the_plain_transformer_baseline_measures_source_and_target_tokens(tmp_path):
    """The nn.Transformer that mode=throughput is compared with: every window and their median, in source +
    target tokens/s."""
    proc = _run("transformer_baseline.py", "--device", "cpu", "--precision", "fp32", "--batch", "4", "--src-len", "8",
                "--tgt-len", "6", "--d-model", "32", "--heads", "2", "--ffn", "64", "--layers", "1", "--vocab", "100",
                "--warmup", "1", "--steps", "2", "--repeats", "3", cwd=tmp_path)
    (line,) = proc.stdout.splitlines()
    row = json.loads(line)
    assert row["model"] == "nn.Transformer" and row["batch"] == "4 x (8 + 6) tokens"
    assert len(row["windows"]) == 3 and row["tokens_per_s"] == statistics.median(row["windows"]) > 0


@pytest.mark.parametrize("model", ["maskrcnn", "ssd300"])
def test_the_torchvision_detection_baselines_run_on_cpu_at_tiny_shapes(model, tmp_path):
    line = _line(_run("detection_baseline.py", model, "--device", "cpu", "--batch", "1", "--height", "64", "--width",
                      "96", "--warmup", "1", "--steps", "1", "--repeats", "1", cwd=tmp_path))
    assert line["model"] == f"torchvision {model}" and line["images_per_s"] > 0
