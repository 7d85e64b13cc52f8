"""Transformer-XL's adaptive embedding and its tied softmax for the tests, every weight drawn from
N(0, 0.5) so that the clusters' scores differ visibly (the model's own init keeps them near equal)."""
from __future__ import annotations

import torch

from reference_models.txl.adaptive import AdaptiveEmbedding, ProjectedAdaptiveLogSoftmax


def spread_adaptive(vocab: int, d_embed: int, cutoffs: list[int],
                    div_val: int) -> tuple[AdaptiveEmbedding, ProjectedAdaptiveLogSoftmax]:
    """d_model 16; draws from torch's global generator (a test seeds it first)."""
    emb = AdaptiveEmbedding(vocab, d_embed, 16, cutoffs, div_val)
    crit = ProjectedAdaptiveLogSoftmax(emb, d_embed)
    for p in [*emb.parameters(), *crit.parameters()]:
        torch.nn.init.normal_(p, 0, 0.5)
    return emb, crit
