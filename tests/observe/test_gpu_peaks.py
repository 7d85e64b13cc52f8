"""The table of GPU peaks: device names as torch and NVML spell them, each precision's column."""
from __future__ import annotations

import pytest

from harness.observe.gpu_peaks import GPUS, gpu, peak


@pytest.mark.parametrize("name,row", [
    ("NVIDIA H200", "H200 SXM"), ("NVIDIA H200 NVL", "H200 NVL"), ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100 PCIe", "H100 PCIe"), ("NVIDIA H100 NVL", "H100 NVL"), ("NVIDIA A100-SXM4-80GB", "A100 SXM"),
    ("NVIDIA A100-PCIE-40GB", "A100 PCIe"), ("NVIDIA A100 80GB PCIe", "A100 PCIe"),
    ("Tesla V100-SXM2-16GB", "V100 SXM2"), ("Tesla V100-PCIE-32GB", "V100 PCIe"), ("Tesla V100S-PCIE-32GB", "V100S PCIe"),
    ("NVIDIA L40S", "L40S"), ("NVIDIA L4", "L4"), ("NVIDIA A10", "A10"), ("Tesla T4", "T4"), ("NVIDIA B200", "B200"),
])
def test_device_names_find_their_row(name, row):
    found = gpu(name)
    assert found is not None and found.gpu == row


@pytest.mark.parametrize("name", ["NVIDIA GH200 480GB", "NVIDIA A10G", "NVIDIA GeForce RTX 4090", "NVIDIA L40"])
def test_a_gpu_not_in_the_table_has_no_peak_and_says_so(name):
    assert gpu(name) is None
    assert peak(name, "amp") == (None, f"{name} is not in harness/observe/gpu_peaks.py's table of GPU peaks")


def test_each_precision_reads_its_own_dense_column():
    amp, _ = peak("NVIDIA H200", "amp")
    assert amp is not None and (amp.gpu, amp.column, amp.tflops) == ("H200 SXM", "fp16", 989.4)
    assert "datasheet" in amp.source
    assert [peak("NVIDIA H200", p)[0].tflops for p in ("fp32", "tf32", "bf16", "amp+graph")] == [66.9, 494.7, 989.4, 989.4]
    assert peak("Tesla V100-SXM2-16GB", "tf32")[0].tflops == 15.7  # no TF32 on Volta: tf32 runs fp32
    assert peak("Tesla T4", "bf16") == (None, "T4 has no bf16 Tensor Core peak")
    assert peak(None, "amp") == (None, "no GPU: MFU is a GPU's figure")


def test_every_row_is_dense_and_sourced():
    for row in GPUS:
        assert row.fp32 <= row.tf32 <= row.fp16 and row.source
        assert row.fp8 is None or row.fp8 == pytest.approx(2 * row.fp16, rel=0.02)
