"""SSD's options (conf/model/ssd.yaml holds the MLCommons v0.7 reference's values; datasets scale them down).

    python -m harness.train --help model=ssd
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from harness.interface import ModelOptions
from reference_models.resnet.options import Decode


@dataclass
class Synthetic:
    num_classes: int = 81
    """Classes (with the background) of mode=throughput's random targets: COCO's 80 + 1."""
    objects: int = 5
    """Objects per synthetic image."""


@dataclass
class SSDOptions(ModelOptions):
    image_size: int = 300
    """Side of the square network input (SSD300)."""
    backbone_layers: list[int] = field(default_factory=lambda: [3, 4, 6])
    """Basic blocks per ResNet stage up to conv4_x (ResNet-34's 3, 4, 6)."""
    backbone_widths: list[int] = field(default_factory=lambda: [64, 128, 256])
    """Channels of those stages."""
    backbone_stem: int = 64
    """Channels of the 7x7 stem convolution."""
    backbone_weights: Optional[str] = None
    """A torchvision ResNet-34 ImageNet checkpoint for the backbone (the reference's resnet34-333f7ec4.pth);
    null starts from random weights."""
    extra_blocks: list[list[int]] = field(default_factory=lambda: [
        [256, 512, 2, 1], [256, 512, 2, 1], [128, 256, 2, 1], [128, 256, 1, 0], [128, 256, 1, 0]])
    """The additional feature layers after the backbone: [1x1 channels, 3x3 channels, stride, padding] each;
    the reference's take 38x38 to 19, 10, 5, 3 and 1."""
    anchor_scales: list[float] = field(default_factory=lambda: [21, 45, 99, 153, 207, 261, 315])
    """Default-box sizes in input pixels, one per feature map plus one (the reference's)."""
    anchor_steps: list[int] = field(default_factory=lambda: [8, 16, 32, 64, 100, 300])
    """Default-box centre spacing in input pixels per feature map."""
    aspect_ratios: list[list[int]] = field(default_factory=lambda: [[2], [2, 3], [2, 3], [2, 3], [2], [2]])
    """Extra aspect ratios per feature map: 4 boxes per location with [2], 6 with [2, 3]."""
    match_iou: float = 0.5
    """A default box matches a ground-truth box above this IoU (and each box's best default box matches)."""
    negatives_per_positive: int = 3
    """Hard-negative mining: the highest-loss background boxes kept per positive."""
    nms_iou: float = 0.5
    """Evaluation: non-maximum suppression IoU per class."""
    score_threshold: float = 0.05
    """Evaluation: detections scoring below this are dropped."""
    max_detections: int = 200
    """Evaluation: detections kept per image (and candidates per class before NMS)."""
    learning_rate: float = 2.5e-3
    """SGD's rate at the global batch lr_reference_batch; other batches scale it by lr_scaling."""
    lr_scaling: str = "linear"
    """How the rate follows the global batch: none, linear or sqrt (the reference: linear from 32)."""
    lr_reference_batch: int = 32
    """The global batch learning_rate is given for."""
    momentum: float = 0.9
    """SGD momentum."""
    weight_decay: float = 5e-4
    """SGD weight decay (on every parameter, as the reference)."""
    lr_warmup_epochs: float = 0.0
    """Linear warm-up length in epochs (the reference's --warmup); at least one step is logged and run."""
    lr_warmup_factor: int = 0
    """MLPerf's warm-up factor: the rate starts at base x (1 - 1/2^factor)."""
    lr_decay_epochs: list[int] = field(default_factory=lambda: [40, 50])
    """Epochs after which the rate is multiplied by lr_decay_factor."""
    lr_decay_factor: float = 0.1
    """The step decay's factor."""
    max_samples: int = 1
    """Random-crop attempts per sample before another crop mode is drawn (the reference's
    --num-cropping-iterations; ruleset 0.7.0 allows 1 or 50)."""
    color_jitter: list[float] = field(default_factory=lambda: [0.125, 0.5, 0.5, 0.05])
    """ColorJitter's brightness, contrast, saturation and hue."""
    eval_batch_size: int = 32
    """Images per evaluation batch on each rank (memory, not quality)."""
    workers: int = 4
    """DataLoader worker processes per rank (0: load in the training process)."""
    decode: Decode = Decode.auto
    """Where training JPEGs are decoded, as ResNet's model.decode: cpu (the workers, PIL), nvimgcodec
    (the GPU's hardware JPEG decoder; the workers keep SSD's random crop, flip, ColorJitter and box encoding), cuda (torchvision's nvJPEG, on
    the SMs) or auto: cpu, which measured faster for this model than its GPU path on an H200
    (reference_models/detection/decode.py, docs/benchmarks/pipeline_2026-12-01.md)."""
    channels_last: bool = False
    """Weights and images in NHWC: tensor-core convolutions without layout transposes (GPU with amp/bf16)."""
    synthetic: Synthetic = field(default_factory=Synthetic)
    """mode=throughput: the random targets."""
