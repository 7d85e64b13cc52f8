"""The ResNet GPU measurement scripts, run on the CPU at tiny shapes: the plain torchvision baseline
(scripts/lab/resnet_baseline.py) and the input-pipeline comparison (scripts/lab/resnet_pipeline.py)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from reference_models.resnet.generate import ImageSpec, write
from tests.helpers import REPO

pytestmark = pytest.mark.e2e


def _script(name: str, *args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "lab" / name), *args], capture_output=True,
                          text=True, timeout=600, cwd=cwd)


def test_the_plain_baseline_reports_its_windows(tmp_path):
    out = _script("resnet_baseline.py", "--device", "cpu", "--batch", "2", "--image-size", "64", "--precision", "fp32",
                  "--warmup", "1", "--steps", "1", "--repeats", "2", "--json", "base.json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads((tmp_path / "base.json").read_text())
    assert len(result["windows"]) == 2 and result["median"] > 0 and result["channels_last"]
    assert "plain torchvision resnet50 on CPU" in out.stdout


@pytest.mark.parametrize("decode", ["cpu"])  # decode=cuda needs a GPU: the same script on the device
def test_the_pipeline_script_sets_jpegs_beside_a_held_batch(tmp_path, decode):
    folder = write(ImageSpec(classes=2, train_per_class=12, val_per_class=1), tmp_path / "d", workers=1)
    out = _script("resnet_pipeline.py", "model=resnet", "dataset=imagenet", f"dataset.path={folder}", "device=cpu",
                  "model.layers=[1,1,1,1]", "model.width=8", "model.image_size=32", "model.resize_size=36",
                  "model.batch_size=4", "model.workers=1", f"model.decode={decode}", "--warmup", "1", "--steps", "5",
                  "--skip", "1", "--json", "pipe.json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads((tmp_path / "pipe.json").read_text())
    assert all(result[k] > 0 for k in ("loader", "real", "synthetic"))
    assert result["real_over_synthetic"] == pytest.approx(result["real"] / result["synthetic"])
    assert result["epoch_start_s"]["real"] >= 0 and result["verdict"]
