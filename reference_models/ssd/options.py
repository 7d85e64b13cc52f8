"""SSD's options, at the MLCommons v0.7 reference's values (single_stage_detector, COCO 2017);
conf/model/ssd.yaml adds its batch, target, epoch cap and evaluation epochs; conf/model_for/
scales it down.

    python -m harness.train --help model=ssd
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional

from harness.interface import Broken, LrScaling, ModelOptions, option
from reference_models.vision.choices import Decode


@dataclass
class Synthetic:
    num_classes: int = option(81, ge=2)
    """Classes (with the background) of mode=throughput's random targets: COCO's 80 + 1."""
    objects: int = option(5, ge=1)
    """Objects per synthetic image."""


def feature_sides(image_size: int, stages: int, extra_blocks: list[list[int]]) -> list[int]:
    """The side of each feature map at this input: the stem and max-pool halve it, the backbone's
    stages after the first and before the last halve it again (conv4_1 is unstrided), then each
    additional block's 3x3 convolution (stride, padding) shrinks it (reference_models/ssd/model.py)."""
    side = image_size
    for _ in range(2 + max(stages - 2, 0)):  # 7x7/2 stem, 3x3/2 max-pool, the strided stages: (s - 1) // 2 + 1
        side = (side - 1) // 2 + 1
    sides = [side]
    for _, _, stride, padding in extra_blocks:
        side = (side + 2 * padding - 3) // stride + 1 if stride >= 1 else 0
        sides.append(side)
    return sides


@dataclass
class SSDOptions(ModelOptions):
    image_size: int = option(300, ge=1)
    """Side of the square network input (SSD300); every feature map must keep a side of at least 1."""
    backbone_layers: list[int] = option(factory=lambda: [3, 4, 6], ge=1, min_length=1)
    """Basic blocks per ResNet stage up to conv4_x (ResNet-34's 3, 4, 6; conv4_1 unstrided: 38x38x256)."""
    backbone_widths: list[int] = option(factory=lambda: [64, 128, 256], ge=1, min_length=1)
    """Channels of those stages, one per stage."""
    backbone_stem: int = option(64, ge=1)
    """Channels of the 7x7 stem convolution."""
    backbone_weights: Optional[str] = option(None, unbounded="a checkpoint file, read when the model is built "
                                                             "(a missing or mismatched one is named there)")
    """A torchvision ResNet-34 ImageNet checkpoint for the backbone (the reference's resnet34-333f7ec4.pth);
    null starts from random weights."""
    extra_blocks: list[list[int]] = option(factory=lambda: [
        [256, 512, 2, 1], [256, 512, 2, 1], [128, 256, 2, 1], [128, 256, 1, 0], [128, 256, 1, 0]], ge=0, min_length=1)
    """The additional feature layers after the backbone: [1x1 channels, 3x3 channels, stride, padding] each;
    the reference's take 38x38 to 19, 10, 5, 3 and 1."""
    anchor_scales: list[float] = option(factory=lambda: [21, 45, 99, 153, 207, 261, 315], gt=0, min_length=2)
    """Default-box sizes in input pixels, one per feature map plus one (the reference's), increasing."""
    anchor_steps: list[int] = option(factory=lambda: [8, 16, 32, 64, 100, 300], ge=1, min_length=1)
    """Default-box centre spacing in input pixels per feature map."""
    aspect_ratios: list[list[int]] = option(factory=lambda: [[2], [2, 3], [2, 3], [2, 3], [2], [2]], ge=1,
                                            min_length=1)
    """Extra aspect ratios per feature map: 4 boxes per location with [2], 6 with [2, 3] (8,732 in all at
    the reference's)."""
    match_iou: float = option(0.5, gt=0, le=1)
    """A default box matches a ground-truth box above this IoU (and each box's best default box matches)."""
    negatives_per_positive: int = option(3, ge=0)
    """Hard-negative mining: the highest-loss background boxes kept per positive."""
    nms_iou: float = option(0.5, gt=0, le=1)
    """Evaluation: non-maximum suppression IoU per class."""
    score_threshold: float = option(0.05, ge=0, lt=1)
    """Evaluation: detections scoring below this are dropped."""
    max_detections: int = option(200, ge=1)
    """Evaluation: detections kept per image (and candidates per class before NMS)."""
    learning_rate: float = option(2.5e-3, gt=0)
    """SGD's rate at the global batch lr_reference_batch; other batches scale it by lr_scaling."""
    lr_scaling: LrScaling = LrScaling.linear
    """How the rate follows the global batch: none, linear or sqrt (the reference: linear from 32)."""
    lr_reference_batch: int = option(32, ge=1)
    """The global batch learning_rate is given for."""
    momentum: float = option(0.9, ge=0, lt=1)
    """SGD momentum."""
    weight_decay: float = option(5e-4, ge=0)
    """SGD weight decay (on every parameter, as the reference)."""
    lr_warmup_epochs: float = option(0.0, ge=0)
    """Linear warm-up length in epochs (the reference's --warmup, 0 by default); at least one step is
    logged and run, as ruleset 0.7.0 requires."""
    lr_warmup_factor: int = option(0, ge=0)
    """MLPerf's warm-up factor: the rate starts at base x (1 - 1/2^factor)."""
    lr_decay_epochs: list[int] = option(factory=lambda: [40, 50], ge=1)
    """Epochs after which the rate is multiplied by lr_decay_factor, increasing."""
    lr_decay_factor: float = option(0.1, gt=0, le=1)
    """The step decay's factor."""
    max_samples: int = option(1, ge=1)
    """Random-crop attempts per sample before another crop mode is drawn (the reference's
    --num-cropping-iterations; ruleset 0.7.0 allows 1 or 50)."""
    color_jitter: list[float] = option(factory=lambda: [0.125, 0.5, 0.5, 0.05], ge=0, length=4)
    """ColorJitter's brightness, contrast, saturation and hue (hue at most 0.5)."""
    eval_batch_size: int = option(32, ge=1)
    """Images per evaluation batch on each rank (memory, not quality)."""
    workers: int = option(4, ge=0)
    """DataLoader worker processes per rank (0: load in the training process)."""
    decode: Decode = Decode.auto
    """Where training JPEGs are decoded, as ResNet's model.decode: cpu (the workers, PIL), nvimgcodec
    (the GPU's hardware JPEG decoder; the workers keep SSD's random crop, flip, ColorJitter and box encoding), cuda (torchvision's nvJPEG, on
    the SMs) or auto: cpu, which measured faster for this model than its GPU path on an H200
    (reference_models/detection/decode.py, docs/benchmarks/pipeline_2026-12-01.md)."""
    channels_last: bool = False
    """Weights and images in NHWC: tensor-core convolutions without layout transposes (GPU with amp/bf16,
    docs/ssd.md)."""
    synthetic: Synthetic = field(default_factory=Synthetic)
    """mode=throughput: the random targets."""

    def relations(self, max_epochs: int) -> Iterator[Broken]:
        if len(self.backbone_widths) != len(self.backbone_layers):
            yield Broken("backbone_widths", self.backbone_widths,
                         f"one width per stage of backbone_layers ({len(self.backbone_layers)})")
        for block in self.extra_blocks:
            if len(block) != 4 or min(block[:3]) < 1:
                yield Broken("extra_blocks", self.extra_blocks,
                             "[1x1 channels, 3x3 channels, stride, padding] each, channels and stride >= 1")
        maps = len(self.extra_blocks) + 1
        for name in ("anchor_steps", "aspect_ratios"):
            if len(getattr(self, name)) != maps:
                yield Broken(name, getattr(self, name), f"one entry per feature map ({maps}: the backbone's and "
                                                        f"{len(self.extra_blocks)} extra_blocks)")
        if len(self.anchor_scales) != maps + 1:
            yield Broken("anchor_scales", self.anchor_scales, f"one scale per feature map plus one ({maps + 1})")
        if list(self.anchor_scales) != sorted(self.anchor_scales):
            yield Broken("anchor_scales", self.anchor_scales, "increasing sizes")
        if list(self.lr_decay_epochs) != sorted(self.lr_decay_epochs):
            yield Broken("lr_decay_epochs", self.lr_decay_epochs, "increasing epochs")
        if self.color_jitter[3] > 0.5:
            yield Broken("color_jitter", self.color_jitter, "a hue of at most 0.5 (the last of the four)")
        sides = feature_sides(self.image_size, len(self.backbone_layers), self.extra_blocks)
        if min(sides) < 1:
            yield Broken("image_size", self.image_size, f"every feature map at least 1 pixel wide; the extra_blocks "
                                                        f"take it to {sides}")
