"""The COCO files SSD and Mask R-CNN hand to the GPU decode path (`model.decode`, as ResNet's:
reference_models/resnet/decode.py says what each choice means and how auto decides).

    python -m harness.train model=ssd dataset=ssd_coco2017 model.decode=nvimgcodec
    python -m harness.train model=maskrcnn dataset=maskrcnn_coco2017 model.decode=nvimgcodec

The DataLoader workers keep everything that needs no pixels: the COCO annotations and each model's
plan of the sample (its random crop, flip and jitter drawn from the image size in the JPEG header);
they hand over the file's bytes with it (EncodedCoco, packed per batch by `pack`). What each model
does with them on the GPU is in its own package: reference_models/ssd/decode.py and
maskrcnn/decode.py. `choose` is model.decode's rule for both.
"""
from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
from PIL import Image
from torch.utils.data import Dataset

from harness.interface import DataError
from reference_models.detection.coco import CocoSplit, Target
from reference_models.vision.backend import resolve


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


# --- model.decode: which path ------------------------------------------------------------------------

def without_transform(split: CocoSplit) -> CocoSplit:
    """The same split (the same COCO index: a large annotation file is read once) without its transform."""
    bare = copy.copy(split)
    bare.transform = None
    return bare


def choose(choice: str, device: torch.device) -> str:
    """vision.backend.resolve for SSD and Mask R-CNN, with one rule of their own: auto keeps the CPU path.
    Measured side by side on an H200 with 16 cores (docs/benchmarks/pipeline_2026-12-01.md), their GPU
    path trained slower than the workers' (SSD 0.77 of the held-batch step against 0.81, Mask R-CNN 0.42
    against 0.52): the decode is the smaller part of their input work (SSD's crop search stays on the
    workers, its Pillow-exact ColorJitter takes 2.7 ms of SM time per batch of 128), so the hardware
    decoder's speed, which ResNet's probe measures, does not decide it. (Measured while SSD's box
    encoding still ran on the workers on both paths; both now encode on the device.)"""
    chosen = resolve(choice, device)  # validates the choice: a GPU backend needs CUDA
    return "cpu" if choice == "auto" else chosen
