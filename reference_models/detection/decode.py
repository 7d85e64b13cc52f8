"""SSD's and Mask R-CNN's training images decoded on the GPU beside the step (`model.decode`, as
ResNet's: reference_models/resnet/decode.py says what each choice means and how auto decides).

    python -m harness.train model=ssd dataset=ssd_coco2017 model.decode=nvimgcodec
    python -m harness.train model=maskrcnn dataset=maskrcnn_coco2017 model.decode=nvimgcodec

The DataLoader workers keep everything that needs no pixels: the COCO annotations, SSD's random crop
(drawn from the image size in the JPEG header, with the same random draws as the CPU path), the
flips, ColorJitter's factors and order, Mask R-CNN's polygon masks; they hand over the file's bytes
with it. On the GPU, in resnet.decode's prefetch thread and side stream:
- SSD: decode, the crop resized to image_size as PIL's crop(...).resize(BILINEAR) does (resnet.decode's
  crop_resize with the crop as the filter's bounds, the flip folded in), ColorJitter with Pillow's
  uint8 arithmetic (detection/color.py: each image's hue only in its own round), ToTensor and
  Normalize, and the batch's targets encoded against the 8,732 default boxes in one batched
  matching (ssd.boxes.Encoder.encode_batch);
- Mask R-CNN: decode, the flip, pixel values 0..1 by one gather from the CPU transform's table
  (maskrcnn.data.pixel_table; the model resizes and normalises them itself), the targets packed
  (maskrcnn.data.pack_targets) and cut apart on the device.
So a batch is what reference_models/ssd/transforms.py and maskrcnn/benchmark.py make on the CPU, to
the tolerance tests/reference_models/detection/test_decode.py states.
"""
from __future__ import annotations

import copy
import io
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import torch
from PIL import Image
from torch.utils.data import Dataset
from torchvision import transforms as T

from harness.interface import DataError
from reference_models.detection.coco import CocoSplit, Target
from reference_models.detection.color import ColorJitter
from reference_models.resnet.decode import Decoder, DeviceBatches, blobs, crop_resize, normalization, resolve, to_device


def pack(items: Sequence[bytes]) -> tuple[torch.Tensor, list[int]]:
    """Files' bytes end to end in one tensor (one shared-memory block per batch) and their offsets."""
    offsets = [0]
    for b in items:
        offsets.append(offsets[-1] + len(b))
    return torch.frombuffer(bytearray(b"".join(items)), dtype=torch.uint8), offsets


class EncodedCoco(Dataset):
    """A COCO split's training samples as (JPEG bytes, plan(target, width, height)): the file is read
    and its header checked as CocoSplit checks the decoded image, nothing is decoded."""

    def __init__(self, split: CocoSplit, plan: Callable[[Target, int, int], Any], decode: str):
        self.split, self.plan, self.decode = split, plan, decode

    @property
    def num_classes(self) -> int:
        return self.split.num_classes

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, index: int) -> tuple[bytes, Any]:
        target = self.split.target(index)
        path: Path = self.split.image_path(self.split.coco.imgs[target.image_id])
        try:
            data = path.read_bytes()
            with Image.open(io.BytesIO(data)) as image:
                size, kind = image.size, image.format
        except OSError as err:
            raise DataError(f"{path} cannot be read as an image ({err})") from None
        if kind != "JPEG":
            raise DataError(f"{path} is {kind}, not JPEG: model.decode={self.decode} reads JPEG only "
                            "(model.decode=cpu reads any format PIL does)")
        if size != (target.size[1], target.size[0]):
            raise DataError(f"{path} is {size[0]}x{size[1]}, its annotation says {target.size[1]}x{target.size[0]}")
        return data, self.plan(target, *size)


# --- SSD ---------------------------------------------------------------------------------------------

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
        from reference_models.ssd.transforms import ssd_crop

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
    from reference_models.ssd.boxes import pad_truth

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


# --- Mask R-CNN --------------------------------------------------------------------------------------

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
    from reference_models.maskrcnn.data import pack_targets

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
        from reference_models.maskrcnn.data import cut_targets, pixel_table

        decoded = self.decoder.decode(blobs(batch.data, batch.offsets), slot)
        table = pixel_table(self.device)
        images = [table[(im.flip(-1) if flip else im).long()] for im, flip in zip(decoded, batch.flips)]
        nb = self.device.type == "cuda"
        masks, boxes, labels = (t.to(self.device, non_blocking=nb) for t in (batch.masks, batch.boxes, batch.labels))
        targets = cut_targets(masks, boxes, labels, batch.sizes, batch.counts)
        return (images, targets), [*decoded, batch.data]  # the bytes kept to the batch's event, as SSD's

    def __call__(self, batches: Iterable[MaskRCNNBatch]) -> Iterator[tuple[list, list]]:
        yield from self.pipeline(batches)


# --- model.decode: which path ------------------------------------------------------------------------

def without_transform(split: CocoSplit) -> CocoSplit:
    """The same split (the same COCO index: a large annotation file is read once) without its transform."""
    bare = copy.copy(split)
    bare.transform = None
    return bare


def choose(choice: str, device: torch.device) -> str:
    """resnet.decode.resolve for SSD and Mask R-CNN, with one rule of their own: auto keeps the CPU path.
    Measured side by side on an H200 with 16 cores (docs/benchmarks/pipeline_2026-12-01.md), their GPU
    path trained slower than the workers' (SSD 0.77 of the held-batch step against 0.81, Mask R-CNN 0.42
    against 0.52): the decode is the smaller part of their input work (SSD's crop search stays on the
    workers, its Pillow-exact ColorJitter takes 2.7 ms of SM time per batch of 128), so the hardware
    decoder's speed, which ResNet's probe measures, does not decide it. (Measured while SSD's box
    encoding still ran on the workers on both paths; both now encode on the device.)"""
    chosen = resolve(choice, device)  # validates the choice: a GPU backend needs CUDA
    return "cpu" if choice == "auto" else chosen
