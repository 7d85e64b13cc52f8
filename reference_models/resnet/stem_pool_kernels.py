"""The Triton kernels of ResNet's stem max-pool (3x3, stride 2, padding 1) for model.stem_pool=triton
(stem_pool.py registers them as torch ops; this module imports Triton, so only CUDA runs import it).

    python scripts/tools/stem_pool_bench.py        # on a GPU: these kernels beside torch's, at b256 NHWC fp16

The forward writes, beside each maximum, its tap in the window (0..8, row-major) as one byte. The backward
walks the input: with stride 2 and padding 1, row h lies in window (h + 1) // 2 at tap row (h + 1) % 2, and,
where that tap row is 0, also in the window above at tap row 2; columns the same. So each input element reads
at most four (tap byte, gradient) pairs, found by arithmetic on its row and column, and writes its gradient
once: no scatter, no zeroed buffer. Inductor's own backward for this pool (torch 2.11) computes the candidate
windows' indices with clamped integer expressions for every element and took 1.44 ms a step at b256 on an
H200 (docs/benchmarks/pipeline_2026-12-01/call2/profile_resnet_nvimgcodec.txt); torch 2.14 scatters into a
zeroed fp32 buffer instead.

A program holds BLOCK_P positions x BLOCK_C channels: on NHWC tensors each position's channels are one
contiguous run, so the loads are coalesced; the index arithmetic is per position, not per element.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

__all__ = ["pool_forward", "pool_backward"]

BLOCK_P = 32
WARPS = 4


@triton.jit
def _tile(positions, C, rows, cols, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    # this program's BLOCK_P positions of an N x rows x cols grid (image, row, column) and BLOCK_C channels
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    return p < positions, c, c < C, (p // (cols * rows)).to(tl.int64), (p // cols) % rows, p % cols


@triton.jit
def _forward(x, y, taps, P, C, H, W, OH, OW, sxn, sxc, sxh, sxw, syn, syc, syh, syw,
             BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    p_in, c, c_in, n, oh, ow = _tile(P, C, OH, OW, BLOCK_P, BLOCK_C)
    top, left = oh * 2 - 1, ow * 2 - 1
    best = tl.full([BLOCK_P, BLOCK_C], float("-inf"), tl.float32)
    # torch's kernel starts from the window's first tap inside the image, so an all -inf window points there
    first = tl.where(top < 0, 3, 0) + tl.where(left < 0, 1, 0)
    arg = tl.zeros([BLOCK_P, BLOCK_C], tl.int32) + first[:, None]
    for k in tl.static_range(9):
        h, w = top + k // 3, left + k % 3
        inside = p_in & (h >= 0) & (h < H) & (w >= 0) & (w < W)
        v = tl.load(x + (n * sxn + h * sxh + w * sxw)[:, None] + c[None, :] * sxc,
                    mask=inside[:, None] & c_in[None, :], other=float("-inf")).to(tl.float32)
        # the first maximum in row-major order wins, and a NaN is taken wherever it is, as torch's CUDA kernel does
        take = (v > best) | (v != v)
        best = tl.where(take, v, best)
        arg = tl.where(take, k, arg)
    out = (n * syn + oh * syh + ow * syw)[:, None] + c[None, :] * syc
    keep = p_in[:, None] & c_in[None, :]
    tl.store(y + out, best.to(y.dtype.element_ty), mask=keep)
    tl.store(taps + out, arg.to(tl.int8), mask=keep)


@triton.jit
def _backward(g, taps, dx, Q, C, H, W, OH, OW, sgn, sgc, sgh, sgw, sdn, sdc, sdh, sdw,
              BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    q_in, c, c_in, n, h, w = _tile(Q, C, H, W, BLOCK_P, BLOCK_C)
    oh_a, ow_a = (h + 1) // 2, (w + 1) // 2
    kh_a, kw_a = h + 1 - 2 * oh_a, w + 1 - 2 * ow_a
    acc = tl.zeros([BLOCK_P, BLOCK_C], tl.float32)
    # windows in ascending order, as torch's kernel sums them: first the one above or to the left (tap 2),
    # which holds this element only where the nearer window holds it at tap 0
    for i in tl.static_range(2):
        if i == 0:
            oh, kh, row_ok = oh_a - 1, 2, (kh_a == 0) & (oh_a >= 1)
        else:
            oh, kh, row_ok = oh_a, kh_a, oh_a < OH
        for j in tl.static_range(2):
            if j == 0:
                ow, kw, col_ok = ow_a - 1, 2, (kw_a == 0) & (ow_a >= 1)
            else:
                ow, kw, col_ok = ow_a, kw_a, ow_a < OW
            ok = (q_in & row_ok & col_ok)[:, None] & c_in[None, :]
            base = (n * sgn + oh * sgh + ow * sgw)[:, None] + c[None, :] * sgc
            tap = tl.load(taps + base, mask=ok, other=-1).to(tl.int32)
            grad = tl.load(g + base, mask=ok, other=0.0).to(tl.float32)
            want = kh * 3 + kw + h * 0  # a tensor even where both taps are the constant 2
            acc += tl.where(tap == want[:, None], grad, 0.0)
    out = (n * sdn + h * sdh + w * sdw)[:, None] + c[None, :] * sdc
    tl.store(dx + out, acc.to(dx.dtype.element_ty), mask=q_in[:, None] & c_in[None, :])


def _block_c(channels: int) -> int:
    return min(max(triton.next_power_of_2(channels), 16), 64)


def pool_forward(x: torch.Tensor, y: torch.Tensor, taps: torch.Tensor) -> None:
    """Fill y (the pooled values) and taps (int8) for x; taps takes y's strides."""
    N, C, H, W = x.shape
    OH, OW = y.shape[2:]
    if taps.stride() != y.stride():
        raise ValueError("stem pool: the taps must have the pooled values' strides")
    P, block_c = N * OH * OW, _block_c(C)
    _forward[(triton.cdiv(P, BLOCK_P), triton.cdiv(C, block_c))](
        x, y, taps, P, C, H, W, OH, OW, *x.stride(), *y.stride(), BLOCK_P=BLOCK_P, BLOCK_C=block_c, num_warps=WARPS)


def pool_backward(grad: torch.Tensor, taps: torch.Tensor, dx: torch.Tensor) -> None:
    """Fill dx (the input's gradient) from the pooled values' gradient and the forward's taps."""
    N, C, H, W = dx.shape
    OH, OW = grad.shape[2:]
    if taps.stride() != grad.stride():  # the kernel reads both at one offset (a gradient of other strides)
        taps = torch.empty_like(grad, dtype=torch.int8).copy_(taps)
    Q, block_c = N * H * W, _block_c(C)
    _backward[(triton.cdiv(Q, BLOCK_P), triton.cdiv(C, block_c))](
        grad, taps, dx, Q, C, H, W, OH, OW, *grad.stride(), *dx.stride(), BLOCK_P=BLOCK_P, BLOCK_C=block_c,
        num_warps=WARPS)
