"""BERT's options (conf/model/bert_base.yaml and bert_large.yaml hold the real-scale values).

    python -m harness.train --help model=bert_large
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional

from harness.interface import ModelOptions

# The workloads people benchmark BERT with: (sequence length, head, masked positions per sequence).
# SQuAD v1.1 fine-tuning at 384 tokens is what the published GPU tables use; pre-training is NVIDIA's
# phase 1 (128 tokens, 20 predictions) and phase 2 (512 tokens, 80 predictions).
WORKLOADS = {
    "squad384": (384, "squad", 0),
    "pretrain128": (128, "pretrain", 20),
    "pretrain512": (512, "pretrain", 80),
}


class Workload(Enum):
    """The workload's name; a typed choice, so a misspelt one stops at the command line."""

    squad384 = "squad384"
    pretrain128 = "pretrain128"
    pretrain512 = "pretrain512"

    def __repr__(self) -> str:
        return repr(self.value)


@dataclass
class BertOptions(ModelOptions):
    workload: Workload = Workload.squad384
    """squad384: SQuAD v1.1 fine-tuning (start/end span loss) at 384 tokens; pretrain128 and
    pretrain512: masked LM + next sentence prediction at 128 and 512 tokens. Logged as
    hyperparameters["workload"]."""
    seq_len: Optional[int] = None
    """Tokens per sequence; null: the workload's (384, 128 or 512)."""
    max_predictions: Optional[int] = None
    """Pre-training: masked positions scored per sequence; null: the workload's (20 at 128, 80 at
    512); seq_len scores every token (masked LM over all tokens)."""
    vocab_size: int = 30522
    """WordPiece vocabulary of the uncased checkpoints."""
    pad_vocab_to: int = 8
    """Word-embedding rows padded to a multiple of this (30522 -> 30528), as NVIDIA's scripts do for
    tensor cores; 1 keeps the checkpoint's shape."""
    hidden_size: int = 1024
    """Width of the encoder."""
    num_layers: int = 24
    """Transformer layers."""
    num_heads: int = 16
    """Attention heads per layer."""
    intermediate_size: int = 4096
    """Width of each layer's feed-forward block."""
    max_position_embeddings: int = 512
    """Learned positions."""
    type_vocab_size: int = 2
    """Segment (token type) embeddings."""
    dropout: float = 0.1
    """Dropout on embeddings and after each sub-layer (hidden_dropout_prob)."""
    attention_dropout: float = 0.1
    """Dropout on attention probabilities (attention_probs_dropout_prob)."""
    layer_norm_eps: float = 1.0e-12
    """LayerNorm epsilon."""
    initializer_range: float = 0.02
    """Standard deviation of the normal initialisation."""
    learning_rate: float = 4.6e-5
    """AdamW's rate (NVIDIA's SQuAD fine-tuning value)."""
    weight_decay: float = 0.01
    """AdamW's weight decay, off for biases and LayerNorms."""
    adam_beta1: float = 0.9
    """AdamW's beta1."""
    adam_beta2: float = 0.999
    """AdamW's beta2."""
    adam_eps: float = 1.0e-6
    """AdamW's epsilon."""
    grad_clip: float = 1.0
    """Max global gradient norm."""
    compile: bool = False
    """CUDA: torch.compile the model (compilation falls in the warm-up steps)."""
