"""RetinaNet's options, at the MLCommons reference's values (single_stage_detector of training v2.0-v5.1:
RetinaNet ResNeXt-50 32x4d FPN on openimages-mlperf); conf/model/retinanet.yaml adds its batch, target
and epoch cap; conf/model_for/ scales it down.

    python -m harness.train --help model=retinanet
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional

from harness.interface import Broken, LrScaling, ModelOptions, option


@dataclass
class Synthetic:
    num_classes: int = option(264, ge=1)
    """Classes of mode=throughput's random targets: openimages-mlperf's 264 (RetinaNet has no background
    output)."""
    height: int = option(768, ge=1)
    """Height of mode=throughput's random images before the resize to image_size (an OpenImages photo
    is about 1024x768)."""
    width: int = option(1024, ge=1)
    """Width of those images."""
    objects: int = option(8, ge=1)
    """Boxes per synthetic image."""
    calibrate_norms: bool = True
    """An untrained frozen body (mode=throughput without backbone_weights): its batch norm frozen at the
    statistics of images like the synthetic ones, as pretrained weights' are ImageNet's (as Mask R-CNN's,
    docs/maskrcnn.md); false: at identity statistics."""


@dataclass
class RetinaNetOptions(ModelOptions):
    image_size: int = option(800, ge=32)
    """Side of the square the model resizes every image to (bilinear, aspect ratio not kept: the
    reference's --image-size 800 800); a multiple of 32, which torchvision's transform pads to."""
    backbone_layers: list[int] = option(factory=lambda: [3, 4, 6, 3], ge=1, length=4)
    """Bottleneck blocks per ResNeXt stage, conv2_x..conv5_x (ResNeXt-50's)."""
    backbone_widths: list[int] = option(factory=lambda: [64, 128, 256, 512], ge=1, length=4)
    """Each stage's planes (torchvision's; a stage outputs 4x, its grouped 3x3 convolution has
    planes x width_per_group / 64 x groups channels)."""
    backbone_stem: int = option(64, ge=1)
    """Channels of the 7x7 stem convolution."""
    groups: int = option(32, ge=1)
    """Groups of each bottleneck's 3x3 convolution (ResNeXt's cardinality, 32)."""
    width_per_group: int = option(4, ge=1)
    """Channels per group at the first stage (ResNeXt 32x4d's 4)."""
    backbone_weights: Optional[str] = option(None, unbounded="a checkpoint file, read when the model is built "
                                                             "(a missing or mismatched one is named there)")
    """A torchvision ResNeXt-50 32x4d ImageNet checkpoint (resnext50_32x4d-7cdf4587.pth, the reference's
    starting point). With weights, batch norm is frozen and the stem and conv2_x are not trained, as the
    reference trains them (trainable_layers 3); null starts from random weights."""
    frozen_body: Optional[bool] = None
    """Batch norm frozen and only the last `trainable_layers` stages trained, as the reference trains its
    backbone. null: with backbone_weights, and in mode=throughput (whose workload is then the reference's);
    false: every batch norm and stage trained (the embedded presets, calibrated so from random weights)."""
    trainable_layers: int = option(3, ge=0, le=5)
    """With a frozen body: the ResNeXt stages trained, counted from the last (3: conv3_x..conv5_x; 5: the
    stem too)."""
    fpn_channels: int = option(256, ge=1)
    """FPN output channels (P3..P7) and the width of the heads' four 3x3 convolutions."""
    anchor_sizes: list[int] = option(factory=lambda: [32, 64, 128, 256, 512], ge=1, length=5)
    """The base anchor size on P3..P7; each level also has 2^(1/3) and 2^(2/3) of it, at ratios 0.5, 1
    and 2 (9 anchors a location, the reference's and torchvision's)."""
    fg_iou: float = option(0.5, gt=0, le=1)
    """An anchor is a positive at this IoU with a ground-truth box or more (each box's best anchors too)."""
    bg_iou: float = option(0.4, gt=0, le=1)
    """An anchor is a negative below this IoU; between the two it is ignored."""
    score_threshold: float = option(0.05, ge=0, lt=1)
    """Evaluation: detections scoring below this are dropped."""
    topk_candidates: int = option(1000, ge=1)
    """Evaluation: the best-scoring candidates kept per FPN level before NMS."""
    nms_iou: float = option(0.5, gt=0, le=1)
    """Evaluation: NMS IoU per class."""
    detections_per_image: int = option(300, ge=1)
    """Evaluation: detections kept per image after NMS (the reference's 300; COCOeval scores the best 100)."""
    learning_rate: float = option(1e-4, gt=0)
    """Adam's rate at the global batch lr_reference_batch (the reference's --lr 0.0001)."""
    lr_scaling: LrScaling = LrScaling.none
    """How the rate follows the global batch: none (the reference keeps 0.0001 at every batch), linear or
    sqrt."""
    lr_reference_batch: int = option(256, ge=1)
    """The global batch learning_rate is given for (the reference's 8 GPUs x 32)."""
    lr_warmup_epochs: float = option(1.0, ge=0)
    """Linear warm-up in epochs, stepped every iteration (the reference's --warmup-epochs 1); at least one
    step is run."""
    lr_warmup_factor: float = option(1e-3, ge=0, le=1)
    """The rate starts at this fraction of the base rate (the reference's --warmup-factor 0.001); after the
    warm-up it stays at the base rate."""
    flip_probability: float = option(0.5, ge=0, le=1)
    """Horizontal flips of training images, the reference's only augmentation (data-augmentation hflip)."""
    eval_batch_size: int = option(32, ge=1)
    """Images per evaluation batch on each rank (memory, not quality)."""
    workers: int = option(4, ge=0)
    """DataLoader worker processes per rank (0: load in the training process)."""
    channels_last: bool = False
    """Backbone, FPN and heads in NHWC: tensor-core convolutions without layout transposes (the reference's
    --data-layout channels_last; GPU with amp/bf16)."""
    compile: bool = False
    """CUDA: torch.compile the backbone with its FPN and the two heads, each over the fixed image_size square
    (the frozen batch norms, ReLUs and adds fuse around the convolutions); anchors, matching and the loss
    stay eager: their shapes follow each image's boxes."""
    synthetic: Synthetic = field(default_factory=Synthetic)
    """mode=throughput: the random images and targets."""

    def relations(self, max_epochs: int) -> Iterator[Broken]:
        if self.image_size % 32:
            yield Broken("image_size", self.image_size, "a multiple of 32 (torchvision's transform would pad it)")
        if list(self.anchor_sizes) != sorted(self.anchor_sizes):
            yield Broken("anchor_sizes", self.anchor_sizes, "increasing sizes")
        if self.bg_iou > self.fg_iou:
            yield Broken("bg_iou", self.bg_iou, f"bg_iou <= fg_iou ({self.fg_iou})")
        if min(self.backbone_widths) * self.width_per_group // 64 < 1:  # torchvision's int(planes * base_width / 64)
            yield Broken("width_per_group", self.width_per_group,
                         f"at least one channel per group in every stage: >= {-(-64 // min(self.backbone_widths))} "
                         f"for backbone_widths {self.backbone_widths}")
