"""Mask R-CNN's options, at the MLCommons v0.7 reference's values (object_detection, those of
maskrcnn-benchmark's e2e_mask_rcnn_R_50_FPN_1x on COCO 2017); conf/model/maskrcnn.yaml adds its batch,
target and epoch cap; conf/model_for/ scales it down.

    python -m harness.train --help model=maskrcnn
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional

from harness.interface import Broken, Choice, CompileMode, LrScaling, ModelOptions, option
from reference_models.vision.choices import Decode


class Block(Choice):
    bottleneck = "bottleneck"
    basic = "basic"


class Heads(Choice):
    batched = "batched"
    torchvision = "torchvision"


@dataclass
class Synthetic:
    num_classes: int = option(81, ge=2)
    """Classes (with the background) of mode=throughput's random targets: COCO's 80 + 1."""
    height: int = option(800, ge=1)
    """Height of mode=throughput's random images (the short side after the reference's resize)."""
    width: int = option(1216, ge=1)
    """Width of those images."""
    objects: int = option(5, ge=1)
    """Objects (boxes with rectangular masks) per synthetic image."""
    calibrate_norms: bool = True
    """An untrained frozen body (mode=throughput without backbone_weights): its batch norm frozen at
    the statistics of images like the synthetic ones, as pretrained weights' are ImageNet's; false:
    at identity statistics, which let amp's heads overflow within a few steps (docs/maskrcnn.md)."""


@dataclass
class MaskRCNNOptions(ModelOptions):
    backbone_block: Block = Block.bottleneck
    """ResNet block: bottleneck (ResNet-50) or basic."""
    backbone_layers: list[int] = option(factory=lambda: [3, 4, 6, 3], ge=1, min_length=1)
    """Blocks per ResNet stage (ResNet-50's)."""
    backbone_widths: list[int] = option(factory=lambda: [64, 128, 256, 512], ge=1, min_length=1)
    """Inner channels of each stage (a bottleneck stage outputs 4x), one per stage."""
    backbone_stem: int = option(64, ge=1)
    """Channels of the 7x7 stem convolution."""
    backbone_weights: Optional[str] = option(None, unbounded="a checkpoint file, read when the model is built "
                                                             "(a missing or mismatched one is named there)")
    """A torchvision ResNet-50 ImageNet checkpoint (the reference starts from MSRA's R-50). With weights,
    batch norm is frozen and the stem and conv2_x are not trained (the reference's FREEZE_CONV_BODY_AT 2);
    null starts from random weights with trainable batch norm everywhere, as torchvision does then."""
    frozen_body: Optional[bool] = None
    """Batch norm frozen and only the last `trainable_layers` stages trained, as the reference trains its
    backbone (FREEZE_CONV_BODY_AT 2). null: with backbone_weights, and in mode=throughput, whose synthetic
    workload must be the reference's whether or not weights are given; false: every batch norm and stage
    trained (the embedded presets, calibrated so from random weights)."""
    trainable_layers: int = option(3, ge=0)
    """With a frozen body: the ResNet stages trained, counted from the last (3: conv3_x..conv5_x); at
    most the stages plus one (the stem)."""
    fpn_channels: int = option(256, ge=1)
    """FPN output channels (P2..P6)."""
    anchor_sizes: list[int] = option(factory=lambda: [32, 64, 128, 256, 512], ge=1, min_length=1)
    """RPN anchor size in pixels on P2..P6: one per stage plus one."""
    anchor_ratios: list[float] = option(factory=lambda: [0.5, 1.0, 2.0], gt=0, min_length=1)
    """RPN anchor aspect ratios (height / width)."""
    rpn_pre_nms_train: int = option(2000, ge=1)
    """RPN proposals per level and image before NMS, training."""
    rpn_post_nms_train: int = option(1000, ge=1)
    """RPN proposals per image after NMS, training (the reference keeps 2000 per GPU batch of 2 images;
    logged as num_image_candidates = this x batch_size)."""
    rpn_pre_nms_test: int = option(1000, ge=1)
    """RPN proposals per level and image before NMS, evaluation."""
    rpn_post_nms_test: int = option(1000, ge=1)
    """RPN proposals per image after NMS, evaluation."""
    rpn_batch_per_image: int = option(256, ge=1)
    """Anchors sampled per image for the RPN loss."""
    box_batch_per_image: int = option(512, ge=1)
    """Proposals sampled per image for the box and mask heads."""
    roi_sampling_ratio: int = option(2, ge=0)
    """ROIAlign's sampling points per bin side (the reference's POOLER_SAMPLING_RATIO); 0: adaptive,
    ceil(roi size / bins), as torchvision reads it."""
    representation_size: int = option(1024, ge=1)
    """Width of the box head's two fully connected layers."""
    mask_layers: list[int] = option(factory=lambda: [256, 256, 256, 256], ge=1, min_length=1)
    """Channels of the mask head's 3x3 convolutions."""
    box_score_threshold: float = option(0.05, ge=0, lt=1)
    """Evaluation: detections scoring below this are dropped."""
    box_nms_iou: float = option(0.5, gt=0, le=1)
    """Evaluation: NMS IoU per class."""
    detections_per_image: int = option(100, ge=1)
    """Evaluation: detections kept per image."""
    min_size: int = option(800, ge=1)
    """Images are resized so that the short side is this long ..."""
    max_size: int = option(1333, ge=1)
    """... unless the long side would pass this (at least min_size)."""
    learning_rate: float = option(0.02, gt=0)
    """SGD's base rate at the global batch lr_reference_batch (SOLVER.BASE_LR; ruleset 0.7.0: a multiple
    of 0.02)."""
    lr_scaling: LrScaling = LrScaling.linear
    """How the rate follows the global batch: none, linear or sqrt."""
    lr_reference_batch: int = option(16, ge=1)
    """The global batch learning_rate, lr_warmup_steps and lr_decay_steps are given for; at another
    global batch the steps scale inversely, so they fall after the same number of images."""
    momentum: float = option(0.9, ge=0, lt=1)
    """SGD momentum."""
    weight_decay: float = option(1e-4, ge=0)
    """SGD weight decay of the weights (biases have none, as the reference's WEIGHT_DECAY_BIAS 0)."""
    bias_lr_factor: float = option(2.0, gt=0)
    """Biases learn this many times faster (the reference's BIAS_LR_FACTOR)."""
    lr_warmup_steps: int = option(500, ge=0)
    """Linear warm-up steps at the reference batch (maskrcnn-benchmark's WARMUP_ITERS); at least one is
    run."""
    lr_warmup_factor: float = option(0.333333, gt=0, le=1)
    """The rate starts at this fraction of the base rate (WARMUP_FACTOR)."""
    lr_decay_steps: list[int] = option(factory=lambda: [60000, 80000], ge=1)
    """Steps at the reference batch after which the rate is multiplied by lr_decay_factor, increasing
    (SOLVER.STEPS at batch 16; MAX_ITER 90000 is about 12.3 epochs)."""
    lr_decay_factor: float = option(0.1, gt=0, le=1)
    """The step decay's factor (ruleset 0.7.0: 0.1)."""
    aspect_grouping: bool = True
    """Training batches of one aspect ratio each, landscape (height < width) or portrait (the rest), as
    the reference batches them (DATALOADER.ASPECT_RATIO_GROUPING): a batch is padded to its largest
    image, so a mixed batch pays for a square canvas, and every new padded shape costs cuDNN new plans.
    A group's short last batch of an epoch is kept, as the reference keeps it, and evaluation batches are
    grouped alike (docs/maskrcnn.md, harness/interface/grouping.py). false: batches in the shuffled order,
    the short last one dropped, consecutive images evaluated together (the embedded preset's choice)."""
    fixed_canvas: bool = False
    """heads=batched: pad every batch to a fixed canvas (each side min_size or max_size, rounded up to 32:
    800 x 1,344 for a landscape batch at the reference's sizes) instead of its largest image, so a GPU meets
    a few padded shapes rather than dozens, each of which costs cuDNN new convolution plans once. Off: once
    the shapes are met, the canvas's extra zeros cost more than the plans saved (on COCO-size files on an
    H200: 63 images/s against 68 padded to each batch's largest image, the first pass 63 against 42,
    docs/maskrcnn.md)."""
    fixed_mask_rois: bool = False
    """heads=batched: the mask branch of training on a few fixed numbers of ROIs, each image's sampled
    positives padded to the batch's most in an image rounded up to a power of two (8 to box_batch_per_image
    x 0.25: 128 at the reference's 512), the padding left out of the loss, which stays torchvision's mean
    over the real positives (the same loss and gradients). Its shapes are then one of five, so with
    compile=true the mask head and predictor are compiled too (once a shape) and, with
    compile_mode=reduce-overhead, replayed as CUDA graphs with the body. On in both modes' fast path on CUDA
    (mode=throughput 1.29x on an H200; training on files, eager, 1.045x on an H100: a few shapes and no read
    of the positives' count outweigh the padding's work; docs/maskrcnn.md), off on a CPU, where it pools,
    convolves and projects masks for the padding as well."""
    flip_probability: float = option(0.5, ge=0, le=1)
    """Horizontal flips of training images, the reference's only augmentation."""
    eval_batch_size: int = option(8, ge=1)
    """Images per evaluation batch on each rank (memory, not quality)."""
    workers: int = option(4, ge=0)
    """DataLoader worker processes per rank (0: load in the training process)."""
    decode: Decode = Decode.auto
    """Where training JPEGs are decoded, as ResNet's model.decode: cpu (the workers, PIL), nvimgcodec
    (the GPU's hardware JPEG decoder; the workers keep the flip and the polygon masks), cuda (torchvision's nvJPEG, on
    the SMs) or auto: cpu, which measured faster for this model than its GPU path on an H200
    (reference_models/detection/decode.py, docs/benchmarks/pipeline_2026-12-01.md)."""
    compile: bool = False
    """CUDA: torch.compile the backbone and FPN (the heads' data-dependent shapes stay eager); image
    sizes that vary by batch make torch compile one graph with dynamic sizes after the second size."""
    compile_mode: CompileMode = CompileMode["default"]  # type: ignore[valid-type]
    """torch.compile mode: default, max-autotune-no-cudagraphs, reduce-overhead (CUDA graphs) or max-autotune."""
    heads: Heads = Heads.batched
    """RPN and ROI heads: batched (proposal selection and NMS for the whole batch on the device, anchors
    made once per size, a few host syncs per step instead of torchvision's dozens:
    reference_models/maskrcnn/rpn.py, roi_heads.py) or torchvision (its RegionProposalNetwork and
    RoIHeads as they are). Both give the same proposals, samples and losses (the same random draws)."""
    channels_last: bool = False
    """Backbone and FPN weights in NHWC: tensor-core convolutions without layout transposes (GPU with
    amp/bf16, docs/maskrcnn.md). On in both modes' fast path on CUDA."""
    synthetic: Synthetic = field(default_factory=Synthetic)
    """mode=throughput: the random images and targets."""

    def relations(self, max_epochs: int) -> Iterator[Broken]:
        stages = len(self.backbone_layers)
        if len(self.backbone_widths) != stages:
            yield Broken("backbone_widths", self.backbone_widths, f"one width per stage of backbone_layers ({stages})")
        if len(self.anchor_sizes) != stages + 1:
            yield Broken("anchor_sizes", self.anchor_sizes, f"one size per FPN level ({stages + 1}: the stages and P6)")
        if self.trainable_layers > stages + 1:
            yield Broken("trainable_layers", self.trainable_layers, f"<= {stages + 1} (the stages and the stem)")
        if self.max_size < self.min_size:
            yield Broken("max_size", self.max_size, f">= min_size ({self.min_size})")
        if self.fixed_mask_rois and str(self.heads) != "batched":
            yield Broken("fixed_mask_rois", True, "heads=batched (torchvision's RoIHeads pool the positives it finds)")
        if list(self.lr_decay_steps) != sorted(self.lr_decay_steps):
            yield Broken("lr_decay_steps", self.lr_decay_steps, "increasing steps")
