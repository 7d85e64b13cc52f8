"""Transformer-XL's options, at base's values as NVIDIA's DeepLearningExamples trains it on WikiText-103
(wt103_base.yaml); reference_models/txl_base/conf/model/txl_base.yaml adds its batch,
reference_models/txl_large/conf/model/txl_large.yaml its batch and large's sizes (wt103_large.yaml).

    python -m harness.train --help model=txl_base
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from harness.interface import Broken, CompileMode, ModelOptions, option


@dataclass
class TXLOptions(ModelOptions):
    n_token: int = option(267735, ge=2)
    """Vocabulary: WikiText-103's word-level vocabulary, sorted by frequency."""
    cutoffs: list[int] = option(factory=lambda: [19997, 39997, 199997], ge=1)
    """Adaptive softmax and input cluster boundaries (WikiText-103's), rising strictly inside n_token."""
    div_val: int = option(1, ge=1)
    """Each tail cluster's embedding is div_val times narrower than the one before (integer division: a
    tiny d_embed can leave the last clusters 0 wide, as the debug preset of txl_large does)."""
    n_layer: int = option(16, ge=1)
    """Decoder layers."""
    d_model: int = option(512, ge=1)
    """Model width."""
    d_embed: Optional[int] = option(None, ge=1)
    """Embedding width; null: d_model."""
    n_head: int = option(8, ge=1)
    """Attention heads."""
    d_head: int = option(64, ge=1)
    """Width of each head."""
    d_inner: int = option(2048, ge=1)
    """Width of the position-wise feed-forward block."""
    dropout: float = option(0.1, ge=0, lt=1)
    """Dropout on embeddings, sub-layer outputs and positional encodings."""
    dropatt: float = option(0.0, ge=0, lt=1)
    """Dropout on attention probabilities."""
    tgt_len: int = option(192, ge=1)
    """Tokens predicted per segment (the sequence length of a step)."""
    mem_len: int = option(192, ge=0)
    """Hidden states kept from previous segments (segment-level recurrence)."""
    same_length: bool = False
    """Every token attends to the same number of positions."""
    clamp_len: int = option(-1, ge=-1)
    """Relative positions beyond this share one encoding; -1 (or 0): none."""
    init_std: float = option(0.02, gt=0)
    """Standard deviation of the normal initialisation."""
    proj_init_std: float = option(0.01, gt=0)
    """Standard deviation of the embedding and softmax projections."""
    learning_rate: float = option(0.01, gt=0)
    """The optimizer's rate (NVIDIA's configs)."""
    adam_beta1: float = option(0.9, ge=0, lt=1)
    """Adam's beta1."""
    adam_beta2: float = option(0.999, ge=0, lt=1)
    """Adam's beta2."""
    adam_eps: float = option(1.0e-6, gt=0)
    """Adam's epsilon."""
    grad_clip: float = option(0.25, gt=0)
    """Max global gradient norm."""
    zipf_exponent: float = option(1.0, ge=0)
    """Synthetic tokens: rank r drawn with probability proportional to 1 / (r + 1)^zipf_exponent."""
    compile: bool = False
    """CUDA: torch.compile each decoder layer (compilation falls in the warm-up steps)."""
    compile_mode: CompileMode = CompileMode["default"]  # type: ignore[valid-type]
    """torch.compile mode: default, max-autotune-no-cudagraphs, reduce-overhead (CUDA graphs) or max-autotune."""

    def relations(self, max_epochs: int) -> Iterator[Broken]:
        edges = [0, *self.cutoffs, self.n_token]
        if any(a >= b for a, b in zip(edges, edges[1:])):
            yield Broken("cutoffs", self.cutoffs, f"boundaries rising strictly inside the vocabulary (0, {self.n_token})")


