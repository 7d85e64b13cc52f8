"""Each GPU's dense peak TFLOP/s per precision, with where each figure comes from: the denominator of
MFU (model FLOPs utilisation, harness/run/flops.py).

The figures are NVIDIA's datasheet figures for one GPU, dense: a datasheet that prints Tensor Core
figures "with sparsity" (Ampere on) has them halved here. fp32 is the CUDA cores' IEEE fp32 peak (what
precision=fp32 runs: TF32 off); tf32 the TF32 Tensor Core peak; fp16/bf16 the 16-bit Tensor Core peak with
fp32 accumulation (what amp and bf16 autocast run); fp8 where the GPU has FP8 Tensor Cores. A GPU
without TF32 (V100, T4) runs precision=tf32 as fp32, so its tf32 entry is its fp32 peak; a precision a GPU
lacks (T4's bf16, fp8 before Ada) has none, and so no MFU. A name not in the table (a CPU, another GPU)
has no peak: its runs report FLOPs and TFLOP/s without MFU, and say why.

    python -c "from harness.observe.gpu_peaks import peak; print(peak('NVIDIA H200', 'amp'))"
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from harness.results.read.summary import split_label


@dataclass(frozen=True)
class GpuPeaks:
    gpu: str  # the name the table gives it
    pattern: str  # matched, case-insensitive, against torch.cuda.get_device_name / NVML's name
    fp32: float
    tf32: float
    fp16: float  # fp16 and bf16 alike, except where bf16 is None
    fp8: Optional[float]
    source: str
    bf16: bool = True


# In matching order: the more specific name first (H200 NVL before H200, A100 PCIe before A100).
GPUS: tuple[GpuPeaks, ...] = (
    GpuPeaks("H200 NVL", r"\bh200 nvl\b", 60.0, 417.5, 835.5, 1670.5, "NVIDIA H200 NVL datasheet (H200 Tensor Core GPU "
             "datasheet, NVL column; tensor figures printed with sparsity, halved)"),
    GpuPeaks("H200 SXM", r"\bh200\b", 66.9, 494.7, 989.4, 1978.9, "NVIDIA H200 Tensor Core GPU datasheet, SXM column "
             "(tensor figures printed with sparsity, halved)"),
    GpuPeaks("H100 NVL", r"\bh100 nvl\b", 60.0, 417.5, 835.5, 1670.5, "NVIDIA H100 Tensor Core GPU datasheet, NVL column "
             "(tensor figures printed with sparsity, halved)"),
    GpuPeaks("H100 PCIe", r"\bh100\b.*\bpcie\b", 51.2, 378.0, 756.5, 1513.0, "NVIDIA H100 Tensor Core GPU datasheet, "
             "PCIe column (tensor figures printed with sparsity, halved)"),
    GpuPeaks("H100 SXM", r"\bh100\b", 66.9, 494.7, 989.4, 1978.9, "NVIDIA H100 Tensor Core GPU datasheet, SXM column "
             "(tensor figures printed with sparsity, halved)"),
    GpuPeaks("A100 PCIe", r"\ba100\b.*\bpcie\b", 19.5, 156.0, 312.0, None, "NVIDIA A100 Tensor Core GPU datasheet, "
             "PCIe columns (dense figures)"),
    GpuPeaks("A100 SXM", r"\ba100\b", 19.5, 156.0, 312.0, None, "NVIDIA A100 Tensor Core GPU datasheet, SXM columns "
             "(dense figures)"),
    GpuPeaks("V100S PCIe", r"\bv100s\b", 16.4, 16.4, 130.0, None, "NVIDIA V100S datasheet (no TF32: tf32 runs fp32)"),
    GpuPeaks("V100 PCIe", r"\bv100\b.*\bpcie\b", 14.0, 14.0, 112.0, None, "NVIDIA Tesla V100 datasheet, PCIe column "
             "(no TF32: tf32 runs fp32)"),
    GpuPeaks("V100 SXM2", r"\bv100\b", 15.7, 15.7, 125.0, None, "NVIDIA Tesla V100 datasheet, SXM2 column (no TF32: "
             "tf32 runs fp32)"),
    GpuPeaks("B200", r"\bb200\b", 75.0, 1100.0, 2250.0, 4500.0, "NVIDIA HGX B200 datasheet, per GPU (tensor figures "
             "printed with sparsity, halved)"),
    GpuPeaks("L40S", r"\bl40s\b", 91.6, 183.0, 362.05, 733.0, "NVIDIA L40S datasheet (tensor figures printed with "
             "sparsity, halved)"),
    GpuPeaks("L4", r"\bl4\b", 30.3, 60.0, 121.0, 242.5, "NVIDIA L4 Tensor Core GPU datasheet (tensor figures printed "
             "with sparsity, halved)"),
    GpuPeaks("A10", r"\ba10\b", 31.2, 62.5, 125.0, None, "NVIDIA A10 Tensor Core GPU datasheet (tensor figures printed "
             "with sparsity, halved)"),
    GpuPeaks("T4", r"\bt4\b", 8.1, 8.1, 65.0, None, "NVIDIA T4 Tensor Core GPU datasheet (fp16 mixed precision; no "
             "TF32: tf32 runs fp32; no bf16 Tensor Cores)", bf16=False),
)


@dataclass(frozen=True)
class Peak:
    """One GPU's dense peak for one precision."""

    gpu: str
    column: str  # "fp32", "tf32", "fp16", "bf16", "fp8"
    tflops: float
    source: str


# a run's base precision -> the column of the table its matmuls run at
COLUMNS = {"fp32": "fp32", "tf32": "tf32", "amp": "fp16", "bf16": "bf16", "fp8": "fp8"}


def gpu(name: str) -> Optional[GpuPeaks]:
    """The table's row for a device name ("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB"), or None."""
    text = re.sub(r"[-_]", " ", name.lower())
    return next((g for g in GPUS if re.search(g.pattern, text)), None)


def peak(name: Optional[str], precision: str) -> tuple[Optional[Peak], str]:
    """(the dense peak of GPU `name` at a run's base precision, "") or (None, why there is none)."""
    if not name or name.upper() == "CPU":
        return None, "no GPU: MFU is a GPU's figure"
    row = gpu(name)
    if row is None:
        return None, f"{name} is not in harness/observe/gpu_peaks.py's table of GPU peaks"
    base = split_label(precision)[0].split("+")
    # fp8=true: its linear layers' matmuls, most of a step's FLOPs, run at the fp8 peak, so MFU is over that
    column = COLUMNS["fp8"] if "fp8" in base[1:] else COLUMNS.get(base[0])
    if column is None:
        return None, f"precision {precision} has no peak column"
    tflops = {"fp32": row.fp32, "tf32": row.tf32, "fp16": row.fp16, "bf16": row.fp16 if row.bf16 else None,
              "fp8": row.fp8}[column]
    if tflops is None:
        return None, f"{row.gpu} has no {column} Tensor Core peak"
    return Peak(row.gpu, column, tflops, row.source), ""
