"""Mask R-CNN ResNet-50-FPN: torchvision's MaskRCNN assembled as maskrcnn_resnet50_fpn assembles it.

At the real-scale options this is exactly torchvision's maskrcnn_resnet50_fpn(num_classes=81) (same
modules, names and parameter count; tests/reference_models/maskrcnn pins it), which implements the
MLCommons reference's maskrcnn-benchmark configuration e2e_mask_rcnn_R_50_FPN_1x layer for layer:
ResNet-50 with FPN P2..P6 (P6 by max pooling), 256 channels; RPN anchors 32..512 at ratios 0.5, 1, 2,
256 anchors per image at half positives; 512 proposals per image at a quarter positives for the heads;
ROIAlign 7x7 (boxes) and 14x14 (masks), sampling ratio 2, on the level of the canonical 224 px rule;
a two-layer 1024-wide box head with class-specific box regression (weights 10, 10, 5, 5); four 256-wide
3x3 mask convolutions, a 2x deconvolution and 28x28 per-class masks; evaluation keeps 100 detections
above 0.05 after NMS at 0.5. Differences from the reference, none of which changes the parameter count:
- the ResNet strides in the 3x3 convolution of a bottleneck (torchvision); MSRA's R-50 strides in the
  1x1 (STRIDE_IN_1X1), and normalises BGR 0..255 pixels by its means, where torchvision normalises
  RGB 0..1 by ImageNet's mean and standard deviation;
- the box head's Smooth-L1 has beta 1/9 (torchvision) where maskrcnn-benchmark uses 1;
- RPN proposals after NMS are counted per image (1000) where the reference counts them per GPU batch
  (2000 for its 2 images per GPU), the same number at the reference's batch.
The embedded presets keep this structure at narrower widths, with trainable batch norm.
model.heads=batched (the default) keeps every module and setting and swaps the code that runs them for
the batched RPN, ROI heads and transform of rpn.py, roi_heads.py and rcnn.py beside this file (fewer host
syncs and per-image loops; the same proposals, samples and losses: docs/maskrcnn.md, "GPU performance").

    python -c "from reference_models.maskrcnn.model import build_model; from reference_models.maskrcnn.options import MaskRCNNOptions as O; m = build_model(O(name='maskrcnn', batch_size=2), 81); print(sum(p.numel() for p in m.parameters()))"
"""
from __future__ import annotations

from torch import nn
from torchvision.models.detection import MaskRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.backbone_utils import BackboneWithFPN
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.models.detection.mask_rcnn import MaskRCNNHeads, MaskRCNNPredictor
from torchvision.ops import MultiScaleRoIAlign
from torchvision.ops.feature_pyramid_network import LastLevelMaxPool
from torchvision.ops.misc import FrozenBatchNorm2d

from reference_models.detection.resnet import ResNetBody, freeze_calibrated, load_weights
from reference_models.maskrcnn.options import MaskRCNNOptions
from reference_models.maskrcnn.rcnn import BatchedMaskRCNN, SyncFreeTransform
from reference_models.maskrcnn.roi_heads import BatchedRoIHeads
from reference_models.maskrcnn.rpn import BatchedRPN


def build_model(hp: MaskRCNNOptions, num_classes: int, throughput: bool = False) -> MaskRCNN:
    """`throughput`: a mode=throughput run, whose backbone is frozen as the reference's unless
    model.frozen_body=false."""
    weights = hp.backbone_weights
    pretrained = bool(weights)
    frozen = pretrained or throughput if hp.frozen_body is None else hp.frozen_body
    calibrate = frozen and not pretrained and hp.synthetic.calibrate_norms
    body = ResNetBody(hp.backbone_block, hp.backbone_layers, hp.backbone_widths, hp.backbone_stem,
                      norm_layer=FrozenBatchNorm2d if frozen and not calibrate else nn.BatchNorm2d)
    if weights:
        load_weights(body, weights)
    if calibrate:
        freeze_calibrated(body, hp.synthetic.height, hp.synthetic.width)
    if frozen:
        # torchvision's rule: the last `trainable_layers` of layer4..layer1, conv1 (and bn1 with all)
        order = [f"layer{i}" for i in range(len(hp.backbone_layers), 0, -1)] + ["conv1"]
        trained = order[:hp.trainable_layers] + (["bn1"] if hp.trainable_layers >= len(order) else [])
        for name, param in body.named_parameters():
            param.requires_grad_(any(name.startswith(t) for t in trained))
    stages = range(1, len(hp.backbone_layers) + 1)
    backbone = BackboneWithFPN(body, return_layers={f"layer{i}": str(i - 1) for i in stages},
                               in_channels_list=body.stage_channels, out_channels=hp.fpn_channels,
                               extra_blocks=LastLevelMaxPool())
    n_levels = len(body.stage_channels) + 1
    if len(hp.anchor_sizes) != n_levels:
        raise ValueError(f"anchor_sizes needs one size per FPN level ({n_levels}), got {list(hp.anchor_sizes)}")
    anchors = AnchorGenerator(tuple((int(s),) for s in hp.anchor_sizes),
                              (tuple(float(r) for r in hp.anchor_ratios),) * n_levels)
    resolution = 7  # the box pooler's output side
    levels = [str(i - 1) for i in stages]  # ROIs pool from P2..P5, not P6
    mask_layers = list(hp.mask_layers)
    batched = str(hp.heads) == "batched"
    model = (BatchedMaskRCNN if batched else MaskRCNN)(
        backbone, None, min_size=hp.min_size, max_size=hp.max_size,  # classes: the predictors below
        rpn_anchor_generator=anchors,
        rpn_pre_nms_top_n_train=hp.rpn_pre_nms_train, rpn_post_nms_top_n_train=hp.rpn_post_nms_train,
        rpn_pre_nms_top_n_test=hp.rpn_pre_nms_test, rpn_post_nms_top_n_test=hp.rpn_post_nms_test,
        rpn_batch_size_per_image=hp.rpn_batch_per_image,
        box_roi_pool=MultiScaleRoIAlign(levels, resolution, hp.roi_sampling_ratio),
        mask_roi_pool=MultiScaleRoIAlign(levels, 14, hp.roi_sampling_ratio),
        box_head=TwoMLPHead(hp.fpn_channels * resolution ** 2, hp.representation_size),
        box_predictor=FastRCNNPredictor(hp.representation_size, num_classes),
        box_batch_size_per_image=hp.box_batch_per_image, box_score_thresh=hp.box_score_threshold,
        box_nms_thresh=hp.box_nms_iou, box_detections_per_img=hp.detections_per_image,
        mask_head=MaskRCNNHeads(hp.fpn_channels, mask_layers, 1),
        mask_predictor=MaskRCNNPredictor(mask_layers[-1], mask_layers[-1], num_classes),
    )
    if batched:  # the same modules and settings, run batched (docs/maskrcnn.md)
        model.transform = SyncFreeTransform.like(model.transform)
        model.transform.fixed_canvas = hp.fixed_canvas
        model.rpn = BatchedRPN.like(model.rpn)
        model.roi_heads = BatchedRoIHeads.like(model.roi_heads)
        model.roi_heads.fixed_mask_rois = hp.fixed_mask_rois
    return model
