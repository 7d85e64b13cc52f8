"""DLRM with a DCNv2 interaction, as torchrec's DLRM_DCN that MLPerf's reference
(mlcommons/training recommendation_v2/torchrec_dlrm, `--interaction_type=dcn`) trains.

torchrec is not in the harness's environment: its EmbeddingBagCollection is 26
torch.nn.EmbeddingBag tables here (sum pooling, torchrec's default), one per sparse feature, each
initialised uniform in +-sqrt(1/rows) as torchrec's EmbeddingBagConfig does. The parts, as torchrec
names them:

- dense arch: Linear+ReLU down `bottom_mlp` (13 -> 512 -> 256 -> 128 at real scale; ReLU after the
  last layer too, as torchrec's MLP);
- sparse arch: each feature's multi-hot ids pooled (summed) into one embedding_dim vector;
- interaction (InteractionDCNArch + LowRankCrossNet): x0 = [dense, 26 embeddings] flattened
  (27 x 128 = 3456), then `dcn_layers` times x_{l+1} = x0 * (W_l (V_l x_l) + b_l) + x_l, V_l of
  rank `dcn_low_rank` (Xavier-normal W and V, zero b);
- over arch: Linear+ReLU down `top_mlp` but the last, a plain Linear to one logit.

    python -c "from reference_models.dlrm_dcnv2.model import *; print(parameter_count(DLRMShape()))"
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from reference_models.dlrm_dcnv2.criteo import DENSE_FEATURES, REFERENCE_CARDINALITIES


@dataclass(frozen=True)
class DLRMShape:
    """The model's sizes; the defaults are the MLPerf reference's."""

    cardinalities: tuple[int, ...] = REFERENCE_CARDINALITIES
    embedding_dim: int = 128
    bottom_mlp: tuple[int, ...] = (512, 256, 128)
    top_mlp: tuple[int, ...] = (1024, 1024, 512, 256, 1)
    dcn_layers: int = 3
    dcn_low_rank: int = 512
    dense_features: int = DENSE_FEATURES


def _mlp(widths: list[int]) -> nn.Sequential:
    """Linear+ReLU for each consecutive pair of widths (torchrec's MLP with activation="relu")."""
    return nn.Sequential(*(m for a, b in zip(widths[:-1], widths[1:]) for m in (nn.Linear(a, b), nn.ReLU())))


class LowRankCrossNet(nn.Module):
    """torchrec.modules.crossnet.LowRankCrossNet: x_{l+1} = x0 * (W_l (V_l x_l) + b_l) + x_l."""

    def __init__(self, in_features: int, layers: int, low_rank: int):
        super().__init__()
        self.W_kernels = nn.ParameterList(nn.Parameter(nn.init.xavier_normal_(torch.empty(in_features, low_rank)))
                                          for _ in range(layers))
        self.V_kernels = nn.ParameterList(nn.Parameter(nn.init.xavier_normal_(torch.empty(low_rank, in_features)))
                                          for _ in range(layers))
        self.bias = nn.ParameterList(nn.Parameter(torch.zeros(in_features)) for _ in range(layers))

    def forward(self, x0: torch.Tensor) -> torch.Tensor:
        x = x0
        for w, v, b in zip(self.W_kernels, self.V_kernels, self.bias):
            x = x0 * (nn.functional.linear(nn.functional.linear(x, v), w) + b) + x
        return x


class DLRMDCNv2(nn.Module):
    def __init__(self, shape: DLRMShape, sparse_gradients: bool = False):
        super().__init__()
        d = shape.embedding_dim
        if shape.bottom_mlp[-1] != d:
            raise ValueError(f"the bottom MLP's last width ({shape.bottom_mlp[-1]}) must be embedding_dim ({d}): "
                             "the dense features join the embeddings in the cross network")
        if shape.top_mlp[-1] != 1:
            raise ValueError(f"the top MLP ends in one logit, not {shape.top_mlp[-1]}")
        self.dense_arch = _mlp([shape.dense_features, *shape.bottom_mlp])
        self.embeddings = nn.ModuleList(nn.EmbeddingBag(n, d, mode="sum", sparse=sparse_gradients)
                                        for n in shape.cardinalities)
        for table in self.embeddings:
            assert isinstance(table, nn.EmbeddingBag)
            bound = math.sqrt(1.0 / table.num_embeddings)
            nn.init.uniform_(table.weight, -bound, bound)
        width = (len(shape.cardinalities) + 1) * d
        self.crossnet = LowRankCrossNet(width, shape.dcn_layers, shape.dcn_low_rank)
        self.over_arch = nn.Sequential(_mlp([width, *shape.top_mlp[:-1]]), nn.Linear(shape.top_mlp[-2], 1))

    def compile_dense(self) -> None:
        """torch.compile, in place (parameter names kept), the parts that are matmuls and elementwise work:
        the cross network's x0 * (...) + x and the MLPs' bias and ReLU fuse around the matmuls. Shapes are
        static but the last batch of an epoch: specialised (dynamic=False), one more graph for that one."""
        for part in (self.dense_arch, self.crossnet, self.over_arch):
            part.compile(dynamic=False)

    def forward(self, dense: torch.Tensor, sparse: list[torch.Tensor]) -> torch.Tensor:
        """Logits (B,) of B samples: dense (B, 13) floats, sparse one (B, hotness) id tensor per feature
        (a fixed number of ids per sample and feature: each row is one bag)."""
        pooled = [table(ids) for table, ids in zip(self.embeddings, sparse)]
        x0 = torch.cat([self.dense_arch(dense), *pooled], dim=1)
        return self.over_arch(self.crossnet(x0)).squeeze(-1)


def parameter_count(shape: DLRMShape) -> int:
    """The model's parameters, counted on the meta device (no memory: the real tables hold 26.5 billion)."""
    with torch.device("meta"):
        return sum(p.numel() for p in DLRMDCNv2(shape).parameters())
