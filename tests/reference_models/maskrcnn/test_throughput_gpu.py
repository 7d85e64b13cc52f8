"""Mask R-CNN's throughput at MLPerf's batch per GPU on a GPU: 50 steps of the synthetic batch train
without a NaN, on the default path and the eager step (an untrained body frozen at identity batch-norm
statistics turned the classifier's loss NaN within 8-16 steps on an H200)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.helpers import run_cli


@pytest.mark.skipif(not torch.cuda.is_available(), reason="amp at 800x1216 and batch 8 needs a CUDA device")
@pytest.mark.parametrize("path", ["default", "eager"])
def test_fifty_steps_at_batch_8_train_without_a_nan(tmp_path, path):
    out = run_cli("harness.train", "model=maskrcnn", "dataset=maskrcnn_coco2017", "model.batch_size=8",
                  "mode=throughput", "warmup_steps=0", "throughput_steps=50", "throughput_repeats=1", "progress=false",
                  "tensorboard=false", f"output_root={tmp_path}", *(["eager=true"] if path == "eager" else []),
                  timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(next(Path(tmp_path).glob("runs/*/result.json")).read_text())
    assert result["status"] == "success" and result["epochs"][0]["steps"] == 50, result.get("reason")
    assert all(v is not None for v in (result["epochs"][0]["loss_terms"] or {}).values())
