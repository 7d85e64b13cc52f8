"""openimages-mlperf as the RetinaNet reference reads it: COCO JSON through pycocotools, in OpenImages' folders.

    root/train/labels/openimages-mlperf.json        root/train/data/<file_name>
    root/validation/labels/openimages-mlperf.json   root/validation/data/<file_name>

That is the layout MLCommons' download_openimages_mlperf.sh writes (fiftyone's COCO export of the 264
classes, iscrowd set from IsGroupOf); reference_models/detection reads it through its `Layout`, and
the embedded dataset is generated in the same layout (detection/generate.py). Categories map to the
classifier's outputs 0..K-1 in id order (the reference takes category_id as the label, which its
0-based contiguous ids make the same), with no background output.

As the reference reads it (coco_utils.get_openimages): group boxes (iscrowd 1) are trained on, boxes
are cut to the image and those left empty dropped; the shared reader also leaves out boxes with a
side of 1 pixel or less and training images without a box (docs/retinanet.md). The only augmentation
is a horizontal flip with probability 0.5; normalisation and the resize to 800x800 happen in the model
(torchvision's transform), on the device.

    python -m harness.check_data model=retinanet dataset=openimages
"""
from __future__ import annotations

import random
from functools import partial
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from torchvision.transforms.functional import pil_to_tensor

from reference_models.detection.check_data import check as check_coco
from reference_models.detection.coco import Target
from reference_models.detection.files import Layout, check_layout

OPENIMAGES = Layout(images="{split}/data", annotations="{split}/labels/openimages-mlperf.json",
                    folders=("train", "validation"),
                    folder_hint="an openimages-mlperf folder (MLCommons' download_openimages_mlperf.sh writes one)",
                    images_hint="MLCommons' download_openimages_mlperf.sh downloads them")
SPLITS = {"train": {"keep_empty": False, "include_crowd": True},  # as RetinaNetBenchmark reads the splits
          "val": {"keep_empty": True, "include_crowd": True}}

# python -m harness.check_data: every record and image, as the model reads them
check = partial(check_coco, splits=SPLITS, layout=OPENIMAGES)


def prepare(cfg: Any) -> Path:
    """Generate the embedded dataset if it is missing (cfg.dataset.generator); check the layout."""
    path = Path(cfg.dataset.path)
    if cfg.dataset.get("generator"):
        # imported here: `python -m reference_models.detection.generate` must not find itself imported
        from reference_models.detection.generate import GeneratorSpec, ensure

        ensure(GeneratorSpec(**cfg.dataset.generator), path, OPENIMAGES)
    return check_layout(path, OPENIMAGES)


def torchvision_target(target: Target) -> dict[str, torch.Tensor]:
    """boxes x1, y1, x2, y2 cut to the image, those left empty dropped (the reference's
    ConvertCocoPolysToMask), and labels 0..K-1 (the split's 1..K, which keep 0 for SSD's background)."""
    h, w = target.size
    boxes = target.boxes.clone()
    boxes[:, 0::2].clamp_(min=0, max=w)
    boxes[:, 1::2].clamp_(min=0, max=h)
    keep = (boxes[:, 3] > boxes[:, 1]) & (boxes[:, 2] > boxes[:, 0])
    return {"boxes": boxes[keep], "labels": target.labels[keep] - 1}


class TrainTransform:
    """(PIL image, Target) -> (uint8 image (3, H, W) at its stored size, torchvision target), flipped
    with probability p. uint8 crosses to the device at a quarter of float32's bytes; `to_unit` makes it
    0..1 there, at the top of the loss."""

    def __init__(self, flip_probability: float):
        self.p = flip_probability

    def __call__(self, image: Image.Image, target: Target) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        pixels, truth = pil_to_tensor(image), torchvision_target(target)
        if random.random() < self.p:
            pixels = pixels.flip(-1)
            boxes, w = truth["boxes"], target.size[1]
            truth["boxes"] = torch.stack([w - boxes[:, 2], boxes[:, 1], w - boxes[:, 0], boxes[:, 3]], dim=1)
        return pixels, truth


def eval_transform(image: Image.Image, target: Target) -> tuple[torch.Tensor, int]:
    return pil_to_tensor(image), target.image_id


def to_unit(pixels: torch.Tensor) -> torch.Tensor:
    """uint8 0..255 -> float 0..1, torchvision's ToTensor on the device."""
    return pixels.float().div_(255)


def as_lists(batch: list) -> tuple:
    return tuple(list(x) for x in zip(*batch))
