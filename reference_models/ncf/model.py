"""NeuMF (He et al., 2017) as in the MLPerf NCF reference: a GMF tower and an MLP tower side by side.

GMF: elementwise product of user and item factor embeddings (`factors` wide). MLP: concatenated
user and item embeddings of `layers[0] / 2` each, then Linear+ReLU down `layers`. A final Linear
maps both towers' outputs to one logit. Initialisation follows the reference: embeddings N(0, 0.01),
MLP layers Glorot-uniform, the final layer LeCun-uniform, biases zero-filled by nn.Linear's own rule.
"""
from __future__ import annotations

import math

import torch
from torch import nn


class NeuMF(nn.Module):
    def __init__(self, n_users: int, n_items: int, factors: int, layers: list[int], dropout: float = 0.0):
        super().__init__()
        if layers[0] % 2:
            raise ValueError(f"the first MLP layer ({layers[0]}) must be even: it is user + item embedding")
        self.mf_user = nn.Embedding(n_users, factors)
        self.mf_item = nn.Embedding(n_items, factors)
        self.mlp_user = nn.Embedding(n_users, layers[0] // 2)
        self.mlp_item = nn.Embedding(n_items, layers[0] // 2)
        self.mlp = nn.ModuleList(nn.Linear(a, b) for a, b in zip(layers[:-1], layers[1:]))
        self.dropout = dropout
        self.final = nn.Linear(layers[-1] + factors, 1)

        for emb in (self.mf_user, self.mf_item, self.mlp_user, self.mlp_item):
            nn.init.normal_(emb.weight, 0.0, 0.01)
        for layer in self.mlp:
            assert isinstance(layer, nn.Linear)
            limit = math.sqrt(6.0 / (layer.in_features + layer.out_features))
            nn.init.uniform_(layer.weight, -limit, limit)
        limit = math.sqrt(3.0 / self.final.in_features)
        nn.init.uniform_(self.final.weight, -limit, limit)

    def forward(self, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        """Logits, one per (user, item) pair."""
        gmf = self.mf_user(users) * self.mf_item(items)
        x = torch.cat((self.mlp_user(users), self.mlp_item(items)), dim=-1)
        for layer in self.mlp:
            x = torch.relu(layer(x))
            if self.dropout:
                x = nn.functional.dropout(x, self.dropout, self.training)
        return self.final(torch.cat((gmf, x), dim=-1)).squeeze(-1)
