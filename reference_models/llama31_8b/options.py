"""Llama 3.1 8B's options, at the MLPerf reference's values (small LLM pretraining, rulesets 5.1.0 and
6.0.0, C4 en); conf/model/llama31_8b.yaml adds its batch, target and schedule; conf/model_for/ scales
it down.

    python -m harness.train --help model=llama31_8b
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from omegaconf import MISSING

from harness.interface import Broken, LrScaling, ModelOptions, option


@dataclass
class Llama31Options(ModelOptions):
    batch_size: int = option(MISSING, ge=1)
    """Sequences per rank per step; the global batch is batch_size x ranks (the reference's H200 config: 32)."""
    seq_len: int = option(8192, ge=2)
    """Tokens per sequence (max_sequence_length): each sample is seq_len + 1 tokens of the packed stream."""
    tokenizer: Optional[str] = option(None, unbounded="a file path: read when the run starts, refused there in one "
                                                       "line if it is not a tiktoken file")
    """Llama 3.1's tokenizer (original/tokenizer.model of meta-llama/Llama-3.1-8B, tiktoken format); null: the
    dataset folder's tokenizer.model (the embedded corpus writes its own there)."""
    vocab_size: int = option(128256, ge=257)
    """mode=throughput only; a run with data takes it from the tokenizer (its ranks + 256 special tokens)."""
    dim: int = option(4096, ge=1)
    """Model width; a multiple of heads."""
    layers: int = option(32, ge=1)
    """Decoder blocks."""
    heads: int = option(32, ge=1)
    """Query heads."""
    kv_heads: int = option(8, ge=1)
    """Key/value heads (grouped-query attention); divides heads."""
    ffn_dim: int = option(14336, ge=1)
    """Inner width of the SwiGLU feed-forward."""
    norm_eps: float = option(1e-5, gt=0)
    """RMSNorm's epsilon."""
    rope_theta: float = option(500000.0, gt=0)
    """RoPE's base."""
    rope_scaling: bool = True
    """Llama 3.1's rescaled rotary frequencies (factor 8, low/high frequency factors 1 and 4, original
    context 8192); false: plain RoPE."""
    init_std: float = option(0.02, gt=0)
    """Standard deviation of the initial weights (the projections into the residual stream: / sqrt(2 x layers))."""
    learning_rate: float = option(5e-4, gt=0)
    """Peak learning rate at lr_reference_batch (the reference's H200 config: 5e-4 at 32 sequences)."""
    lr_scaling: LrScaling = LrScaling.none
    """How the peak rate follows the global batch: none, linear or sqrt (docs/distributed.md)."""
    lr_reference_batch: int = option(32, ge=1)
    """The global batch (sequences) learning_rate was tuned at."""
    end_lr_factor: float = option(0.1, ge=0, le=1)
    """The rate at max_steps as a share of the peak (the reference's min_lr = 0.1 x max_lr)."""
    lr_warmup_steps: int = option(512, ge=0)
    """Steps of linear warm-up from 0 (the reference's 16384 // global batch)."""
    max_steps: int = option(1_200_000, ge=1)
    """Length of the cosine schedule in steps (warm-up included), MLPerf's fixed 1,200,000: a run stops at
    its target long before."""
    adam_beta1: float = option(0.9, ge=0, lt=1)
    """AdamW's beta1."""
    adam_beta2: float = option(0.95, ge=0, lt=1)
    """AdamW's beta2."""
    adam_eps: float = option(1e-5, gt=0)
    """AdamW's epsilon."""
    weight_decay: float = option(0.1, ge=0)
    """AdamW's decoupled weight decay, on matrices and embeddings (not on the RMSNorm scales), as Megatron."""
    grad_clip: float = option(1.0, gt=0)
    """Max global gradient norm."""
    eval_samples: int = option(1024, ge=1)
    """Validation sequences evaluated, the first of the validation stream, unshuffled."""
    eval_batch_size: int = option(8, ge=1)
    """Validation sequences per forward pass on each rank."""
    fsdp: bool = False
    """Several ranks: shard parameters, gradients and optimizer state with FSDP2 (fully_shard on every block,
    then on the root) instead of DDP's replicas."""
    fsdp_bf16: bool = False
    """With fsdp: FSDP's MixedPrecisionPolicy, bf16 parameters for compute and fp32 gradient reduction (the
    sharded fp32 parameters stay the optimizer's)."""
    activation_checkpointing: bool = False
    """Recompute each block's activations in backward (checkpoint_wrapper per block) instead of keeping them."""
    compile: bool = False
    """CUDA: torch.compile each block (one graph the blocks share; compiled in the first steps)."""

    def relations(self, max_epochs: int) -> Iterator[Broken]:
        if self.dim % self.heads:
            yield Broken("dim", self.dim, f"a multiple of heads ({self.heads})")
        elif self.heads % self.kv_heads:
            yield Broken("kv_heads", self.kv_heads, f"a divisor of heads ({self.heads})")
        elif (self.dim // self.heads) % 2:
            yield Broken("heads", self.heads, f"dim / heads even, for the rotary pairs (dim {self.dim})")
        elif self.lr_warmup_steps >= self.max_steps:
            yield Broken("lr_warmup_steps", self.lr_warmup_steps, f"< max_steps ({self.max_steps})")
