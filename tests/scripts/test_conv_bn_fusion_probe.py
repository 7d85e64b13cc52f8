"""scripts/tools/conv_bn_fusion_probe.py: the convolutions it probes are ResNet-50's own, and its projection
adds only the fused cells that ran and agreed with the compiled ones. The timings themselves need a GPU
(docs/benchmarks/pending_h200.md); what a user without one gets is the list and a one-line refusal."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from reference_models.resnet.model import RESNET50_LAYERS, build
from tests.helpers import REPO

SCRIPT = REPO / "scripts" / "tools" / "conv_bn_fusion_probe.py"
_spec = importlib.util.spec_from_file_location("conv_bn_fusion_probe", SCRIPT)
probe = importlib.util.module_from_spec(_spec)
sys.modules["conv_bn_fusion_probe"] = probe
_spec.loader.exec_module(probe)


def test_the_probed_convolutions_are_resnet50s_with_its_multiply_adds():
    convs = probe.resnet50_convs(2)
    assert len(convs) == 53
    macs = 0
    for c in convs:
        out = (c.h + 2 * c.padding - c.r) // c.stride + 1
        macs += c.n * c.k * c.c * c.r * c.r * out * out
    model = build(RESNET50_LAYERS, 64, 1000).to("meta")
    with FlopCounterMode(display=False) as counter:
        model(torch.empty(2, 3, 224, 224, device="meta"))
    assert 2 * macs == counter.get_flop_counts()["Global"][torch.ops.aten.convolution]
    # a Bottleneck's conv2 and conv3 read bn1's and bn2's ReLU: 16 blocks, two each; the stem's input is the image
    assert sum(c.prologue for c in convs) == 32 and not convs[0].prologue and convs[0].c == 3


def test_the_projection_counts_each_shape_as_often_as_it_occurs_and_leaves_out_cells_that_failed_or_disagreed():
    rows = [
        {"count": 3, "fwd_compiled_ms": 1.0, "fwd_cudnn_ms": 0.6, "fwd_agrees": True,
         "wgrad_compiled_ms": 2.0, "wgrad_cudnn_ms": 1.5, "wgrad_agrees": True,
         "dgrad_compiled_ms": 2.0, "dgrad_cudnn": "cudnnGraphNotSupportedError: no engine"},
        {"count": 2, "fwd_compiled_ms": 1.0, "fwd_cudnn_ms": 0.1, "fwd_agrees": False},
    ]
    out = probe.summary(rows, step_ms=10.0)
    assert out["saved_ms_a_step"] == pytest.approx({"fwd": 1.2, "wgrad": 1.5, "total": 2.7})
    assert out["step_ms_left"] == pytest.approx(7.3) and out["speedup"] == pytest.approx(10 / 7.3)
    assert "speedup" not in probe.summary(rows, step_ms=None)


def test_the_list_runs_anywhere_and_the_timings_without_a_gpu_are_one_line_and_exit_2(tmp_path):
    listed = subprocess.run([sys.executable, str(SCRIPT), "--list", "--batch", "8"], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.rstrip().endswith("53 convolutions, 24 shapes") and "'n': 8" in listed.stdout
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the probe would time it")
    refused = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "GPU" in refused.stderr
