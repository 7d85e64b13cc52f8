"""DLRM-DCNv2's options, at the MLPerf reference's values (mlcommons/training recommendation_v2/
torchrec_dlrm, the README's multi-hot command); conf/model/dlrm_dcnv2.yaml adds its batch, target
and evaluation schedule; conf/model_for/ scales it down.

    python -m harness.train --help model=dlrm_dcnv2
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from harness.interface import Broken, LrScaling, ModelOptions, option
from reference_models.dlrm_dcnv2.criteo import MULTI_HOT_SIZES, REFERENCE_CARDINALITIES


@dataclass
class DLRMOptions(ModelOptions):
    embedding_dim: int = option(128, ge=1)
    """Width of every embedding table (the reference's --embedding_dim)."""
    bottom_mlp: list[int] = option(factory=lambda: [512, 256, 128], ge=1, min_length=1)
    """The dense arch's widths (--dense_arch_layer_sizes); the last is embedding_dim."""
    top_mlp: list[int] = option(factory=lambda: [1024, 1024, 512, 256, 1], ge=1, min_length=2)
    """The over arch's widths (--over_arch_layer_sizes); the last is the one logit."""
    dcn_layers: int = option(3, ge=1)
    """Cross layers of the DCNv2 interaction (--dcn_num_layers)."""
    dcn_low_rank: int = option(512, ge=1)
    """Rank of each cross layer's low-rank weight (--dcn_low_rank_dim)."""
    num_embeddings_per_feature: list[int] = option(factory=lambda: list(REFERENCE_CARDINALITIES), ge=1,
                                                   length=len(MULTI_HOT_SIZES))
    """Rows of each of the 26 tables (--num_embeddings_per_feature: Criteo 1TB's, capped at 40M); every id in
    the data is below its table's count."""
    learning_rate: float = option(0.005, gt=0)
    """Adagrad's rate (dense and embedding parameters alike) at the global batch lr_reference_batch."""
    lr_scaling: LrScaling = LrScaling.none
    """How the rate follows the global batch: none, linear or sqrt (docs/distributed.md)."""
    lr_reference_batch: int = option(65536, ge=1)
    """The global batch learning_rate was tuned at."""
    lr_warmup_steps: int = option(0, ge=0)
    """Steps of the reference's linear warm-up (--lr_warmup_steps; the closed rules require 0)."""
    lr_decay_start: int = option(0, ge=0)
    """Step the reference's quadratic decay starts at (--lr_decay_start; the closed rules require 0)."""
    lr_decay_steps: int = option(0, ge=0)
    """Steps of that decay (--lr_decay_steps; 0: none, the closed rules' value)."""
    eval_batch_size: int = option(65536, ge=1)
    """Validation samples scored together on each rank (memory, not quality)."""
    sparse_gradients: bool = False
    """The tables' gradients as sparse rows (EmbeddingBag(sparse=True)), which Adagrad applies to the rows a
    batch touched alone: the same update (an untouched row's is zero either way) without a dense gradient
    and an optimizer pass over every row. On one rank: with several, DDP all-reduces dense gradients (NCCL
    reduces no sparse tensor) and the tables keep them."""
    compile: bool = False
    """CUDA: torch.compile the dense arch, the cross network and the over arch (the tables stay eager: one
    kernel each already)."""

    def relations(self, max_epochs: int) -> Iterator[Broken]:
        if self.bottom_mlp[-1] != self.embedding_dim:
            yield Broken("bottom_mlp", self.bottom_mlp,
                         f"a last width of embedding_dim ({self.embedding_dim}): the dense output joins the embeddings")
        if self.top_mlp[-1] != 1:
            yield Broken("top_mlp", self.top_mlp, "a last width of 1 (the logit)")
        if self.lr_decay_start < self.lr_warmup_steps:  # the reference's scheduler exits on it
            yield Broken("lr_decay_start", self.lr_decay_start,
                         f"at least lr_warmup_steps ({self.lr_warmup_steps}): the warm-up ends before the decay starts")
