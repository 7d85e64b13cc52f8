"""GNMT's label-smoothed cross-entropy, summed over the non-pad tokens, in fp32 from fp16 logits.

    python -m harness.train model=gnmt dataset=wmt16 mode=throughput model.batch_size=2048   # compiled on CUDA

At b2048 the logits are 59,392 tokens x 32,320 classes (3.8 GB in fp16). `smoothed_loss` is the definition:
torch's cross_entropy on the logits copied to fp32. `SmoothedLoss` gives the same value and gradient with each
pass written out, so that a compiled kernel reads the logits once forward and once backward:

    loss of a row = lse(x) - (1 - eps) x[target] - eps mean(x)           (lse: log-sum-exp over the classes)
    its gradient  = softmax(x) - (1 - eps) onehot(target) - eps / classes

The forward's max, sum of exponentials and sum of x are reductions over the same row, so they share one
loop; the backward needs only each row's lse, and writes the gradient in the logits' dtype. Compiled as
one expression instead (torch.compile of `smoothed_loss`), Inductor took 4.5 ms forward and 2.5 ms backward
on an H200 at b2048 (docs/benchmarks/fast_path_2026-12-04.md).
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import torch
from torch.nn.functional import cross_entropy

from reference_models.gnmt.scores import Dims, compiled, wide
from reference_models.gnmt.tokenizer import PAD_ID


def smoothed_loss(logits: torch.Tensor, target: torch.Tensor, smoothing: float) -> torch.Tensor:
    """Label-smoothed cross-entropy over the non-pad tokens, summed, in fp32: the definition."""
    return cross_entropy(logits.flatten(0, 1).float(), target.flatten(), ignore_index=PAD_ID,
                         label_smoothing=smoothing, reduction="sum")


def forward_math(x: torch.Tensor, target: torch.Tensor, smoothing: float) -> tuple[torch.Tensor, torch.Tensor]:
    """x (rows, classes), target (rows,) -> the summed loss over the rows whose target is not PAD, and each
    row's log-sum-exp for the backward."""
    x = wide(x)
    lse = torch.logsumexp(x, dim=1)
    picked = x.gather(1, target.unsqueeze(1)).squeeze(1)
    rows = lse - (1 - smoothing) * picked - smoothing * x.mean(dim=1)
    return torch.where(target != PAD_ID, rows, 0).sum(), lse


def backward_math(x: torch.Tensor, target: torch.Tensor, lse: torch.Tensor, grad: torch.Tensor,
                  smoothing: float) -> torch.Tensor:
    """The gradient of forward_math's sum times `grad`, in x's dtype."""
    xw = wide(x)
    classes = torch.arange(xw.shape[1], device=xw.device)
    onehot = (classes.unsqueeze(0) == target.unsqueeze(1)).to(xw.dtype)
    scale = torch.where(target != PAD_ID, wide(grad), 0).unsqueeze(1)
    out = (torch.exp(xw - lse.unsqueeze(1)) - (1 - smoothing) * onehot - smoothing / xw.shape[1]) * scale
    return out.to(x.dtype)


class Kernels(NamedTuple):
    forward: Callable[..., tuple[torch.Tensor, torch.Tensor]]
    backward: Callable[..., torch.Tensor]


PLAIN = Kernels(forward_math, backward_math)


# the rows (tokens: the batch times its target length) of the logits, the targets and the row sums; the
# classes stay static, the size of the reductions over them
_ROWS: Dims = {0: (0,), 1: (0,)}
_ROWS_LSE: Dims = {**_ROWS, 2: (0,)}


def compiled_kernels(dynamic: bool = False, **options: Any) -> Kernels:
    """The forward and the backward, each compiled on its own (scores.compiled); `dynamic`: one graph for
    every number of rows (training's buckets), else one per shape; `options`: torch.compile's."""
    return Kernels(compiled(forward_math, _ROWS if dynamic else None, **options),
                   compiled(backward_math, _ROWS_LSE if dynamic else None, **options))


class SmoothedLoss(torch.autograd.Function):
    """smoothed_loss's value and gradient on logits (rows, classes), through `kernels`."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, target: torch.Tensor, smoothing: float, kernels: Kernels) -> torch.Tensor:
        total, lse = kernels.forward(x, target, smoothing)
        ctx.save_for_backward(x, target, lse)
        ctx.smoothing, ctx.kernels = smoothing, kernels
        return total

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        x, target, lse = ctx.saved_tensors
        return ctx.kernels.backward(x, target, lse, grad, ctx.smoothing), None, None, None


def fused_smoothed_loss(logits: torch.Tensor, target: torch.Tensor, smoothing: float,
                        kernels: Kernels = PLAIN) -> torch.Tensor:
    """smoothed_loss through SmoothedLoss: logits (T, B, classes), target (T, B)."""
    return SmoothedLoss.apply(logits.flatten(0, 1), target.flatten(), smoothing, kernels)
