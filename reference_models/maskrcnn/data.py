"""Mask R-CNN's training batches for a GPU with the workers decoding (model.decode=cpu): one packed
batch per step instead of some thirty tensors.

    python -m harness.train model=maskrcnn dataset=maskrcnn_coco2017 precision=amp    # on CUDA

The model takes lists: images (3, H, W) of values 0..1 and per-image targets (boxes, labels, masks)
of sizes that vary by image. Collated as lists, a batch of 8 is 32 tensors: 32 shared-memory blocks
from the workers, 32 pinned copies in the loader's pin thread, 32 copies and 32 stream records in
the training thread, and 32 device blocks of their own sizes for the allocator, each step. Here the
workers hand over each image as uint8 (TrainTransform(device_finish=True): pil_to_tensor, flipped),
and `collate_packed` lays a batch's images, masks, boxes and labels end to end in four tensors,
written straight into shared memory in a worker (detection/collate.py, default_collate's way), each
image's pixels and masks at an aligned offset (a view there is as aligned as a tensor of its own, so
the model's elementwise kernels keep their vectorised path). `PackedBatch.pin_memory` pins the four (the loader's pin thread calls it), and
`PackedBatch.to` copies the four and makes the lists the model takes as views of them on the device.
The images are made float there by one gather from a table that the CPU computes as the workers'
transform does (pil_to_tensor(image).float().div_(255)), so every value is the CPU path's to the bit
on any device (CUDA's division by a Python number is a multiplication by its reciprocal, one ulp off
for about half the values): a quarter of the bytes through the pin thread and the copy.
tests/reference_models/maskrcnn/test_data.py compares the batches with the lists, tensor by tensor.
A CPU run keeps the lists and the workers' float images (nothing is copied there).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from reference_models.detection.collate import aligned, aligned_offsets, joined

_TABLES: dict[torch.device, torch.Tensor] = {}


def pixel_table(device: torch.device) -> torch.Tensor:
    """(256,) float32 on `device`: the value the CPU transform gives each uint8 level, made once."""
    table = _TABLES.get(device)
    if table is None:
        table = _TABLES[device] = torch.arange(256, dtype=torch.uint8).float().div_(255).to(device)
    return table


@dataclass
class PackedBatch:
    """A batch's images and targets end to end, with what it takes to cut them apart again."""

    pixels: torch.Tensor  # uint8, image after image, each at detection.collate.aligned_offsets
    masks: torch.Tensor  # uint8, image's masks after image's masks, aligned as the pixels
    boxes: torch.Tensor  # (sum of n, 4) float32
    labels: torch.Tensor  # (sum of n,) int64
    sizes: list[tuple[int, int]]  # each image's (H, W)
    counts: list[int]  # each image's objects

    @property
    def samples(self) -> int:
        return len(self.sizes)

    def pin_memory(self) -> "PackedBatch":  # the DataLoader's pin thread calls this
        self.pixels, self.masks, self.boxes, self.labels = (
            t.pin_memory() for t in (self.pixels, self.masks, self.boxes, self.labels))
        return self

    def to(self, device: torch.device) -> tuple[list[torch.Tensor], list[dict[str, torch.Tensor]]]:
        """(images, targets) as the model takes them, on `device`: four copies (queued on the current
        stream from pinned memory), one gather for the images, the rest views."""
        nb = device.type == "cuda"
        pixels, masks, boxes, labels = (t.to(device, non_blocking=nb) for t in
                                        (self.pixels, self.masks, self.boxes, self.labels))
        values = pixel_table(device)[pixels.long()]
        numels = [3 * h * w for h, w in self.sizes]
        starts, _ = aligned_offsets(numels)
        images = [values[a: a + n].view(3, h, w) for a, n, (h, w) in zip(starts, numels, self.sizes)]
        return images, cut_targets(masks, boxes, labels, self.sizes, self.counts)


def cut_targets(masks: torch.Tensor, boxes: torch.Tensor, labels: torch.Tensor, sizes: Sequence[tuple[int, int]],
                counts: Sequence[int]) -> list[dict[str, torch.Tensor]]:
    """Each image's target as the model takes it, views of a batch's packed masks, boxes and labels."""
    numels = [n * h * w for n, (h, w) in zip(counts, sizes)]
    starts, _ = aligned_offsets(numels)
    return [{"boxes": b, "labels": lb, "masks": masks[a: a + k].view(n, h, w)}
            for b, lb, a, k, n, (h, w) in zip(boxes.split(list(counts)), labels.split(list(counts)), starts, numels,
                                              counts, sizes)]


def pack_targets(targets: Sequence[dict[str, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(masks, boxes, labels) of the targets end to end, as `cut_targets` takes them apart."""
    return (aligned([t["masks"] for t in targets], torch.uint8),
            joined([t["boxes"] for t in targets], torch.float32, (4,)),
            joined([t["labels"] for t in targets], torch.int64))


def collate_packed(items: list[tuple[torch.Tensor, dict[str, torch.Tensor]]]) -> PackedBatch:
    """TrainTransform(device_finish=True)'s samples (uint8 image, target) as one PackedBatch."""
    images = [im for im, _ in items]
    targets = [t for _, t in items]
    masks, boxes, labels = pack_targets(targets)
    return PackedBatch(pixels=aligned(images, torch.uint8), masks=masks, boxes=boxes, labels=labels,
                       sizes=[(int(im.shape[1]), int(im.shape[2])) for im in images],
                       counts=[int(t["labels"].shape[0]) for t in targets])
