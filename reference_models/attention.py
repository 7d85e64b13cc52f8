"""Which of scaled_dot_product_attention's CUDA kernels a model's attention may run: the `model.attention`
option of the Transformer and of BERT.

    python -m harness.train model=bert_large mode=throughput model.attention=efficient
    python -m harness.train model=transformer dataset=wmt17 model.attention=auto

PyTorch's own order on an H100 or H200 (torch 2.11-2.14) puts cuDNN's fused attention first. cuDNN builds a
plan on the host for every new (batch, length) shape, which a model trained on sentences of many lengths pays
for at each new shape (docs/transformer.md), and with dropout BERT-large's cuDNN attention ran at 184 TFLOP/s
on an H200 (docs/benchmarks/fast_path_2026-12-05.md). `efficient` keeps to FlashAttention-2, and to the
memory-efficient kernel where a padding mask rules flash out. A CPU runs its own kernels under either.
"""
from __future__ import annotations

import contextlib
from functools import partial
from typing import Any, Callable, ContextManager

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from harness.interface import Choice


class Attention(Choice):
    """Which of scaled_dot_product_attention's CUDA kernels may run."""

    auto = "auto"  # PyTorch's order: cuDNN's fused attention first on Hopper
    efficient = "efficient"  # flash, or memory-efficient where a padding mask is given: no cuDNN


def kernels(choice: Attention, device: torch.device) -> Callable[[], ContextManager[Any]]:
    """A context to run each forward in: the backward runs the kernels its forward chose, and a compiled
    graph keeps the kernels chosen as it was traced, so every call (warm-up, graph capture, steps) enters it."""
    if choice == Attention.efficient and device.type == "cuda":
        return partial(sdpa_kernel, [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])
    return contextlib.nullcontext
