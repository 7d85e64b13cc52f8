"""BERT's options, at BERT-large's values as NVIDIA's DeepLearningExamples fine-tunes it on SQuAD v1.1
(uncased, 24 x 1024, 16 heads); reference_models/bert_large/conf/model/bert_large.yaml adds its batch,
reference_models/bert_base/conf/model/bert_base.yaml its batch and BERT-base's sizes.

    python -m harness.train --help model=bert_large
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from harness.interface import Broken, Choice, CompileMode, ModelOptions, option

# The workloads people benchmark BERT with: (sequence length, head, masked positions per sequence).
# SQuAD v1.1 fine-tuning at 384 tokens is what the published GPU tables use; pre-training is NVIDIA's
# phase 1 (128 tokens, 20 predictions) and phase 2 (512 tokens, 80 predictions).
WORKLOADS = {
    "squad384": (384, "squad", 0),
    "pretrain128": (128, "pretrain", 20),
    "pretrain512": (512, "pretrain", 80),
}
FIRST_WORDPIECE = 999  # ids below are [PAD], [unusedN], [UNK], [CLS], [SEP], [MASK]


def workload_shape(workload: str, seq_len: Optional[int], max_predictions: Optional[int]) -> tuple[int, str, int]:
    """(sequence length, head, masked positions) of a workload after seq_len's and max_predictions' overrides."""
    seq, head, predictions = WORKLOADS[str(workload)]
    return int(seq_len or seq), head, int(max_predictions or predictions)


class Workload(Choice):
    squad384 = "squad384"
    pretrain128 = "pretrain128"
    pretrain512 = "pretrain512"


@dataclass
class BertOptions(ModelOptions):
    workload: Workload = Workload.squad384
    """squad384: SQuAD v1.1 fine-tuning (start/end span loss) at 384 tokens; pretrain128 and
    pretrain512: masked LM + next sentence prediction at 128 and 512 tokens. Logged as
    hyperparameters["workload"]. NVIDIA's per-GPU batches: squad384 32, pretrain128 64, pretrain512 16
    (docs/gpu_suite.md)."""
    seq_len: Optional[int] = option(None, ge=4)
    """Tokens per sequence, at most max_position_embeddings; null: the workload's (384, 128 or 512)."""
    max_predictions: Optional[int] = option(None, ge=1)
    """Pre-training: masked positions scored per sequence, at most seq_len; null: the workload's (20 at
    128, 80 at 512)."""
    vocab_size: int = option(30522, ge=FIRST_WORDPIECE + 1)
    """WordPiece vocabulary of the uncased checkpoints (the synthetic tokens are drawn above the first
    999 special ids)."""
    pad_vocab_to: int = option(8, ge=1)
    """Word-embedding rows padded to a multiple of this (30522 -> 30528), as NVIDIA's scripts do for
    tensor cores; 1 keeps the checkpoint's shape."""
    hidden_size: int = option(1024, ge=1)
    """Width of the encoder; a multiple of num_heads."""
    num_layers: int = option(24, ge=1)
    """Transformer layers."""
    num_heads: int = option(16, ge=1)
    """Attention heads per layer."""
    intermediate_size: int = option(4096, ge=1)
    """Width of each layer's feed-forward block."""
    max_position_embeddings: int = option(512, ge=1)
    """Learned positions."""
    type_vocab_size: int = option(2, ge=2)
    """Segment (token type) embeddings: question and context, or sentences A and B."""
    dropout: float = option(0.1, ge=0, lt=1)
    """Dropout on embeddings and after each sub-layer (hidden_dropout_prob)."""
    attention_dropout: float = option(0.1, ge=0, lt=1)
    """Dropout on attention probabilities (attention_probs_dropout_prob)."""
    layer_norm_eps: float = option(1.0e-12, gt=0)
    """LayerNorm epsilon."""
    half_norms: bool = False
    """Under precision=amp or bf16: the LayerNorms read and write fp16 (bf16), their statistics in fp32, as
    apex's FusedLayerNorm in NVIDIA's BERT, so the residual stream between layers is 2 bytes an element,
    where autocast keeps LayerNorm and the stream in fp32. On in mode=throughput's fast path on CUDA
    (BERT-large 1.022x on an H200, docs/benchmarks/fast_path_2026-12-05.md; the GPU check's variant
    bert_large:fp32_norms measures the fp32 norms beside it); without autocast it changes nothing."""
    initializer_range: float = option(0.02, gt=0)
    """Standard deviation of the normal initialisation."""
    learning_rate: float = option(4.6e-5, gt=0)
    """AdamW's rate (NVIDIA's SQuAD fine-tuning value, squad_config.sh)."""
    weight_decay: float = option(0.01, ge=0)
    """AdamW's weight decay, off for biases and LayerNorms."""
    adam_beta1: float = option(0.9, ge=0, lt=1)
    """AdamW's beta1."""
    adam_beta2: float = option(0.999, ge=0, lt=1)
    """AdamW's beta2."""
    adam_eps: float = option(1.0e-6, gt=0)
    """AdamW's epsilon."""
    grad_clip: float = option(1.0, gt=0)
    """Max global gradient norm."""
    compile: bool = False
    """CUDA: torch.compile each encoder layer (compilation falls in the warm-up steps)."""
    compile_mode: CompileMode = CompileMode["default"]  # type: ignore[valid-type]
    """torch.compile mode: default, max-autotune-no-cudagraphs, reduce-overhead (CUDA graphs) or max-autotune."""

    def relations(self, max_epochs: int) -> Iterator[Broken]:
        seq, head, predictions = workload_shape(self.workload, self.seq_len, self.max_predictions)
        if seq > self.max_position_embeddings:
            yield Broken("seq_len", seq, f"<= max_position_embeddings ({self.max_position_embeddings})")
        if head == "pretrain" and predictions > seq:
            yield Broken("max_predictions", predictions, f"<= seq_len ({seq})")
        if self.hidden_size % self.num_heads:
            yield Broken("hidden_size", self.hidden_size, f"a multiple of num_heads ({self.num_heads})")
