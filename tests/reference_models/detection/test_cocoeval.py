"""COCO mAP through pycocotools: perfect detections score 1, none score 0, box and mask are scored apart."""
from __future__ import annotations

import signal
import types

import numpy as np
import pytest
from pycocotools import cocoeval as pycocoeval

from reference_models.detection.cocoeval import coco_ap, my_batches, my_images, score_parts
from reference_models.detection.coco import load_coco
from reference_models.detection.generate import GeneratorSpec, ensure


@pytest.fixture(scope="module")
def gt(tmp_path_factory):
    root = ensure(GeneratorSpec(train_images=2, val_images=6, seed=2), tmp_path_factory.mktemp("eval") / "d")
    return load_coco(root / "annotations" / "instances_val2017.json")


def _perfect(gt):
    out = []
    for ann in gt.anns.values():
        rle = gt.annToRLE(ann)
        if isinstance(rle["counts"], bytes):  # annToRLE hands back an RLE annotation's own dict: decoded once
            rle["counts"] = rle["counts"].decode("ascii")
        out.append({"image_id": ann["image_id"], "category_id": ann["category_id"], "bbox": ann["bbox"],
                    "segmentation": rle, "score": 1.0})
    return out


def test_ground_truth_as_detections_scores_one_for_boxes_and_masks(gt):
    assert score_parts(gt, _perfect(gt), ["BBOX", "SEGM"]) == {"BBOX": pytest.approx(1.0), "SEGM": pytest.approx(1.0)}


def test_a_ctrl_c_while_coco_eval_accumulates_stops_the_run_and_scores_nothing(gt, monkeypatch):
    # COCOeval.accumulate fills its precision table under a bare `except: pass`: a Ctrl-C landing there was
    # swallowed, the fill cut short (a lower mAP, reported as the evaluation's) and the run went on
    class Landing:  # the recall thresholds' indices, iterated inside that try: the Ctrl-C lands at the first
        def __init__(self, inds):
            self.inds = inds

        def __iter__(self):
            for i, x in enumerate(self.inds):
                if i == 0 and not landed:
                    landed.append(True)
                    signal.raise_signal(signal.SIGINT)
                yield x

    landed: list[bool] = []
    numpy_there = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    numpy_there.searchsorted = lambda *a, **k: Landing(np.searchsorted(*a, **k))
    monkeypatch.setattr(pycocoeval, "np", numpy_there)
    saved = signal.signal(signal.SIGINT, signal.default_int_handler)  # as a run has it
    try:
        with pytest.raises(KeyboardInterrupt):
            coco_ap(gt, _perfect(gt), "bbox")
    finally:
        signal.signal(signal.SIGINT, saved)
    assert landed
    monkeypatch.undo()
    assert coco_ap(gt, _perfect(gt), "bbox") == pytest.approx(1.0)  # nothing left held


def test_no_detections_score_zero_and_missed_images_count(gt):
    assert coco_ap(gt, [], "bbox") == 0.0
    first = min(gt.getImgIds())
    some = [d for d in _perfect(gt) if d["image_id"] == first]
    assert 0.0 < score_parts(gt, some, ["BBOX"])["BBOX"] < 1.0


def test_rank_shards_are_whole_batches_covering_every_image_once():
    assert [i for r in range(3) for i in my_images(10, r, 3)] == list(range(10))
    shards = [list(my_images(10, r, 2, batch=4)) for r in range(2)]
    assert shards == [[0, 1, 2, 3, 4, 5, 6, 7], [8, 9]]  # batches 0-3, 4-7 | 8-9, as one rank batches them


def test_rank_batches_without_groups_are_my_images_cut_into_batches():
    for world in (1, 2, 3):
        for r in range(world):
            mine = list(my_images(11, r, world, batch=4))
            assert [i for b in my_batches(11, r, world, 4) for i in b] == mine
            assert all(len(b) == 4 for b in my_batches(11, r, world, 4)[:-1])


def test_grouped_rank_batches_hold_one_group_and_the_same_neighbours_on_any_world():
    groups = [0, 1, 1, 0, 0, 1, 0, 0, 1, 1, 1, 0, 1]
    one = my_batches(len(groups), 0, 1, 3, groups)
    assert one == [[0, 3, 4], [1, 2, 5], [6, 7, 11], [8, 9, 10], [12]]  # by group, ordered by first image
    for world in (2, 3, 4):
        ranks = [my_batches(len(groups), r, world, 3, groups) for r in range(world)]
        assert [b for part in ranks for b in part] == one  # whole batches, the one-rank batches in order
