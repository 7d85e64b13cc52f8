"""SSD's loss as the reference's base_model.Loss: Smooth-L1 on the positives' offsets plus softmax
cross-entropy on the positives and the hardest 3x as many negatives, per image divided by its positive
count, averaged over the batch (an image without positives adds 0). torchvision's SSD normalises by the
batch's total positives instead, so the reference's loss is written out here.

    python -c "import torch; from reference_models.ssd.loss import ssd_loss; print(ssd_loss(torch.zeros(1,4,4), torch.zeros(1,4,3), torch.zeros(1,4,4), torch.tensor([[1,0,0,0]])))"
"""
from __future__ import annotations

import torch
from torch.nn.functional import cross_entropy, smooth_l1_loss


def ssd_loss(ploc: torch.Tensor, plabel: torch.Tensor, gloc: torch.Tensor, glabel: torch.Tensor,
             negatives_per_positive: int = 3) -> torch.Tensor:
    """ploc (N, B, 4) and plabel (N, B, C) from the network; gloc (N, B, 4) encoded targets and glabel
    (N, B) labels, 0 for background."""
    return ssd_loss_terms(ploc, plabel, gloc, glabel, negatives_per_positive)[0]


def ssd_loss_terms(ploc: torch.Tensor, plabel: torch.Tensor, gloc: torch.Tensor, glabel: torch.Tensor,
                   negatives_per_positive: int = 3) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The loss (computed as the reference computes it) and its two parts, each normalised the same
    way: {"box": the Smooth-L1 part, "class": the cross-entropy part}; they add up to the loss up to
    rounding."""
    ploc, plabel = ploc.float(), plabel.float()
    positive = glabel > 0
    n_pos = positive.sum(dim=1)
    box_loss = (smooth_l1_loss(ploc, gloc, reduction="none").sum(dim=2) * positive).sum(dim=1)
    con = cross_entropy(plabel.transpose(1, 2), glabel, reduction="none")  # (N, B)
    # hard negatives: rank the background boxes by their loss; positives never rank
    con_neg = con.masked_fill(positive, 0.0)
    _, order = con_neg.sort(dim=1, descending=True)
    _, rank = order.sort(dim=1)
    negative = rank < (negatives_per_positive * n_pos).clamp(max=glabel.shape[1]).unsqueeze(1)
    class_loss = (con * (positive | negative)).sum(dim=1)
    has_pos = (n_pos > 0).float()
    weight = has_pos / n_pos.float().clamp(min=1e-6)
    total = ((box_loss + class_loss) * has_pos / n_pos.float().clamp(min=1e-6)).mean()
    with torch.no_grad():  # logged, not trained on: the total above is what backward sees
        terms = {"box": (box_loss * weight).mean(), "class": (class_loss * weight).mean()}
    return total, terms
