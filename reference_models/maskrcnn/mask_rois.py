"""The mask branch of training on a few fixed numbers of ROIs (model.fixed_mask_rois): each image fills the
same number of slots, the batch's most positives in an image rounded up to a power of two (at least
MIN_SLOTS, at most what the box sampler can draw: batch_size_per_image x positive_fraction, 128 at the
reference's 512 x 0.25), its sampled positives first, in the order torchvision's torch.where gives them,
then padding. The mask ROIAlign, the mask head and predictor and the mask loss then see one of at most
five shapes (8, 16, 32, 64 or 128 slots an image), so the head is compiled once a shape and replayed as a
CUDA graph, and the padding costs at most as much again as the real ROIs: slots for the sampler's most,
128 an image, would make the synthetic batch's 5 positives an image 1,024 ROIs a batch. The padding's terms
are left out of the loss (exact zeros, not small weights) and the loss is divided by the real positives'
count, so the loss and every gradient are torchvision's up to float summation order
(tests/reference_models/maskrcnn/test_fixed_mask_rois.py).

    python -m harness.train model=maskrcnn dataset=maskrcnn_coco2017 mode=throughput precision=amp \
        model.batch_size=8 model.fixed_mask_rois=true
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchvision.models.detection.roi_heads import project_masks_on_boxes

from reference_models.maskrcnn.rpn import first_true

MaskBranch = Callable[[Tensor], Tensor]
MIN_SLOTS = 8  # below it a shape more saves a few ROIs of work and costs a compile and a CUDA graph


def slots_for(most_positives: int, cap: int) -> int:
    """Slots an image for a batch whose image with the most positives has `most_positives` (a host
    number: the sampler's counts): the next power of two, at least MIN_SLOTS, at most the sampler's `cap`."""
    return min(cap, max(MIN_SLOTS, 1 << max(most_positives - 1, 0).bit_length()))


def slot_counts(cap: int) -> list[int]:
    """Every slot count `slots_for` gives under the sampler's `cap`: 8, 16, 32, 64 and 128 at the reference's."""
    return sorted({slots_for(n, cap) for n in range(cap + 1)})


def compile_every_slot_count(branch: MaskBranch, roi: tuple[int, ...], images: int, cap: int, dtype: torch.dtype,
                             device: torch.device, requires_grad: bool) -> None:
    """Run the compiled `branch` forward and backward once on zeros shaped as each slot count's pooled
    features (`images` x slots ROIs of shape `roi`), under the caller's autocast and grad mode, which the
    compiled graphs are guarded on. The positives, and with them the slot count, grow as a model learns:
    without this a count first met mid-run compiles its forward and backward there (seconds, on the clock: a
    throughput window of Mask R-CNN b8 on an H100 took 4.9 s for ten 0.07 s steps). The gradient reaches the
    zeros alone (torch.autograd.grad), never a parameter's .grad, and zeros draw no random number: the step
    that follows is the one it would have been. Called before the step's forward, while no output of a
    CUDA graph is alive: a backward run in the middle of a step lets CUDA-graph trees start a new
    generation, whose recordings overwrite the step's live outputs (the backbone's features)."""
    for slots in slot_counts(cap):
        zeros = torch.zeros((images * slots, *roi), dtype=dtype, device=device, requires_grad=requires_grad)
        logits = branch(zeros)
        if requires_grad:
            torch.autograd.grad(logits.float().sum(), zeros)


def mask_branch(head: nn.Module, predictor: nn.Module) -> MaskBranch:
    """Pooled ROI features -> mask logits, as one function: torch.compile makes one graph of the head and
    the predictor (one CUDA graph to replay), and a function kept on the heads registers no module, so the
    state dict's names stay torchvision's and evaluation keeps calling the eager modules (its ROI count
    varies by image)."""

    def branch(pooled: Tensor) -> Tensor:
        return predictor(head(pooled))

    return branch


def select(proposals: list[Tensor], labels: list[Tensor], matched_idxs: list[Tensor],
           slots: int) -> tuple[list[Tensor], list[Tensor], list[Tensor]]:
    """Each image's `slots` mask ROIs: (boxes, matched ground-truth index, label) per image. The sampler's
    positives come first (label > 0, ascending: torch.where's order, so the real ROIs are today's in
    today's order), then the image's other sampled ROIs, then, where fewer than `slots` were sampled, unit
    boxes on ground truth 0 with label 0. Padding is any valid box (its level and image are found as a
    real one's); the loss leaves it out by its label. No host read: `slots` is at least each image's
    positives (slots_for), so the sort's first `slots` indices hold them all."""
    boxes, gt_index, slot_labels = [], [], []
    for box, label, matched in zip(proposals, labels, matched_idxs):
        take = first_true(label > 0, min(slots, label.shape[0]))
        box, matched, label = box[take], matched[take], label[take]
        short = slots - take.shape[0]
        if short:  # a shape, known on the host: a count of sampled ROIs, not of positives
            box = torch.cat([box, F.pad(box.new_ones(short, 2), (2, 0))])  # (0, 0, 1, 1)
            matched = torch.cat([matched, matched.new_zeros(short)])
            label = torch.cat([label, label.new_zeros(short)])
        boxes.append(box)
        gt_index.append(matched)
        slot_labels.append(label)
    return boxes, gt_index, slot_labels


def mask_loss(mask_logits: Tensor, boxes: list[Tensor], gt_masks: list[Tensor], gt_index: list[Tensor],
              slot_labels: list[Tensor], positives: int) -> Tensor:
    """torchvision's maskrcnn_loss over the slots of `select`: per-pixel binary cross-entropy of each
    ROI's own class, the padding's terms replaced by zeros (torch.where: a padding logit that overflowed
    cannot reach the sum or the gradient as 0 x inf would), summed and divided by the real positives'
    pixels (`positives`, the sampler's count, already on the host), which is torchvision's mean. No
    positive in the batch: 0 with zero gradients, as torchvision's mask_logits.sum() * 0."""
    size = mask_logits.shape[-1]
    targets = torch.cat([project_masks_on_boxes(masks, box, index, size) if masks.shape[0]
                         else box.new_zeros(box.shape[0], size, size)  # no ground truth: padding only
                         for masks, box, index in zip(gt_masks, boxes, gt_index)])
    labels = torch.cat(slot_labels)
    logits = mask_logits[torch.arange(labels.shape[0], device=labels.device), labels]
    terms = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    kept = torch.where((labels > 0)[:, None, None], terms, 0.0)
    return kept.sum() / (max(positives, 1) * size * size)
