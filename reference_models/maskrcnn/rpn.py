"""torchvision's region proposal network with its per-image loops and host syncs taken out, as NVIDIA's
MLPerf Mask R-CNN does (anchors made once per image size; top-k, decode, clip, NMS for the whole batch
on the device); same anchors, proposals, matches, samples and losses as torchvision's
RegionProposalNetwork (tests/reference_models/maskrcnn/test_batched_heads.py and test_losses.py).

What syncs remain, each named where it happens: one read of the kept proposals' counts, NMS's
convergence flags (reference_models/maskrcnn/nms.py), one read of the sampler's candidate counts.

    python -m harness.train model=maskrcnn dataset=maskrcnn_coco2017 mode=throughput precision=amp
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor
from torchvision.models.detection import _utils as det_utils
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.image_list import ImageList
from torchvision.models.detection.rpn import RegionProposalNetwork
from torchvision.ops import boxes as box_ops

from reference_models.maskrcnn.nms import grouped_nms


class CachedAnchorGenerator(AnchorGenerator):
    """torchvision's anchors, made once per (padded image size, feature sizes, dtype, device)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._made: dict[tuple, Tensor] = {}

    def forward(self, image_list: ImageList, feature_maps: list[Tensor]) -> list[Tensor]:
        key = (tuple(image_list.tensors.shape[-2:]), tuple(tuple(f.shape[-2:]) for f in feature_maps),
               feature_maps[0].dtype, feature_maps[0].device)
        if key not in self._made:
            if len(self._made) > 64:  # a stream of new sizes (evaluation at many shapes) does not grow it forever
                self._made.clear()
            one = ImageList(image_list.tensors[:1], image_list.image_sizes[:1])
            self._made[key] = super().forward(one, feature_maps)[0]
        return [self._made[key]] * len(image_list.image_sizes)


class CachedBoxCoder(det_utils.BoxCoder):
    """BoxCoder whose encoding weights are copied to the device once (torchvision copies them on every
    encode: a blocking copy, a sync)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._weights: dict[tuple, Tensor] = {}

    def encode_single(self, reference_boxes: Tensor, proposals: Tensor) -> Tensor:
        key = (reference_boxes.dtype, reference_boxes.device)
        if key not in self._weights:
            self._weights[key] = torch.as_tensor(self.weights, dtype=reference_boxes.dtype,
                                                 device=reference_boxes.device)
        return det_utils.encode_boxes(reference_boxes, proposals, self._weights[key])


class SyncFreeMatcher(det_utils.Matcher):
    """torchvision's Matcher without nonzero(): the low-quality matches are found as a mask."""

    def __call__(self, match_quality_matrix: Tensor) -> Tensor:
        if match_quality_matrix.numel() == 0:
            return super().__call__(match_quality_matrix)  # its errors for empty inputs
        matched_vals, matches = match_quality_matrix.max(dim=0)
        all_matches = matches
        matches = torch.where(matched_vals < self.low_threshold, self.BELOW_LOW_THRESHOLD,
                              torch.where(matched_vals < self.high_threshold, self.BETWEEN_THRESHOLDS, matches))
        if self.allow_low_quality_matches:
            # every prediction that is some ground truth's best (ties included) keeps its best match
            highest_quality_foreach_gt = match_quality_matrix.max(dim=1).values
            is_best = (match_quality_matrix == highest_quality_foreach_gt[:, None]).any(dim=0)
            matches = torch.where(is_best, all_matches, matches)
        return matches


def first_true(mask: Tensor, count: int) -> Tensor:
    """The indices where mask is True, ascending, given how many there are (as torch.where(mask)[0]
    without the sync)."""
    return torch.argsort((~mask).to(torch.uint8), stable=True)[:count]


class CountedSampler(det_utils.BalancedPositiveNegativeSampler):
    """torchvision's balanced sampler drawing the same random permutations in the same order, with one
    host read of all images' candidate counts instead of two per image; it also returns the sampled
    indices and the positive counts, which the callers use instead of finding them again."""

    def sample(self, matched_idxs: list[Tensor]) -> tuple[list[Tensor], list[Tensor], list[int]]:
        if len({m.shape for m in matched_idxs}) == 1:  # the RPN's anchors: one sort for the whole batch
            m = torch.stack(matched_idxs)
            pos, neg = m >= 1, m == 0
            counts = torch.stack([pos.sum(1), neg.sum(1)]).tolist()  # sync point: candidate counts
            # positives first, then negatives, each in index order
            order = torch.argsort(torch.where(pos, 0, torch.where(neg, 1, 2)).to(torch.uint8), dim=1, stable=True)
            candidates = [(o[:p], o[p:p + n]) for o, p, n in zip(order, *counts)]
        else:
            positive = [m >= 1 for m in matched_idxs]
            negative = [m == 0 for m in matched_idxs]
            counts = torch.stack([torch.stack([p.sum() for p in positive]),
                                  torch.stack([n.sum() for n in negative])]).tolist()  # sync point: candidate counts
            candidates = [(first_true(p, n_p), first_true(n, n_n)) for p, n, n_p, n_n in zip(positive, negative, *counts)]
        pos_idx, neg_idx, num_positive = [], [], []
        for (positives, negatives), n_pos, n_neg in zip(candidates, *counts):
            num_pos = min(n_pos, int(self.batch_size_per_image * self.positive_fraction))
            num_neg = min(n_neg, self.batch_size_per_image - num_pos)
            # torchvision's draws, in its order
            perm1 = torch.randperm(n_pos, device=positives.device)[:num_pos]
            perm2 = torch.randperm(n_neg, device=negatives.device)[:num_neg]
            pos_idx.append(positives[perm1])
            neg_idx.append(negatives[perm2])
            num_positive.append(num_pos)
        return pos_idx, neg_idx, num_positive

    def __call__(self, matched_idxs: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        pos_idx, neg_idx, _ = self.sample(matched_idxs)
        masks = []
        for m, pos, neg in zip(matched_idxs, pos_idx, neg_idx):
            p, n = torch.zeros_like(m, dtype=torch.uint8), torch.zeros_like(m, dtype=torch.uint8)
            p[pos], n[neg] = 1, 1
            masks.append((p, n))
        return [p for p, _ in masks], [n for _, n in masks]


def batched_box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    """[B, M, 4] x [N, 4] or [B, N, 4] -> [B, M, N]: torchvision's box_iou for each of the B sets, in
    its arithmetic (each side's areas in its own dtype, the intersection upcast to float32)."""
    b2 = boxes2 if boxes2.dim() == 3 else boxes2[None]
    area1 = box_ops.box_area(boxes1.flatten(0, 1)).view(boxes1.shape[:2])
    area2 = box_ops.box_area(b2.flatten(0, 1)).view(b2.shape[:2])
    lt = torch.max(boxes1[:, :, None, :2], b2[:, None, :, :2])
    rb = torch.min(boxes1[:, :, None, 2:], b2[:, None, :, 2:])
    wh = rb.sub_(lt)
    wh = (wh if wh.dtype in (torch.float32, torch.float64) else wh.float()).clamp_(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (area1[:, :, None] + area2[:, None, :] - inter)


def padded(boxes: list[Tensor]) -> tuple[Tensor, Tensor]:
    """Per-image [n_i, 4] boxes -> [B, max(1, max n_i), 4] (zeros after each image's own) and the mask
    of real rows; made on the device without a host tensor (whose copy would sync)."""
    most = max(1, max(b.shape[0] for b in boxes))
    rows = torch.stack([F.pad(b, (0, 0, 0, most - b.shape[0])) for b in boxes])
    real = torch.stack([F.pad(torch.ones(b.shape[0], dtype=torch.bool, device=b.device), (0, most - b.shape[0]))
                        for b in boxes])
    return rows, real


def level_groups(values: Tensor, sizes: list[int], width: int, fill: float | bool) -> Tensor:
    """[B, sum(sizes), ...] in level-contiguous runs -> [B * levels, width, ...], runs padded with fill."""
    out = values.new_full((values.shape[0], len(sizes), width, *values.shape[2:]), fill)
    for level, run in enumerate(values.split(sizes, dim=1)):
        out[:, level, :run.shape[1]] = run
    return out.flatten(0, 1)


class BatchedRPN(RegionProposalNetwork):
    """RegionProposalNetwork whose proposal selection, target assignment and loss run batched."""

    @classmethod
    def like(cls, rpn: RegionProposalNetwork) -> "BatchedRPN":
        """The same network and settings as a torchvision RPN (its head and anchor sizes are shared)."""
        anchors = CachedAnchorGenerator(rpn.anchor_generator.sizes, rpn.anchor_generator.aspect_ratios)
        new = cls(anchors, rpn.head, rpn.proposal_matcher.high_threshold, rpn.proposal_matcher.low_threshold,
                  rpn.fg_bg_sampler.batch_size_per_image, rpn.fg_bg_sampler.positive_fraction,
                  dict(rpn._pre_nms_top_n), dict(rpn._post_nms_top_n), rpn.nms_thresh, rpn.score_thresh)
        new.min_size = rpn.min_size
        return new

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.proposal_matcher = SyncFreeMatcher(self.proposal_matcher.high_threshold,
                                                self.proposal_matcher.low_threshold, allow_low_quality_matches=True)
        self.fg_bg_sampler = CountedSampler(self.fg_bg_sampler.batch_size_per_image,
                                            self.fg_bg_sampler.positive_fraction)
        self.box_coder = CachedBoxCoder(self.box_coder.weights, self.box_coder.bbox_xform_clip)
        self.matrix_nms: Optional[bool] = None  # grouped_nms's choice: None picks the batched one on a GPU

    def filter_proposals(self, proposals: Tensor, objectness: Tensor, image_shapes: list[tuple[int, int]],
                         num_anchors_per_level: list[int]) -> tuple[list[Tensor], list[Tensor]]:
        num_images, device = proposals.shape[0], proposals.device
        objectness = objectness.detach().reshape(num_images, -1)
        top_n_idx = self._get_top_n_idx(objectness, num_anchors_per_level)  # torchvision's per-level top-k
        batch_idx = torch.arange(num_images, device=device)[:, None]
        scores = torch.sigmoid(objectness[batch_idx, top_n_idx])
        boxes = proposals[batch_idx, top_n_idx]
        # image by image: a tensor of the sizes made on the host would cost a sync to copy
        boxes = torch.stack([box_ops.clip_boxes_to_image(b, s) for b, s in zip(boxes, image_shapes)])
        # remove_small_boxes and the score threshold, as a mask
        valid = ((boxes[..., 2] - boxes[..., 0]) >= self.min_size) & ((boxes[..., 3] - boxes[..., 1]) >= self.min_size)
        valid &= scores >= self.score_thresh
        # NMS independently per image and level (what torchvision's batched_nms over lvl computes)
        sizes = [min(self.pre_nms_top_n(), n) for n in num_anchors_per_level]
        width = max(sizes)
        keep = grouped_nms(level_groups(boxes, sizes, width, 0.0), level_groups(scores, sizes, width, 0.0),
                           level_groups(valid, sizes, width, False), self.nms_thresh, matrix=self.matrix_nms)
        keep = torch.cat([k[:, :n] for k, n in zip(keep.view(num_images, len(sizes), width).unbind(1), sizes)], dim=1)
        # torchvision keeps the best post_nms_top_n of an image's kept boxes, in score order (stable)
        ranked = scores.float().masked_fill(~keep, float("-inf"))
        order = ranked.sort(dim=1, descending=True, stable=True).indices[:, :self.post_nms_top_n()]
        counts = keep.sum(dim=1).clamp(max=self.post_nms_top_n()).tolist()  # sync point: proposals per image
        final_boxes, final_scores = [], []
        for b, s, o, n in zip(boxes, scores, order, counts):
            final_boxes.append(b[o[:n]])
            final_scores.append(s[o[:n]])
        return final_boxes, final_scores

    def assign_targets_to_anchors(self, anchors: list[Tensor], targets: list[dict[str, Tensor]]
                                  ) -> tuple[list[Tensor], list[Tensor]]:
        if all(a is anchors[0] for a in anchors) and all(t["boxes"].dim() == 2 for t in targets):
            return self._assign_batched(anchors[0], [t["boxes"] for t in targets])
        labels, matched_gt_boxes = [], []
        for anchors_per_image, targets_per_image in zip(anchors, targets):
            gt_boxes = targets_per_image["boxes"]
            if gt_boxes.numel() == 0:  # a background image, as torchvision labels it
                device = anchors_per_image.device
                matched_gt_boxes.append(torch.zeros(anchors_per_image.shape, dtype=torch.float32, device=device))
                labels.append(torch.zeros((anchors_per_image.shape[0],), dtype=torch.float32, device=device))
                continue
            matched_idxs = self.proposal_matcher(self.box_similarity(gt_boxes, anchors_per_image))
            matched_gt_boxes.append(gt_boxes[matched_idxs.clamp(min=0)])
            # 1 matched, 0 background, -1 between the thresholds (ignored)
            labels.append(torch.where(matched_idxs >= 0, 1.0,
                                      torch.where(matched_idxs == self.proposal_matcher.BETWEEN_THRESHOLDS, -1.0, 0.0)))
        return labels, matched_gt_boxes

    def _assign_batched(self, anchors: Tensor, gt: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        """assign_targets_to_anchors for a batch sharing its anchors: ground truth padded to the most
        boxes of an image, IoU and matching for all images at once (torchvision's Matcher rules)."""
        boxes, real = padded(gt)
        iou = batched_box_iou(boxes, anchors).masked_fill_(~real[:, :, None], -1.0)
        matcher = self.proposal_matcher
        matched_vals, all_matches = iou.max(dim=1)
        matches = torch.where(matched_vals < matcher.low_threshold, matcher.BELOW_LOW_THRESHOLD,
                              torch.where(matched_vals < matcher.high_threshold, matcher.BETWEEN_THRESHOLDS, all_matches))
        best = ((iou == iou.max(dim=2, keepdim=True).values) & real[:, :, None]).any(dim=1)
        matches = torch.where(best, all_matches, matches)
        matched = boxes.gather(1, matches.clamp(min=0)[:, :, None].expand(-1, -1, 4))
        labels = torch.where(matches >= 0, 1.0, torch.where(matches == matcher.BETWEEN_THRESHOLDS, -1.0, 0.0))
        return list(labels.unbind(0)), list(matched.unbind(0))

    def compute_loss(self, objectness: Tensor, pred_bbox_deltas: Tensor, labels: list[Tensor],
                     regression_targets: list[Tensor]) -> tuple[Tensor, Tensor]:
        assert isinstance(self.fg_bg_sampler, CountedSampler)
        pos_idx, neg_idx, _ = self.fg_bg_sampler.sample(labels)
        offsets = [0]
        for lab in labels[:-1]:
            offsets.append(offsets[-1] + lab.shape[0])
        # ascending, as torch.where over the concatenated masks orders them
        sampled_pos_inds = torch.cat([p + o for p, o in zip(pos_idx, offsets)]).sort().values
        sampled_neg_inds = torch.cat([n + o for n, o in zip(neg_idx, offsets)]).sort().values
        sampled_inds = torch.cat([sampled_pos_inds, sampled_neg_inds], dim=0)
        objectness = objectness.flatten()
        all_labels = torch.cat(labels, dim=0)
        targets = torch.cat(regression_targets, dim=0)
        box_loss = F.smooth_l1_loss(pred_bbox_deltas[sampled_pos_inds], targets[sampled_pos_inds], beta=1 / 9,
                                    reduction="sum") / sampled_inds.numel()
        objectness_loss = F.binary_cross_entropy_with_logits(objectness[sampled_inds], all_labels[sampled_inds])
        return objectness_loss, box_loss

