"""SSD's input pipeline as the reference's SSDTransformer: random crop, flip, resize, colour jitter.

Training, per image: the reference's SSD random crop (keep the image, or a crop whose IoU with every
box is above 0.1, 0.3, 0.5, 0.7 or 0.9, or any crop; sides 30-100% of the image, aspect within 1:2..2:1;
boxes whose centre leaves the crop dropped, the rest cut to it; `max_samples` attempts per drawn
mode), a horizontal flip with probability 0.5, a resize to image_size x image_size, ColorJitter
(0.125, 0.5, 0.5, 0.05), ImageNet normalisation, and the encoded targets of every default box.
Evaluation: the resize and the normalisation. torchvision's RandomIoUCrop differs (40 trials, other
modes), hence this port of the reference's rule; its randomness is Python's, seeded per rank and
per loader worker by the harness.

    python -c "from reference_models.ssd.transforms import ssd_crop; help(ssd_crop)"
"""
from __future__ import annotations

import random
from typing import Optional, Sequence

import numpy as np
import torch
from PIL import Image
from torchvision import transforms as T
from torchvision.ops import box_iou

from reference_models.detection.coco import Target
from reference_models.detection.collate import stacked
from reference_models.ssd.boxes import Encoder, pad_truth

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
CROP_MODES = (None, (0.1, None), (0.3, None), (0.5, None), (0.7, None), (0.9, None), (None, None))


def ssd_crop(image: Image.Image, boxes: torch.Tensor, labels: torch.Tensor, max_samples: int = 1
             ) -> tuple[Image.Image, torch.Tensor, torch.Tensor]:
    """The reference's SSDCropping on boxes in image units (x1, y1, x2, y2)."""
    width, height = image.size
    while True:
        mode = random.choice(CROP_MODES)
        if mode is None:
            return image, boxes, labels
        min_iou = float("-inf") if mode[0] is None else mode[0]
        max_iou = float("inf") if mode[1] is None else mode[1]
        for _ in range(max_samples):
            w, h = random.uniform(0.3, 1.0), random.uniform(0.3, 1.0)
            if w / h < 0.5 or w / h > 2:
                continue
            left, top = random.uniform(0, 1.0 - w), random.uniform(0, 1.0 - h)
            right, bottom = left + w, top + h
            ious = box_iou(boxes, torch.tensor([[left, top, right, bottom]]))
            if not ((ious > min_iou) & (ious < max_iou)).all():
                continue
            xc, yc = 0.5 * (boxes[:, 0] + boxes[:, 2]), 0.5 * (boxes[:, 1] + boxes[:, 3])
            inside = (xc > left) & (xc < right) & (yc > top) & (yc < bottom)
            if not inside.any():
                continue
            kept = boxes[inside].clone()
            kept[:, 0::2] = (kept[:, 0::2].clamp(left, right) - left) / w
            kept[:, 1::2] = (kept[:, 1::2].clamp(top, bottom) - top) / h
            crop = image.crop((int(left * width), int(top * height), int(right * width), int(bottom * height)))
            return crop, kept, labels[inside]


class TrainTransform:
    """(PIL image, Target) -> (image tensor, box offsets (default boxes, 4), labels (default boxes,)).

    For a GPU run, the work that a batch does faster on the device is left to it: with encoder=None
    the ground truth as it is, (image, boxes (k, 4), labels (k,)), for Encoder.encode_batch
    (collate_truth's batches); with device_finish the image as the jitter left it, uint8 (3, S, S),
    for `DeviceFinish` (ToTensor and Normalize there: a quarter of the bytes through the pin
    thread and the copy)."""

    def __init__(self, encoder: Optional[Encoder], size: int, max_samples: int, jitter: Sequence[float],
                 device_finish: bool = False):
        self.encoder, self.size, self.max_samples = encoder, size, max_samples
        self.jitter = T.ColorJitter(*jitter)
        self.finish = T.PILToTensor() if device_finish else T.Compose([T.ToTensor(), T.Normalize(MEAN, STD)])

    def __call__(self, image: Image.Image, target: Target) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h, w = target.size
        boxes = target.boxes / torch.tensor([w, h, w, h], dtype=torch.float32)
        image, boxes, labels = ssd_crop(image, boxes, target.labels, self.max_samples)
        if random.random() < 0.5:
            image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
            boxes = torch.stack([1 - boxes[:, 2], boxes[:, 1], 1 - boxes[:, 0], boxes[:, 3]], dim=1)
        image = self.jitter(image.resize((self.size, self.size), Image.Resampling.BILINEAR))
        if self.encoder is None:
            return self.finish(image), boxes, labels
        offsets, box_labels = self.encoder.encode(boxes, labels)
        return self.finish(image), offsets, box_labels


class DeviceFinish:
    """ToTensor and Normalize of TrainTransform for a batch of its device_finish images, (B, 3, S, S)
    uint8, on their device, as one lookup: every value's result is computed once, on the CPU, by
    torchvision's own ToTensor and Normalize (a (3, 256) table), and the device only gathers from it,
    so the images equal the CPU transform's to the bit on any device. Computing them there instead
    would not: CUDA divides by a Python number as a multiplication by its reciprocal, which moves
    126 of the 256 values of x / 255 by one ulp (322 of the 768 after Normalize). Two kernels (the
    index, the gather) where the arithmetic takes four."""

    def __init__(self, device: torch.device):
        levels = np.arange(256, dtype=np.uint8).reshape(1, 256, 1).repeat(3, axis=2)  # an HWC image of every value
        table = T.Normalize(MEAN, STD)(T.ToTensor()(levels))  # (3, 1, 256)
        self.table = table.reshape(-1).to(device)  # channel c's value v at c * 256 + v
        self.offsets = (torch.arange(3, dtype=torch.int64) * 256).view(1, 3, 1, 1).to(device)

    def __call__(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.table[pixels + self.offsets]  # uint8 + int64: the index, in one pass


def collate_truth(items: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """TrainTransform(encoder=None)'s samples as a batch: images (B, 3, S, S) and the ground truth
    padded as Encoder.encode_batch takes it (boxes.pad_truth); in a loader worker the images are
    stacked straight into shared memory (detection/collate.py: not copied there again to be sent)."""
    boxes, labels = pad_truth([(b, lb) for _, b, lb in items])
    return stacked([im for im, _, _ in items]), boxes, labels


class EvalTransform:
    """(PIL image, Target) -> (image tensor, image id, (height, width) of the stored image)."""

    def __init__(self, size: int):
        self.size = size
        self.finish = T.Compose([T.ToTensor(), T.Normalize(MEAN, STD)])

    def __call__(self, image: Image.Image, target: Target) -> tuple[torch.Tensor, int, torch.Tensor]:
        resized = image.resize((self.size, self.size), Image.Resampling.BILINEAR)
        return self.finish(resized), target.image_id, torch.tensor(target.size)
