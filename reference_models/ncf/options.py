"""NCF's options (conf/model/ncf.yaml holds the MLPerf reference's values; datasets scale them down).

    python -m harness.train --help model=ncf
"""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.interface import ModelOptions


@dataclass
class Synthetic:
    n_users: int = 138493
    """Users of the random pairs that mode=throughput trains on (ml-20m's count)."""
    n_items: int = 26744
    """Items of those pairs (ml-20m's count)."""


@dataclass
class NCFOptions(ModelOptions):
    factors: int = 64
    """GMF embedding width (the reference's -f)."""
    layers: list[int] = field(default_factory=lambda: [256, 256, 128, 64])
    """MLP tower widths; the first is the user and item embeddings side by side."""
    dropout: float = 0.0
    """Dropout between MLP layers."""
    learning_rate: float = 0.0005
    """Adam's rate at the global batch lr_reference_batch; other batches scale it by lr_scaling."""
    lr_scaling: str = "sqrt"
    """How the rate follows the global batch: none, linear or sqrt (docs/distributed.md)."""
    lr_reference_batch: int = 2048
    """The global batch learning_rate was tuned at."""
    adam_beta1: float = 0.9
    """Adam's beta1."""
    adam_beta2: float = 0.999
    """Adam's beta2."""
    adam_eps: float = 1e-8
    """Adam's epsilon."""
    train_negatives: int = 4
    """Fresh negatives drawn per positive, every epoch."""
    topk: int = 10
    """K of HR@K."""
    eval_batch_users: int = 1024
    """Users scored together during evaluation (memory, not quality)."""
    synthetic: Synthetic = field(default_factory=Synthetic)
    """mode=throughput: the sizes of the random pairs."""
