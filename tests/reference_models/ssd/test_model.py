"""SSD300-ResNet34 as the MLCommons v0.7 reference builds it: its size, its default boxes, its targets,
its loss and its crop."""
from __future__ import annotations

import itertools
import math
import random

import pytest
import torch

from reference_models.ssd.boxes import Encoder, default_boxes
from reference_models.ssd.loss import ssd_loss
from reference_models.ssd.model import SSD300
from reference_models.ssd.transforms import ssd_crop


@pytest.fixture(scope="module")
def real():
    return SSD300(81)


def test_real_scale_has_the_reference_parameter_count_and_feature_maps(real):
    # ResNet-34 to conv4_x 8,170,304 + additional layers 3,574,400 + heads 8,227,830
    assert sum(p.numel() for p in real.parameters()) == 19_972_534
    assert real.feature_sizes(300) == [38, 19, 10, 5, 3, 1]
    assert real.backbone.layer3[0].conv1.stride == (1, 1) and real.backbone.layer3[0].downsample[0].stride == (1, 1)
    ploc, plabel = real(torch.zeros(1, 3, 300, 300))
    assert ploc.shape == (1, 8732, 4) and plabel.shape == (1, 8732, 81)


def _reference_dboxes():
    """The reference's DefaultBoxes (utils.py) for SSD300, in its own (aspect-major) order."""
    out = []
    feat, steps = [38, 19, 10, 5, 3, 1], [8, 16, 32, 64, 100, 300]
    scales, ratios = [21, 45, 99, 153, 207, 261, 315], [[2], [2, 3], [2, 3], [2, 3], [2], [2]]
    for k, f in enumerate(feat):
        fk = 300 / steps[k]
        s1, s2 = scales[k] / 300, scales[k + 1] / 300
        sizes = [(s1, s1), (math.sqrt(s1 * s2),) * 2]
        for a in ratios[k]:
            sizes += [(s1 * math.sqrt(a), s1 / math.sqrt(a)), (s1 / math.sqrt(a), s1 * math.sqrt(a))]
        for w, h in sizes:
            for i, j in itertools.product(range(f), repeat=2):
                cx, cy = (j + 0.5) / fk, (i + 0.5) / fk
                cx, cy, w_, h_ = (min(max(v, 0.0), 1.0) for v in (cx, cy, w, h))
                out.append((cx - w_ / 2, cy - h_ / 2, cx + w_ / 2, cy + h_ / 2))
    return torch.tensor(out)


def test_default_boxes_are_the_reference_boxes():
    ours = default_boxes(300, [38, 19, 10, 5, 3, 1])
    theirs = _reference_dboxes()
    assert ours.shape == theirs.shape == (8732, 4)
    key = lambda b: sorted(tuple(round(v, 5) for v in row) for row in b.tolist())  # noqa: E731
    assert key(ours) == key(theirs)


def test_targets_decode_back_to_the_ground_truth():
    enc = Encoder(default_boxes(300, [38, 19, 10, 5, 3, 1]))
    gt = torch.tensor([[0.1, 0.2, 0.4, 0.6], [0.5, 0.5, 0.9, 0.8]])
    offsets, labels = enc.encode(gt, torch.tensor([3, 7]))
    assert set(labels.unique().tolist()) == {0, 3, 7}
    logits = torch.full((1, 8732, 81), -10.0)
    logits[0, torch.arange(8732), labels] = 10.0  # confident in the assigned class everywhere
    boxes, found, scores = enc.decode(offsets[None], logits)[0]
    assert sorted(found.tolist()) == [3, 7] and scores.min() > 0.99  # NMS leaves one box per object
    assert torch.allclose(boxes[found.argsort()], gt, atol=1e-5)


def test_loss_mines_three_negatives_per_positive():
    glabel = torch.zeros(1, 20, dtype=torch.long)
    glabel[0, :2] = 1
    plabel = torch.zeros(1, 20, 3)
    plabel[0, 2:, 1] = torch.arange(18, dtype=torch.float)  # background boxes ever more wrongly confident
    base = ssd_loss(torch.zeros(1, 20, 4), plabel, torch.zeros(1, 20, 4), glabel)
    easier = plabel.clone()
    easier[0, 2:10, 1] = -5.0  # the 8 easiest negatives are never among the 6 mined
    assert ssd_loss(torch.zeros(1, 20, 4), easier, torch.zeros(1, 20, 4), glabel) == pytest.approx(base.item())
    no_objects = ssd_loss(torch.zeros(2, 20, 4), plabel.repeat(2, 1, 1), torch.zeros(2, 20, 4), torch.zeros(2, 20, dtype=torch.long))
    assert no_objects.item() == 0.0


def test_random_crop_keeps_boxes_inside_the_crop():
    from PIL import Image

    random.seed(0)
    image = Image.new("RGB", (200, 100))
    boxes = torch.tensor([[0.1, 0.1, 0.3, 0.5], [0.6, 0.4, 0.9, 0.9]])
    for _ in range(50):
        crop, kept, labels = ssd_crop(image, boxes.clone(), torch.tensor([1, 2]))
        assert len(kept) == len(labels) >= 1 and kept.min() >= -1e-6 and kept.max() <= 1 + 1e-6
        assert (kept[:, 2] > kept[:, 0]).all() and crop.size[0] <= 200
