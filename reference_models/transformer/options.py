"""The Transformer's options, at the MLPerf reference's values (translation, ruleset 0.7.0, WMT17 En-De);
conf/model/transformer.yaml adds its batch, target and epoch cap; conf/model_for/ scales it down.

    python -m harness.train --help model=transformer
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from omegaconf import MISSING

from harness.interface import Broken, Choice, LrScaling, ModelOptions, option


class Attention(Choice):
    """Which of scaled_dot_product_attention's CUDA kernels may run."""

    auto = "auto"  # PyTorch's order: cuDNN's fused attention first on Hopper
    efficient = "efficient"  # flash, or memory-efficient where a padding mask is given: no cuDNN


@dataclass
class Synthetic:
    src_len: int = option(64, ge=1)
    """Source length (tokens, EOS included) of mode=throughput's random batches; batch_size // max(src_len,
    tgt_len) sentences make one."""
    tgt_len: int = option(64, ge=1)
    """Target length of those batches."""


@dataclass
class TransformerOptions(ModelOptions):
    batch_size: int = option(MISSING, ge=1)
    """Tokens per rank per step, as the reference counts them: a batch of sentences padded to
    length L holds at most batch_size // L of them (its bucket's bound), so at most batch_size
    padded tokens per side. The global batch is batch_size x ranks."""
    vocab_size: int = option(33708, ge=3)
    """mode=throughput only (above the 2 reserved ids); a real run takes it from vocab.ende.32768 (33,708
    subtokens for WMT17)."""
    vocab_multiple: int = option(1, ge=1)
    """Round the embedding's rows up to a multiple of this (8 suits tensor cores, 33,712 rows as NVIDIA's
    v0.7 runs had it); 1: the vocabulary's size, as the reference."""
    hidden_size: int = option(1024, ge=1)
    """d_model: width of the embeddings and of every layer; a multiple of num_heads."""
    num_layers: int = option(6, ge=1)
    """Layers of the encoder and of the decoder."""
    num_heads: int = option(16, ge=1)
    """Attention heads."""
    filter_size: int = option(4096, ge=1)
    """Inner width of the feed-forward layers."""
    dropout: float = option(0.1, ge=0, lt=1)
    """Dropout on the embeddings and on every sublayer's output (layer_postprocess_dropout)."""
    attention_dropout: float = option(0.1, ge=0, lt=1)
    """Dropout on the attention weights."""
    relu_dropout: float = option(0.1, ge=0, lt=1)
    """Dropout after the feed-forward ReLU."""
    label_smoothing: float = option(0.1, ge=0, lt=1)
    """Probability mass spread evenly over the other tokens of the vocabulary."""
    learning_rate: float = option(2.0, gt=0)
    """The schedule's scale: the peak rate is learning_rate x (hidden_size x lr_warmup_steps)^-0.5 (4.94e-4
    at the reference's values)."""
    lr_scaling: LrScaling = LrScaling.none
    """How the rate follows the global batch: none, linear or sqrt (docs/distributed.md)."""
    lr_reference_batch: int = option(4096, ge=1)
    """The global batch (tokens) learning_rate was tuned at."""
    lr_warmup_steps: int = option(16000, ge=0)
    """Steps of linear warm-up, after which the rate falls as 1/sqrt(step)."""
    adam_beta1: float = option(0.9, ge=0, lt=1)
    """Adam's beta1."""
    adam_beta2: float = option(0.997, ge=0, lt=1)
    """Adam's beta2."""
    adam_eps: float = option(1.0e-9, gt=0)
    """Adam's epsilon (MLPerf's closed division requires 1e-9)."""
    max_length: int = option(256, ge=1)
    """Training pairs with more tokens than this (EOS included) on either side are discarded
    (max_sequence_length, method discard)."""
    eval_batch_size: int = option(64, ge=1)
    """Test sentences decoded together."""
    beam_size: int = option(4, ge=1)
    """Beam width of the evaluation's search."""
    alpha: float = option(0.6, ge=0)
    """Length normalisation exponent of the beam search."""
    extra_decode_length: int = option(50, ge=0)
    """Decoding stops at the padded source length plus this many tokens."""
    compile: bool = False
    """CUDA: torch.compile the model's forward pass and the loss (docs/transformer.md)."""
    pad_multiple: int = option(1, ge=1)
    """Each side of a training batch padded to a multiple of this many tokens (the padding is masked:
    the loss is the same); 1: to the batch's longest sentence, as the reference. 8 makes fewer distinct
    shapes but measured slower on files on an H200 (docs/benchmarks/gpu_check_2026-12-02.md)."""
    collate_workers: int = option(0, ge=0)
    """CUDA: DataLoader worker processes that pad the training batches ahead of the step (the pin
    thread then pins them). 0: padded in the training thread, one gather a side (0.7 ms a batch of
    8,192 tokens): measured faster on an H200, whose eager step is bound by its launching thread, which
    the pin thread's turns at the interpreter slow (0.979 of held batches against 0.925 with 2 workers,
    docs/benchmarks/gpu_check_2026-12-02.md). A CPU run always pads in the training thread."""
    attention: Attention = Attention.efficient
    """CUDA: auto lets PyTorch choose the attention kernel (cuDNN's on an H100 or H200, which builds a
    plan for every new batch shape); efficient keeps to flash and memory-efficient attention, which
    need none. A CPU runs its own kernels either way."""
    synthetic: Synthetic = field(default_factory=Synthetic)
    """mode=throughput: the shapes of the random batches."""

    def relations(self, max_epochs: int) -> Iterator[Broken]:
        if self.hidden_size % self.num_heads:
            yield Broken("hidden_size", self.hidden_size, f"a multiple of num_heads ({self.num_heads})")
