"""Transformer-XL's options (conf/model/txl_base.yaml and txl_large.yaml hold NVIDIA's WikiText-103 values).

    python -m harness.train --help model=txl_base
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from harness.interface import ModelOptions


@dataclass
class TXLOptions(ModelOptions):
    n_token: int = 267735
    """Vocabulary: WikiText-103's word-level vocabulary, sorted by frequency."""
    cutoffs: list[int] = field(default_factory=lambda: [19997, 39997, 199997])
    """Adaptive softmax and input cluster boundaries (WikiText-103's)."""
    div_val: int = 1
    """Each tail cluster's embedding is div_val times narrower than the one before."""
    n_layer: int = 16
    """Decoder layers."""
    d_model: int = 512
    """Model width."""
    d_embed: Optional[int] = None
    """Embedding width; null: d_model."""
    n_head: int = 8
    """Attention heads."""
    d_head: int = 64
    """Width of each head."""
    d_inner: int = 2048
    """Width of the position-wise feed-forward block."""
    dropout: float = 0.1
    """Dropout on embeddings, sub-layer outputs and positional encodings."""
    dropatt: float = 0.0
    """Dropout on attention probabilities."""
    tgt_len: int = 192
    """Tokens predicted per segment (the sequence length of a step)."""
    mem_len: int = 192
    """Hidden states kept from previous segments (segment-level recurrence)."""
    same_length: bool = False
    """Every token attends to the same number of positions."""
    clamp_len: int = -1
    """Relative positions beyond this share one encoding; -1: none."""
    init_std: float = 0.02
    """Standard deviation of the normal initialisation."""
    proj_init_std: float = 0.01
    """Standard deviation of the embedding and softmax projections."""
    learning_rate: float = 0.01
    """The optimizer's rate (NVIDIA's configs)."""
    adam_beta1: float = 0.9
    """Adam's beta1."""
    adam_beta2: float = 0.999
    """Adam's beta2."""
    adam_eps: float = 1.0e-6
    """Adam's epsilon."""
    grad_clip: float = 0.25
    """Max global gradient norm."""
    zipf_exponent: float = 1.0
    """Synthetic tokens: rank r drawn with probability proportional to 1 / (r + 1)^zipf_exponent."""
    compile: bool = False
    """CUDA: torch.compile each decoder layer (compilation falls in the warm-up steps)."""
