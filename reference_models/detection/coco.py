"""COCO 2017 as both MLPerf detection references read it, through pycocotools' COCO API.

    root/annotations/instances_train2017.json   root/train2017/<file_name>
    root/annotations/instances_val2017.json     root/val2017/<file_name>

The same code reads real COCO (scripts/prepare_coco2017.sh) and the embedded dataset
(reference_models/detection/generate.py). Category ids (COCO's run 1..90 with gaps) map to contiguous
labels 1..K in sorted id order, 0 being the background, as both references map them. A file name
comes from the annotation file but is only ever joined under the split's image folder: a name that
would leave it is a DataError, not a path.

    python -c "from reference_models.detection.coco import CocoSplit; s = CocoSplit('outputs/datasets/ssd_embedded', 'val'); print(len(s), s.num_classes)"
"""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import torch
from PIL import Image
from pycocotools import mask as mask_utils
from pycocotools.coco import COCO
from torch.utils.data import Dataset

from harness.interface import DataError

SPLITS = ("train", "val")


def annotation_file(root: Path, split: str) -> Path:
    return Path(root) / "annotations" / f"instances_{split}2017.json"


def check_layout(root: str | Path) -> Path:
    """The dataset folder, or a DataError naming the first missing piece and how to get it."""
    root = Path(root)
    for split in SPLITS:
        ann, images = annotation_file(root, split), root / f"{split}2017"
        for need in (ann, images):
            if not need.exists():
                raise DataError(f"{need} is missing: point dataset.path at a COCO 2017 folder "
                                "(scripts/prepare_coco2017.sh unpacks the archives into one)")
    return root


def prepare(cfg: Any) -> Path:
    """Generate the embedded dataset if it is missing (cfg.dataset.generator); check the COCO layout."""
    path = Path(cfg.dataset.path)
    if cfg.dataset.get("generator"):
        # imported here: `python -m reference_models.detection.generate` must not find itself imported
        from reference_models.detection.generate import GeneratorSpec, ensure

        ensure(GeneratorSpec(**cfg.dataset.generator), path)
    return check_layout(path)


def load_coco(path: Path) -> COCO:
    """pycocotools' COCO index of an annotation file, without its progress prints."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return COCO(str(path))
    except (ValueError, KeyError, TypeError) as err:
        raise DataError(f"{path} is not a COCO annotation file ({type(err).__name__}: {err})") from None


@dataclass
class Target:
    """One image's annotations in the image's own pixels: boxes x1, y1, x2, y2."""

    image_id: int
    boxes: torch.Tensor  # (n, 4) float32
    labels: torch.Tensor  # (n,) int64, 1..K
    polygons: list[list[list[float]]]  # per object, COCO's polygon lists (masks are drawn from them on demand)
    size: tuple[int, int]  # (height, width) of the stored image

    def masks(self) -> torch.Tensor:
        """(n, height, width) uint8 masks of the polygons, as pycocotools rasterises them."""
        h, w = self.size
        if not self.polygons:
            return torch.zeros((0, h, w), dtype=torch.uint8)
        out = [mask_utils.decode(mask_utils.merge(mask_utils.frPyObjects(p, h, w))) for p in self.polygons]
        return torch.from_numpy(np.stack(out))


def training_loader(train: "CocoSplit", num_classes: int, ctx: Any, batch_size: int, workers: int,
                    collate: Optional[Callable] = None) -> Any:
    """This rank's loader over the training split (harness.interface.loader), after checking that the
    split has the evaluation split's categories and fills at least one global batch."""
    from harness.interface.loader import make_loader

    if train.num_classes != num_classes:
        raise DataError(f"train2017 has {train.num_classes - 1} categories, val2017 {num_classes - 1}")
    loader = make_loader(train, ctx, batch_size=batch_size, workers=workers, collate=collate)
    if len(loader) == 0:
        raise DataError(f"{len(train)} training images cannot fill one global batch of {batch_size * ctx.world_size}")
    return loader


class CocoSplit(Dataset):
    """One split of a COCO-format dataset: (PIL image, Target) pairs, then `transform` applied to them.

    keep_empty: keep images without usable annotations (evaluation keeps every image; training drops
    them as both references do). include_crowd: keep iscrowd boxes (the SSD reference trains on them,
    maskrcnn-benchmark drops them). with_polygons: carry segmentations (Mask R-CNN).
    """

    def __init__(self, root: str | Path, split: str, transform: Optional[Callable[[Image.Image, Target], Any]] = None,
                 keep_empty: bool = True, include_crowd: bool = False, with_polygons: bool = False,
                 limit: Optional[int] = None):
        root = check_layout(root)
        self.images_dir = (root / f"{split}2017").resolve()
        self.coco = load_coco(annotation_file(root, split))
        self.transform = transform
        self.include_crowd, self.with_polygons = include_crowd, with_polygons
        cat_ids = sorted(self.coco.getCatIds())
        if not cat_ids:
            raise DataError(f"{annotation_file(root, split)} lists no categories")
        self.label_of = {cid: i + 1 for i, cid in enumerate(cat_ids)}
        self.category_of = {i: cid for cid, i in self.label_of.items()}
        ids = sorted(self.coco.getImgIds())
        if not keep_empty:
            ids = [i for i in ids if self._usable(self.coco.imgToAnns.get(i, []))]
        self.ids = ids[:limit] if limit else ids
        if not self.ids:
            raise DataError(f"{annotation_file(root, split)} holds no usable images")

    @property
    def num_classes(self) -> int:
        """Categories plus the background."""
        return len(self.label_of) + 1

    def _usable(self, anns: list[dict]) -> list[dict]:
        keep = []
        for a in anns:
            x, y, w, h = a["bbox"]
            if w > 1 and h > 1 and (self.include_crowd or not a.get("iscrowd", 0)) \
                    and (not self.with_polygons or isinstance(a.get("segmentation"), list)):
                keep.append(a)
        return keep

    def image_path(self, info: dict) -> Path:
        path = (self.images_dir / str(info["file_name"])).resolve()
        if self.images_dir not in path.parents:
            raise DataError(f"image {info.get('id')}: file_name {info['file_name']!r} points outside {self.images_dir}")
        return path

    def target(self, index: int) -> Target:
        image_id = self.ids[index]
        info = self.coco.imgs[image_id]
        anns = self._usable(self.coco.imgToAnns.get(image_id, []))
        boxes = torch.tensor([[a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2], a["bbox"][1] + a["bbox"][3]]
                              for a in anns], dtype=torch.float32).reshape(-1, 4)
        labels = torch.tensor([self.label_of[a["category_id"]] for a in anns], dtype=torch.int64)
        polygons = [a["segmentation"] for a in anns] if self.with_polygons else []
        return Target(image_id, boxes, labels, polygons, (int(info["height"]), int(info["width"])))

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int) -> Any:
        target = self.target(index)
        path = self.image_path(self.coco.imgs[target.image_id])
        try:
            with Image.open(path) as img:
                image = img.convert("RGB")
        except OSError as err:
            raise DataError(f"{path} cannot be read as an image ({err})") from None
        if image.size != (target.size[1], target.size[0]):
            raise DataError(f"{path} is {image.size[0]}x{image.size[1]}, its annotation says "
                            f"{target.size[1]}x{target.size[0]}")
        return self.transform(image, target) if self.transform else (image, target)
