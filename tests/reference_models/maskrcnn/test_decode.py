"""Mask R-CNN's GPU decode path (reference_models/maskrcnn/decode.py) run on the CPU against the CPU
path (maskrcnn's TrainTransform) with the same random draws: the targets and the pixels to the bit
(no resampling)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from reference_models.detection import coco
from reference_models.detection.decode import EncodedCoco, without_transform
from reference_models.maskrcnn import decode
from reference_models.maskrcnn.benchmark import TrainTransform as MaskRCNNTransform
from reference_models.vision.decoders import make_decoder
from tests.reference_models.detection.pairs import seeded_pairs, small_coco

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return small_coco(tmp_path_factory)


def test_maskrcnn_batches_are_the_cpu_transform(folder):
    """The GPU path's batch (the targets packed, cut apart on the device; the images 0..1 by the
    table) is the CPU transform's, image by image and target by target, to the bit."""
    cpu = coco.CocoSplit(folder, "train", MaskRCNNTransform(0.5), keep_empty=False, with_polygons=True)
    encoded = EncodedCoco(without_transform(cpu), decode.MaskRCNNPlan(0.5), "nvimgcodec")
    theirs, items = seeded_pairs(cpu, encoded)
    out = list(decode.MaskRCNNBatches(make_decoder("pil", CPU), CPU)([decode.collate_maskrcnn(items)]))
    images, targets = out[0]
    assert any(flip for flip, _ in (p for _, p in items)) and not all(flip for flip, _ in (p for _, p in items))
    for (image, target), ours, our_target in zip(theirs, images, targets):
        assert ours.dtype == image.dtype and torch.equal(ours, image)
        assert all(our_target[k].dtype == target[k].dtype and torch.equal(our_target[k], target[k])
                   for k in ("boxes", "labels", "masks"))
