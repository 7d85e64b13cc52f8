"""The plain PyTorch baselines of scripts/lab/ at tiny shapes on the CPU: each prints one JSON line with
a median over its windows, as the GPU call reads them."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.e2e


def _run(script: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "lab" / script), *args], capture_output=True,
                          text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_plain_bert_trains_masked_lm_over_every_token_and_reports_sequences_per_second():
    out = _run("plain_bert.py", "--layers", "2", "--hidden", "64", "--heads", "2", "--seq", "32", "--batch", "4",
               "--vocab", "1000", "--device", "cpu", "--precision", "fp32", "--warmup", "1", "--steps", "2",
               "--repeats", "3")
    assert out["sequences_per_s"] == statistics.median(out["windows"]) and len(out["windows"]) == 3
    # embeddings, 2 encoder layers, the transform and the decoder bias (weights tied)
    layer = 4 * 64 * 64 + 4 * 64 + 2 * 64 * 256 + 256 + 64 + 4 * 64
    assert out["parameters"] == (1000 + 32 + 2) * 64 + 2 * 64 + 2 * layer + 64 * 64 + 64 + 2 * 64 + 1000


def test_plain_loop_runs_a_suite_models_own_batches_without_the_harness_loop():
    out = _run("plain_loop.py", "model=tacotron2", "+debug=tacotron2", "device=cpu", "--warmup", "1", "--steps", "2",
               "--repeats", "2")
    assert out["model"] == "tacotron2" and out["unit"] == "mel frames/s" and out["throughput"] > 0
    assert out["throughput"] == statistics.median(out["windows"])
