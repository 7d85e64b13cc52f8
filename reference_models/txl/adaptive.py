"""Adaptive input embeddings and the projected adaptive softmax of Transformer-XL (Baevski & Auli;
Grave et al.), with the softmax's cluster weights tied to the input embeddings as NVIDIA's
WikiText-103 configurations tie them.

torch.nn.AdaptiveLogSoftmaxWithLoss is not used: it cannot share its weights with an embedding and
lays its tail projections out differently, so neither its parameters nor its work would be the
reference's.

    python -c "from reference_models.txl.adaptive import AdaptiveEmbedding; print(AdaptiveEmbedding(1000, 64, 64, [500]))"
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn


def bounds(n_token: int, cutoffs: Sequence[int]) -> list[tuple[int, int]]:
    """[(first, end)] of the shortlist and of each tail cluster."""
    edges = [0, *cutoffs, n_token]
    if any(a >= b for a, b in zip(edges, edges[1:])):
        raise ValueError(f"cutoffs {list(cutoffs)} must rise strictly inside the vocabulary of {n_token}")
    return list(zip(edges, edges[1:]))


class AdaptiveEmbedding(nn.Module):
    """Cluster i embeds in d_embed / div_val^i dimensions and projects to d_proj; scaled by sqrt(d_proj)."""

    def __init__(self, n_token: int, d_embed: int, d_proj: int, cutoffs: Sequence[int], div_val: int = 1):
        super().__init__()
        self.clusters = bounds(n_token, cutoffs)
        self.d_proj, self.div_val, self.scale = d_proj, div_val, d_proj ** 0.5
        if div_val == 1:
            self.layers = nn.ModuleList([nn.Embedding(n_token, d_embed)])
            widths = [d_embed] if d_proj != d_embed else []
        else:
            widths = [d_embed // div_val ** i for i in range(len(self.clusters))]
            self.layers = nn.ModuleList(nn.Embedding(end - first, w) for (first, end), w in zip(self.clusters, widths))
        self.projs = nn.ParameterList(nn.Parameter(torch.zeros(d_proj, w)) for w in widths)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.div_val == 1:
            embed = self.layers[0](tokens)
            if len(self.projs):
                embed = F.linear(embed, self.projs[0])
            return embed * self.scale
        # every cluster embeds every token (clamped into its range) and the token's own cluster is
        # kept: no data-dependent shapes, so no host sync, at the cost of small extra projections
        embed = None
        for (first, end), layer, proj in zip(self.clusters, self.layers, self.projs):
            part = F.linear(layer((tokens - first).clamp(0, end - first - 1)), proj)
            inside = ((tokens >= first) & (tokens < end))[..., None]
            embed = torch.where(inside, part, 0.0 if embed is None else embed)
        return embed * self.scale


class ProjectedAdaptiveLogSoftmax(nn.Module):
    """The mean negative log-likelihood of the targets: a head softmax over the shortlist and one
    logit per tail cluster, then, for the targets in a cluster, that cluster's own softmax. Output
    weights are the embedding tables; the head's projection is its own, the tails' are the
    embedding's (NVIDIA's tie_projs [False, True, True, True] for WikiText-103)."""

    def __init__(self, embedding: AdaptiveEmbedding, d_embed: int):
        super().__init__()
        self.embedding = [embedding]  # a plain list: the embedding's parameters belong to the model once
        clusters = embedding.clusters
        n_clusters = len(clusters) - 1
        self.cluster_weight = nn.Parameter(torch.zeros(n_clusters, d_embed))
        self.cluster_bias = nn.Parameter(torch.zeros(n_clusters))
        if embedding.div_val == 1:
            self.biases = nn.ParameterList([nn.Parameter(torch.zeros(clusters[-1][1]))])
        else:
            self.biases = nn.ParameterList(nn.Parameter(torch.zeros(end - first)) for first, end in clusters)
        # the head's projection is its own wherever there is a projection at all
        projected = embedding.div_val > 1 or embedding.d_proj != d_embed
        self.head_proj = nn.Parameter(torch.zeros(embedding.d_proj, d_embed)) if projected else None
        # each tail cluster's first token id, on the module's device: made in every step instead, it
        # was a host-to-device copy, which a CUDA-graph capture of the step refuses
        self.register_buffer("firsts", torch.tensor([first for first, _ in clusters[1:]], dtype=torch.long),
                             persistent=False)

    def _clusters(self) -> list[tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]]:
        """(output weight, bias, projection) of the head and of each tail cluster. With one shared
        table the clusters' weights are one split of it: its backward writes the table's gradient
        once, where a slice per cluster would each write (and add) a zero-filled table of gradient."""
        emb = self.embedding[0]
        # nn.ModuleList hides its members' types from the checker: they are nn.Embedding
        layers: list[nn.Embedding] = list(emb.layers)  # type: ignore[arg-type]
        if emb.div_val == 1:
            sizes = [end - first for first, end in emb.clusters]
            tail_proj = emb.projs[0] if len(emb.projs) else None
            projs = [self.head_proj, *[tail_proj] * (len(sizes) - 1)]
            return list(zip(layers[0].weight.split(sizes), self.biases[0].split(sizes), projs))
        return [(layer.weight, bias, self.head_proj if i == 0 else emb.projs[i])
                for i, (layer, bias) in enumerate(zip(layers, self.biases))]

    @staticmethod
    def _logits(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, proj: Optional[torch.Tensor]):
        if proj is not None:
            hidden = hidden @ proj
        return F.linear(hidden, weight, bias)

    def cluster_of(self, target: torch.Tensor) -> torch.Tensor:
        """0 for a shortlist token, i for a token of tail cluster i."""
        firsts: torch.Tensor = self.firsts  # type: ignore[assignment]  # a buffer, typed Tensor | Module by nn.Module
        return torch.bucketize(target, firsts.to(target.dtype), right=True)

    def cluster_counts(self, target: torch.Tensor) -> list[int]:
        """Targets in the shortlist and in each tail cluster, read on the host: a sync wherever
        `target` lives on a GPU (a loader that holds its batch on the host pays nothing)."""
        return torch.bincount(self.cluster_of(target).flatten(), minlength=len(self.embedding[0].clusters)).tolist()

    def forward(self, hidden: torch.Tensor, target: torch.Tensor, counts: Optional[Sequence[int]] = None) -> torch.Tensor:
        """`counts`: cluster_counts(target), when the caller already knows them (a batch that is
        trained on repeatedly); otherwise they are read here, the step's one sync."""
        parts = self._clusters()
        weight, bias, proj = parts[0]
        head = self._logits(hidden, torch.cat([weight, self.cluster_weight]), torch.cat([bias, self.cluster_bias]),
                            proj)
        head_logprob = F.log_softmax(head.float(), dim=-1)
        shortlist = weight.shape[0]
        clusters = self.embedding[0].clusters
        cluster = self.cluster_of(target)
        # one gather for every target: its own head logit, or its cluster's
        column = torch.where(cluster == 0, target, shortlist - 1 + cluster)
        total = -head_logprob.gather(1, column[:, None]).sum()
        # the rows of each tail cluster, in one sort instead of a nonzero (and a sync) per cluster
        counts = self.cluster_counts(target) if counts is None else list(counts)
        by_cluster = torch.argsort(cluster, stable=True).split(counts)
        for i, (first, _) in enumerate(clusters[1:], start=1):
            if counts[i] == 0:
                continue
            rows = by_cluster[i]
            weight, bias, proj = parts[i]
            tail = F.log_softmax(self._logits(hidden.index_select(0, rows), weight, bias, proj).float(), dim=-1)
            total = total - tail.gather(1, (target.index_select(0, rows) - first)[:, None]).sum()
        return total / target.numel()
