"""What a COCO annotation file must hold to train on, and what is dropped from it as the references drop it.

Checked when a split is read (the whole file, on every rank, in well under a second for COCO 2017's
annotations after pycocotools has parsed them), so that nothing in an annotation fails later
inside pycocotools or a loader worker:

- errors, one line naming the file, the record and what to do: an image without its file_name,
  height or width, an id used twice (pycocotools would keep one and lose the other silently), an
  annotation whose category_id is not in the categories list, whose bbox is not four numbers, or
  (in the evaluation split) whose box has a negative width or height, which no detection can
  match and which COCOeval would count as a ground truth missed;
- dropped and counted, as the references and detectron2 drop them: a polygon of fewer than 3
  points (6 coordinates) or an odd number of coordinates, and an annotation left without polygons
  when masks are used (detectron2's load_coco_json; pycocotools would raise an unrelated
  TypeError on the first and read a 4-coordinate first polygon as a box); an annotation whose
  image_id is not in images (pycocotools ignores it too; a warning says how many).

The counts go into result.json's data_findings (Split.findings, prefixed with the split).

    python -c "from reference_models.detection.coco import CocoSplit; print(CocoSplit('outputs/datasets/coco_shapes', 'val').findings)"
"""
from __future__ import annotations

import contextlib
import io
import logging
import math
from pathlib import Path
from typing import Any, Optional

import torch.distributed as dist
from pycocotools.coco import COCO

from harness.interface import DataError

log = logging.getLogger("harness.coco")


def warn(message: str, *args: Any) -> None:
    """A warning on rank 0; the other ranks, which read the same file, keep it to their log files."""
    other_rank = dist.is_available() and dist.is_initialized() and dist.get_rank() != 0
    log.log(logging.INFO if other_rank else logging.WARNING, message, *args)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def valid_polygon(poly: Any) -> bool:
    """detectron2's rule: a list of an even number, at least 6, of coordinates. (Not each coordinate's
    type: COCO 2017 train's polygons hold some 40 million, and pycocotools refuses a non-number by name.)"""
    return isinstance(poly, list) and len(poly) >= 6 and len(poly) % 2 == 0


def _ids_twice(records: list[dict]) -> Any:
    seen: set = set()
    for r in records:
        if r.get("id") in seen:
            return r.get("id")
        seen.add(r.get("id"))
    return None


def audit(coco: COCO, path: Path, label_of: dict[int, int], *, evaluation: bool, with_polygons: bool,
          problems: Optional[list[str]] = None) -> dict[str, int]:
    """Check and clean the index in place (see the module docstring); the counts of what was dropped.
    A record that cannot be trained on is a DataError naming the first (and how many more there are);
    given a `problems` list, each is appended to it instead and the record left out of the index."""
    name = path.name
    found: list[str] = []
    images, anns = coco.dataset.get("images", []), coco.dataset.get("annotations", [])
    twice = _ids_twice(images)
    if twice is not None:
        found.append(f"{name}: image id {twice} appears twice in images: give every image its own id")
    twice = _ids_twice(anns)
    if twice is not None:
        found.append(f"{name}: annotation id {twice} appears twice: give every annotation its own id")
    for img in images:
        if not isinstance(img.get("file_name"), str) or not all(
                isinstance(img.get(k), int) and img[k] > 0 for k in ("height", "width")):
            found.append(f"{name}: image {img.get('id')} needs a file_name and a positive integer height and "
                         "width: fix its entry in images")
    known = sorted(label_of)
    counts = {"annotations_without_image": 0, "polygons_dropped": 0, "annotations_without_valid_polygon": 0}
    orphans, polygonless, bad = [], set(), set()
    for a in anns:
        problem = _record_problem(a, name, label_of, known, evaluation)
        if problem is not None:
            found.append(problem)
            bad.add(id(a))
            continue
        if a.get("image_id") not in coco.imgs:
            orphans.append(a)
            continue
        seg = a.get("segmentation")
        if with_polygons and isinstance(seg, list):
            kept = [p for p in seg if valid_polygon(p)]
            counts["polygons_dropped"] += len(seg) - len(kept)
            if len(kept) < len(seg):
                a["segmentation"] = kept
            if not kept:
                polygonless.add(a.get("id"))
    if found:
        if problems is None:
            more = f" (and {len(found) - 1} more problems in {name})" if len(found) > 1 else ""
            raise DataError(found[0] + more)
        problems.extend(found)
    counts["annotations_without_image"] = len(orphans)
    counts["annotations_without_valid_polygon"] = len(polygonless)
    if orphans:
        warn("warning: %s: %d annotations name an image_id that is not in its images (first: annotation %s, "
             "image_id %s); they are ignored, as pycocotools ignores them", name, len(orphans),
             orphans[0].get("id"), orphans[0].get("image_id"))
    if counts["polygons_dropped"]:
        warn("warning: %s: %d polygons of fewer than 3 points dropped, %d annotations left without one "
             "(detectron2's rule; data_findings in result.json counts them)", name, counts["polygons_dropped"],
             len(polygonless))
    # the ground truth of mask AP: COCOeval rasterises every annotation, and one without a polygon
    # cannot be; it leaves the ground truth of both parts, as detectron2 leaves it out of training
    drop = polygonless if evaluation and with_polygons else set()
    if bad or drop:
        coco.dataset["annotations"] = [a for a in anns if id(a) not in bad and a.get("id") not in drop]
        with contextlib.redirect_stdout(io.StringIO()):
            coco.createIndex()
    return counts


def _record_problem(a: dict, name: str, label_of: dict[int, int], known: list[int], evaluation: bool) -> Optional[str]:
    where = f"{name} annotation {a.get('id')} (image {a.get('image_id')})"
    if a.get("category_id") not in label_of:
        shown = ", ".join(map(str, known[:12])) + (", ..." if len(known) > 12 else "")
        return (f"{where}: category_id {a.get('category_id')!r} is not in the file's categories ({shown}): "
                "fix the annotation or add the category")
    box = a.get("bbox")
    if not isinstance(box, list) or len(box) != 4 or not all(_number(v) for v in box):
        return f"{where}: bbox {box!r} is not [x, y, width, height]: fix or remove the annotation"
    if evaluation and (box[2] < 0 or box[3] < 0):
        return (f"{where}: bbox {box} has a negative width or height, which no detection can match: fix or "
                "remove the annotation (COCO boxes are [x, y, width, height])")
    return None
