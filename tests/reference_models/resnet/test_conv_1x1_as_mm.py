"""model.conv_1x1_as_mm: the compiled forward pass computes ResNet's 1x1 stride-1 convolutions as matrix products
and gives the network's outputs unchanged; the mode chosen still applies beside it; the runs that compile take it."""
from __future__ import annotations

import shutil

import pytest
import torch

from harness.config import compose
from harness.interface import compile_kwargs
from reference_models.resnet.model import build


def test_the_mode_s_own_settings_go_in_beside_the_inductor_setting():
    assert compile_kwargs("reduce-overhead", None) == {"mode": "reduce-overhead"}
    assert compile_kwargs("reduce-overhead", {"conv_1x1_as_mm": True}) == \
        {"options": {"triton.cudagraphs": True, "conv_1x1_as_mm": True}}
    assert compile_kwargs("default", {"conv_1x1_as_mm": True}) == {"options": {"conv_1x1_as_mm": True}}


@pytest.mark.skipif(not (shutil.which("c++") or shutil.which("g++")), reason="Inductor's CPU code needs a C++ compiler")
def test_compiled_the_1x1_convolutions_become_matrix_products_with_the_same_outputs():
    from torch._inductor.utils import run_and_get_code

    torch.manual_seed(0)
    # one bottleneck a stage: the stem, 4 x (1x1, 3x3, 1x1) and 4 downsampling 1x1s, the first of stride 1
    model = build([1, 1, 1, 1], 4, 10, False).eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        eager = model(x)
        convolutions = {}
        for setting in (None, {"conv_1x1_as_mm": True}):
            torch._dynamo.reset()
            out, code = run_and_get_code(torch.compile(model, **compile_kwargs("default", setting)), x)
            torch.testing.assert_close(out, eager, rtol=1e-4, atol=1e-5)
            convolutions[bool(setting)] = sum(c.count("extern_kernels.convolution") for c in code)
    # 17 convolutions; as matrix products the 8 stride-1 1x1s of the blocks and the first downsampling 1x1
    assert convolutions == {False: 17, True: 8}


def test_on_cuda_the_runs_that_compile_take_it_to_the_compiler():
    from harness import registry
    from harness.fastpath import resolve

    registry.publish()
    for argv, compiled in ((["model=resnet", "mode=throughput", "model.conv_1x1_as_mm=true"], True),
                           (["model=resnet", "model.conv_1x1_as_mm=true"], True),  # mode=train compiles too
                           (["model=resnet", "eager=true", "model.conv_1x1_as_mm=true"], False)):
        cfg = compose(argv)
        resolve(cfg, True, argv)
        assert (cfg.model.conv_1x1_as_mm, cfg.model.compile) == (True, compiled), argv
