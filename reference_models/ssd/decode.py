"""SSD's training images decoded on the GPU beside the step (`model.decode`: reference_models/resnet/decode.py
says what each choice means; detection/decode.py why auto keeps the CPU path).

    python -m harness.train model=ssd dataset=ssd_coco2017 model.decode=nvimgcodec

The DataLoader workers read the file's bytes (detection/decode.py's EncodedCoco) and draw SSD's random
crop from the image size in the JPEG header, with the same random draws as the CPU path, the flip and
ColorJitter's factors and order (SSDPlan). On the GPU, in a vision.prefetch thread and side stream:
decode, the crop resized to image_size as PIL's crop(...).resize(BILINEAR) does (vision.resample's
crop_resize with the crop as the filter's bounds, the flip folded in), ColorJitter with Pillow's uint8
arithmetic (detection/color.py: each image's hue only in its own round), ToTensor and Normalize, and
the batch's targets encoded against the 8,732 default boxes in one batched matching
(ssd.boxes.Encoder.encode_batch). So a batch is what reference_models/ssd/transforms.py makes on the
CPU, to the tolerance tests/reference_models/ssd/test_decode.py states.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional, Sequence

import torch
from torchvision import transforms as T

from reference_models.detection.coco import Target
from reference_models.detection.color import ColorJitter
from reference_models.detection.decode import pack
from reference_models.ssd.boxes import pad_truth
from reference_models.ssd.transforms import ssd_crop
from reference_models.vision.decoders import Decoder, blobs
from reference_models.vision.normalize import normalization
from reference_models.vision.prefetch import DeviceBatches
from reference_models.vision.resample import crop_resize, to_device


class _Extent:
    """What ssd_crop reads of an image, its size, and what it does with it, crop: the rectangle kept."""

    def __init__(self, width: int, height: int, box: Optional[tuple[int, int, int, int]] = None):
        self.size = (width, height)
        self.box = box or (0, 0, width, height)  # left, top, right, bottom

    def crop(self, box: tuple[int, int, int, int]) -> "_Extent":
        return _Extent(box[2] - box[0], box[3] - box[1], box)


class SSDPlan:
    """ssd.transforms.TrainTransform without the pixels, drawing the same random numbers in the same
    order: the crop (Python's random, ssd_crop), the flip (random.random() < 0.5), ColorJitter's
    order and factors (torch's generator, ColorJitter.get_params), the boxes kept (SSDBatches
    encodes a batch's on the device: 2.3 ms of a worker per image for 8,732 default boxes)."""

    def __init__(self, max_samples: int, jitter: Sequence[float]):
        self.max_samples = max_samples
        self.jitter = T.ColorJitter(*jitter)

    @property
    def enabled(self) -> tuple[bool, ...]:
        j = self.jitter
        return tuple(v is not None for v in (j.brightness, j.contrast, j.saturation, j.hue))

    def __call__(self, target: Target, width: int, height: int) -> tuple[Any, ...]:
        boxes = target.boxes / torch.tensor([width, height, width, height], dtype=torch.float32)
        kept: Any
        kept, boxes, labels = ssd_crop(_Extent(width, height), boxes, target.labels, self.max_samples)  # type: ignore[arg-type]
        flip = random.random() < 0.5
        if flip:
            boxes = torch.stack([1 - boxes[:, 2], boxes[:, 1], 1 - boxes[:, 0], boxes[:, 3]], dim=1)
        j = self.jitter
        order, *factors = T.ColorJitter.get_params(j.brightness, j.contrast, j.saturation, j.hue)
        left, top, right, bottom = kept.box
        return ((top, left, bottom - top, right - left), (top, left, bottom, right), flip, order,
                [1.0 if f is None else f for f in factors], boxes, labels)


@dataclass
class SSDBatch:
    data: torch.Tensor
    offsets: list[int]
    boxes: torch.Tensor  # (B, 4) the crop: top, left, height, width
    clips: torch.Tensor  # (B, 4) the crop again as the filter's bounds: top, left, bottom, right
    flips: torch.Tensor  # (B,)
    order: torch.Tensor  # (B, 4) ColorJitter's operations in the order each image applies them
    factors: torch.Tensor  # (B, 4) float64 brightness, contrast, saturation, hue factors
    truth_boxes: torch.Tensor  # (B, M, 4) the ground truth kept, in the crop's units (ssd.boxes.pad_truth)
    truth_labels: torch.Tensor  # (B, M) their labels, -1 after an image's own

    def pin_memory(self) -> "SSDBatch":  # DataLoader's pin_memory thread calls this
        # the files' bytes too: the GPU decoder's copies of them are then queued, not staged (resnet.data.EncodedBatch)
        self.data, self.truth_boxes, self.truth_labels = (t.pin_memory() for t in
                                                          (self.data, self.truth_boxes, self.truth_labels))
        return self


def collate_ssd(items: list[tuple[bytes, tuple[Any, ...]]]) -> SSDBatch:
    data, offsets = pack([b for b, _ in items])
    plans = [p for _, p in items]
    truth_boxes, truth_labels = pad_truth([(p[5], p[6]) for p in plans])
    return SSDBatch(data, offsets, torch.tensor([p[0] for p in plans]), torch.tensor([p[1] for p in plans]),
                    torch.tensor([p[2] for p in plans]), torch.stack([p[3] for p in plans]),
                    torch.tensor([p[4] for p in plans], dtype=torch.float64), truth_boxes, truth_labels)


class SSDBatches:
    """SSD's training batches (images, box offsets, box labels) on the device from SSDBatch: the
    targets encoded there by `encoder` (ssd.boxes.Encoder.encode_batch), in the same pass."""

    MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)

    def __init__(self, decoder: Decoder, encoder: Any, size: int, device: torch.device, enabled: Sequence[bool],
                 memory_format: torch.memory_format = torch.contiguous_format, batch_size: Optional[int] = None,
                 depth: int = 3):
        self.decoder, self.encoder, self.size, self.device = decoder, encoder, size, device
        self.memory_format = memory_format
        self.jitter = ColorJitter(device, enabled)
        if batch_size is not None and device.type == "cuda":
            self.jitter.warm((batch_size, 3, size, size), device)
        self.affine = normalization(self.MEAN, self.STD, device, scale=255)  # ToTensor, then Normalize
        self.pipeline = DeviceBatches(self._prepare, device, depth)

    def _prepare(self, batch: SSDBatch, slot: int
                 ) -> tuple[tuple[torch.Tensor, torch.Tensor, torch.Tensor], list[torch.Tensor]]:
        decoded = self.decoder.decode(blobs(batch.data, batch.offsets), slot)
        pixels = crop_resize(decoded, batch.boxes, batch.flips, self.size, clips=batch.clips,
                             memory_format=self.memory_format)
        pixels = self.jitter(pixels, batch.order, to_device(batch.factors, self.device))  # the order stays on the host
        images = torch.addcmul(self.affine[1], pixels, self.affine[0])  # ToTensor, then Normalize, in one pass
        if not images.is_contiguous(memory_format=self.memory_format):
            images = images.contiguous(memory_format=self.memory_format)
        nb = self.device.type == "cuda"  # pinned by the DataLoader (SSDBatch.pin_memory): queued, not waited for
        gloc, glabel = self.encoder.encode_batch(batch.truth_boxes.to(self.device, non_blocking=nb),
                                                 batch.truth_labels.to(self.device, non_blocking=nb))
        return (images, gloc, glabel), [*decoded, batch.data]  # the bytes the decoder's queued copies read, kept

    def __call__(self, batches: Iterable[SSDBatch]) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        for images, gloc, glabel in self.pipeline(batches):
            yield images, gloc, glabel
