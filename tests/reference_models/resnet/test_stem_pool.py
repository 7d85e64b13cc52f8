"""model.stem_pool=triton (reference_models/resnet/stem_pool.py): the stem's max-pool gives nn.MaxPool2d's values and
gradients, on the CPU through torch's own pool and on CUDA through the Triton kernels, which run here on Triton's
interpreter in a child process (it reads TRITON_INTERPRET when Triton is first imported); where a GPU is, the
child runs them compiled on it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from harness.errors import ConfigError
from reference_models.resnet.model import build
from reference_models.resnet.stem_pool import StemMaxPool, stem_pool, triton_stem_pool

# (N, C, H, W): even and odd sides, a 1 x 1 image, channels past one block of 64, one channel
SHAPES = [(2, 3, 8, 8), (2, 5, 7, 9), (1, 4, 1, 1), (3, 70, 6, 5), (2, 1, 5, 4)]


def relu_input(shape, dtype=torch.float64, seed=0):
    """ReLU's output with one decimal: windows of zeros and equal maxima, where the first maximum must win."""
    g = torch.Generator().manual_seed(seed)
    return torch.relu(torch.randn(*shape, generator=g, dtype=torch.float64)).round(decimals=1).to(dtype)


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_the_pool_gives_max_pool2d_s_values_and_gradients_exactly_in_the_input_s_layout(shape, channels_last):
    x = relu_input(shape)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
    y, expected = StemMaxPool()(ours), F.max_pool2d(theirs, 3, 2, 1)
    grad = torch.randn(expected.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    y.backward(grad)
    expected.backward(grad)
    assert torch.equal(y, expected) and torch.equal(ours.grad, theirs.grad)
    if shape[2] * shape[3] > 1 and shape[1] > 1:  # else both layouts are one
        assert y.is_contiguous(memory_format=torch.channels_last) == channels_last
        assert ours.grad.is_contiguous(memory_format=torch.channels_last) == channels_last
    taps = stem_pool(x)[1]
    assert taps.dtype == torch.int8 and taps.shape == y.shape and 0 <= int(taps.min()) <= int(taps.max()) <= 8


def test_a_network_with_the_pool_trains_as_with_torch_s_on_the_cpu():
    """The option's swap in the model: the same loss and every parameter's gradient, bit for bit."""
    torch.manual_seed(0)
    native = build([1, 1, 1, 1], 8, 10)
    ours = build([1, 1, 1, 1], 8, 10)
    ours.load_state_dict(native.state_dict())
    ours.maxpool = triton_stem_pool(torch.device("cpu"))
    images, labels = torch.randn(4, 3, 32, 32), torch.tensor([0, 3, 5, 9])
    losses = []
    for net in (native, ours):
        loss = F.cross_entropy(net(images), labels)
        loss.backward()
        losses.append(loss.item())
    assert losses[0] == losses[1]
    for a, b in zip(native.parameters(), ours.parameters()):
        assert torch.equal(a.grad, b.grad)


@pytest.mark.timeout(120)
def test_the_compiled_stem_keeps_the_pool_s_values_and_gradients():
    """torch.compile sees two opaque ops (their fake kernels give the shapes and layouts): a compiled convolution,
    ReLU and pool give the eager ones' values and gradients with torch's pool."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 8, 3, padding=1).to(memory_format=torch.channels_last)
    x = torch.randn(2, 3, 12, 10).contiguous(memory_format=torch.channels_last)
    outputs = []
    for pool, compiled in ((torch.nn.MaxPool2d(3, 2, 1), False), (StemMaxPool(), True)):
        net = torch.nn.Sequential(conv, torch.nn.ReLU(), pool)
        conv.zero_grad()
        y = (torch.compile(net) if compiled else net)(x)
        y.square().sum().backward()
        outputs.append((y.detach(), [p.grad.clone() for p in conv.parameters()]))
    (y0, g0), (y1, g1) = outputs
    assert y1.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(y1, y0)
    for a, b in zip(g1, g0):
        torch.testing.assert_close(a, b)


def test_cuda_without_triton_is_refused_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "triton", None)
    monkeypatch.setitem(sys.modules, "reference_models.resnet.stem_pool_kernels", None)
    with pytest.raises(ConfigError, match="model.stem_pool=triton runs Triton kernels on CUDA, and this torch has no "
                                          "Triton .*leave it out"):
        triton_stem_pool(torch.device("cuda"))


CHILD = r"""
import json, sys
import torch
import torch.nn.functional as F
from reference_models.resnet.stem_pool_kernels import pool_backward, pool_forward
from tests.reference_models.resnet.test_stem_pool import SHAPES, relu_input

dev = torch.device(sys.argv[1])
worst = {}
cases = [(s, cl, dt) for s in SHAPES for cl in (False, True) for dt in (torch.float32, torch.float16)]
for shape, channels_last, dtype in cases:
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    x = relu_input(shape, dtype).contiguous(memory_format=fmt)  # fp16's own values: fp32 holds them exactly
    ref = x.float().requires_grad_()
    expected, index = F.max_pool2d(ref, 3, 2, 1, return_indices=True)
    grad = torch.randn(expected.shape, generator=torch.Generator().manual_seed(2)).to(dtype)
    expected.backward(grad.float())
    x, grad = x.to(dev, dtype), grad.to(dev).contiguous(memory_format=fmt)
    y = torch.empty(expected.shape, device=dev, dtype=dtype).contiguous(memory_format=fmt)
    taps = torch.empty_like(y, dtype=torch.int8)
    pool_forward(x, y, taps)
    dx = torch.empty_like(x)
    pool_backward(grad, taps, dx)
    W = shape[3]
    top, left = torch.arange(expected.shape[2]).view(-1, 1) * 2 - 1, torch.arange(expected.shape[3]) * 2 - 1
    key = f"{dtype}".split(".")[1]
    worst[key + " taps"] = max(worst.get(key + " taps", 0), int((taps.cpu().long() - ((index // W - top) * 3 + index % W - left)).abs().max()))
    worst[key + " values"] = max(worst.get(key + " values", 0.0), float((y.cpu().float() - expected.detach()).abs().max()))
    err = float((dx.cpu().float() - ref.grad).abs().max() / ref.grad.abs().max())
    worst[key + " grads"] = max(worst.get(key + " grads", 0.0), err)
    worst["layout"] = worst.get("layout", True) and dx.stride() == x.stride() and y.stride() == taps.stride()
# a window of -inf (the first tap inside the image is kept) and NaNs (taken wherever they are), as torch's pool
x = torch.randn(1, 2, 6, 6)
x[0, 0, :3, :3] = float("-inf")
x[0, 1, 2, 2] = x[0, 1, 3, 4] = float("nan")
expected, index = F.max_pool2d(x, 3, 2, 1, return_indices=True)
y = torch.empty(expected.shape, device=dev)
taps = torch.empty_like(y, dtype=torch.int8)
pool_forward(x.to(dev), y, taps)
top, left = torch.arange(3).view(-1, 1) * 2 - 1, torch.arange(3) * 2 - 1
worst["special taps"] = int((taps.cpu().long() - ((index // 6 - top) * 3 + index % 6 - left)).abs().max())
worst["special values"] = bool(torch.equal(y.cpu().isnan(), expected.isnan()) and
                               torch.equal(y.cpu().nan_to_num(), expected.nan_to_num()))
print(json.dumps(worst))
"""


@pytest.mark.timeout(120)
def test_the_triton_kernels_give_torch_s_pool():
    """Values and taps exactly (fp32 and fp16: a maximum is one of the inputs); the gradient exactly in fp32 (at
    most four terms, summed in torch's order) and to fp16's rounding; the input's layout kept; -inf and NaN."""
    pytest.importorskip("triton")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    env = {**os.environ, **({"TRITON_INTERPRET": "1"} if device == "cpu" else {})}
    done = subprocess.run([sys.executable, "-c", CHILD, device], env=env, capture_output=True, text=True,
                          timeout=110, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    worst = __import__("json").loads(done.stdout.strip().splitlines()[-1])
    assert worst["float32 taps"] == worst["float16 taps"] == worst["special taps"] == 0, worst
    assert worst["float32 values"] == worst["float16 values"] == 0.0, worst
    assert worst["float32 grads"] == 0.0 and worst["float16 grads"] < 1e-3, worst
    assert worst["layout"] and worst["special values"], worst
