"""A Llama decoder: RMSNorm before each sublayer, rotary position embeddings (plain, as Llama 2, or with
Llama 3.1's frequency scaling), grouped-query attention (F.scaled_dot_product_attention) and a SwiGLU
feed-forward, no biases, untied input and output embeddings, as Meta's reference model. Llama 3.1 8B
(reference_models/llama31_8b) and Llama 2 70B (reference_models/llama2_70b_lora) are two shapes of it.

    python -c "from reference_models.llama.model import LlamaShape, parameter_count; print(parameter_count(LlamaShape(32000, 8192, 80, 64, 8, 28672, 4096, rope_theta=1e4, rope_scaling=None)))"
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class RopeScaling:
    """Llama 3.1's rescaling of the rotary frequencies (its params.json "use_scaled_rope"): wavelengths
    longer than original_context / low_freq_factor are divided by `factor`, those shorter than
    original_context / high_freq_factor are kept, and the band between is blended smoothly."""

    factor: float = 8.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_context: int = 8192


@dataclass(frozen=True)
class LlamaShape:
    vocab_size: int
    dim: int
    layers: int
    heads: int
    kv_heads: int
    ffn_dim: int
    max_seq_len: int
    norm_eps: float = 1e-5
    rope_theta: float = 500000.0
    rope_scaling: RopeScaling | None = RopeScaling()
    fused_qkv: bool = False  # one query/key/value projection (wqkv), as the MLPerf LoRA reference's checkpoint

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads



def rope_frequencies(head_dim: int, theta: float, scaling: RopeScaling | None) -> torch.Tensor:
    """The rotary angular frequencies of one head's dimension pairs, in float32."""
    freqs = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    if scaling is None:
        return freqs
    wavelen = 2 * math.pi / freqs
    low_wavelen = scaling.original_context / scaling.low_freq_factor
    high_wavelen = scaling.original_context / scaling.high_freq_factor
    smooth = (scaling.original_context / wavelen - scaling.low_freq_factor) / (
        scaling.high_freq_factor - scaling.low_freq_factor)
    blended = (1 - smooth) * freqs / scaling.factor + smooth * freqs
    return torch.where(wavelen < high_wavelen, freqs, torch.where(wavelen > low_wavelen, freqs / scaling.factor, blended))


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (batch, heads, seq, head_dim) rotated pairwise (even, odd) by the angles of each position,
    computed in float32 as Meta's apply_rotary_emb does."""
    pairs = x.float().unflatten(-1, (-1, 2))
    even, odd = pairs[..., 0], pairs[..., 1]
    out = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
    return out.flatten(-2).type_as(x)


class Attention(nn.Module):
    def __init__(self, shape: LlamaShape):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = shape.heads, shape.kv_heads, shape.head_dim
        self.fused = shape.fused_qkv
        if self.fused:  # the rows of wq, wk and wv one after the other: one matrix product instead of three
            self.wqkv = nn.Linear(shape.dim, (shape.heads + 2 * shape.kv_heads) * self.head_dim, bias=False)
        else:
            self.wq = nn.Linear(shape.dim, shape.heads * self.head_dim, bias=False)
            self.wk = nn.Linear(shape.dim, shape.kv_heads * self.head_dim, bias=False)
            self.wv = nn.Linear(shape.dim, shape.kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(shape.heads * self.head_dim, shape.dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        if self.fused:
            kv = self.kv_heads * self.head_dim
            q, k, v = self.wqkv(x).split([self.heads * self.head_dim, kv, kv], dim=-1)
        else:
            q, k, v = self.wq(x), self.wk(x), self.wv(x)
        q = q.view(batch, seq, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        v = v.view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        # enable_gqa: each key/value head serves heads // kv_heads query heads without a copy
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.kv_heads != self.heads)
        return self.wo(out.transpose(1, 2).reshape(batch, seq, -1))


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)  # gate
        self.w2 = nn.Linear(hidden, dim, bias=False)  # down
        self.w3 = nn.Linear(dim, hidden, bias=False)  # up

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, shape: LlamaShape):
        super().__init__()
        self.attention_norm = nn.RMSNorm(shape.dim, eps=shape.norm_eps)
        self.attention = Attention(shape)
        self.ffn_norm = nn.RMSNorm(shape.dim, eps=shape.norm_eps)
        self.feed_forward = FeedForward(shape.dim, shape.ffn_dim)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), cos, sin)
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    """tokens (batch, seq) -> logits (batch, seq, vocab)."""

    def __init__(self, shape: LlamaShape, init_std: float = 0.02):
        super().__init__()
        self.shape = shape
        self.tok_embeddings = nn.Embedding(shape.vocab_size, shape.dim)
        self.layers = nn.ModuleList(Block(shape) for _ in range(shape.layers))
        self.norm = nn.RMSNorm(shape.dim, eps=shape.norm_eps)
        self.output = nn.Linear(shape.dim, shape.vocab_size, bias=False)
        # derived from the shape, the same on every rank: not state to save or to shard
        self.register_buffer("rope_cos", torch.empty(0), persistent=False)
        self.register_buffer("rope_sin", torch.empty(0), persistent=False)
        self.init_rope()
        self.init_weights(init_std)

    @torch.no_grad()
    def init_rope(self) -> None:
        """The rotary tables, computed where the model lives; again after a model made on the meta device
        is given memory (`to_empty`), which leaves its buffers uninitialised."""
        device = self.output.weight.device
        angles = torch.outer(torch.arange(self.shape.max_seq_len, dtype=torch.float32, device=device),
                             rope_frequencies(self.shape.head_dim, self.shape.rope_theta,
                                              self.shape.rope_scaling).to(device))
        self.rope_cos, self.rope_sin = angles.cos(), angles.sin()

    @torch.no_grad()
    def init_weights(self, std: float) -> None:
        """N(0, std) everywhere, the projections into the residual stream (wo, w2) at std / sqrt(2 x
        layers) as Megatron's scaled init (NeMo's init_method_std, output_layer_init_method)."""
        if self.output.weight.is_meta:
            return
        residual_std = std / math.sqrt(2 * self.shape.layers)
        for name, p in self.named_parameters():
            if name.endswith("norm.weight"):
                nn.init.ones_(p)
            else:
                nn.init.normal_(p, 0.0, residual_std if name.endswith(("wo.weight", "w2.weight")) else std)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        seq = tokens.shape[1]
        if seq > self.shape.max_seq_len:
            raise ValueError(f"{seq} tokens exceed the model's context of {self.shape.max_seq_len}")
        cos, sin = self.rope_cos[:seq], self.rope_sin[:seq]  # type: ignore[index]
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.output(self.norm(x))


def parameter_count(shape: LlamaShape) -> int:
    """Parameters of a model of this shape, counted on the meta device: no memory for the weights."""
    with torch.device("meta"):
        model = Llama(shape)
    return sum(p.numel() for p in model.parameters())

