"""ResNet's stem max-pool (3x3, stride 2, padding 1) as two torch ops that keep each maximum's tap in the window
as one byte, for model.stem_pool=triton: on CUDA the forward and backward are stem_pool_kernels.py's Triton
kernels, elsewhere torch's own max-pool (so a CPU run's numbers are nn.MaxPool2d's exactly).

    python -m harness.train model=resnet dataset=imagenet mode=throughput model.batch_size=256 model.stem_pool=triton

torch.library.custom_op, not an autograd.Function inside the compiled network: to torch.compile an op is opaque,
so Inductor keeps the taps the forward saved instead of recomputing the pool in the backward, and its CUDA graph
captures the two kernels as they are.
"""
from __future__ import annotations

import torch
from torch import nn

from harness.errors import ConfigError

__all__ = ["StemMaxPool", "stem_pool", "triton_stem_pool"]


def _pooled(size: int) -> int:
    return (size - 1) // 2 + 1


def _layout(x: torch.Tensor) -> torch.memory_format:
    """NHWC where x is NHWC and not also plainly contiguous (one channel or 1 x 1 images are both)."""
    if not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last):
        return torch.channels_last
    return torch.contiguous_format


def _origins(rows: int, cols: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Each window's top row (rows x 1) and left column (cols) in the unpadded input: its taps' reference."""
    return (torch.arange(rows, device=device).view(-1, 1) * 2 - 1, torch.arange(cols, device=device) * 2 - 1)


def _check(x: torch.Tensor) -> None:
    if x.dim() != 4:
        raise ValueError(f"stem pool: an N x C x H x W batch, got {x.dim()} dimensions")


@torch.library.custom_op("mlperf_resnet::stem_pool", mutates_args=())
def stem_pool(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """max_pool2d(x, 3, 2, 1) and, beside each maximum, its tap in the window (int8, 0..8 row-major)."""
    _check(x)
    fmt = _layout(x)
    x = x.contiguous(memory_format=fmt)
    if x.is_cuda:
        from reference_models.resnet.stem_pool_kernels import pool_forward  # imports Triton: CUDA alone

        N, C, H, W = x.shape
        y = torch.empty(N, C, _pooled(H), _pooled(W), device=x.device, dtype=x.dtype, memory_format=fmt)
        taps = torch.empty_like(y, dtype=torch.int8)
        pool_forward(x, y, taps)
        return y, taps
    y, index = torch.ops.aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])
    W = x.shape[3]
    top, left = _origins(y.shape[2], y.shape[3], x.device)
    taps = ((index // W - top) * 3 + (index % W - left)).to(torch.int8)
    return y.contiguous(memory_format=fmt), taps.contiguous(memory_format=fmt)


@stem_pool.register_fake
def _(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    _check(x)
    N, C, H, W = x.shape
    y = torch.empty(N, C, _pooled(H), _pooled(W), dtype=x.dtype, device=x.device, memory_format=_layout(x))
    return y, torch.empty_like(y, dtype=torch.int8)


@torch.library.custom_op("mlperf_resnet::stem_pool_backward", mutates_args=())
def stem_pool_backward(grad: torch.Tensor, taps: torch.Tensor, height: int, width: int,
                       channels_last: bool) -> torch.Tensor:
    """The gradient of stem_pool's input (height x width) from its output's gradient and its taps."""
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    N, C = grad.shape[:2]
    if grad.is_cuda:
        from reference_models.resnet.stem_pool_kernels import pool_backward

        dx = torch.empty(N, C, height, width, device=grad.device, dtype=grad.dtype, memory_format=fmt)
        pool_backward(grad, taps, dx)
        return dx
    top, left = _origins(grad.shape[2], grad.shape[3], grad.device)
    taps = taps.long()
    index = (top + taps // 3) * width + left + taps % 3
    shape = torch.empty(N, C, height, width, dtype=grad.dtype, memory_format=fmt)  # read for its size and layout only
    dx = torch.ops.aten.max_pool2d_with_indices_backward(grad, shape, [3, 3], [2, 2], [1, 1], [1, 1], False, index)
    return dx.contiguous(memory_format=fmt)


@stem_pool_backward.register_fake
def _(grad: torch.Tensor, taps: torch.Tensor, height: int, width: int, channels_last: bool) -> torch.Tensor:
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    return torch.empty(grad.shape[0], grad.shape[1], height, width, dtype=grad.dtype, device=grad.device,
                       memory_format=fmt)


def _setup_context(ctx, inputs, output) -> None:  # type: ignore[no-untyped-def]
    (x,), (_, taps) = inputs, output
    ctx.save_for_backward(taps)
    ctx.size = (x.shape[2], x.shape[3], _layout(x) == torch.channels_last)
    ctx.mark_non_differentiable(taps)


def _backward(ctx, grad: torch.Tensor, _taps_grad: object) -> torch.Tensor:  # type: ignore[no-untyped-def]
    (taps,) = ctx.saved_tensors
    return stem_pool_backward(grad, taps, *ctx.size)


stem_pool.register_autograd(_backward, setup_context=_setup_context)


class StemMaxPool(nn.Module):
    """nn.MaxPool2d(3, 2, 1) through stem_pool: the module that takes the place of ResNet's `maxpool`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return stem_pool(x)[0]


def triton_stem_pool(device: torch.device) -> StemMaxPool:
    """The pool of model.stem_pool=triton for a network on `device`; refused before anything runs where CUDA
    would need Triton and this torch has none."""
    if device.type == "cuda":
        try:
            import reference_models.resnet.stem_pool_kernels  # noqa: F401  (imports Triton)
        except ImportError as err:
            raise ConfigError(f"model.stem_pool=triton runs Triton kernels on CUDA, and this torch has no Triton "
                              f"({err}): leave it out (the default, native, needs none)") from None
    return StemMaxPool()
