"""A batch's tensors written straight into shared memory by the loader worker that collates them.

    python -m harness.train model=ssd dataset=ssd_coco2017    # on CUDA: SSD's and Mask R-CNN's collates

A tensor a DataLoader worker returns reaches the training process through shared memory; one made
in ordinary memory is first copied there when it is sent. PyTorch's default_collate therefore
stacks a batch into a shared block from the start (torch/utils/data/_utils/collate.py), and the
detection models' own collates (ssd.transforms.collate_truth, maskrcnn.data.collate_packed) do the
same with `batch_tensor`: one copy of a batch's images in the worker instead of two. Outside a
worker the tensor is an ordinary one.
"""
from __future__ import annotations

import math

import torch
from torch.utils.data import get_worker_info


def batch_tensor(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """An uninitialised tensor to collate into: in shared memory inside a loader worker."""
    elem = torch.empty(0, dtype=dtype)
    if get_worker_info() is None:
        return elem.new_empty(shape)
    return elem.new(elem._typed_storage()._new_shared(math.prod(shape))).resize_(*shape)


def stacked(parts: list[torch.Tensor]) -> torch.Tensor:
    """torch.stack(parts), into `batch_tensor`."""
    return torch.stack(parts, out=batch_tensor((len(parts), *parts[0].shape), parts[0].dtype))


def joined(parts: list[torch.Tensor], dtype: torch.dtype, tail: tuple[int, ...] = ()) -> torch.Tensor:
    """The parts end to end as (rows, *tail) (each part reshaped so), into `batch_tensor`."""
    out = batch_tensor((sum(p.numel() for p in parts) // math.prod(tail), *tail), dtype)
    if parts:
        torch.cat([p.reshape(-1, *tail) for p in parts], out=out)
    return out


ALIGN = 64  # elements: a part's start 64 bytes into a uint8 buffer, 256 into the float32 one made from it


def aligned_offsets(numels: list[int], align: int = ALIGN) -> tuple[list[int], int]:
    """Where each part starts when every start is a multiple of `align` elements, and the total length.
    Views at such offsets keep the alignment a tensor of their own would have, which PyTorch's
    vectorised elementwise kernels need (a view at an odd offset takes their scalar path)."""
    starts, end = [], 0
    for n in numels:
        starts.append(end)
        end += -(-n // align) * align
    return starts, end


def aligned(parts: list[torch.Tensor], dtype: torch.dtype, align: int = ALIGN) -> torch.Tensor:
    """The parts flattened one after the other, each at `aligned_offsets`, into `batch_tensor`
    (the gaps hold zeros or whatever the block held: nothing reads them)."""
    starts, total = aligned_offsets([p.numel() for p in parts], align)
    out = batch_tensor((total,), dtype)
    for start, p in zip(starts, parts):
        out[start: start + p.numel()].copy_(p.reshape(-1))
    return out
