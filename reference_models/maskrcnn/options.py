"""Mask R-CNN's options (conf/model/maskrcnn.yaml holds the MLCommons v0.7 reference's values, those of
maskrcnn-benchmark's e2e_mask_rcnn_R_50_FPN_1x; datasets scale them down).

    python -m harness.train --help model=maskrcnn
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
    height: int = 800
    """Height of mode=throughput's random images (the short side after the reference's resize)."""
    width: int = 1216
    """Width of those images."""
    objects: int = 5
    """Objects (boxes with rectangular masks) per synthetic image."""


@dataclass
class MaskRCNNOptions(ModelOptions):
    backbone_block: str = "bottleneck"
    """ResNet block: bottleneck (ResNet-50) or basic."""
    backbone_layers: list[int] = field(default_factory=lambda: [3, 4, 6, 3])
    """Blocks per ResNet stage (ResNet-50's)."""
    backbone_widths: list[int] = field(default_factory=lambda: [64, 128, 256, 512])
    """Inner channels of each stage (a bottleneck stage outputs 4x)."""
    backbone_stem: int = 64
    """Channels of the 7x7 stem convolution."""
    backbone_weights: Optional[str] = None
    """A torchvision ResNet-50 ImageNet checkpoint (the reference starts from MSRA's R-50). With weights,
    batch norm is frozen and the stem and conv2_x are not trained (the reference's FREEZE_CONV_BODY_AT 2);
    null starts from random weights with trainable batch norm everywhere, as torchvision does then."""
    trainable_layers: int = 3
    """With backbone_weights: the ResNet stages trained, counted from the last (3: conv3_x..conv5_x)."""
    fpn_channels: int = 256
    """FPN output channels (P2..P6)."""
    anchor_sizes: list[int] = field(default_factory=lambda: [32, 64, 128, 256, 512])
    """RPN anchor size in pixels on P2..P6."""
    anchor_ratios: list[float] = field(default_factory=lambda: [0.5, 1.0, 2.0])
    """RPN anchor aspect ratios (height / width)."""
    rpn_pre_nms_train: int = 2000
    """RPN proposals per level and image before NMS, training."""
    rpn_post_nms_train: int = 1000
    """RPN proposals per image after NMS, training (the reference keeps 2000 per GPU batch of 2 images;
    logged as num_image_candidates = this x batch_size)."""
    rpn_pre_nms_test: int = 1000
    """RPN proposals per level and image before NMS, evaluation."""
    rpn_post_nms_test: int = 1000
    """RPN proposals per image after NMS, evaluation."""
    rpn_batch_per_image: int = 256
    """Anchors sampled per image for the RPN loss."""
    box_batch_per_image: int = 512
    """Proposals sampled per image for the box and mask heads."""
    roi_sampling_ratio: int = 2
    """ROIAlign's sampling points per bin side (the reference's POOLER_SAMPLING_RATIO)."""
    representation_size: int = 1024
    """Width of the box head's two fully connected layers."""
    mask_layers: list[int] = field(default_factory=lambda: [256, 256, 256, 256])
    """Channels of the mask head's 3x3 convolutions."""
    box_score_threshold: float = 0.05
    """Evaluation: detections scoring below this are dropped."""
    box_nms_iou: float = 0.5
    """Evaluation: NMS IoU per class."""
    detections_per_image: int = 100
    """Evaluation: detections kept per image."""
    min_size: int = 800
    """Images are resized so that the short side is this long ..."""
    max_size: int = 1333
    """... unless the long side would pass this."""
    learning_rate: float = 0.02
    """SGD's base rate at the global batch lr_reference_batch (ruleset 0.7.0: a multiple of 0.02)."""
    lr_scaling: str = "linear"
    """How the rate follows the global batch: none, linear or sqrt."""
    lr_reference_batch: int = 16
    """The global batch learning_rate, lr_warmup_steps and lr_decay_steps are given for; at another
    global batch the steps scale inversely, so they fall after the same number of images."""
    momentum: float = 0.9
    """SGD momentum."""
    weight_decay: float = 1e-4
    """SGD weight decay of the weights (biases have none, as the reference's WEIGHT_DECAY_BIAS 0)."""
    bias_lr_factor: float = 2.0
    """Biases learn this many times faster (the reference's BIAS_LR_FACTOR)."""
    lr_warmup_steps: int = 500
    """Linear warm-up steps at the reference batch."""
    lr_warmup_factor: float = 0.333333
    """The rate starts at this fraction of the base rate."""
    lr_decay_steps: list[int] = field(default_factory=lambda: [60000, 80000])
    """Steps at the reference batch after which the rate is multiplied by lr_decay_factor."""
    lr_decay_factor: float = 0.1
    """The step decay's factor (ruleset 0.7.0: 0.1)."""
    flip_probability: float = 0.5
    """Horizontal flips of training images, the reference's only augmentation."""
    eval_batch_size: int = 8
    """Images per evaluation batch on each rank (memory, not quality)."""
    workers: int = 4
    """DataLoader worker processes per rank (0: load in the training process)."""
    decode: Decode = Decode.auto
    """Where training JPEGs are decoded, as ResNet's model.decode: cpu (the workers, PIL), nvimgcodec
    (the GPU's hardware JPEG decoder; the workers keep the flip and the polygon masks), cuda (torchvision's nvJPEG, on
    the SMs) or auto: cpu, which measured faster for this model than its GPU path on an H200
    (reference_models/detection/decode.py, docs/benchmarks/pipeline_2026-12-01.md)."""
    channels_last: bool = False
    """Backbone and FPN weights in NHWC: tensor-core convolutions without layout transposes (GPU with amp/bf16)."""
    synthetic: Synthetic = field(default_factory=Synthetic)
    """mode=throughput: the random images and targets."""
