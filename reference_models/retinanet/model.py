"""RetinaNet ResNeXt-50 32x4d FPN: torchvision's RetinaNet, assembled as the MLCommons reference assembles it.

The reference (single_stage_detector/ssd/model/retinanet.py, training v2.0-v5.1) is a copy of
torchvision's RetinaNet of 2021; every piece of it is in torchvision today, so nothing is written by
hand here:
- backbone: ResNeXt-50 32x4d (torchvision's Bottleneck blocks with 32 groups of 4 channels, built by
  reference_models/detection/resnet.py so that the embedded preset can narrow it), returning conv3_x..
  conv5_x to a 256-channel FPN with P6 and P7 from P5 (`LastLevelP6P7(256, 256)`): P3..P7;
- anchors: torchvision's RetinaNet default, sizes 32..512 times 2^0, 2^(1/3), 2^(2/3) at ratios 0.5,
  1, 2 (9 a location);
- heads: four 3x3 convolutions with ReLU, then the class logits (sigmoid, no background output: 264
  classes, prior 0.01) and the box deltas (BoxCoder weights 1, 1, 1, 1), normal(0, 0.01) weights;
- loss: sigmoid focal loss (alpha 0.25, gamma 2) over anchors not ignored, and L1 on the positives'
  deltas, each per image divided by its positives, averaged over the batch (torchvision's
  RetinaNetHead.compute_loss, the reference's own); Matcher at IoU 0.5 / 0.4 with low-quality matches;
- transform: ImageNet normalisation, then every image resized to image_size x image_size, bilinear,
  aspect ratio not kept (torchvision's `fixed_size`, what the reference's GeneralizedRCNNTransform does);
  detections are mapped back to the stored image's pixels;
- evaluation: per level the 1000 best scores above 0.05, class-wise NMS at 0.5, 300 per image.
At the reference's options this is module for module (names, shapes, 37,060,652 parameters with the
frozen body) torchvision's RetinaNet over `_resnet_fpn_extractor(resnext50_32x4d(), 3, [2, 3, 4],
LastLevelP6P7(256, 256))` with 264 classes (tests/reference_models/retinanet/test_model.py).

    python -c "from reference_models.retinanet.model import build_model; from reference_models.retinanet.options import RetinaNetOptions as O; m = build_model(O(name='retinanet', batch_size=2), 264, throughput=True); print(sum(p.numel() for p in m.parameters()))"
"""
from __future__ import annotations

from torch import nn
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.backbone_utils import BackboneWithFPN
from torchvision.models.detection.retinanet import RetinaNet
from torchvision.ops.feature_pyramid_network import LastLevelP6P7
from torchvision.ops.misc import FrozenBatchNorm2d

from reference_models.detection.resnet import ResNetBody, freeze_calibrated, load_weights
from reference_models.retinanet.options import RetinaNetOptions

RETURNED = (2, 3, 4)  # conv3_x..conv5_x: P2 is skipped, as the paper and the reference skip it


def anchor_generator(sizes: list[int]) -> AnchorGenerator:
    """torchvision's RetinaNet anchors (its _default_anchorgen) on the given base sizes."""
    scaled = tuple((x, int(x * 2 ** (1.0 / 3)), int(x * 2 ** (2.0 / 3))) for x in sizes)
    return AnchorGenerator(scaled, ((0.5, 1.0, 2.0),) * len(scaled))


def build_model(hp: RetinaNetOptions, num_classes: int, throughput: bool = False) -> RetinaNet:
    """`num_classes`: outputs of the classifier, one per category (no background). `throughput`: a
    mode=throughput run, whose backbone is frozen as the reference's unless model.frozen_body=false."""
    pretrained = bool(hp.backbone_weights)
    frozen = pretrained or throughput if hp.frozen_body is None else hp.frozen_body
    calibrate = frozen and not pretrained and hp.synthetic.calibrate_norms
    body = ResNetBody("bottleneck", hp.backbone_layers, hp.backbone_widths, hp.backbone_stem,
                      norm_layer=FrozenBatchNorm2d if frozen and not calibrate else nn.BatchNorm2d,
                      groups=hp.groups, width_per_group=hp.width_per_group)
    if hp.backbone_weights:
        load_weights(body, hp.backbone_weights)
    if calibrate:
        freeze_calibrated(body, hp.synthetic.height, hp.synthetic.width)
    if frozen:
        # the reference's resnet_fpn_backbone (torchvision's rule): the last `trainable_layers` of
        # layer4..layer1, conv1, and bn1 with all five
        order = ["layer4", "layer3", "layer2", "layer1", "conv1"][:hp.trainable_layers]
        trained = order + (["bn1"] if hp.trainable_layers == 5 else [])
        for name, param in body.named_parameters():
            param.requires_grad_(any(name.startswith(t) for t in trained))
    in_channels = [body.stage_channels[i - 1] for i in RETURNED]
    backbone = BackboneWithFPN(body, return_layers={f"layer{k}": str(v) for v, k in enumerate(RETURNED)},
                               in_channels_list=in_channels, out_channels=hp.fpn_channels,
                               extra_blocks=LastLevelP6P7(hp.fpn_channels, hp.fpn_channels))
    return RetinaNet(backbone, num_classes, anchor_generator=anchor_generator(list(hp.anchor_sizes)),
                     min_size=hp.image_size, max_size=hp.image_size, fixed_size=(hp.image_size, hp.image_size),
                     score_thresh=hp.score_threshold, nms_thresh=hp.nms_iou,
                     detections_per_img=hp.detections_per_image, fg_iou_thresh=hp.fg_iou, bg_iou_thresh=hp.bg_iou,
                     topk_candidates=hp.topk_candidates)


def compile_convolutions(model: RetinaNet) -> None:
    """torch.compile, in place (parameter names kept), the backbone with its FPN and the heads: their
    shapes are the batch's and the fixed square's, specialised (dynamic=False: an epoch's shorter last
    batch is one more graph, not a dynamic one for all)."""
    model.backbone.compile(dynamic=False)
    model.head.compile(dynamic=False)
