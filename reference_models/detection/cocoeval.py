"""COCO mAP@[0.5:0.95] through pycocotools' COCOeval, once, on rank 0, over every rank's detections.

Each rank detects on its contiguous shard of the evaluation images and hands in its detections in
COCO's results format; rank 0 scores all of them against the ground truth with COCOeval (bbox, and
segm for masks) and every rank receives the result (harness.interface.gather.score_on_main), so the
quality is what one rank evaluating every image would get.

    python -c "from reference_models.detection.cocoeval import coco_ap; help(coco_ap)"
"""
from __future__ import annotations

import contextlib
import io
import logging
from typing import Optional, Sequence

from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from harness.interface.gather import score_on_main
from harness.interface.grouping import GroupedBatchSampler
from harness.interface.sharding import bounds
from harness.interface.uninterruptible import uninterruptible

log = logging.getLogger("harness.cocoeval")
IOU_TYPES = {"BBOX": "bbox", "SEGM": "segm"}


def coco_ap(coco_gt: COCO, detections: Sequence[dict], iou_type: str = "bbox") -> float:
    """AP averaged over IoU 0.50:0.95, all areas, 100 detections per image (COCOeval's stats[0]).
    Every ground-truth image counts, with or without detections; no detection at all is 0."""
    if not detections:
        return 0.0
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        found = coco_gt.loadRes(list(detections))
        evaluator = COCOeval(coco_gt, found, iou_type)
        evaluator.evaluate()
        with uninterruptible():  # its precision table is filled under a bare `except: pass`
            evaluator.accumulate()
        evaluator.summarize()
    log.debug("COCOeval %s:\n%s", iou_type, printed.getvalue())
    return float(evaluator.stats[0])


def score_parts(coco_gt: COCO, detections: Sequence[dict], parts: Sequence[str]) -> dict[str, float]:
    """{part: AP} for parts among BBOX and SEGM; a detection carries a bbox, a segmentation or both,
    and each is scored on its own (COCO's loadRes would read a box as a segmentation otherwise)."""
    out = {}
    for part in parts:
        key = "bbox" if part == "BBOX" else "segmentation"
        mine = [{"image_id": d["image_id"], "category_id": d["category_id"], key: d[key], "score": d["score"]}
                for d in detections if key in d]
        out[part] = coco_ap(coco_gt, mine, IOU_TYPES[part])
    return out


def evaluate_on_ranks(coco_gt: COCO, detections: Sequence[dict], parts: Sequence[str]) -> dict[str, float]:
    """score_parts over every rank's detections, computed on rank 0 and returned on every rank."""
    return score_on_main(list(detections), lambda everything: score_parts(coco_gt, everything, parts))


def my_images(n: int, rank: int, world_size: int, batch: int = 1) -> range:
    """This rank's evaluation images: a contiguous run of whole batches of the one-rank order, so that
    every image is batched with the same neighbours whatever the world size (a batch is padded to its
    largest image, which moves a detector's outputs), all images over all ranks, none twice."""
    first, stop = bounds(-(-n // batch), rank, world_size)
    return range(first * batch, min(stop * batch, n))


def my_batches(n: int, rank: int, world_size: int, batch: int, groups: Optional[Sequence[int]] = None
               ) -> list[list[int]]:
    """This rank's evaluation batches, a contiguous run of the one-rank batches as my_images takes
    them (every image batched with the same neighbours whatever the world size). groups: a group id
    per image (aspect ratio, harness.interface.grouping): the one-rank batches are each group's images
    in index order, cut into batches and ordered by their first image, as the reference batches its
    test images (maskrcnn-benchmark groups them as its training images), so that an image is padded
    in evaluation as it was in training."""
    if groups is None:
        every = [list(range(a, min(a + batch, n))) for a in range(0, n, batch)]
    else:
        if len(groups) != n:
            raise ValueError(f"{len(groups)} group ids for {n} images: one per image")
        every = list(GroupedBatchSampler(groups, batch, rank=0, world_size=1, seed=0, shuffle=False,
                                         drop_last=False))
    first, stop = bounds(len(every), rank, world_size)
    return every[first:stop]
