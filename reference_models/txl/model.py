"""Transformer-XL (Dai et al.) as NVIDIA's DeepLearningExamples trains it on WikiText-103: relative
positional attention with the learned global biases u and v (attn_type 0), post-LayerNorm layers,
segment-level recurrence (each layer attends over mem_len cached hidden states of earlier segments
plus the current tgt_len tokens), adaptive input and softmax.

Tensors are time-major as in the reference: [length, batch, ...]. Attention runs through torch's
scaled_dot_product_attention with the position terms as its additive bias (the memory-efficient
kernel on CUDA, which takes a bias and returns its gradient), so the content scores, the softmax and
the attention dropout never leave the kernel.

    python -c "from reference_models.txl.model import MemTransformerLM; print(MemTransformerLM(1000, [500], 2, 64, 2, 32, 128))"
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from reference_models.txl.adaptive import AdaptiveEmbedding, ProjectedAdaptiveLogSoftmax


def rel_shift(x: torch.Tensor) -> torch.Tensor:
    """[b, n, i, j] scores against relative distances (klen-1 .. 0) -> against key positions: row i
    shifts left by qlen-1-i, the reference's pad-and-reshape trick."""
    b, n, i, j = x.shape
    padded = torch.cat([x.new_zeros(b, n, i, 1), x], dim=3).view(b, n, j + 1, i)
    return padded[:, :, 1:].reshape(b, n, i, j)


class RelPartialLearnableLayer(nn.Module):
    """Relative multi-head attention then the position-wise feed-forward, each with a residual and
    a LayerNorm after it."""

    def __init__(self, n_head: int, d_model: int, d_head: int, d_inner: int, dropout: float, dropatt: float):
        super().__init__()
        self.n_head, self.d_head, self.scale = n_head, d_head, d_head ** -0.5
        self.qkv_net = nn.Linear(d_model, 3 * n_head * d_head, bias=False)
        self.r_net = nn.Linear(d_model, n_head * d_head, bias=False)
        self.o_net = nn.Linear(n_head * d_head, d_model, bias=False)
        self.attn_norm = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_inner), nn.ReLU(inplace=True), nn.Dropout(dropout),
                                nn.Linear(d_inner, d_model), nn.Dropout(dropout))
        self.ff_norm = nn.LayerNorm(d_model)
        self.drop, self.dropatt = nn.Dropout(dropout), dropatt

    def forward(self, w: torch.Tensor, r: torch.Tensor, r_w_bias: torch.Tensor, r_r_bias: torch.Tensor,
                mask: torch.Tensor, mem: Optional[torch.Tensor]) -> torch.Tensor:
        qlen, bsz = w.shape[:2]
        n, d = self.n_head, self.d_head
        cat = w if mem is None else torch.cat([mem, w], 0)
        klen = cat.shape[0]
        # queries only for the current segment (the reference projects the memory's too, then drops
        # them): the same weights, a third less of the projection's work over the memory
        w_q, w_kv = self.qkv_net.weight.split([n * d, 2 * n * d])
        q = F.linear(w, w_q).view(qlen, bsz, n, d).permute(1, 2, 0, 3)  # [b, n, i, d]
        k, v = F.linear(cat, w_kv).view(klen, bsz, 2, n, d).permute(2, 1, 3, 0, 4).unbind(0)  # [b, n, j, d]
        r_k = self.r_net(r).view(r.shape[0], n, d).transpose(0, 1)  # [n, j, d]
        # terms (b) and (d) of the paper, against key positions, go into the fused kernel as an
        # additive bias beside the causal mask (scaled on the queries' side: a pass over [b, n, i, d]
        # instead of one over the bias); terms (a) and (c), the softmax, dropout on the
        # probabilities and the product with the values run inside it
        position = rel_shift(torch.einsum("bnid,njd->bnij", (q + r_r_bias[:, None]) * self.scale, r_k))
        bias = position.masked_fill(mask, float("-inf"))
        attn = F.scaled_dot_product_attention(q + r_w_bias[:, None], k, v, attn_mask=bias, scale=self.scale,
                                              dropout_p=self.dropatt if self.training else 0.0)
        attn = attn.permute(2, 0, 1, 3).reshape(qlen, bsz, n * d)
        h = self.attn_norm(w + self.drop(self.o_net(attn)))
        return self.ff_norm(h + self.ff(h))


class MemTransformerLM(nn.Module):
    def __init__(self, n_token: int, cutoffs: Sequence[int], n_layer: int, d_model: int, n_head: int, d_head: int,
                 d_inner: int, *, d_embed: Optional[int] = None, div_val: int = 1, dropout: float = 0.1,
                 dropatt: float = 0.0, mem_len: int = 0, same_length: bool = False, clamp_len: int = -1):
        super().__init__()
        d_embed = d_embed or d_model
        self.mem_len, self.same_length, self.clamp_len = mem_len, same_length, clamp_len
        self.word_emb = AdaptiveEmbedding(n_token, d_embed, d_model, cutoffs, div_val)
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(RelPartialLearnableLayer(n_head, d_model, d_head, d_inner, dropout, dropatt)
                                    for _ in range(n_layer))
        self.r_w_bias = nn.Parameter(torch.zeros(n_head, d_head))
        self.r_r_bias = nn.Parameter(torch.zeros(n_head, d_head))
        self.register_buffer("inv_freq", 1 / (10000 ** (torch.arange(0.0, d_model, 2.0) / d_model)), persistent=False)
        self.crit = ProjectedAdaptiveLogSoftmax(self.word_emb, d_embed)

    def _mask(self, qlen: int, mlen: int, device: torch.device) -> torch.Tensor:
        """True where a query may not look: the future, and with same_length the too-distant past."""
        ones = torch.ones(qlen, qlen + mlen, device=device)
        mask = torch.triu(ones, diagonal=1 + mlen)
        if self.same_length:
            beyond = qlen + mlen - self.mem_len - 1
            mask = mask + torch.tril(ones, -(qlen - beyond if beyond > 0 else qlen))
        return mask.bool()

    def forward(self, data: torch.Tensor, target: torch.Tensor, mems: Optional[torch.Tensor],
                counts: Optional[Sequence[int]] = None) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Mean NLL of `target` ([tgt_len, batch]) given `data` and the cached `mems` ([layers,
        mem, batch, d_model] or None), and the memory for the next segment (no gradient). `counts`:
        the targets per adaptive cluster (crit.cluster_counts), when the caller knows them."""
        qlen = data.shape[0]
        mlen = 0 if mems is None else mems.shape[1]
        klen = qlen + mlen
        word = self.word_emb(data)
        pos_seq = torch.arange(klen - 1, -1, -1.0, device=data.device)
        if self.clamp_len > 0:
            pos_seq = pos_seq.clamp(max=self.clamp_len)
        sinusoid = torch.outer(pos_seq, self.inv_freq)  # type: ignore[arg-type]  # a buffer
        r = self.drop(torch.cat([sinusoid.sin(), sinusoid.cos()], dim=-1)[:, None].to(word.dtype))
        mask = self._mask(qlen, mlen, data.device)
        h = self.drop(word)
        hids = []
        for i, layer in enumerate(self.layers):
            hids.append(h.detach())
            h = layer(h, r, self.r_w_bias, self.r_r_bias, mask, None if mems is None else mems[i])
        h = self.drop(h)
        loss = self.crit(h[-target.shape[0]:].reshape(-1, h.shape[-1]), target.reshape(-1), counts)
        return loss, self._new_mems(hids, mems, qlen)

    @torch.no_grad()
    def _new_mems(self, hids: list[torch.Tensor], mems: Optional[torch.Tensor], qlen: int) -> Optional[torch.Tensor]:
        if self.mem_len == 0:
            return None
        stacked = torch.stack(hids)
        if mems is not None:
            stacked = torch.cat([mems, stacked.to(mems.dtype)], dim=1)
        return stacked[:, -self.mem_len:].detach()


def init_weights(model: MemTransformerLM, std: float, proj_std: float) -> None:
    """The reference's initialisation: normal(0, std) weights and embeddings, zero biases, LayerNorm
    gains normal(1, std), projections normal(0, proj_std)."""
    for m in model.modules():
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0.0, std)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, 0.0, std)
        elif isinstance(m, nn.LayerNorm):
            nn.init.normal_(m.weight, 1.0, std)
            nn.init.zeros_(m.bias)
    for p in model.word_emb.projs:
        nn.init.normal_(p, 0.0, proj_std)
    if model.crit.head_proj is not None:
        nn.init.normal_(model.crit.head_proj, 0.0, proj_std)
    nn.init.normal_(model.crit.cluster_weight, 0.0, std)
    for p in (model.r_w_bias, model.r_r_bias):
        nn.init.normal_(p, 0.0, std)
