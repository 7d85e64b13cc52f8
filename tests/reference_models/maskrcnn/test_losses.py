"""Mask R-CNN's losses and detections on one fixed batch equal those of the plain torchvision path.

The golden file (golden_losses.json beside this test) was written by torchvision's own MaskRCNN pieces
(RegionProposalNetwork, RoIHeads, MultiScaleRoIAlign, per-image NMS) as reference_models/maskrcnn/model.py
assembled them before the batched proposal, matching and pooling code replaced them; the model built now
must give the same loss terms for the same weights, batch and random seed (training mode, two steps with
an SGD update between them, so gradients count too) and the same detections in evaluation. The batched
code draws the samplers' random numbers in torchvision's order, so the comparison runs on an ordinary
batch, not one chosen to make sampling deterministic. Rewrite the file only for a deliberate change of
the model's arithmetic (and say why in the commit):

    UPDATE_MASKRCNN_GOLDEN=1 python -m pytest tests/reference_models/maskrcnn/test_losses.py
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from harness.config import compose
from reference_models.maskrcnn.model import build_model

GOLDEN = Path(__file__).resolve().parent / "golden_losses.json"
CLASSES = 4
# float32 on a CPU: the batched code sums and pools in another order than torchvision's per-image loops
RTOL, ATOL = 1e-4, 1e-6


def _hp():
    cfg = compose(["model=maskrcnn", "+debug=maskrcnn", "seed=1", "device=cpu", "model.detections_per_image=20"])
    return OmegaConf.to_object(cfg.model)


def _batch(n: int = 3, h: int = 120, w: int = 152, objects: int = 3):
    """Images of two sizes (the transform pads them into one batch) with boxes and rectangular masks."""
    gen = torch.Generator().manual_seed(5)
    images, targets = [], []
    for i in range(n):
        hi, wi = (h, w) if i % 2 == 0 else (h - 24, w + 8)
        xy = torch.rand(objects, 2, generator=gen) * torch.tensor([wi * 0.6, hi * 0.6])
        wh = 12 + torch.rand(objects, 2, generator=gen) * torch.tensor([wi * 0.35, hi * 0.35])
        boxes = torch.cat([xy, xy + wh], dim=1)
        masks = torch.zeros(objects, hi, wi, dtype=torch.uint8)
        for m, (x1, y1, x2, y2) in zip(masks, boxes.int().tolist()):
            m[y1:y2, x1:x2] = 1
        images.append(torch.rand(3, hi, wi, generator=gen))
        targets.append({"boxes": boxes, "masks": masks,
                        "labels": torch.randint(1, CLASSES, (objects,), generator=gen)})
    return images, targets


def _run() -> dict:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = build_model(_hp(), CLASSES)
    images, targets = _batch()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.train()
    torch.manual_seed(1)  # the RPN's and the heads' samplers draw from here
    steps = []
    for _ in range(2):
        losses = model(images, targets)
        steps.append({k: v.item() for k, v in sorted(losses.items())})
        optimizer.zero_grad()
        sum(losses.values()).backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        found = model(images)
    detections = [{"boxes": d["boxes"].tolist(), "labels": d["labels"].tolist(), "scores": d["scores"].tolist(),
                   "mask_means": d["masks"].mean(dim=(1, 2, 3)).tolist()} for d in found]
    return {"train_losses": steps, "detections": detections}


@pytest.fixture(scope="module")
def ours() -> dict:
    return _run()


@pytest.fixture(scope="module")
def golden(ours) -> dict:
    if os.environ.get("UPDATE_MASKRCNN_GOLDEN") or not GOLDEN.exists():
        GOLDEN.write_text(json.dumps(ours, indent=1) + "\n")
        if not os.environ.get("UPDATE_MASKRCNN_GOLDEN"):
            pytest.fail(f"{GOLDEN} did not exist: written now, commit it")
    return json.loads(GOLDEN.read_text())


def test_training_losses_of_a_fixed_batch_equal_the_torchvision_paths(ours, golden):
    assert len(ours["train_losses"]) == 2
    for got, want in zip(ours["train_losses"], golden["train_losses"]):
        assert set(got) == set(want) == {"loss_classifier", "loss_box_reg", "loss_mask", "loss_objectness",
                                         "loss_rpn_box_reg"}
        assert got == pytest.approx(want, rel=RTOL, abs=ATOL)


def test_evaluation_detections_of_a_fixed_batch_equal_the_torchvision_paths(ours, golden):
    assert len(ours["detections"]) == len(golden["detections"]) == 3
    for got, want in zip(ours["detections"], golden["detections"]):
        assert len(want["labels"]) > 0  # something was detected, so the comparison compares something
        assert got["labels"] == want["labels"]
        for key in ("boxes", "scores", "mask_means"):
            assert torch.tensor(got[key]).flatten().tolist() == pytest.approx(
                torch.tensor(want[key]).flatten().tolist(), rel=RTOL, abs=1e-5), key
