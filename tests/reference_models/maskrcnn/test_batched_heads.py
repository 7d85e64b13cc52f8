"""The batched RPN and ROI pieces (reference_models/maskrcnn/{nms,rpn,roi_heads}.py) give what torchvision's
give, piece by piece, on inputs chosen to be hard for them: ties in score and in IoU, boxes that fall
out of an image, levels with fewer anchors than the top-k, images with too few positives to fill a
sample; and the whole model with model.heads=batched trains and detects as with model.heads=torchvision."""
from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf
from torchvision.models.detection import _utils as det_utils
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.image_list import ImageList
from torchvision.models.detection.rpn import RegionProposalNetwork, RPNHead
from torchvision.ops import MultiScaleRoIAlign, nms

from harness.config import compose
from reference_models.maskrcnn.model import build_model
from reference_models.maskrcnn.nms import grouped_nms
from reference_models.maskrcnn.roi_heads import LevelSortedRoIAlign
from reference_models.maskrcnn.rpn import BatchedRPN, CachedAnchorGenerator, CountedSampler, SyncFreeMatcher


def _boxes(gen: torch.Generator, *shape: int, extent: float = 100.0) -> torch.Tensor:
    xy = torch.rand(*shape, 2, generator=gen) * extent
    return torch.cat([xy, xy + 1 + torch.rand(*shape, 2, generator=gen) * extent * 0.4], dim=-1)


@pytest.mark.parametrize("matrix", [True, False])
def test_grouped_nms_keeps_the_boxes_torchvision_nms_keeps(matrix):
    gen = torch.Generator().manual_seed(0)
    for trial in range(40):
        groups, k = 3, int(torch.randint(1, 200, (), generator=gen))
        boxes = _boxes(gen, groups, k)
        if trial % 3 == 0:  # exact duplicates: IoU 1 with equal scores
            boxes[:, k // 2:] = boxes[:, : k - k // 2]
        scores = (torch.rand(groups, k, generator=gen) * (8 if trial % 2 else 1e4)).round()  # many ties
        valid = torch.rand(groups, k, generator=gen) > 0.15
        threshold = float(torch.rand((), generator=gen) * 0.8 + 0.1)
        keep = grouped_nms(boxes, scores, valid, threshold, matrix=matrix)
        for g in range(groups):
            candidates = valid[g].nonzero()[:, 0]
            want = candidates[nms(boxes[g, candidates], scores[g, candidates], threshold)]
            assert keep[g].nonzero()[:, 0].tolist() == sorted(want.tolist())


def test_grouped_nms_settles_a_chain_that_needs_every_round():
    # each box overlaps only its neighbours and scores fall along the chain: greedy keeps every other box,
    # and the iteration needs one round per box to find that out
    k = 37
    x = torch.arange(k, dtype=torch.float32) * 3
    boxes = torch.stack([x, torch.zeros(k), x + 10, torch.ones(k)], dim=1)[None]
    scores = torch.linspace(1, 0, k)[None]
    keep = grouped_nms(boxes, scores, torch.ones(1, k, dtype=torch.bool), 0.5, matrix=True)
    assert keep[0].nonzero()[:, 0].tolist() == nms(boxes[0], scores[0], 0.5).sort().values.tolist()


def _rpn_pair(pre: int, post: int):
    anchors = AnchorGenerator(((32,), (64,), (128,)), ((0.5, 1.0, 2.0),) * 3)
    rpn = RegionProposalNetwork(anchors, RPNHead(8, 3), 0.7, 0.3, 64, 0.5, {"training": pre, "testing": pre},
                                {"training": post, "testing": post // 2}, 0.7)
    batched = BatchedRPN.like(rpn)
    batched.matrix_nms = True  # the GPU's path, on this CPU
    return rpn, batched


@pytest.mark.parametrize("training", [True, False])
def test_batched_proposals_equal_torchvisions(training):
    gen = torch.Generator().manual_seed(1)
    rpn, batched = _rpn_pair(pre=120, post=90)
    rpn.train(training)
    batched.train(training)
    per_level = [600, 150, 40]  # the last level has fewer anchors than the top-k
    images = 3
    proposals = _boxes(gen, images, sum(per_level), extent=140.0) - 20  # some reach past the image
    proposals[0, :5, 2] = proposals[0, :5, 0]  # zero width: removed as small
    objectness = (torch.randn(images, sum(per_level), generator=gen) * 4).round() / 4  # ties
    shapes = [(100, 120), (90, 128), (128, 100)]
    want_boxes, want_scores = rpn.filter_proposals(proposals, objectness, shapes, per_level)
    got_boxes, got_scores = batched.filter_proposals(proposals, objectness, shapes, per_level)
    assert [len(b) for b in got_boxes] == [len(b) for b in want_boxes]
    for got, want in zip(got_boxes + got_scores, want_boxes + want_scores):
        assert torch.equal(got, want)


def test_cached_anchors_are_torchvisions_and_made_once():
    sizes, ratios = ((16,), (32,)), ((0.5, 1.0),) * 2
    theirs, ours = AnchorGenerator(sizes, ratios), CachedAnchorGenerator(sizes, ratios)
    images = ImageList(torch.zeros(2, 3, 64, 96), [(64, 90), (60, 96)])
    features = [torch.zeros(2, 4, 16, 24), torch.zeros(2, 4, 8, 12)]
    first = ours(images, features)
    assert all(torch.equal(a, b) for a, b in zip(first, theirs(images, features)))
    assert ours(images, features)[0] is first[0]


@pytest.mark.parametrize("low_quality", [True, False])
def test_sync_free_matcher_matches_as_torchvisions(low_quality):
    gen = torch.Generator().manual_seed(2)
    for _ in range(30):
        iou = (torch.rand(int(torch.randint(1, 6, (), generator=gen)), 80, generator=gen) * 10).round() / 10  # ties
        want = det_utils.Matcher(0.7, 0.3, low_quality)(iou.clone())
        assert torch.equal(SyncFreeMatcher(0.7, 0.3, low_quality)(iou), want)


def test_batched_anchor_matching_equals_torchvisions_image_by_image():
    gen = torch.Generator().manual_seed(8)
    rpn, batched = _rpn_pair(pre=100, post=50)
    anchors = _boxes(gen, 900, extent=120.0)
    gt = [_boxes(gen, 4, extent=120.0), anchors[:7].clone(), torch.zeros(0, 4), _boxes(gen, 1, extent=120.0)]
    gt[1][3] = gt[1][2]  # a duplicate box: ties in the low-quality matches
    targets = [{"boxes": g} for g in gt]
    want_labels, want_boxes = rpn.assign_targets_to_anchors([anchors] * len(gt), targets)
    got_labels, got_boxes = batched.assign_targets_to_anchors([anchors] * len(gt), targets)
    for got, want in zip(got_labels + got_boxes, want_labels + want_boxes):
        assert torch.equal(got, want)
    # anchors that are not one shared tensor: matched image by image
    got_labels, got_boxes = batched.assign_targets_to_anchors([anchors.clone() for _ in gt], targets)
    for got, want in zip(got_labels + got_boxes, want_labels + want_boxes):
        assert torch.equal(got, want)


@pytest.mark.parametrize("same_length", [True, False])
def test_counted_sampler_draws_torchvisions_samples(same_length):
    gen = torch.Generator().manual_seed(3)
    labels = [torch.randint(-1, 2, (n,), generator=gen) for n in ((400, 400, 400) if same_length else (500, 300, 40))]
    labels[2][:] = -1
    labels[2][:40] = torch.tensor([1] * 3 + [0] * 37)  # too few positives and negatives for a full sample
    torch.manual_seed(7)
    want = det_utils.BalancedPositiveNegativeSampler(64, 0.25)(labels)
    torch.manual_seed(7)
    got = CountedSampler(64, 0.25)(labels)
    for g, w in zip(got[0] + got[1], want[0] + want[1]):
        assert torch.equal(g, w)


def test_level_sorted_roi_align_pools_and_backpropagates_as_torchvisions():
    gen = torch.Generator().manual_seed(4)
    names = ["0", "1", "2"]
    features = {n: torch.randn(2, 3, 64 // 2 ** i, 64 // 2 ** i, generator=gen, requires_grad=True)
                for i, n in enumerate(names)}
    boxes = [_boxes(gen, 30, extent=200.0).clamp(max=255), _boxes(gen, 17, extent=60.0)]
    shapes = [(256, 256), (250, 240)]
    theirs = MultiScaleRoIAlign(names, 5, 2)
    ours = LevelSortedRoIAlign.like(theirs)
    want = theirs(features, boxes, shapes)
    grads_want = torch.autograd.grad((want * torch.arange(want.numel()).view_as(want)).sum(), list(features.values()))
    got = ours(features, boxes, shapes)
    grads_got = torch.autograd.grad((got * torch.arange(got.numel()).view_as(got)).sum(), list(features.values()))
    assert torch.equal(got, want)
    for g, w in zip(grads_got, grads_want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def test_the_model_with_batched_heads_trains_and_detects_as_with_torchvisions():
    cfg = compose(["model=maskrcnn", "+debug=maskrcnn", "seed=1", "device=cpu", "model.rpn_batch_per_image=32",
                   "model.box_batch_per_image=24", "model.batch_size=2"])
    gen = torch.Generator().manual_seed(6)
    images = [torch.rand(3, 112, 144, generator=gen), torch.rand(3, 128, 128, generator=gen)]
    targets = []
    for image in images:
        boxes = _boxes(gen, 6, extent=80.0)
        masks = torch.zeros(6, *image.shape[1:], dtype=torch.uint8)
        for m, (x1, y1, x2, y2) in zip(masks, boxes.int().tolist()):
            m[y1:y2, x1:x2] = 1
        targets.append({"boxes": boxes, "masks": masks, "labels": torch.randint(1, 3, (6,), generator=gen)})
    images.append(torch.rand(3, 120, 136, generator=gen))  # a background image: no boxes at all
    targets.append({"boxes": torch.zeros(0, 4), "masks": torch.zeros(0, 120, 136, dtype=torch.uint8),
                    "labels": torch.zeros(0, dtype=torch.int64)})
    results = {}
    for heads in ("torchvision", "batched"):
        torch.manual_seed(0)
        model = build_model(OmegaConf.to_object(OmegaConf.merge(cfg.model, {"heads": heads})), 3)
        torch.manual_seed(1)
        losses = model(images, targets)
        sum(losses.values()).backward()
        grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
        with torch.no_grad():
            found = model.eval()(images)
        results[heads] = (losses, grads, found)
    (want, want_grads, want_found), (got, got_grads, got_found) = results["torchvision"], results["batched"]
    assert set(got) == set(want)
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=1e-5, atol=1e-7)
    for g, w in zip(got_grads, want_grads):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-6)
    for g, w in zip(got_found, want_found):
        assert len(w["boxes"]) > 0 and torch.equal(g["labels"], w["labels"])
        for k in ("boxes", "scores", "masks"):
            torch.testing.assert_close(g[k], w[k])


@pytest.mark.parametrize("heads", ["torchvision", "batched"])
def test_a_degenerate_target_box_is_named(heads):
    cfg = compose(["model=maskrcnn", "+debug=maskrcnn", "seed=1", "device=cpu", f"model.heads={heads}"])
    model = build_model(OmegaConf.to_object(cfg.model), 3).train()
    good = {"boxes": torch.tensor([[2.0, 2, 30, 40]]), "labels": torch.tensor([1]),
            "masks": torch.ones(1, 64, 64, dtype=torch.uint8)}
    bad = {**good, "boxes": torch.tensor([[2.0, 2, 30, 40], [10.0, 5, 10, 20]]), "labels": torch.tensor([1, 2]),
           "masks": torch.ones(2, 64, 64, dtype=torch.uint8)}
    with pytest.raises(AssertionError, match=r"invalid box \[20\.0, 10\.0, 20\.0, 40\.0\] for target at index 1"):
        model([torch.rand(3, 64, 64), torch.rand(3, 64, 64)], [good, bad])
