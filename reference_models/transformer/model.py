"""Transformer-big as MLPerf's translation reference defines it (translation/tensorflow/transformer/model).

One embedding matrix (vocabulary x d_model, normal(0, d^-0.5)) serves the source, the target and
the output projection; embeddings are scaled by sqrt(d) and zeroed at padding, then sinusoidal
positions are added (sines in the first half of the channels, cosines in the second, timescales 1 to
1e4). Pre-norm layers: x + dropout(sublayer(layer_norm(x))), layer norm eps 1e-6, and a final layer
norm on each stack. Attention projections have no bias, the feed-forward layers (ReLU) have; dense
weights are Glorot-uniform (TensorFlow's variance scaling, fan_avg), biases zero. Dropout 0.1 after
the embeddings, on the attention weights, after the ReLU and on every sublayer's output. Attention
runs through torch.nn.functional.scaled_dot_product_attention (flash attention on CUDA when no
sentence in the batch is padded). The decoder's input is the target shifted right behind a zero
vector. The same weights decode one step at a time with cached keys and values (beam.py).
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

LN_EPS = 1e-6
Cache = dict[str, torch.Tensor]


def sinusoids(length: int, d: int, device: Optional[torch.device] = None) -> torch.Tensor:
    """(length, d) position signal: sin of position x inverse timescale, then cos, as the reference."""
    half = d // 2
    increment = math.log(1.0e4) / max(half - 1, 1)
    inverse = torch.exp(torch.arange(half, dtype=torch.float32, device=device) * -increment)
    angles = torch.arange(length, dtype=torch.float32, device=device)[:, None] * inverse[None, :]
    return torch.cat((angles.sin(), angles.cos()), dim=1)


def _glorot(weight: torch.Tensor, blocks: int = 1) -> None:
    """Glorot-uniform on each of `blocks` square-or-not row blocks: a fused projection is
    initialised as the reference's separate q, k, v matrices."""
    for block in weight.chunk(blocks, dim=0):
        nn.init.xavier_uniform_(block)


class Attention(nn.Module):
    def __init__(self, d: int, heads: int, dropout: float, self_attention: bool):
        super().__init__()
        if d % heads:
            raise ValueError(f"hidden size {d} is not divisible by {heads} heads")
        self.heads, self.dropout, self.self_attention = heads, dropout, self_attention
        if self_attention:
            self.qkv = nn.Linear(d, 3 * d, bias=False)
            _glorot(self.qkv.weight, 3)
        else:
            self.q = nn.Linear(d, d, bias=False)
            self.kv = nn.Linear(d, 2 * d, bias=False)
            _glorot(self.q.weight)
            _glorot(self.kv.weight, 2)
        self.out = nn.Linear(d, d, bias=False)
        _glorot(self.out.weight)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        return x.view(b, t, self.heads, d // self.heads).transpose(1, 2)

    def memory(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values of the encoder output (cross-attention), (B, H, S, d/H) each."""
        k, v = self.kv(memory).chunk(2, dim=-1)
        return self._heads(k), self._heads(v)

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None, causal: bool = False,
                kv: Optional[tuple[torch.Tensor, torch.Tensor]] = None, cache: Optional[Cache] = None) -> torch.Tensor:
        """x (B, T, d). Self-attention, or cross-attention over `kv`; `mask` (B, 1, 1, S) is True
        where a key may be attended; `cache` holds the keys and values of earlier decoding steps."""
        if self.self_attention:
            q, k, v = (self._heads(t) for t in self.qkv(x).chunk(3, dim=-1))
            if cache is not None:
                k = cache["k"] = torch.cat((cache["k"], k), dim=2) if "k" in cache else k
                v = cache["v"] = torch.cat((cache["v"], v), dim=2) if "v" in cache else v
        else:
            assert kv is not None  # cross-attention attends over the encoder's keys and values
            q, (k, v) = self._heads(self.q(x)), kv
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                             dropout_p=self.dropout if self.training else 0.0)
        b, h, t, dh = out.shape
        return self.out(out.transpose(1, 2).reshape(b, t, h * dh))


class FeedForward(nn.Module):
    def __init__(self, d: int, ffn: int, dropout: float):
        super().__init__()
        self.inner, self.outer, self.dropout = nn.Linear(d, ffn), nn.Linear(ffn, d), nn.Dropout(dropout)
        for layer in (self.inner, self.outer):
            _glorot(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.outer(self.dropout(F.relu(self.inner(x))))


class EncoderLayer(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int, dropout: float, attention_dropout: float, relu_dropout: float):
        super().__init__()
        self.attn_norm, self.attn = nn.LayerNorm(d, eps=LN_EPS), Attention(d, heads, attention_dropout, True)
        self.ffn_norm, self.ffn = nn.LayerNorm(d, eps=LN_EPS), FeedForward(d, ffn, relu_dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
        x = x + self.drop(self.attn(self.attn_norm(x), mask))
        return x + self.drop(self.ffn(self.ffn_norm(x)))


class DecoderLayer(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int, dropout: float, attention_dropout: float, relu_dropout: float):
        super().__init__()
        self.self_norm, self.self_attn = nn.LayerNorm(d, eps=LN_EPS), Attention(d, heads, attention_dropout, True)
        self.cross_norm, self.cross = nn.LayerNorm(d, eps=LN_EPS), Attention(d, heads, attention_dropout, False)
        self.ffn_norm, self.ffn = nn.LayerNorm(d, eps=LN_EPS), FeedForward(d, ffn, relu_dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, kv: tuple[torch.Tensor, torch.Tensor], mask: Optional[torch.Tensor],
                cache: Optional[Cache] = None) -> torch.Tensor:
        # one step at a time (cache) the query is the newest position: every cached key is in its past
        x = x + self.drop(self.self_attn(self.self_norm(x), causal=cache is None, cache=cache))
        x = x + self.drop(self.cross(self.cross_norm(x), mask, kv=kv))
        return x + self.drop(self.ffn(self.ffn_norm(x)))


class Transformer(nn.Module):
    def __init__(self, vocab: int, d: int = 1024, layers: int = 6, heads: int = 16, ffn: int = 4096,
                 dropout: float = 0.1, attention_dropout: float = 0.1, relu_dropout: float = 0.1):
        super().__init__()
        self.d = d
        self.embedding = nn.Parameter(torch.empty(vocab, d))
        nn.init.normal_(self.embedding, 0.0, d ** -0.5)
        args = (d, heads, ffn, dropout, attention_dropout, relu_dropout)
        self.encoder = nn.ModuleList(EncoderLayer(*args) for _ in range(layers))
        self.decoder = nn.ModuleList(DecoderLayer(*args) for _ in range(layers))
        self.encoder_norm, self.decoder_norm = nn.LayerNorm(d, eps=LN_EPS), nn.LayerNorm(d, eps=LN_EPS)
        self.drop = nn.Dropout(dropout)
        self.positions: torch.Tensor
        self.register_buffer("positions", sinusoids(256, d), persistent=False)

    def _positions(self, start: int, length: int) -> torch.Tensor:
        if start + length > len(self.positions):  # a longer sentence than any before: a longer table
            self.positions = sinusoids(2 * (start + length), self.d, self.positions.device).to(self.positions.dtype)
        return self.positions[start: start + length]

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        x = F.embedding(ids, self.embedding) * self.d ** 0.5
        return x * (ids != 0).unsqueeze(-1).to(x.dtype)  # padding embeds to zero

    @staticmethod
    def key_mask(src_pad: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
        """SDPA's boolean mask (B, 1, 1, S) from the padding (B, S); None when nothing is padded."""
        return None if src_pad is None else ~src_pad[:, None, None, :]

    def encode(self, src: torch.Tensor, src_pad: Optional[torch.Tensor]) -> torch.Tensor:
        x = self.drop(self.embed(src) + self._positions(0, src.shape[1]))
        mask = self.key_mask(src_pad)
        for layer in self.encoder:
            x = layer(x, mask)
        return self.encoder_norm(x)

    def memory(self, encoded: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Each decoder layer's cross-attention keys and values of the encoder output."""
        return [layer.cross.memory(encoded) for layer in self.decoder]  # type: ignore[union-attr, operator]

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.embedding)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, src_pad: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Teacher-forced logits (B, T, vocab) of targets tgt (B, T) given sources src (B, S)."""
        memory = self.memory(self.encode(src, src_pad))
        y = F.pad(self.embed(tgt), (0, 0, 1, 0))[:, :-1]  # shifted right behind a zero vector
        y = self.drop(y + self._positions(0, tgt.shape[1]))
        mask = self.key_mask(src_pad)
        for layer, kv in zip(self.decoder, memory):
            y = layer(y, kv, mask)
        return self.logits(self.decoder_norm(y))

    def step(self, ids: torch.Tensor, position: int, memory: list[tuple[torch.Tensor, torch.Tensor]],
             mask: Optional[torch.Tensor], caches: list[Cache]) -> torch.Tensor:
        """Logits (N, vocab) of the next token after `ids` (N,), the tokens at `position`."""
        y = self.embed(ids[:, None]) + self._positions(position, 1)
        for layer, kv, cache in zip(self.decoder, memory, caches):
            y = layer(y, kv, mask, cache)
        return self.logits(self.decoder_norm(y))[:, 0]
