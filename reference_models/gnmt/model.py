"""GNMT v2 as in MLPerf's rnn_translator reference (seq2seq/models/{gnmt,encoder,decoder,attention}.py).

Encoder: shared embedding, a bidirectional LSTM, then three LSTMs; residual connections from the
third layer on; dropout on the input of every layer. Decoder: an LSTM whose output queries
normalized Bahdanau attention over the encoder outputs, then three LSTMs that each take the
attention context concatenated to their input, residual from the third layer on, and a linear
classifier. Everything is uniform(-0.1, 0.1) initialised except the LSTMs' hidden-hidden biases
(zero) and the attention's normalisation (1/sqrt(n) scalar, zero bias). Tensors are time-major
(T, B, ...), as in the reference. At hidden 1024, 4 layers and a 32,320-token vocabulary the model
has 160,671,297 parameters, the count NVIDIA's MLPerf v0.7 GNMT logs print.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from reference_models.gnmt.scores import FusedScores, Kernels, additive_scores, compiled_kernels

INIT = 0.1
LSTMState = tuple[torch.Tensor, torch.Tensor]


def _init_lstm(lstm: nn.LSTM) -> None:
    for name, param in lstm.named_parameters():
        if name.startswith("bias_hh"):
            nn.init.zeros_(param)
        else:
            nn.init.uniform_(param, -INIT, INIT)


class BahdanauAttention(nn.Module):
    """Additive attention with the weight-normalised scoring vector of Bahdanau et al."""

    def __init__(self, query_size: int, key_size: int, units: int):
        super().__init__()
        self.linear_q = nn.Linear(query_size, units, bias=False)
        self.linear_k = nn.Linear(key_size, units, bias=False)
        self.linear_att = nn.Parameter(torch.empty(units))
        self.normalize_scalar = nn.Parameter(torch.full((1,), 1.0 / math.sqrt(units)))
        self.normalize_bias = nn.Parameter(torch.zeros(units))
        for p in (self.linear_q.weight, self.linear_k.weight, self.linear_att):
            nn.init.uniform_(p, -INIT, INIT)
        self.kernels: Optional[Kernels] = None

    def fuse_scores(self, dynamic: bool = False, one_pass: bool = False) -> None:
        """CUDA: the scores and their gradients in compiled reductions (reference_models/gnmt/scores.py);
        `dynamic`: one graph for every batch and sentence length, else one per shape; `one_pass`: the
        gradients from one Triton kernel instead (scores_grads.py)."""
        self.kernels = compiled_kernels(dynamic, one_pass)

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """Wk.k for every encoder position, (T_k, B, units): computed once per sentence, reused per step."""
        return self.linear_k(keys)

    def forward(
        self, query: torch.Tensor, keys: torch.Tensor, projected_keys: torch.Tensor, pad_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """query (T_q, B, q), keys (T_k, B, k), pad_mask (B, T_k) True at padding.
        Returns the context (T_q, B, k) and the attention weights (T_q, B, T_k)."""
        q = self.linear_q(query).transpose(0, 1)  # (B, T_q, n)
        k = projected_keys.transpose(0, 1)  # (B, T_k, n)
        v = self.normalize_scalar * self.linear_att / self.linear_att.norm()
        if self.kernels is None:
            scores = additive_scores(q, k, self.normalize_bias, v)  # (B, T_q, T_k)
        else:
            scores = FusedScores.apply(q, k, self.normalize_bias, v, self.kernels)
        scores = scores.masked_fill(pad_mask.unsqueeze(1), -65504.0)  # fp16's lowest: safe under autocast
        weights = torch.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys.transpose(0, 1))  # (B, T_q, k)
        return context.transpose(0, 1), weights.transpose(0, 1)


class Encoder(nn.Module):
    def __init__(self, embedding: nn.Embedding, hidden: int, layers: int, dropout: float):
        super().__init__()
        self.embedding = embedding
        self.rnns = nn.ModuleList([nn.LSTM(hidden, hidden, bidirectional=True), nn.LSTM(2 * hidden, hidden)])
        self.rnns.extend(nn.LSTM(hidden, hidden) for _ in range(layers - 2))
        for lstm in self.rnns:
            assert isinstance(lstm, nn.LSTM)
            _init_lstm(lstm)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src: torch.Tensor, src_len: torch.Tensor) -> torch.Tensor:
        """src (T, B) sorted by decreasing length; src_len (B,) on the CPU. Returns (T, B, hidden)."""
        x = self.dropout(self.embedding(src))
        packed = pack_padded_sequence(x, src_len, enforce_sorted=True)
        x, _ = pad_packed_sequence(self.rnns[0](packed)[0], total_length=src.shape[0])
        x, _ = self.rnns[1](self.dropout(x))
        for rnn in self.rnns[2:]:
            x = x + rnn(self.dropout(x))[0]
        return x


class Decoder(nn.Module):
    def __init__(self, embedding: nn.Embedding, hidden: int, layers: int, dropout: float, vocab: int):
        super().__init__()
        self.embedding = embedding
        self.att_rnn = nn.LSTM(hidden, hidden)
        self.attention = BahdanauAttention(hidden, hidden, hidden)
        self.rnns = nn.ModuleList(nn.LSTM(2 * hidden, hidden) for _ in range(layers - 1))
        for lstm in (self.att_rnn, *self.rnns):
            _init_lstm(lstm)
        self.classifier = nn.Linear(hidden, vocab)
        nn.init.uniform_(self.classifier.weight, -INIT, INIT)
        nn.init.uniform_(self.classifier.bias, -INIT, INIT)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        projected: torch.Tensor,
        pad_mask: torch.Tensor,
        state: Optional[list[LSTMState]] = None,
    ) -> tuple[torch.Tensor, torch.Tensor, list[LSTMState]]:
        """tgt (T, B) -> logits (T, B, vocab), attention (T, B, T_src), and the new LSTM states
        (one per layer), so that beam search can feed one step at a time."""
        state = state or [None] * (1 + len(self.rnns))  # type: ignore[list-item]  # None: zeros, as nn.LSTM takes it
        new_state: list[LSTMState] = []
        x, h = self.att_rnn(self.dropout(self.embedding(tgt)), state[0])
        new_state.append(h)
        context, weights = self.attention(x, memory, projected, pad_mask)
        x, h = self.rnns[0](self.dropout(torch.cat((x, context), dim=2)), state[1])
        new_state.append(h)
        for i, rnn in enumerate(self.rnns[1:], start=2):
            y, h = rnn(self.dropout(torch.cat((x, context), dim=2)), state[i])
            x = x + y
            new_state.append(h)
        return self.classifier(x), weights, new_state


class GNMT(nn.Module):
    def __init__(self, vocab: int, hidden: int = 1024, layers: int = 4, dropout: float = 0.2, pad_id: int = 0):
        super().__init__()
        if layers < 3:
            raise ValueError("GNMT needs at least 3 layers: bidirectional, first unidirectional, residual")
        self.pad_id = pad_id
        self.embedding = nn.Embedding(vocab, hidden, padding_idx=pad_id)
        nn.init.uniform_(self.embedding.weight, -INIT, INIT)  # the pad row too, as the reference does
        self.encoder = Encoder(self.embedding, hidden, layers, dropout)
        self.decoder = Decoder(self.embedding, hidden, layers, dropout, vocab)

    def encode(self, src: torch.Tensor, src_len: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Encoder outputs, their attention keys, and the padding mask (B, T_src)."""
        memory = self.encoder(src, src_len)
        # the padding is where the source holds PAD (only after a sentence's end): the same mask as
        # positions >= src_len, without copying the host's lengths to the device, a copy that a
        # CUDA-graph capture of the step refuses
        pad_mask = (src == self.pad_id).t()
        return memory, self.decoder.attention.project_keys(memory), pad_mask

    def forward(self, src: torch.Tensor, src_len: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits (T_tgt, B, vocab)."""
        memory, projected, pad_mask = self.encode(src, src_len)
        logits, _, _ = self.decoder(tgt_in, memory, projected, pad_mask)
        return logits
