"""SSD's default boxes, target assignment and detection decoding, on torchvision's building blocks.

- Default boxes: torchvision's DefaultBoxGenerator with the reference's scales (21..315 px of 300),
  steps (8, 16, 32, 64, 100, 300) and aspect ratios: the same 8,732 boxes, location-major where the
  reference is aspect-major, once their centres are clamped to the image as the reference clamps them
  (it clamps cx, cy, w and h to 0..1; torchvision only w and h, which moves the last row and column
  of the 10x10 map, whose centres fall at 9.5 / 9.375 > 1).
- Assignment: torchvision's SSDMatcher (each ground truth's best default box, then every default box
  with IoU >= 0.5; the reference takes IoU > 0.5, which differs only at exactly 0.5) and BoxCoder with
  weights (10, 10, 5, 5), the reference's scale_xy 0.1 and scale_wh 0.2.
- Decoding: softmax scores; per class the 200 best boxes above 0.05, NMS at IoU 0.5 (torchvision's
  batched_nms drops IoU > 0.5, the reference IoU >= 0.5), then the 200 best of the image. Boxes are
  not clipped to the image, as the reference does not clip them.

Boxes here are in units of the image (0..1), x1, y1, x2, y2.

    python -c "from reference_models.ssd.boxes import default_boxes; print(default_boxes(300, [38,19,10,5,3,1]).shape)"
"""
from __future__ import annotations

from typing import Sequence

import torch
from torchvision.models.detection import _utils as det_utils
from torchvision.models.detection.anchor_utils import DefaultBoxGenerator
from torchvision.models.detection.image_list import ImageList
from torchvision.ops import batched_nms, box_convert, box_iou

REFERENCE_SCALES = (21, 45, 99, 153, 207, 261, 315)
REFERENCE_STEPS = (8, 16, 32, 64, 100, 300)
REFERENCE_RATIOS = ((2,), (2, 3), (2, 3), (2, 3), (2,), (2,))
WEIGHTS = (10.0, 10.0, 5.0, 5.0)


def default_boxes(image_size: int, feature_sizes: Sequence[int], scales: Sequence[float] = REFERENCE_SCALES,
                  steps: Sequence[int] = REFERENCE_STEPS,
                  aspect_ratios: Sequence[Sequence[int]] = REFERENCE_RATIOS) -> torch.Tensor:
    """(boxes, 4) default boxes, x1 y1 x2 y2 in image units, for square feature maps of these sides."""
    if not len(feature_sizes) == len(steps) == len(aspect_ratios) == len(scales) - 1:
        raise ValueError(f"{len(feature_sizes)} feature maps need as many steps and aspect-ratio lists and one "
                         f"more scale; got {len(steps)}, {len(aspect_ratios)} and {len(scales)}")
    generator = DefaultBoxGenerator([list(r) for r in aspect_ratios], scales=[s / image_size for s in scales],
                                    steps=list(steps), clip=True)
    images = ImageList(torch.zeros(1, 3, image_size, image_size), [(image_size, image_size)])
    maps = [torch.zeros(1, 1, f, f) for f in feature_sizes]
    xywh = box_convert(generator(images, maps)[0] / image_size, "xyxy", "cxcywh").clamp(0, 1)
    return box_convert(xywh, "cxcywh", "xyxy")


def boxes_per_location(aspect_ratios: Sequence[Sequence[int]]) -> list[int]:
    return [2 + 2 * len(r) for r in aspect_ratios]


class Encoder:
    """Ground truth -> per-default-box regression targets and labels, and network output -> detections."""

    chunk_values = 2 ** 26  # encode_batch's bound on one chunk's IoU matrix (256 MiB of float32)

    def __init__(self, dboxes: torch.Tensor, match_iou: float = 0.5):
        self.dboxes = dboxes
        self.matcher = det_utils.SSDMatcher(match_iou)
        self.coder = det_utils.BoxCoder(weights=WEIGHTS)
        self._moved: dict[torch.device, torch.Tensor] = {}  # the default boxes on other devices (encode_batch)

    def encode(self, boxes: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(offsets (boxes, 4), labels (boxes,)) for one image's ground truth in image units; 0 is background."""
        n = self.dboxes.shape[0]
        if boxes.numel() == 0:
            return torch.zeros(n, 4), torch.zeros(n, dtype=torch.int64)
        matches = self.matcher(box_iou(boxes, self.dboxes))
        matched = matches >= 0
        target = self.dboxes.clone()  # unmatched boxes regress onto themselves (zero offsets), as the reference's
        target[matched] = boxes[matches[matched]]
        out_labels = torch.zeros(n, dtype=torch.int64)
        out_labels[matched] = labels[matches[matched]]
        return self.coder.encode_single(target, self.dboxes), out_labels

    def encode_batch(self, boxes: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`encode` of a whole batch at once, on the batch's device: boxes (B, M, 4) and labels (B, M)
        from `pad_truth`, -1 where an image has fewer than M boxes -> (offsets (B, boxes, 4), labels
        (B, boxes)), each image's equal to what `encode` makes of its own boxes (the same elementwise
        arithmetic, so bit for bit on one device; tests/reference_models/ssd/test_encode.py). The
        matching is SSDMatcher's written for a batch: padded rows never match; where several ground
        truths claim one default box as their best, the last one takes it, as SSDMatcher's indexed
        assignment leaves it (here a deterministic max, on any device). Images are taken in chunks
        that keep the (images, M, boxes) IoU under `chunk_values`."""
        dev, (b, m) = boxes.device, labels.shape
        dboxes = self._dboxes_on(dev)
        n = dboxes.shape[0]
        if m == 0:
            return torch.zeros(b, n, 4, device=dev), torch.zeros(b, n, dtype=torch.int64, device=dev)
        chunk = max(1, self.chunk_values // (m * n))
        parts = [self._encode_chunk(boxes[i: i + chunk], labels[i: i + chunk], dboxes) for i in range(0, b, chunk)]
        if len(parts) == 1:
            return parts[0]
        return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])

    def _encode_chunk(self, boxes: torch.Tensor, labels: torch.Tensor, dboxes: torch.Tensor
                      ) -> tuple[torch.Tensor, torch.Tensor]:
        (b, m), n = labels.shape, dboxes.shape[0]
        valid = labels >= 0
        iou = box_iou(boxes.reshape(-1, 4), dboxes).view(b, m, n).masked_fill_(~valid.unsqueeze(2), -1.0)
        # Matcher: each default box's best ground truth, kept at IoU >= the threshold
        best_iou, matches = iou.max(dim=1)  # (b, n)
        matches.masked_fill_(best_iou < self.matcher.low_threshold, -1)
        # SSDMatcher: each ground truth takes its own best default box whatever the IoU
        best_box = iou.argmax(dim=2)  # (b, m)
        claim = torch.where(valid, torch.arange(m, device=boxes.device).expand(b, m), -1)
        forced = torch.full((b, n), -1, dtype=torch.int64, device=boxes.device)
        forced.scatter_reduce_(1, best_box, claim, reduce="amax")
        matches = torch.where(forced >= 0, forced, matches)
        matched = matches >= 0
        index = matches.clamp(min=0)
        picked = torch.gather(boxes, 1, index.unsqueeze(2).expand(b, n, 4))
        # unmatched boxes regress onto themselves (zero offsets), as encode's
        target = torch.where(matched.unsqueeze(2), picked, dboxes.unsqueeze(0))
        out_labels = torch.where(matched, torch.gather(labels, 1, index), 0)
        offsets = self.coder.encode_single(target.reshape(-1, 4), dboxes.repeat(b, 1)).view(b, n, 4)
        return offsets, out_labels

    def _dboxes_on(self, device: torch.device) -> torch.Tensor:
        if self.dboxes.device == device:
            return self.dboxes
        cached = self._moved.get(device)
        if cached is None:
            cached = self._moved[device] = self.dboxes.to(device)
        return cached

    def decode(self, offsets: torch.Tensor, logits: torch.Tensor, score_threshold: float = 0.05,
               nms_iou: float = 0.5, max_detections: int = 200) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """Per image (boxes (k, 4) in image units, labels (k,) 1..C-1, scores (k,)), best first."""
        dboxes = self.dboxes.to(offsets.device)
        scores_all = torch.softmax(logits.float(), dim=-1)[..., 1:]
        out = []
        for loc, scores in zip(offsets.float(), scores_all):
            boxes = self.coder.decode_single(loc, dboxes)
            k = min(max_detections, scores.shape[0])
            top, index = scores.topk(k, dim=0)  # the best k boxes of each class
            classes = torch.arange(1, scores.shape[1] + 1, device=scores.device).expand(k, -1)
            keep = top > score_threshold
            cand_boxes, cand_scores, cand_labels = boxes[index[keep]], top[keep], classes[keep]
            kept = batched_nms(cand_boxes, cand_scores, cand_labels, nms_iou)[:max_detections]
            out.append((cand_boxes[kept], cand_labels[kept], cand_scores[kept]))
        return out


def pad_truth(truths: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Images' ground truth ((boxes (k, 4), labels (k,)) each) as the batch Encoder.encode_batch
    takes: (B, M, 4) boxes and (B, M) labels, M the most boxes of an image, labels -1 after an
    image's own."""
    m = max((len(labels) for _, labels in truths), default=0)
    boxes = torch.zeros(len(truths), m, 4)
    labels = torch.full((len(truths), m), -1, dtype=torch.int64)
    for i, (bx, lb) in enumerate(truths):
        boxes[i, : len(lb)] = bx
        labels[i, : len(lb)] = lb
    return boxes, labels
