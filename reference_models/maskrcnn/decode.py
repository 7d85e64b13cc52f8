"""Mask R-CNN's training images decoded on the GPU beside the step (`model.decode`:
reference_models/resnet/decode.py says what each choice means; detection/decode.py why auto keeps
the CPU path).

    python -m harness.train model=maskrcnn dataset=maskrcnn_coco2017 model.decode=nvimgcodec

The DataLoader workers read the file's bytes (detection/decode.py's EncodedCoco) and draw the flip,
applied to the boxes and polygon masks (MaskRCNNPlan). On the GPU, in a vision.prefetch thread and
side stream: decode, the flip, pixel values 0..1 by one gather from the CPU transform's table
(maskrcnn.data.pixel_table; the model resizes and normalises them itself), the targets packed
(maskrcnn.data.pack_targets) and cut apart on the device. So a batch is what
reference_models/maskrcnn/benchmark.py makes on the CPU, to the tolerance
tests/reference_models/maskrcnn/test_decode.py states.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterable, Iterator

import torch

from reference_models.detection.coco import Target
from reference_models.detection.decode import pack
from reference_models.maskrcnn.data import cut_targets, pack_targets, pixel_table
from reference_models.vision.decoders import Decoder, blobs
from reference_models.vision.prefetch import DeviceBatches


class MaskRCNNPlan:
    """maskrcnn.benchmark.TrainTransform without the pixels: the flip (random.random() < p, the same
    draw) applied to the boxes and the polygon masks."""

    def __init__(self, flip_probability: float):
        self.p = flip_probability

    def __call__(self, target: Target, width: int, height: int) -> tuple[bool, dict[str, torch.Tensor]]:
        boxes, masks = target.boxes.clone(), target.masks()
        flip = random.random() < self.p
        if flip:
            masks = masks.flip(-1)
            boxes = torch.stack([width - boxes[:, 2], boxes[:, 1], width - boxes[:, 0], boxes[:, 3]], dim=1)
        return flip, {"boxes": boxes, "labels": target.labels, "masks": masks}


@dataclass
class MaskRCNNBatch:
    data: torch.Tensor
    offsets: list[int]
    flips: list[bool]
    masks: torch.Tensor  # the targets end to end (maskrcnn.data.pack_targets): masks, boxes, labels
    boxes: torch.Tensor
    labels: torch.Tensor
    sizes: list[tuple[int, int]]  # each image's (H, W)
    counts: list[int]  # each image's objects

    def pin_memory(self) -> "MaskRCNNBatch":  # as SSDBatch's
        self.data, self.masks, self.boxes, self.labels = (t.pin_memory() for t in
                                                          (self.data, self.masks, self.boxes, self.labels))
        return self


def collate_maskrcnn(items: list[tuple[bytes, tuple[bool, dict[str, torch.Tensor]]]]) -> MaskRCNNBatch:
    data, offsets = pack([b for b, _ in items])
    targets = [p[1] for _, p in items]
    masks, boxes, labels = pack_targets(targets)
    return MaskRCNNBatch(data, offsets, [p[0] for _, p in items], masks, boxes, labels,
                         [(int(t["masks"].shape[1]), int(t["masks"].shape[2])) for t in targets],
                         [int(t["labels"].shape[0]) for t in targets])


class MaskRCNNBatches:
    """Mask R-CNN's training batches (images 0..1, targets) on the device from MaskRCNNBatch: the
    targets in three copies (views of them per image), each image's values 0..1 by one gather from
    the table maskrcnn.data.pixel_table computes on the CPU as the CPU transform does (so to the bit)."""

    def __init__(self, decoder: Decoder, device: torch.device, depth: int = 3):
        self.decoder, self.device = decoder, device
        self.pipeline = DeviceBatches(self._prepare, device, depth)

    def _prepare(self, batch: MaskRCNNBatch, slot: int) -> tuple[tuple[list, list], list[torch.Tensor]]:
        decoded = self.decoder.decode(blobs(batch.data, batch.offsets), slot)
        table = pixel_table(self.device)
        images = [table[(im.flip(-1) if flip else im).long()] for im, flip in zip(decoded, batch.flips)]
        nb = self.device.type == "cuda"
        masks, boxes, labels = (t.to(self.device, non_blocking=nb) for t in (batch.masks, batch.boxes, batch.labels))
        targets = cut_targets(masks, boxes, labels, batch.sizes, batch.counts)
        return (images, targets), [*decoded, batch.data]  # the bytes kept to the batch's event, as SSD's

    def __call__(self, batches: Iterable[MaskRCNNBatch]) -> Iterator[tuple[list, list]]:
        yield from self.pipeline(batches)
