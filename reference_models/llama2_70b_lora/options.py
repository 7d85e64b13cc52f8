"""Llama 2 70B LoRA's options, at the MLPerf reference's values (mlcommons/training llama2_70b_lora:
run_and_time.sh's arguments to scripts/train.py; rulesets 4.0 to 6.0); conf/model/llama2_70b_lora.yaml
adds its batch, target and schedule; conf/model_for/ fits it to the embedded dataset.

    python -m harness.train --help model=llama2_70b_lora
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from omegaconf import MISSING

from harness.interface import Broken, ModelOptions, option


@dataclass
class Llama2LoraOptions(ModelOptions):
    batch_size: int = option(MISSING, ge=1)
    """Packed sequences per rank per step; the global batch is batch_size x ranks (the reference: 1 per GPU
    on 8 GPUs, 8)."""
    base: Optional[str] = option(None, unbounded="a folder path: read when the run starts, refused there in one "
                                                  "line if it holds no Llama checkpoint")
    """The frozen base model: a Hugging Face Llama folder (config.json and *.safetensors, fused qkv_proj or
    separate q/k/v_proj), the reference's Llama2-70b-fused-qkv-mlperf; null: the dataset folder's base/ (the
    embedded dataset pretrains and writes its own there). Its config.json gives the model's shape."""
    seq_len: int = option(8192, ge=2)
    """mode=throughput only (max_sequence_length): a run with data takes it from the packed rows."""
    vocab_size: int = option(32000, ge=3)
    """mode=throughput only: Llama 2's SentencePiece vocabulary; a run with data takes it from config.json."""
    dim: int = option(8192, ge=1)
    """mode=throughput only: model width (hidden_size); a multiple of heads."""
    layers: int = option(80, ge=1)
    """mode=throughput only: decoder blocks (num_hidden_layers)."""
    heads: int = option(64, ge=1)
    """mode=throughput only: query heads (num_attention_heads)."""
    kv_heads: int = option(8, ge=1)
    """mode=throughput only: key/value heads (num_key_value_heads, grouped-query attention); divides heads."""
    ffn_dim: int = option(28672, ge=1)
    """mode=throughput only: inner width of the SwiGLU feed-forward (intermediate_size)."""
    norm_eps: float = option(1e-5, gt=0)
    """mode=throughput only: RMSNorm's epsilon (rms_norm_eps)."""
    rope_theta: float = option(10000.0, gt=0)
    """mode=throughput only: RoPE's base (Llama 2's 10,000, no frequency scaling)."""
    fused_qkv: bool = True
    """One query/key/value projection per block, as the reference's fused-qkv checkpoint: its LoRA adapter
    (target qkv_proj) is one low-rank update of the three projections together."""
    lora_rank: int = option(16, ge=1)
    """LoRA's rank r (lora_r; MLPerf's closed rules fix 16)."""
    lora_alpha: float = option(32.0, gt=0)
    """LoRA's alpha: the update is scaled by alpha / rank (fixed to the reference's 32)."""
    lora_dropout: float = option(0.1, ge=0, lt=1)
    """Dropout on each adapter's input (fixed to the reference's 0.1)."""
    lora_targets: list[str] = option(factory=lambda: ["wqkv", "wo"], unbounded="projection names: checked "
                                     "against the attention's own (wqkv and wo, or wq, wk, wv and wo), not a range")
    """The attention projections that get an adapter: the reference's qkv_proj and o_proj are wqkv and wo
    here (with fused_qkv=false: any of wq, wk, wv, wo)."""
    learning_rate: float = option(4e-4, gt=0)
    """Peak learning rate (the reference's 4e-4; no warm-up, its warmup_ratio 0)."""
    max_steps: int = option(1024, ge=1)
    """Steps of the cosine decay to 0 (opt_learning_rate_training_steps, the reference's 1024): a run that
    has not reached its target by then trains on at the rate of 0 until max_epochs."""
    adam_beta1: float = option(0.9, ge=0, lt=1)
    """AdamW's beta1 (Hugging Face Trainer's default)."""
    adam_beta2: float = option(0.999, ge=0, lt=1)
    """AdamW's beta2 (Hugging Face Trainer's default)."""
    adam_eps: float = option(1e-8, gt=0)
    """AdamW's epsilon (Hugging Face Trainer's default)."""
    weight_decay: float = option(1e-4, ge=0)
    """AdamW's decoupled weight decay on the adapters (fixed to the reference's 0.0001)."""
    grad_clip: float = option(0.3, gt=0)
    """Max global gradient norm (fixed to the reference's 0.3)."""
    eval_batch_size: int = option(1, ge=1)
    """Validation sequences per forward pass on each rank (the reference: 1)."""
    fsdp: bool = False
    """Several ranks: shard the frozen base, the adapters, their gradients and optimizer state with FSDP2
    (fully_shard on every block, then on the root) instead of DDP's replicas (the reference: DeepSpeed ZeRO-3)."""
    fsdp_bf16: bool = False
    """With fsdp: FSDP's MixedPrecisionPolicy, bf16 parameters for compute and fp32 gradient reduction."""
    activation_checkpointing: bool = False
    """Recompute each block's activations in backward (checkpoint_wrapper per block; the reference's
    gradient checkpointing) instead of keeping them."""
    compile: bool = False
    """CUDA: torch.compile each block, adapters included (one graph the blocks share; compiled in the first steps)."""

    def relations(self, max_epochs: int) -> Iterator[Broken]:
        allowed = {"wqkv", "wo"} if self.fused_qkv else {"wq", "wk", "wv", "wo"}
        if self.dim % self.heads:
            yield Broken("dim", self.dim, f"a multiple of heads ({self.heads})")
        elif self.heads % self.kv_heads:
            yield Broken("kv_heads", self.kv_heads, f"a divisor of heads ({self.heads})")
        elif not self.lora_targets or not set(self.lora_targets) <= allowed:
            yield Broken("lora_targets", list(self.lora_targets), f"some of {sorted(allowed)} (fused_qkv={self.fused_qkv})")
