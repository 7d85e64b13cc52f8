"""A system family (harness.results.analysis.lineage): one submitter, one system line (the system's name without its
scale), one accelerator model, one framework. Names as the published v3.1 round writes them."""
from __future__ import annotations

import pytest

from harness.results.analysis.lineage import system_line


@pytest.mark.parametrize("names", [
    ("eos_ngc23.09_pytorch", "eos_n8_ngc23.09_pytorch", "eos_n434_ngc23.09_pytorch"),
    ("dgxa100_ngc20.06_pytorch", "dgxa100_n2_ngc20.06_pytorch"),
    ("HLS-Gaudi2-PT", "HLS-Gaudi2-N8-PT", "HLS-Gaudi2-N48-PT"),
    ("XE9680x8H100-SXM-80GB", "2xXE9680x8H100-SXM-80GB"),
    ("8xR750-2xA100-PCIe-80GB", "16xR750-2xA100-PCIe-80GB"),
    ("primergy-cdi-A100x2-mxnet-ngc23.09", "primergy-cdi-A100x10-mxnet-ngc23.09"),
    ("4-nodes-SPR-pytorch", "16-nodes-SPR-pytorch"),
    ("G5500V7x8xL40", "G5500V7x10xL40"),
])
def test_one_system_at_several_scales_is_one_line(names):
    assert len({system_line(n) for n in names}) == 1, [system_line(n) for n in names]


@pytest.mark.parametrize("a,b", [
    ("dgx1_ngc19.05_pytorch", "dgx2h_n16_ngc19.05_pytorch"),  # DGX-1 and DGX-2H: the 1 is no count
    ("eos_n64_ngc23.04_pytorch", "eos_n8_ngc23.09_pytorch"),  # another software release
    ("XE8640x4H100-SXM-80GB", "XE9680x8H100-SXM-80GB"),  # another server
    ("SR675v3-4xH100_SXM5_96GB_700W", "SR675v3-8xH100_PCIe_80GB_350W"),
])
def test_other_systems_are_other_lines(a, b):
    assert system_line(a) != system_line(b)


@pytest.mark.parametrize("names", [
    ("tpu-v4-128-TF", "tpu-v4-4096-TF", "tpu-v4-6912-TF"),
    ("cloud-tpu-v5p-16-maxdiffusion", "cloud-tpu-v5p-128-maxdiffusion", "cloud-tpu-v5p-2048-maxdiffusion"),
    ("cloud-tpu-trillium-512-maxtext", "cloud-tpu-trillium-3072-maxtext"),
    ("ipu-pod16-POPART-closed", "ipu-pod64-POPART-closed"),  # Graphcore, v1.0
    ("CloudBrainII_256_mindspore_close", "CloudBrainII_1024_mindspore_close"),  # PCL, v1.0: a bare count
])
def test_a_tpu_slice_at_several_sizes_is_one_line(names):
    # Google names a system by its slice: the count after the TPU's generation is its scale
    assert len({system_line(n) for n in names}) == 1, [system_line(n) for n in names]


def test_tpu_generations_and_software_are_other_lines():
    lines = {system_line(n) for n in ("tpu-v4-128-TF", "tpu-v4-128-JAX", "cloud-tpu-v5p-128-maxtext",
                                      "cloud-tpu-v5e-128-maxtext")}
    assert len(lines) == 4
