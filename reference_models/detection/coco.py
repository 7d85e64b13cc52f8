"""COCO 2017 as both MLPerf detection references read it, through pycocotools' COCO API.

    root/annotations/instances_train2017.json   root/train2017/<file_name>
    root/annotations/instances_val2017.json     root/val2017/<file_name>

The same code reads real COCO (scripts/prepare_coco2017.sh) and the embedded dataset
(reference_models/detection/generate.py), and, given another `files.Layout`, the same COCO JSON in
another folder layout (RetinaNet's openimages-mlperf). Category ids (COCO's run 1..90 with gaps) map to contiguous
labels 1..K in sorted id order, 0 being the background, as both references map them. A file name
comes from the annotation file but is only ever joined under the split's image folder: a name that
would leave it is a DataError, not a path.

Reading a split checks its annotations (reference_models/detection/records.py: bad records
are one-line errors, degenerate polygons are dropped and counted) and that every image it lists
is in its folder as a regular file; the models read the headers and ends of their share of both
splits when they are built, so a bad image does not wait for the epoch or the evaluation that reads
it. An image that fails in a loader worker is named with its image id and annotation file
(harness.interface.loader). The folder's layout and the annotation files' lists are checked by
reference_models/detection/files.py.

    python -c "from reference_models.detection.coco import CocoSplit; s = CocoSplit('outputs/datasets/ssd_embedded', 'val'); print(len(s), s.num_classes)"
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch
from PIL import Image
from pycocotools import mask as mask_utils
from torch.utils.data import Dataset

from harness.interface import DataError
from harness.interface.findings import SampleFlags
from harness.interface.images import DECODE_ERRORS, file_kind, find_problems, summary_of, what_is_wrong
from reference_models.detection import records
from reference_models.detection.files import COCO2017, Layout, check_layout, load_coco

REPAIRS = ("cmyk_to_rgb", "greyscale_to_rgb")  # what reading an image converts, per file (data_findings)


def prepare(cfg: Any) -> Path:
    """Generate the embedded dataset if it is missing (cfg.dataset.generator); check the COCO layout."""
    path = Path(cfg.dataset.path)
    if cfg.dataset.get("generator"):
        # imported here: `python -m reference_models.detection.generate` must not find itself imported
        from reference_models.detection.generate import GeneratorSpec, ensure

        ensure(GeneratorSpec(**cfg.dataset.generator), path)
    return check_layout(path)


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


def training_split(ctx: Any, transform: Callable, **options: Any) -> "CocoSplit":
    """The training split as a model reads it (images without usable annotations dropped; `options`:
    CocoSplit's), this rank's share of its files checked now: a bad image is found before an epoch
    reaches it."""
    from harness.interface.loader import check_command
    from harness.interface.sharding import shard_range

    train = CocoSplit(ctx.data_dir, "train", transform, keep_empty=False, **options)
    train.check_images(shard_range(len(train), ctx.rank, ctx.world_size), check_command(ctx))
    return train


def training_loader(train: Any, num_classes: int, ctx: Any, batch_size: int, workers: int,
                    collate: Optional[Callable] = None, groups: Optional[Sequence[int]] = None,
                    drop_last: bool = True) -> Any:
    """This rank's loader over the training split (harness.interface.loader), after checking that the
    split has the evaluation split's categories and fills at least one global batch. groups: a group
    id per image (batches of one group each, harness.interface.grouping)."""
    from harness.interface.loader import make_loader

    if train.num_classes != num_classes:
        raise DataError(f"{train.layout.name('train')} has {train.num_classes - 1} categories, "
                        f"{train.layout.name('val')} {num_classes - 1}")
    loader = make_loader(train, ctx, batch_size=batch_size, workers=workers, collate=collate, groups=groups,
                         drop_last=drop_last)
    if len(loader) == 0:
        raise DataError(f"{len(train)} training images cannot fill one global batch of {batch_size * ctx.world_size}")
    return loader


def split_findings(train: Optional["CocoSplit"], val: Optional["CocoSplit"]) -> dict[str, int]:
    """What the COCO splits dropped or converted (reference_models/detection/records.py); every rank
    calls it (the converted files are merged over ranks). None: mode=throughput read no dataset."""
    if train is None or val is None:
        return {}
    return {**train.data_findings(), **val.data_findings()}


class CocoSplit(Dataset):
    """One split of a COCO-format dataset: (PIL image, Target) pairs, then `transform` applied to them.

    keep_empty: keep images without usable annotations (the evaluation split keeps every image;
    training drops them as both references do). include_crowd: keep iscrowd boxes (the SSD reference
    trains on them, maskrcnn-benchmark drops them). with_polygons: carry segmentations (Mask R-CNN),
    polygons of fewer than 3 points dropped (detectron2's rule). The annotations are checked when the
    split is read (reference_models/detection/records.py) and every listed image must exist;
    `check_images` reads the headers and ends of some (this rank's share of each split, when the model is
    built). layout: where the split's files are (files.COCO2017 unless the model reads another).
    `findings` counts what was dropped; `flags` what the workers converted (greyscale or CMYK to RGB).
    """

    def __init__(self, root: str | Path, split: str, transform: Optional[Callable[[Image.Image, Target], Any]] = None,
                 keep_empty: bool = True, include_crowd: bool = False, with_polygons: bool = False,
                 limit: Optional[int] = None, problems: Optional[list[str]] = None, layout: Layout = COCO2017):
        root = check_layout(root, layout)
        self.problems = problems  # None: the first problem is a DataError; a list: each is kept there (check_data)
        self.split, self.layout = split, layout
        self.images_dir = layout.images_dir(root, split).resolve()
        self.annotations = layout.annotation_file(root, split)
        self.coco = load_coco(self.annotations)
        self.transform = transform
        self.include_crowd, self.with_polygons = include_crowd, with_polygons
        cat_ids = sorted(self.coco.getCatIds())
        if not cat_ids:
            raise DataError(f"{self.annotations} lists no categories")
        self.label_of = {cid: i + 1 for i, cid in enumerate(cat_ids)}
        self.category_of = {i: cid for cid, i in self.label_of.items()}
        self.findings = records.audit(self.coco, self.annotations, self.label_of, evaluation=keep_empty,
                                      with_polygons=with_polygons, problems=problems)
        ids = sorted(self.coco.getImgIds())
        if not keep_empty:
            self._count_training_drops(ids)
            ids = [i for i in ids if self._usable(self.coco.imgToAnns.get(i, []))]
        self.ids = ids[:limit] if limit else ids
        if not self.ids:
            raise DataError(f"{self.annotations} holds no usable images: {self._why_none_usable()}")
        self._check_listed_files()
        self.flags = SampleFlags(len(self.ids), REPAIRS)

    @property
    def num_classes(self) -> int:
        """Categories plus the background."""
        return len(self.label_of) + 1

    def _keeps(self, a: dict) -> tuple[bool, bool, bool]:
        """(box large enough, crowd allowed, masks usable) for an annotation."""
        _, _, w, h = a["bbox"]
        seg = a.get("segmentation")
        return (w > 1 and h > 1, self.include_crowd or not a.get("iscrowd", 0),
                not self.with_polygons or (isinstance(seg, list) and len(seg) > 0))

    def _usable(self, anns: list[dict]) -> list[dict]:
        return [a for a in anns if all(self._keeps(a))]

    def _count_training_drops(self, ids: list[int]) -> None:
        """What training leaves out, as the references leave it out: boxes of a side <= 1 pixel (the
        references' empty boxes), crowd regions (Mask R-CNN), annotations without a usable polygon
        (counted by the audit), and then images left without annotations."""
        small = crowd = images = 0
        for i in ids:
            anns = self.coco.imgToAnns.get(i, [])
            for a in anns:
                box, crowd_ok, _ = self._keeps(a)
                small += not box
                crowd += box and not crowd_ok
            images += not self._usable(anns)
        self.findings.update(boxes_too_small=small, crowd_annotations_dropped=crowd, images_without_annotations=images)

    def _why_none_usable(self) -> str:
        listed = len(self.coco.imgs)
        if not listed:
            return "its images list is empty; use the dataset's own annotation file"
        f = self.findings
        dropped = {"boxes of a side of 1 pixel or less": f.get("boxes_too_small", 0),
                   "crowd annotations": f.get("crowd_annotations_dropped", 0),
                   "annotations without a polygon of 3 or more points": f.get("annotations_without_valid_polygon", 0),
                   "annotations of no listed image": f.get("annotations_without_image", 0)}
        why = ", ".join(f"{n:,} {what}" for what, n in dropped.items() if n) or "no annotation at all"
        return (f"none of its {listed:,} images has an annotation training can use ({why}, of "
                f"{len(self.coco.anns):,} annotations); fix the annotations or use the dataset's own file")

    def _check_listed_files(self) -> None:
        """Every image the split uses is in its folder: one listing of the folder, not a stat per file."""
        try:
            present = {e.name for e in os.scandir(self.images_dir) if e.is_file()}  # a link to a regular file is one
        except OSError as err:
            raise DataError(f"{self.images_dir} cannot be listed ({err.strerror or err})") from None
        missing = []
        for image_id in self.ids:
            info = self.coco.imgs[image_id]
            name = str(info["file_name"])
            if name not in present and not ("/" in name and self.image_path(info).is_file()):
                missing.append((image_id, name, self._not_a_file(self.images_dir / name)))
        what_to_do = (f"put the split's images in {self.images_dir} ({self.layout.images_hint}) "
                      "or remove their entries from the annotation file")
        lines = [f"{self.images_dir / name} {what} (image {image_id} of {self.annotations.name}"
                 for image_id, name, what in missing]
        self.absent = {str(self.images_dir / name) for _, name, _ in missing}  # said once, here
        if missing and self.problems is not None:
            self.problems.extend(f"{line}): {what_to_do}" for line in lines)
        elif missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            raise DataError(f"{lines[0]}{more}): {what_to_do}")

    @staticmethod
    def _not_a_file(path: Path) -> str:
        """What a listed image that is not a regular file is: missing, or a FIFO (whose read never returns)."""
        try:
            return f"is {file_kind(path.stat().st_mode)}, not an image file"
        except OSError:
            return "is missing"

    def check_images(self, indices: Sequence[int], hint: str = "") -> None:
        """A DataError naming the first of these images whose header does not open, whose size differs
        from its annotation or whose JPEG is cut short, and how many more there are."""
        items, image_of = [], {}
        for index in indices:
            info = self.coco.imgs[self.ids[index]]
            path = self.image_path(info)
            items.append((path, (int(info["width"]), int(info["height"]))))
            image_of[str(path)] = info["id"]
        problems = find_problems(items)
        if problems:
            lists = f"; {hint} lists every image with a problem" if hint else ""
            named = [(f"{path} (image {image_of[path]} of {self.annotations.name})", problem)
                     for path, problem in problems]
            raise DataError(summary_of(named, f"replace it with the dataset's own file{lists}"))

    def image_sizes(self) -> list[tuple[int, int]]:
        """(height, width) of each image as its annotation gives it (images[].height and width), no file
        read: what aspect-ratio grouping batches by. The audit has checked them when the split was read
        (a missing or bad one is a DataError there); a split read with a problems list
        (check_data) may still hold one, a DataError here."""
        sizes = []
        for image_id in self.ids:
            info = self.coco.imgs[image_id]
            h, w = info.get("height"), info.get("width")
            if not (isinstance(h, int) and isinstance(w, int) and h > 0 and w > 0):
                raise DataError(f"{self.annotations.name}: image {image_id} needs a positive integer height and "
                                "width to be batched by aspect ratio: fix its entry in images, or set "
                                "model.aspect_grouping=false")
            sizes.append((h, w))
        return sizes

    def data_findings(self) -> dict[str, int]:
        """What the split dropped (the audit) and what the workers converted, prefixed with the split;
        the converted files are merged over ranks (a collective: every rank calls it)."""
        found = {**self.findings, **self.flags.counts()}
        return {f"{self.split}_{k}": v for k, v in found.items()}

    def image_path(self, info: dict) -> Path:
        path = (self.images_dir / str(info["file_name"])).resolve()
        if self.images_dir not in path.parents:
            raise DataError(f"image {info.get('id')}: file_name {info['file_name']!r} points outside {self.images_dir}")
        return path

    def describe_sample(self, index: int) -> str:
        image_id = self.ids[index]
        try:
            where = str(self.image_path(self.coco.imgs[image_id]))
        except DataError:
            where = f"{self.images_dir}/{self.coco.imgs[image_id].get('file_name')!r}"
        return f"{where} (image {image_id} of {self.annotations.name})"

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
        where = f"{path} (image {target.image_id} of {self.annotations.name})"
        try:
            with Image.open(path) as img:
                if img.mode == "CMYK":
                    self.flags.mark(index, "cmyk_to_rgb")
                elif img.mode != "RGB":
                    self.flags.mark(index, "greyscale_to_rgb")
                image = img.convert("RGB")
        except FileNotFoundError:
            raise DataError(f"{where} is missing (it was there when the split was read): restore it") from None
        except DECODE_ERRORS as err:
            raise DataError(f"{where} {what_is_wrong(err)}: replace it with the dataset's own file") from None
        if image.size != (target.size[1], target.size[0]):
            raise DataError(f"{where} is {image.size[0]}x{image.size[1]}, its annotation says "
                            f"{target.size[1]}x{target.size[0]}: replace the file or fix its height and width")
        return self.transform(image, target) if self.transform else (image, target)
