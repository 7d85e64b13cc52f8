"""The BERT encoder (Devlin et al.) with its two training heads: SQuAD span prediction, and masked LM
plus next-sentence prediction for pre-training. Post-LayerNorm layers, erf GELU, learned positions,
the masked-LM decoder tied to the word embeddings, as NVIDIA's DeepLearningExamples BERT.

Attention runs through torch's scaled_dot_product_attention (FlashAttention where the device and
dtype allow); query, key and value come from one fused projection, which holds the same parameters
as three.

    python -c "from reference_models.bert.model import BertEncoder; print(BertEncoder(30522, 768, 12, 12, 3072))"
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


class HalfIONorm(nn.LayerNorm):
    """nn.LayerNorm that, under autocast, reads and writes autocast's dtype (fp16 or bf16), its statistics
    still in fp32 inside the kernel, as apex's FusedLayerNorm ran in NVIDIA's BERT. autocast's own policy
    runs LayerNorm in fp32 and returns fp32, so the residual stream between layers (batch x sequence x
    hidden) is read and written in 4 bytes an element by every residual add, dropout and norm, and cast
    again before each matmul. Without autocast (the CPU's fp32 runs) it is nn.LayerNorm itself."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        device = x.device.type
        if not torch.is_autocast_enabled(device):
            return super().forward(x)
        dtype = torch.get_autocast_dtype(device)
        with torch.autocast(device, enabled=False):
            return F.layer_norm(x.to(dtype), self.normalized_shape, self.weight.to(dtype), self.bias.to(dtype),
                                self.eps)


def layer_norm(hidden: int, eps: float, half_io: bool) -> nn.LayerNorm:
    """A LayerNorm of `hidden` features; `half_io`: HalfIONorm (model.half_norms)."""
    return (HalfIONorm if half_io else nn.LayerNorm)(hidden, eps=eps)


class BertLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, intermediate: int, dropout: float, attention_dropout: float,
                 eps: float, half_norms: bool = False):
        super().__init__()
        self.heads, self.attention_dropout = heads, attention_dropout
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.attention_out = nn.Linear(hidden, hidden)
        self.attention_norm = layer_norm(hidden, eps, half_norms)
        self.ffn_in = nn.Linear(hidden, intermediate)
        self.ffn_out = nn.Linear(intermediate, hidden)
        self.ffn_norm = layer_norm(hidden, eps, half_norms)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        context = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attention_dropout if self.training else 0.0)
        context = context.transpose(1, 2).reshape(b, s, h)
        x = self.attention_norm(x + self.dropout(self.attention_out(context)))
        return self.ffn_norm(x + self.dropout(self.ffn_out(F.gelu(self.ffn_in(x)))))


class BertEncoder(nn.Module):
    """Embeddings, the layers and, when `pooler`, the [CLS] pooler (dense + tanh) of BertModel."""

    def __init__(self, vocab: int, hidden: int, layers: int, heads: int, intermediate: int, *, positions: int = 512,
                 types: int = 2, dropout: float = 0.1, attention_dropout: float = 0.1, eps: float = 1e-12,
                 pooler: bool = True, half_norms: bool = False):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not a multiple of {heads} heads")
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(positions, hidden)
        self.token_type = nn.Embedding(types, hidden)
        self.embedding_norm = layer_norm(hidden, eps, half_norms)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, intermediate, dropout, attention_dropout, eps, half_norms)
                                    for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden) if pooler else None

    def forward(self, tokens: torch.Tensor, token_types: torch.Tensor) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.word(tokens) + self.position(positions)[None] + self.token_type(token_types)
        x = self.dropout(self.embedding_norm(x))
        for layer in self.layers:
            x = layer(x)
        pooled = torch.tanh(self.pooler(x[:, 0])) if self.pooler is not None else None
        return x, pooled


def init_weights(module: nn.Module, std: float) -> None:
    """BERT's initialisation: normal(0, std) weights, zero biases, unit LayerNorms."""
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, std)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)
        if isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


class BertForQuestionAnswering(nn.Module):
    """SQuAD: a start and an end logit per token; the loss is the mean of the two cross-entropies."""

    def __init__(self, encoder: BertEncoder):
        super().__init__()
        self.bert = encoder
        self.qa = nn.Linear(encoder.word.embedding_dim, 2)

    def forward(self, tokens, token_types, start, end) -> torch.Tensor:
        hidden, _ = self.bert(tokens, token_types)
        start_logits, end_logits = self.qa(hidden).float().unbind(-1)
        return (F.cross_entropy(start_logits, start) + F.cross_entropy(end_logits, end)) / 2


class BertForPreTraining(nn.Module):
    """Masked LM on the gathered masked positions (all positions when they are the whole sequence)
    through a dense + GELU + LayerNorm transform and the word embeddings as decoder, plus
    next-sentence prediction on the pooled [CLS]."""

    def __init__(self, encoder: BertEncoder, eps: float = 1e-12, half_norms: bool = False):
        super().__init__()
        hidden = encoder.word.embedding_dim
        self.bert = encoder
        self.transform = nn.Linear(hidden, hidden)
        self.transform_norm = layer_norm(hidden, eps, half_norms)
        self.decoder_bias = nn.Parameter(torch.zeros(encoder.word.num_embeddings))
        self.next_sentence = nn.Linear(hidden, 2)

    def forward(self, tokens, token_types, positions, labels, next_sentence) -> torch.Tensor:
        hidden, pooled = self.bert(tokens, token_types)
        if positions.shape[1] != hidden.shape[1]:
            hidden = hidden.gather(1, positions[..., None].expand(-1, -1, hidden.shape[-1]))
        h = self.transform_norm(F.gelu(self.transform(hidden)))
        logits = F.linear(h, self.bert.word.weight, self.decoder_bias)
        mlm = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
        return mlm + F.cross_entropy(self.next_sentence(pooled).float(), next_sentence)
