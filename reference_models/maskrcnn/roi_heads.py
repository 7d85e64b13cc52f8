"""torchvision's box and mask heads with fewer host syncs and per-image loops: proposals matched to the
ground truth for all images at once, rpn.py's sampler (one read of the candidate counts, torchvision's
random draws), ROIs pooled level by level after one read of the level counts, the positives' indices
taken from the counts the sampler already read. Same samples, features and losses as torchvision's
RoIHeads (tests/reference_models/maskrcnn/test_batched_heads.py and test_losses.py).

Syncs left, each named where it happens: the sampler's candidate counts, one level-count read per
pooling. Evaluation (postprocess_detections, mask pasting) is torchvision's. With `fixed_mask_rois` the
mask branch of training takes one of a few fixed numbers of ROIs per image (mask_rois.py), so that it can
be compiled and replayed (`compile_mask_branch`).

    python -m harness.train model=maskrcnn dataset=maskrcnn_coco2017 mode=throughput precision=amp
"""
from __future__ import annotations

from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import Tensor
from torchvision.models.detection.roi_heads import RoIHeads, maskrcnn_loss
from torchvision.ops import MultiScaleRoIAlign, roi_align
from torchvision.ops.poolers import LevelMapper, _convert_to_roi_format, _filter_input, _setup_scales

from reference_models.maskrcnn import mask_rois
from reference_models.maskrcnn.rpn import (CachedBoxCoder, CountedSampler, SyncFreeMatcher, batched_box_iou, first_true,
                                          padded)


class LevelSortedRoIAlign(MultiScaleRoIAlign):
    """MultiScaleRoIAlign that reads the ROIs' level counts once (torchvision finds each level's ROIs
    with a torch.where of its own, one sync per level) and pools each level's contiguous run."""

    @classmethod
    def like(cls, pool: MultiScaleRoIAlign) -> "LevelSortedRoIAlign":
        return cls(pool.featmap_names, pool.output_size, pool.sampling_ratio,
                   canonical_scale=pool.canonical_scale, canonical_level=pool.canonical_level)

    def forward(self, x: dict[str, Tensor], boxes: list[Tensor], image_shapes: list[tuple[int, int]]) -> Tensor:
        features = _filter_input(x, self.featmap_names)
        scales: Optional[list[float]] = self.scales  # type: ignore[has-type]
        mapper: Optional[LevelMapper] = self.map_levels  # type: ignore[has-type]
        if scales is None or mapper is None:  # torchvision's: found on the first call and kept
            scales, mapper = _setup_scales(features, image_shapes, self.canonical_scale, self.canonical_level)
            self.scales, self.map_levels = scales, mapper
        rois = _convert_to_roi_format(boxes)
        if len(features) == 1:
            return roi_align(features[0], rois, self.output_size, scales[0], self.sampling_ratio)
        levels = mapper(boxes)
        order = torch.argsort(levels, stable=True)
        # sync point: ROIs per level (a comparison, not bincount, which has no deterministic CUDA kernel)
        counts = (levels[None, :] == torch.arange(len(features), device=levels.device)[:, None]).sum(1).tolist()
        pooled = [roi_align(feature, part, self.output_size, scale, self.sampling_ratio)
                  for feature, part, scale in zip(features, rois[order].split(counts), scales)]
        # as torchvision's result tensor: the first level's dtype (autocast may give levels different ones)
        merged = torch.cat([p.to(features[0].dtype) for p in pooled])
        return merged[torch.argsort(order)]


class BatchedRoIHeads(RoIHeads):
    """RoIHeads (boxes and masks; no keypoints) with the syncs above taken out of training."""

    @classmethod
    def like(cls, heads: RoIHeads) -> "BatchedRoIHeads":
        if heads.keypoint_predictor is not None:
            raise ValueError("BatchedRoIHeads covers box and mask heads, not keypoints")
        return cls(LevelSortedRoIAlign.like(heads.box_roi_pool), heads.box_head, heads.box_predictor,
                   heads.proposal_matcher.high_threshold, heads.proposal_matcher.low_threshold,
                   heads.fg_bg_sampler.batch_size_per_image, heads.fg_bg_sampler.positive_fraction,
                   heads.box_coder.weights, heads.score_thresh, heads.nms_thresh, heads.detections_per_img,
                   mask_roi_pool=None if heads.mask_roi_pool is None else LevelSortedRoIAlign.like(heads.mask_roi_pool),
                   mask_head=heads.mask_head, mask_predictor=heads.mask_predictor)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.proposal_matcher = SyncFreeMatcher(self.proposal_matcher.high_threshold,
                                                self.proposal_matcher.low_threshold, allow_low_quality_matches=False)
        self.fg_bg_sampler = CountedSampler(self.fg_bg_sampler.batch_size_per_image,
                                            self.fg_bg_sampler.positive_fraction)
        self.box_coder = CachedBoxCoder(self.box_coder.weights, self.box_coder.bbox_xform_clip)
        self._num_positive: list[int] = []
        # model.fixed_mask_rois: the mask branch on a fixed number of ROIs (mask_rois.py); build_model sets it
        self.fixed_mask_rois = False
        self._mask_branch: Optional[mask_rois.MaskBranch] = None

    def compile_mask_branch(self, **compile_kwargs: Any) -> None:
        """torch.compile the mask head and predictor, as one graph, for the training step's fixed-size mask
        branch (`fixed_mask_rois`); evaluation keeps the eager modules, whose ROI count varies."""
        if not self.fixed_mask_rois:
            raise ValueError("compile_mask_branch needs fixed_mask_rois: the branch's shapes vary without it")
        assert self.mask_head is not None and self.mask_predictor is not None
        # dynamic=False: each slot count is a static graph of its own (five at most), where Dynamo would
        # compile the second count it meets with symbolic sizes, and a CUDA graph per count either way
        self._mask_branch = torch.compile(mask_rois.mask_branch(self.mask_head, self.mask_predictor),
                                          **{"dynamic": False, **compile_kwargs})

    def _most_positives(self) -> int:
        """The most positives the box sampler draws for an image (512 x 0.25 = 128 at the reference's): the
        cap of mask_rois.slots_for."""
        return int(self.fg_bg_sampler.batch_size_per_image * self.fg_bg_sampler.positive_fraction)

    def compile_every_slot_count(self, images: int, requires_grad: bool) -> None:
        """Compile the branch (`compile_mask_branch`) for a batch of `images` at every slot count before the
        first training step's forward (mask_rois.compile_every_slot_count), as that step's pooling would
        hand it the features: float32 under CUDA autocast (`pooling_inputs`), else the heads' dtype."""
        assert self._mask_branch is not None and self.mask_roi_pool is not None and self.mask_head is not None
        weight = next(m for m in self.mask_head.modules() if isinstance(m, torch.nn.Conv2d)).weight
        cast = weight.is_cuda and torch.is_autocast_enabled("cuda")
        cap = self._most_positives()
        roi = (weight.shape[1], *self.mask_roi_pool.output_size)
        mask_rois.compile_every_slot_count(self._mask_branch, roi, images, cap, torch.float32 if cast else weight.dtype,
                                           weight.device, requires_grad)

    def select_training_samples(self, proposals, targets):
        """torchvision's select_training_samples with the matching done for all images at once
        (proposals and ground truth padded; padding rows labelled -1, which the sampler ignores)."""
        self.check_targets(targets)
        assert targets is not None
        dtype = proposals[0].dtype
        gt_boxes = [t["boxes"].to(dtype) for t in targets]
        proposals = self.add_gt_proposals(proposals, gt_boxes)
        boxes, real_boxes = padded(proposals)
        gt, real_gt = padded(gt_boxes)
        iou = batched_box_iou(gt, boxes).masked_fill_(~real_gt[:, :, None], -1.0)
        matcher = self.proposal_matcher
        matched_vals, matches = iou.max(dim=1)
        matches = torch.where(matched_vals < matcher.low_threshold, matcher.BELOW_LOW_THRESHOLD,
                              torch.where(matched_vals < matcher.high_threshold, matcher.BETWEEN_THRESHOLDS, matches))
        clamped = matches.clamp(min=0)
        gt_labels = torch.stack([F.pad(t["labels"], (0, gt.shape[1] - t["labels"].shape[0])) for t in targets])
        labels = gt_labels.gather(1, clamped).to(torch.int64)
        labels = torch.where(matches == matcher.BELOW_LOW_THRESHOLD, 0, labels)
        labels = torch.where((matches == matcher.BETWEEN_THRESHOLDS) | ~real_boxes, -1, labels)
        sampled_inds = self.subsample(list(labels.unbind(0)))
        chosen = [(boxes[i][k], labels[i][k], clamped[i][k]) for i, k in enumerate(sampled_inds)]
        proposals = [c[0] for c in chosen]
        matched_gt_boxes = [g[c[2]] if g.numel() else torch.zeros((len(c[2]), 4), dtype=dtype, device=g.device)
                            for g, c in zip(gt_boxes, chosen)]
        regression_targets = self.box_coder.encode(matched_gt_boxes, proposals)
        return proposals, [c[2] for c in chosen], [c[1] for c in chosen], regression_targets

    def subsample(self, labels):
        assert isinstance(self.fg_bg_sampler, CountedSampler)
        pos_idx, neg_idx, self._num_positive = self.fg_bg_sampler.sample(labels)
        # ascending, as torch.where(pos | neg) orders them
        return [torch.cat([p, n]).sort().values for p, n in zip(pos_idx, neg_idx)]

    def forward(self, features: dict[str, Tensor], proposals: list[Tensor], image_shapes: list[tuple[int, int]],
                targets: Optional[list[dict[str, Tensor]]] = None):
        if not self.training:
            return super().forward(features, proposals, image_shapes, targets)
        if targets is not None:
            for t in targets:
                if t["boxes"].dtype not in (torch.float, torch.double, torch.half):
                    raise TypeError(f"target boxes must be of a float type, got {t['boxes'].dtype}")
                if not t["labels"].dtype == torch.int64:
                    raise TypeError(f"target labels must be of type int64, got {t['labels'].dtype}")
        proposals, matched_idxs, labels, regression_targets = self.select_training_samples(proposals, targets)
        pools = [p for p in (self.box_roi_pool, self.mask_roi_pool) if p is not None]
        features = pooling_inputs(features, {n for p in pools for n in p.featmap_names})
        box_features = self.box_head(self.box_roi_pool(features, proposals, image_shapes))
        class_logits, box_regression = self.box_predictor(box_features)
        loss_classifier, loss_box_reg = fastrcnn_loss(class_logits, box_regression, labels, regression_targets)
        losses = {"loss_classifier": loss_classifier, "loss_box_reg": loss_box_reg}
        if self.has_mask() and self.fixed_mask_rois:
            assert targets is not None
            losses["loss_mask"] = self._fixed_mask_loss(features, proposals, labels, matched_idxs, image_shapes,
                                                        targets)
        elif self.has_mask():
            assert targets is not None and self.mask_roi_pool is not None
            # torch.where(labels > 0) of each image, from the positive count the sampler already read
            positives = [first_true(lab > 0, n) for lab, n in zip(labels, self._num_positive)]
            mask_proposals = [p[i] for p, i in zip(proposals, positives)]
            pos_matched_idxs = [m[i] for m, i in zip(matched_idxs, positives)]
            mask_logits = self.mask_predictor(self.mask_head(self.mask_roi_pool(features, mask_proposals, image_shapes)))
            losses["loss_mask"] = maskrcnn_loss(mask_logits, mask_proposals, [t["masks"] for t in targets],
                                                [t["labels"] for t in targets], pos_matched_idxs)
        return [], losses

    def _fixed_mask_loss(self, features: dict[str, Tensor], proposals: list[Tensor], labels: list[Tensor],
                         matched_idxs: list[Tensor], image_shapes: list[tuple[int, int]],
                         targets: list[dict[str, Tensor]]) -> Tensor:
        """The mask loss with every image's mask ROIs padded to the same slots (mask_rois.slots_for)."""
        assert self.mask_roi_pool is not None and self.mask_head is not None and self.mask_predictor is not None
        cap = self._most_positives()
        slots = mask_rois.slots_for(max(self._num_positive, default=0), cap)
        boxes, gt_index, slot_labels = mask_rois.select(proposals, labels, matched_idxs, slots)
        branch = self._mask_branch or mask_rois.mask_branch(self.mask_head, self.mask_predictor)
        mask_logits = branch(self.mask_roi_pool(features, boxes, image_shapes))
        return mask_rois.mask_loss(mask_logits, boxes, [t["masks"] for t in targets], gt_index, slot_labels,
                                   sum(self._num_positive))


def pooling_inputs(features: dict[str, Tensor], names: set[str]) -> dict[str, Tensor]:
    """The FPN levels as ROIAlign reads them, made once for the box and the mask pooling: under CUDA
    autocast its wrapper casts each level to float32 and its kernel makes it contiguous, for every call
    (with channels_last and a batch of 8 at 800x1216, P2 alone is 500 MB a copy)."""
    cast = torch.is_autocast_enabled("cuda")
    return {k: (v.float() if cast and v.is_cuda and v.dtype != torch.double else v).contiguous()
            for k, v in features.items() if k in names}


def fastrcnn_loss(class_logits: Tensor, box_regression: Tensor, labels: list[Tensor],
                  regression_targets: list[Tensor]) -> tuple[Tensor, Tensor]:
    """torchvision's fastrcnn_loss with the positives as a mask instead of a torch.where (a sync): the
    negatives' terms enter the sum as zeros."""
    all_labels = torch.cat(labels, dim=0)
    targets = torch.cat(regression_targets, dim=0)
    classification_loss = F.cross_entropy(class_logits, all_labels)
    n = class_logits.shape[0]
    box_regression = box_regression.reshape(n, box_regression.size(-1) // 4, 4)
    positive = all_labels > 0
    chosen = box_regression[torch.arange(n, device=all_labels.device), all_labels.clamp(min=0)]
    terms = F.smooth_l1_loss(chosen, targets, beta=1 / 9, reduction="none")
    box_loss = torch.where(positive[:, None], terms, 0.0).sum() / all_labels.numel()
    return classification_loss, box_loss

