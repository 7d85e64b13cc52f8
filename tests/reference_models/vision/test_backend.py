"""model.decode's meaning on a device and auto's probe (reference_models/vision/backend.py) on the CPU."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from reference_models.resnet import data
from reference_models.resnet.generate import ImageSpec, write
from reference_models.vision.backend import probe_rates, resolve

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    spec = ImageSpec(classes=2, train_per_class=6, val_per_class=1, width=120, height=90, size_jitter=0.3)
    return write(spec, tmp_path_factory.mktemp("d") / "d", workers=1)



def test_auto_is_the_cpu_path_without_cuda_and_gpu_backends_need_cuda():
    assert resolve("auto", CPU) == "cpu"
    assert resolve("auto", CPU, probe=lambda: {"nvimgcodec": 1e9}) == "cpu"  # no probe without CUDA
    for name in ("cuda", "nvimgcodec"):
        with pytest.raises(ValueError, match=f"model.decode={name} needs a CUDA device"):
            resolve(name, CPU)
    with pytest.raises(ValueError, match="choose one of auto, cpu, cuda, nvimgcodec"):
        resolve("gpu", CPU)


def test_auto_on_a_gpu_takes_the_faster_of_the_probe(monkeypatch):
    gpu = torch.device("cuda", 0)
    assert resolve("auto", gpu, probe=lambda: {"cpu": 5000.0, "nvimgcodec": 9000.0}) == "nvimgcodec"
    assert resolve("auto", gpu, probe=lambda: {"cpu": 5000.0}) == "cpu"  # no decoder, no choice
    assert resolve("auto", gpu, probe=lambda: {"cpu": 20000.0, "nvimgcodec": 9000.0}) == "cpu"


def test_the_probe_times_the_cpu_path_and_skips_a_decoder_that_cannot_run(folder):
    train = data.load(folder).train
    cpu = data.DecodedImages(train, data.Crops(32, 37, train=True))
    rates = probe_rates(len(train), lambda i: train[i][0], cpu.__getitem__, CPU, 4, 32, probe=8)
    assert rates["cpu"] > 0 and "nvimgcodec" not in rates  # the CPU has no hardware decoder

