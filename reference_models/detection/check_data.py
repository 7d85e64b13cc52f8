"""A COCO-format folder checked as SSD, Mask R-CNN or RetinaNet would read it, without training
(python -m harness.check_data).

Each split is read with the model's settings (crowd boxes, polygons), every record problem of its
annotation file and every listed image missing from its folder is a problem line, every image the
model uses is decoded (or, decode=False, its header and end read) and compared with its listed
size, and what the loader drops or converts as the references do is counted.

    python -m harness.check_data model=maskrcnn dataset=maskrcnn_coco2017
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.interface.findings import DataReport
from harness.interface.images import probe_all
from reference_models.detection.coco import CocoSplit, check_layout
from reference_models.detection.files import COCO2017, Layout

MEANING = {
    "annotations_without_image": "annotations whose image_id is not in images: ignored, as pycocotools ignores them",
    "polygons_dropped": "polygons of fewer than 3 points dropped (detectron2's rule)",
    "annotations_without_valid_polygon": "annotations left without a polygon: dropped",
    "boxes_too_small": "boxes with a side of 1 pixel or less: left out of training (the references' rule)",
    "crowd_annotations_dropped": "crowd annotations: left out of training (maskrcnn-benchmark's rule)",
    "images_without_annotations": "images without a usable annotation: left out of training (both references')",
    "cmyk_to_rgb": "CMYK images: converted to RGB as they are read",
    "greyscale_to_rgb": "greyscale (or other non-RGB) images: converted to RGB as they are read",
}


def check(cfg: Any, root: Path, report: DataReport, decode: bool, splits: dict[str, dict[str, Any]],
          layout: Layout = COCO2017) -> None:
    """Fill `report` for the folder; `splits` gives each split's CocoSplit options as the model reads it,
    `layout` where its files are."""
    if report.attempt(check_layout, root, layout) is None:
        return
    read: dict[str, CocoSplit] = {}
    train_name, val_name = layout.folders
    for split, options in splits.items():
        problems: list[str] = []
        coco = report.attempt(CocoSplit, root, split, problems=problems, layout=layout, **options)
        report.problems.extend(problems)
        if coco is None:
            continue
        read[split] = coco
        report.facts.append(f"{layout.name(split)}: {len(coco.coco.imgs):,} images ({len(coco):,} used), "
                            f"{len(coco.coco.anns):,} annotations, {coco.num_classes - 1} categories")
        _check_images(coco, report, decode)
        report.counted(layout.name(split), coco.findings, MEANING)
    if len(read) == 2 and read["train"].label_of != read["val"].label_of:
        report.problems.append(f"{train_name} has categories {sorted(read['train'].label_of)} and {val_name} "
                               f"{sorted(read['val'].label_of)}: both annotation files need the same list")
    train = read.get("train")
    global_batch = int(cfg.model.batch_size) * int(cfg.gpus) * int(cfg.nodes)
    if train is not None and len(train) < global_batch:
        report.problems.append(f"{train_name} has {len(train)} usable images, fewer than one global batch of "
                               f"{global_batch} (model.batch_size x gpus): add images or lower model.batch_size")


def _check_images(coco: CocoSplit, report: DataReport, decode: bool) -> None:
    items, image_of = [], {}
    for image_id in coco.ids:
        info = coco.coco.imgs[image_id]
        path = str(coco.image_path(info))
        items.append((path, (int(info["width"]), int(info["height"]))))
        image_of[path] = image_id
    facts = probe_all(items, decode=decode)
    verb = "decoded" if decode else "read the headers of"
    report.facts.append(f"{coco.layout.name(coco.split)}: {verb} {len(items):,} images")
    converted = {"cmyk_to_rgb": 0, "greyscale_to_rgb": 0}
    for f in facts:
        if f.problem == "is missing" or f.path in coco.absent:
            continue  # the split's reading said so already
        if f.problem is not None:
            report.problems.append(f"{f.path} (image {image_of[f.path]} of {coco.annotations.name}) {f.problem}: "
                                   "replace it with the dataset's own file")
        elif f.mode == "CMYK":
            converted["cmyk_to_rgb"] += 1
        elif f.mode != "RGB":
            converted["greyscale_to_rgb"] += 1
    report.counted(coco.layout.name(coco.split), converted, MEANING)
