"""scripts/tools/roi_align_probe.py: the gathered ROIAlign it times is torchvision's roi_align (aligned=False, a fixed
sampling ratio: the model's poolers), its pooled values and the level's gradient, on boxes inside, across and
outside the level's edges. The timings need a GPU (docs/benchmarks/pending_h200.md); without one the probe refuses
in one line."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
import torch
from torchvision.ops import roi_align

from tests.helpers import REPO

SCRIPT = REPO / "scripts" / "tools" / "roi_align_probe.py"
_spec = importlib.util.spec_from_file_location("roi_align_probe", SCRIPT)
probe = importlib.util.module_from_spec(_spec)
sys.modules["roi_align_probe"] = probe
_spec.loader.exec_module(probe)


@pytest.mark.parametrize("output, ratio, scale", [(7, 2, 0.25), (14, 2, 0.125), (5, 3, 1.0)])
def test_the_gathered_roi_align_pools_and_backpropagates_as_torchvisions(output, ratio, scale):
    g = torch.Generator().manual_seed(output)
    x = torch.randn(3, 6, 11, 17, generator=g, dtype=torch.float64).contiguous(memory_format=torch.channels_last)
    rois = probe.random_rois(40, 3, 11, 17, scale, g, torch.device("cpu")).double()
    # the edge cases by hand: a box past every edge, one outside the level, a box thinner than a pixel, one on the
    # last row and column, a degenerate point
    extra = torch.tensor([[0, -30.0, -30.0, 200.0, 200.0], [1, 300.0, 300.0, 400.0, 420.0], [2, 3.0, 4.0, 3.2, 4.1],
                          [0, 16 / scale, 10 / scale, 16.9 / scale, 10.9 / scale], [1, 5.0, 5.0, 5.0, 5.0]],
                         dtype=torch.float64)
    rois = torch.cat([rois, extra])
    mine_x, theirs_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    mine = probe.gathered_roi_align(mine_x, rois, output, scale, ratio)
    theirs = roi_align(theirs_x, rois, output, scale, ratio, aligned=False)
    assert mine.shape == theirs.shape == (45, 6, output, output)
    torch.testing.assert_close(mine, theirs, rtol=1e-10, atol=1e-10)
    assert mine[-4].abs().max() == 0  # the box outside the level pools nothing, as torchvision's
    grad = torch.randn(theirs.shape, generator=g, dtype=torch.float64)
    mine.backward(grad)
    theirs.backward(grad)
    torch.testing.assert_close(mine_x.grad, theirs_x.grad, rtol=1e-10, atol=1e-10)


def test_an_adaptive_sampling_ratio_is_refused_by_name():
    with pytest.raises(ValueError, match="sampling_ratio 0: the gathered ROIAlign takes a fixed ratio"):
        probe.gathered_roi_align(torch.zeros(1, 2, 4, 4), torch.zeros(1, 5), 2, 1.0, 0)


def test_without_a_gpu_the_probe_says_so_in_one_line(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the probe would time for real")
    done = subprocess.run([sys.executable, str(SCRIPT), "--rois", "8"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "error: the timings are a GPU's: run this on a GPU (gathered_roi_align itself runs anywhere)"]
