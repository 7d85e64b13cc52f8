"""Mask R-CNN at real scale is torchvision's maskrcnn_resnet50_fpn with the reference's settings."""
from __future__ import annotations

import torch
import torchvision
from omegaconf import OmegaConf
from torchvision.ops.misc import FrozenBatchNorm2d

from harness.config import compose
from reference_models.maskrcnn.model import build_model


def _real(**overrides):
    cfg = compose(["model=maskrcnn", "dataset=maskrcnn_coco2017", "seed=1"])
    hp = OmegaConf.to_object(OmegaConf.merge(cfg.model, overrides))
    return hp, build_model(hp, 81)


def test_real_scale_is_torchvisions_maskrcnn_resnet50_fpn_module_for_module():
    _, ours = _real()
    theirs = torchvision.models.detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None, num_classes=81)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {k: v.shape for k, v in theirs.state_dict().items()}
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters()) == 44_400_693


def test_heads_have_the_reference_settings():
    _, m = _real()
    rpn, roi = m.rpn, m.roi_heads
    assert m.transform.min_size == (800,) and m.transform.max_size == 1333
    assert rpn._pre_nms_top_n == {"training": 2000, "testing": 1000}
    assert rpn._post_nms_top_n == {"training": 1000, "testing": 1000}
    assert rpn.fg_bg_sampler.batch_size_per_image == 256 and rpn.fg_bg_sampler.positive_fraction == 0.5
    assert roi.fg_bg_sampler.batch_size_per_image == 512 and roi.fg_bg_sampler.positive_fraction == 0.25
    assert roi.box_coder.weights == (10.0, 10.0, 5.0, 5.0)
    assert (roi.score_thresh, roi.nms_thresh, roi.detections_per_img) == (0.05, 0.5, 100)
    assert roi.box_roi_pool.output_size == (7, 7) and roi.mask_roi_pool.output_size == (14, 14)
    assert roi.box_roi_pool.sampling_ratio == 2 and roi.box_head.fc7.out_features == 1024
    assert [c[0].out_channels for c in roi.mask_head] == [256, 256, 256, 256]
    assert [a for a in m.rpn.anchor_generator.sizes] == [(32,), (64,), (128,), (256,), (512,)]


def test_with_imagenet_weights_batch_norm_is_frozen_and_the_stem_and_conv2_stay_fixed(tmp_path):
    body = torchvision.models.resnet50()
    torch.save(body.state_dict(), tmp_path / "r50.pth")
    _, m = _real(backbone_weights=str(tmp_path / "r50.pth"))
    trunk = m.backbone.body
    assert all(not isinstance(x, torch.nn.BatchNorm2d) for x in trunk.modules())
    assert any(isinstance(x, FrozenBatchNorm2d) for x in trunk.modules())
    frozen = {n.split(".")[0] for n, p in trunk.named_parameters() if not p.requires_grad}
    trained = {n.split(".")[0] for n, p in trunk.named_parameters() if p.requires_grad}
    assert frozen == {"conv1", "layer1"} and trained == {"layer2", "layer3", "layer4"}
    assert torch.equal(trunk.layer4[0].conv2.weight, body.layer4[0].conv2.weight)
    # FrozenBatchNorm2d holds its affine terms as buffers: what the reference counts as parameters
    assert sum(p.numel() for p in m.parameters()) == 44_347_573


def test_an_untrained_frozen_body_in_throughput_mode_normalises_its_features_as_a_pretrained_one_would():
    """mode=throughput freezes the untrained body; at identity statistics a real-size body handed the FPN
    features tens of times those of a trained one and amp's heads turned NaN within ten steps on an H200.
    Calibrated, each stage's output is normalised (standard deviation about 1) on images like its own."""
    cfg = compose(["model=maskrcnn", "+debug=maskrcnn", "mode=throughput", "seed=1", "device=cpu"])
    hp = OmegaConf.to_object(cfg.model)
    bodies = {}
    for calibrate in (True, False):
        torch.manual_seed(0)
        small = {"synthetic": {"calibrate_norms": calibrate, "height": 128, "width": 160}}
        body = bodies[calibrate] = build_model(OmegaConf.to_object(OmegaConf.merge(hp, small)), 5,
                                               throughput=True).backbone.body
        assert not any(isinstance(x, torch.nn.BatchNorm2d) for x in body.modules())  # frozen either way
        norms = [x for x in body.modules() if isinstance(x, FrozenBatchNorm2d)]
        assert norms and all(torch.equal(n.running_var, torch.ones_like(n.running_var)) for n in norms) != calibrate
    x = (torch.rand(2, 3, 64, 80) - torch.tensor([0.485, 0.456, 0.406])[:, None, None]) / \
        torch.tensor([0.229, 0.224, 0.225])[:, None, None]
    with torch.no_grad():
        body = bodies[True]
        assert 0.3 < float(body.relu(body.bn1(body.conv1(x))).std()) < 3.0
