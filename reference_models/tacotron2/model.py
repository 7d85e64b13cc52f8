"""Tacotron 2 (Shen et al.) as NVIDIA's DeepLearningExamples trains it on LJSpeech: a convolutional +
bidirectional LSTM encoder, a location-sensitive attention decoder that teacher-forces one mel frame
per step through two LSTM cells, a five-layer convolutional post-net and a stop-token gate; dropout
instead of the paper's zoneout, the pre-net's dropout always on.

    python -c "from reference_models.tacotron2.model import Tacotron2; from reference_models.tacotron2.options \
        import Tacotron2Options as O; print(Tacotron2(O(batch_size=1)))"
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def conv_bn(c_in: int, c_out: int, kernel: int, gain: str) -> nn.Sequential:
    conv = nn.Conv1d(c_in, c_out, kernel, padding=(kernel - 1) // 2)
    nn.init.xavier_uniform_(conv.weight, gain=nn.init.calculate_gain(gain))  # type: ignore[arg-type]
    return nn.Sequential(conv, nn.BatchNorm1d(c_out))


def linear(c_in: int, c_out: int, bias: bool = True, gain: str = "linear") -> nn.Linear:
    layer = nn.Linear(c_in, c_out, bias=bias)
    nn.init.xavier_uniform_(layer.weight, gain=nn.init.calculate_gain(gain))  # type: ignore[arg-type]
    return layer


class Encoder(nn.Module):
    def __init__(self, n_conv: int, dim: int, kernel: int):
        super().__init__()
        self.convs = nn.ModuleList(conv_bn(dim, dim, kernel, "relu") for _ in range(n_conv))
        self.lstm = nn.LSTM(dim, dim // 2, batch_first=True, bidirectional=True)

    def forward(self, x: torch.Tensor, lengths_cpu: torch.Tensor) -> torch.Tensor:
        for conv in self.convs:
            x = F.dropout(F.relu(conv(x)), 0.5, self.training)
        packed = nn.utils.rnn.pack_padded_sequence(x.transpose(1, 2), lengths_cpu, batch_first=True)
        out, _ = self.lstm(packed)
        return nn.utils.rnn.pad_packed_sequence(out, batch_first=True)[0]


class LocationAttention(nn.Module):
    def __init__(self, rnn_dim: int, embedding_dim: int, dim: int, n_filters: int, kernel: int):
        super().__init__()
        self.query = linear(rnn_dim, dim, bias=False, gain="tanh")
        self.memory = linear(embedding_dim, dim, bias=False, gain="tanh")
        self.v = linear(dim, 1, bias=False)
        self.location_conv = nn.Conv1d(2, n_filters, kernel, padding=(kernel - 1) // 2, bias=False)
        nn.init.xavier_uniform_(self.location_conv.weight)
        self.location_dense = linear(n_filters, dim, bias=False, gain="tanh")

    def prepare(self, memory: torch.Tensor, pad_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """What every frame's attention reuses, made once per batch, channels first so that no frame
        copies a transposed tensor: the keys (batch, dim, time), the padding as an additive mask (0 or
        -inf) and the energy vector, both in the keys' dtype (autocast casts nothing a frame), and the
        location features' convolution and dense layer as one convolution (dim, 2, kernel): both are
        linear maps without bias, so their product gives the same features in one kernel a frame."""
        keys = self.memory(memory).transpose(1, 2).contiguous()
        mask = torch.zeros(pad_mask.shape, dtype=keys.dtype, device=keys.device).masked_fill(pad_mask, float("-inf"))
        v = self.v.weight.to(keys.dtype)[None].expand(memory.shape[0], 1, -1)
        kernel = torch.einsum("df,fck->dck", self.location_dense.weight, self.location_conv.weight)
        return keys, mask[:, None], v, kernel

    def forward(self, query, memory, weights_cat, prepared):
        keys, mask, v, kernel = prepared
        location = F.conv1d(weights_cat, kernel, padding=self.location_conv.padding)  # (batch, dim, time)
        hidden = torch.tanh(self.query(query)[:, :, None] + location + keys)
        energies = torch.baddbmm(mask, v, hidden).squeeze(1)  # v . hidden, -inf at the padding: one kernel
        # in float32 whatever the energies' dtype: under autocast the softmax reads the fp16 energies
        # itself instead of after a cast of its own, the same values (widening is exact)
        weights = F.softmax(energies, dim=1, dtype=torch.float32)
        return torch.bmm(weights[:, None], memory).squeeze(1), weights


class Decoder(nn.Module):
    def __init__(self, o):
        super().__init__()
        self.o = o
        self.prenet = nn.ModuleList([linear(o.n_mel_channels, o.prenet_dim, bias=False),
                                     linear(o.prenet_dim, o.prenet_dim, bias=False)])
        self.attention_rnn = nn.LSTMCell(o.prenet_dim + o.encoder_embedding_dim, o.attention_rnn_dim)
        self.attention = LocationAttention(o.attention_rnn_dim, o.encoder_embedding_dim, o.attention_dim,
                                           o.attention_location_n_filters, o.attention_location_kernel_size)
        self.decoder_rnn = nn.LSTMCell(o.attention_rnn_dim + o.encoder_embedding_dim, o.decoder_rnn_dim)
        self.projection = linear(o.decoder_rnn_dim + o.encoder_embedding_dim, o.n_mel_channels)
        self.gate = linear(o.decoder_rnn_dim + o.encoder_embedding_dim, 1, gain="sigmoid")

    def step(self, frame, state, memory, attention):
        """One teacher-forced frame: the attention LSTM, attention over the encoder outputs, the
        decoder LSTM; (the decoder LSTM's output after dropout, the new state). The frame's mel and
        gate predictions read only that output and the attention context, so forward makes them for
        every frame at once, after the loop: two matmuls a batch instead of a concatenation and two
        matmuls a frame (the decoder is bound by launching small kernels, one step per frame)."""
        (ah, ac), (dh, dc), weights, cumulative, context = state
        ah, ac = self.attention_rnn(torch.cat([frame, context], -1), (ah, ac))
        ah = F.dropout(ah, self.o.p_attention_dropout, self.training)
        context, weights = self.attention(ah, memory, torch.stack([weights, cumulative], 1), attention)
        dh, dc = self.decoder_rnn(torch.cat([ah, context], -1), (dh, dc))
        dh = F.dropout(dh, self.o.p_decoder_dropout, self.training)
        return dh, ((ah, ac), (dh, dc), weights, cumulative + weights, context)

    def forward(self, memory: torch.Tensor, mels: torch.Tensor, pad_mask: torch.Tensor):
        b, t_in, _ = memory.shape
        frames = torch.cat([mels.new_zeros(b, mels.shape[1], 1), mels[:, :, :-1]], 2).permute(2, 0, 1)
        for layer in self.prenet:  # the reference keeps this dropout on at inference too
            frames = F.dropout(F.relu(layer(frames)), 0.5, True)
        zeros = memory.new_zeros
        state = ((zeros(b, self.o.attention_rnn_dim), zeros(b, self.o.attention_rnn_dim)),
                 (zeros(b, self.o.decoder_rnn_dim), zeros(b, self.o.decoder_rnn_dim)),
                 zeros(b, t_in, dtype=torch.float32), zeros(b, t_in, dtype=torch.float32), zeros(b, memory.shape[2]))
        attention = self.attention.prepare(memory, pad_mask)  # once per batch
        hidden, contexts = [], []
        for frame in frames:
            dh, state = self.step(frame, state, memory, attention)
            hidden.append(dh)
            contexts.append(state[4])
        out = torch.cat([torch.stack(hidden), torch.stack(contexts)], -1)  # (frames, batch, decoder + encoder)
        return self.projection(out).permute(1, 2, 0), self.gate(out).squeeze(-1).transpose(0, 1)


class Postnet(nn.Module):
    def __init__(self, n_mel: int, dim: int, kernel: int, n_conv: int):
        super().__init__()
        widths = [n_mel] + [dim] * (n_conv - 1) + [n_mel]
        self.convs = nn.ModuleList(conv_bn(a, b, kernel, "tanh" if i < n_conv - 1 else "linear")
                                   for i, (a, b) in enumerate(zip(widths, widths[1:])))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv in self.convs[:-1]:
            x = F.dropout(torch.tanh(conv(x)), 0.5, self.training)
        return F.dropout(self.convs[-1](x), 0.5, self.training)


class Tacotron2(nn.Module):
    def __init__(self, o):
        """`o`: the model options (a Tacotron2Options, or the run's config node)."""
        super().__init__()
        self.embedding = nn.Embedding(o.n_symbols, o.symbols_embedding_dim)
        bound = (3.0 * 2.0 / (o.n_symbols + o.symbols_embedding_dim)) ** 0.5
        nn.init.uniform_(self.embedding.weight, -bound, bound)
        self.encoder = Encoder(o.encoder_n_convolutions, o.encoder_embedding_dim, o.encoder_kernel_size)
        self.decoder = Decoder(o)
        self.postnet = Postnet(o.n_mel_channels, o.postnet_embedding_dim, o.postnet_kernel_size,
                               o.postnet_n_convolutions)

    def forward(self, text, text_lengths_cpu, mels, pad_mask, gate_target) -> torch.Tensor:
        """The reference's loss: mel MSE before and after the post-net plus the gate's BCE."""
        memory = self.encoder(self.embedding(text).transpose(1, 2), text_lengths_cpu)
        mel, gate = self.decoder(memory, mels, pad_mask)
        post = mel + self.postnet(mel)
        mel, post = mel.float(), post.float()
        return (F.mse_loss(mel, mels) + F.mse_loss(post, mels)
                + F.binary_cross_entropy_with_logits(gate.float(), gate_target))
