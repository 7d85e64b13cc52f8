"""RetinaNet ResNeXt-50 32x4d FPN as the MLCommons reference builds it: torchvision's modules at real scale
(built on the meta device: no memory, no time), the reference's frozen body, and a finite loss on a batch."""
from __future__ import annotations

import pytest
import torch
import torchvision
from omegaconf import OmegaConf
from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
from torchvision.models.detection.retinanet import RetinaNet
from torchvision.ops.feature_pyramid_network import LastLevelP6P7
from torchvision.ops.misc import FrozenBatchNorm2d

from harness.config import compose
from reference_models.retinanet.model import build_model

CLASSES = 264  # openimages-mlperf


def _hp(*overrides: str):
    cfg = compose(["model=retinanet", "dataset=openimages", "seed=1", *overrides])
    return OmegaConf.to_object(cfg.model)


def test_real_scale_is_torchvisions_retinanet_over_resnext50_32x4d_module_for_module():
    with torch.device("meta"):
        ours = build_model(_hp("model.frozen_body=true", "model.synthetic.calibrate_norms=false"), CLASSES)
        body = torchvision.models.resnext50_32x4d(norm_layer=FrozenBatchNorm2d)
        theirs = RetinaNet(_resnet_fpn_extractor(body, 3, returned_layers=[2, 3, 4],
                                                 extra_blocks=LastLevelP6P7(256, 256)), CLASSES)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {k: v.shape for k, v in theirs.state_dict().items()}
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters()) == 37_060_652
    # the stem and conv2_x frozen, as the reference's trainable_backbone_layers 3
    trained = {n for n, p in ours.named_parameters() if p.requires_grad}
    assert trained == {n for n, p in theirs.named_parameters() if p.requires_grad}
    assert sum(p.numel() for p in ours.parameters() if p.requires_grad) == 36_849_004
    assert not any(n.startswith(("backbone.body.conv1", "backbone.body.layer1")) for n in trained)


def test_real_scale_has_the_reference_settings():
    with torch.device("meta"):
        m = build_model(_hp(), CLASSES)
    assert m.transform.fixed_size == (800, 800) and m.transform.size_divisible == 32
    assert (m.score_thresh, m.nms_thresh, m.detections_per_img, m.topk_candidates) == (0.05, 0.5, 300, 1000)
    assert (m.proposal_matcher.high_threshold, m.proposal_matcher.low_threshold) == (0.5, 0.4)
    assert m.proposal_matcher.allow_low_quality_matches and m.box_coder.weights == (1.0, 1.0, 1.0, 1.0)
    assert m.anchor_generator.sizes[0] == (32, 40, 50) and m.anchor_generator.sizes[-1] == (512, 645, 812)
    assert m.anchor_generator.num_anchors_per_location() == [9] * 5
    assert m.head.classification_head.cls_logits.out_channels == 9 * CLASSES
    assert m.head.regression_head._loss_type == "l1"
    hp = _hp()
    assert (hp.learning_rate, hp.lr_warmup_epochs, hp.lr_warmup_factor, hp.batch_size, hp.target) == \
        (1e-4, 1.0, 1e-3, 32, 0.34)


def test_a_debug_model_takes_a_batch_to_a_finite_loss_and_detects_in_stored_pixels():
    torch.manual_seed(0)
    hp = _hp("+debug=retinanet")
    m = build_model(hp, 6)
    images = [torch.rand(3, 50, 70), torch.rand(3, 64, 40)]
    targets = [{"boxes": torch.tensor([[5.0, 5, 30, 40], [40, 10, 69, 30]]), "labels": torch.tensor([0, 5])},
               {"boxes": torch.zeros(0, 4), "labels": torch.zeros(0, dtype=torch.int64)}]  # no box: negatives only
    losses = m(images, targets)
    assert set(losses) == {"classification", "bbox_regression"}
    total = sum(losses.values())
    assert torch.isfinite(total) and total > 0
    total.backward()
    assert all(p.grad is not None for p in m.head.parameters())
    m.eval()
    m.score_thresh = 0.0
    with torch.no_grad():
        found = m(images)
    for image, result in zip(images, found):  # boxes mapped back from 64x64 to each image's own size
        h, w = image.shape[-2:]
        assert len(result["boxes"]) > 0 and result["boxes"][:, 2].max() <= w and result["boxes"][:, 3].max() <= h
        assert int(result["labels"].max()) < 6


def test_channels_last_trains_the_same_step_in_nhwc():
    """model.channels_last (part of the GPU fast path) takes the images as they come and trains a step to
    the loss the default layout gives: the layout is the convolutions' business, not the images'."""
    from harness.run.build import build_run, context_for
    from harness.run.step import train_step

    def first_loss(*extra: str) -> float:
        cfg = compose(["model=retinanet", "+debug=retinanet", "mode=throughput", "seed=1", "device=cpu",
                       "precision=fp32", *extra])
        run = build_run(cfg, context_for(cfg))
        return float(train_step(run, run.synthetic_batch())[0])

    assert first_loss("model.channels_last=true") == pytest.approx(first_loss(), rel=1e-4)
