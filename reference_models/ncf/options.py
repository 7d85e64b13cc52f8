"""NCF's options, at the MLPerf reference's values (training/recommendation/pytorch, v0.5, ml-20m);
conf/model/ncf.yaml adds its batch, target and epoch cap; conf/model_for/ scales it down.

    python -m harness.train --help model=ncf
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from harness.interface import Broken, LrScaling, ModelOptions, option

EVAL_NEGATIVES = 999  # reference_models/ncf/data.py: each user's held-out item is ranked among 999 negatives


@dataclass
class Synthetic:
    n_users: int = option(138493, ge=1)
    """Users of the random pairs that mode=throughput trains on (ml-20m's count)."""
    n_items: int = option(26744, ge=1)
    """Items of those pairs (ml-20m's count)."""


@dataclass
class NCFOptions(ModelOptions):
    factors: int = option(64, ge=1)
    """GMF embedding width (the reference's -f)."""
    layers: list[int] = option(factory=lambda: [256, 256, 128, 64], ge=1, min_length=1)
    """MLP tower widths; the first is the user and item embeddings side by side (so it is even)."""
    dropout: float = option(0.0, ge=0, lt=1)
    """Dropout between MLP layers."""
    learning_rate: float = option(0.0005, gt=0)
    """Adam's rate at the global batch lr_reference_batch; other batches scale it by lr_scaling."""
    lr_scaling: LrScaling = LrScaling.sqrt
    """How the rate follows the global batch: none, linear or sqrt (docs/distributed.md)."""
    lr_reference_batch: int = option(2048, ge=1)
    """The global batch learning_rate was tuned at."""
    adam_beta1: float = option(0.9, ge=0, lt=1)
    """Adam's beta1."""
    adam_beta2: float = option(0.999, ge=0, lt=1)
    """Adam's beta2."""
    adam_eps: float = option(1e-8, gt=0)
    """Adam's epsilon."""
    train_negatives: int = option(4, ge=1)
    """Fresh negatives drawn per positive, every epoch (without any, every label is 1)."""
    topk: int = option(10, ge=1, le=EVAL_NEGATIVES)
    """K of HR@K; at 1,000 every held-out item would be among the top K of its 999 negatives."""
    eval_batch_users: int = option(1024, ge=1)
    """Users scored together during evaluation (memory, not quality)."""
    synthetic: Synthetic = field(default_factory=Synthetic)
    """mode=throughput: the sizes of the random pairs."""

    def relations(self, max_epochs: int) -> Iterator[Broken]:
        if self.layers[0] % 2:
            yield Broken("layers", self.layers, f"an even first width (user + item embedding halves), not {self.layers[0]}")
