"""Greedy non-maximum suppression of many independent groups at once, with torchvision.ops.nms's result.

torchvision's CUDA NMS resolves its suppression mask in one thread block that walks the boxes one by
one (gather_keep_from_mask: 3.2 ms for an image's 10,000 RPN candidates on an H200, 26 ms of a batch of
8's step, docs/benchmarks/h200_2026-12-01/detection/profile_maskrcnn.txt), and returns a tensor whose
length the host must read. Here every group (an image's FPN level) is suppressed at once: the pairwise
"suppresses" matrix S (IoU above the threshold, higher score first) is built for all groups together, and
greedy NMS's keep vector, the unique solution of keep[i] = valid[i] and not any(keep[j] and S[j, i]
for j before i), is found by iterating that equation from keep = valid. After r rounds the first r boxes
of each group are final, so it ends within K + 1 rounds; on RPN candidates it ends in a few, because a
kept box settles every box it suppresses in the next round (7 rounds and an 8th that confirms them, on a
randomly initialised real-scale RPN at 512x768 and on clustered boxes). The host reads whether a round
changed anything after 4, 8, 16, ... rounds (the only syncs), and the last round is exactly
greedy NMS: the same boxes torchvision.ops.nms keeps, compared on ties and random boxes in
tests/reference_models/maskrcnn/test_batched_heads.py.

    python -c "import torch; from reference_models.maskrcnn.nms import grouped_nms; b = torch.rand(2, 50, 4).cumsum(-1); print(grouped_nms(b, torch.rand(2, 50), torch.ones(2, 50, dtype=torch.bool), 0.5).sum(1))"
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torchvision.ops import nms


def suppression_matrix(boxes: Tensor, iou_threshold: float) -> Tensor:
    """boxes [G, K, 4] in score order -> S [G, K, K] bool: S[g, j, i] when box j comes before box i
    and their IoU passes the threshold, IoU computed as torchvision's NMS kernels compute it (in float32)."""
    b = boxes.float()
    x1, y1, x2, y2 = b.unbind(-1)
    area = (x2 - x1) * (y2 - y1)
    w = torch.minimum(x2[:, :, None], x2[:, None, :]).sub_(torch.maximum(x1[:, :, None], x1[:, None, :])).clamp_(min=0)
    h = torch.minimum(y2[:, :, None], y2[:, None, :]).sub_(torch.maximum(y1[:, :, None], y1[:, None, :])).clamp_(min=0)
    inter = w.mul_(h)
    del h
    union = (area[:, :, None] + area[:, None, :]).sub_(inter)
    over = inter.div_(union) > iou_threshold
    k = boxes.shape[1]
    return over.logical_and_(torch.ones(k, k, dtype=torch.bool, device=boxes.device).triu_(1))


def grouped_nms(boxes: Tensor, scores: Tensor, valid: Tensor, iou_threshold: float, first_check: int = 4,
                max_group_elements: int = 2 ** 28, matrix: Optional[bool] = None) -> Tensor:
    """boxes [G, K, 4], scores [G, K], valid [G, K] -> keep [G, K] bool: in each group, the valid boxes
    torchvision.ops.nms(boxes[g][valid[g]], scores[g][valid[g]], iou_threshold) keeps (ties in score taken
    in index order, as its stable sort takes them). Groups are suppressed max_group_elements / K^2 at a
    time, which bounds the K x K temporaries (2^28 elements: 1 GiB a float32 one; the RPN's 8 images x 5
    levels x 2000^2 candidates fit in one go). matrix: the batched suppression above (default on a GPU),
    or torchvision's nms group by group (default on a CPU, where there is no device to wait for and its
    loop that skips suppressed boxes is the faster)."""
    g, k = scores.shape
    if g == 0 or k == 0:
        return valid.clone()
    if not (boxes.is_cuda if matrix is None else matrix):
        keep = torch.zeros_like(valid)
        for i in range(g):
            idx = valid[i].nonzero()[:, 0]
            keep[i, idx[nms(boxes[i, idx].float(), scores[i, idx].float(), iou_threshold)]] = True
        return keep
    key = scores.float().masked_fill(~valid, float("-inf"))
    order = key.sort(dim=1, descending=True, stable=True).indices
    sorted_boxes = boxes.gather(1, order[:, :, None].expand(-1, -1, 4))
    sorted_valid = valid.gather(1, order)
    # 0/1 matrices multiply exactly in half precision on a GPU (sums only need to be nonzero)
    dtype = torch.float16 if boxes.is_cuda else torch.float32
    keep_sorted = torch.empty_like(sorted_valid)
    step = max(1, max_group_elements // (k * k))
    for start in range(0, g, step):
        part = slice(start, start + step)
        s = suppression_matrix(sorted_boxes[part], iou_threshold)
        s.logical_and_(sorted_valid[part][:, :, None])  # an invalid box suppresses nothing
        keep_sorted[part] = _settle(s.to(dtype), sorted_valid[part], first_check)
    return torch.zeros_like(valid).scatter_(1, order, keep_sorted)


def _settle(s: Tensor, valid: Tensor, first_check: int) -> Tensor:
    """Iterate keep = valid and not (keep @ S) to its fixed point, the greedy solution."""
    keep = valid
    k = valid.shape[1]
    check = first_check
    for rounds in range(1, k + 2):
        suppressed = torch.bmm(keep.to(s.dtype)[:, None, :], s)[:, 0] > 0
        new = valid & ~suppressed
        # sync point: one flag read after first_check rounds, then at twice as many each time (a round
        # costs less than a read); after k + 1 rounds the answer is exact
        if rounds == check or rounds > k:
            if torch.equal(new, keep):
                return new
            check *= 2
        keep = new
    return keep
