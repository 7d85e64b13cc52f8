"""WaveGlow (Prenger et al.) as NVIDIA's DeepLearningExamples trains it on LJSpeech: 12 steps of flow
over audio squeezed 8 samples to a step, each an invertible 1x1 convolution and an affine coupling
layer whose scale and shift come from a WaveNet-like network (WN) of weight-normalised dilated
convolutions conditioned on the upsampled mel spectrogram; 2 channels leave early every 4 flows.

    python -c "from reference_models.waveglow.model import WaveGlow; print(WaveGlow(80, 12, 8, 4, 2, 8, 64, 3))"
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils import skip_init
from torch.nn.utils.parametrizations import weight_norm


class Invertible1x1Conv(nn.Module):
    """A c x c mixing of channels, started as a random rotation; its log-determinant enters the loss."""

    def __init__(self, c: int):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 1, bias=False)
        with torch.no_grad():
            if self.conv.weight.device.type != "meta":
                w = torch.linalg.qr(torch.randn(c, c))[0]
                if torch.det(w) < 0:
                    w[:, 0] = -w[:, 0]
                self.conv.weight.copy_(w[..., None])

    def forward(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        batch, _, steps = z.shape
        log_det = batch * steps * torch.logdet(self.conv.weight.squeeze(-1).float())  # fp32 whatever the autocast
        return self.conv(z), log_det


def _stacked(convs: list[nn.Conv1d]) -> nn.Conv1d:
    """One 1x1 convolution holding `convs` one after another along the output channels: one GEMM
    where there were len(convs), the same values (the members are drawn first, in their order)."""
    first = convs[0]
    out = sum(c.out_channels for c in convs)
    stacked = skip_init(nn.Conv1d, first.in_channels, out, 1, device=first.weight.device)
    with torch.no_grad():
        stacked.weight.copy_(torch.cat([c.weight for c in convs]))
        stacked.bias.copy_(torch.cat([c.bias for c in convs if c.bias is not None]))  # type: ignore[union-attr]  # Conv1d has one
    return stacked


class WN(nn.Module):
    """Gated dilated convolutions (dilation 2^i) with residual and skip outputs, conditioned on the
    spectrogram; the last layer starts at zero, so every coupling starts as the identity.

    The layers' conditioning convolutions all read the same spectrogram: they run as one weight-
    normalised 1x1 convolution of layers x 2 x channels outputs (weight norm is per output channel,
    so it is the same parameters and the same function as one convolution per layer; NVIDIA's later
    glow.py stacks them the same way, as its cond_layer)."""

    def __init__(self, c_in: int, c_cond: int, layers: int, channels: int, kernel: int):
        super().__init__()
        self.channels = channels
        self.start = weight_norm(nn.Conv1d(c_in, channels, 1))
        self.end = nn.Conv1d(channels, 2 * c_in, 1)
        nn.init.zeros_(self.end.weight)
        nn.init.zeros_(self.end.bias)  # type: ignore[arg-type]  # Conv1d has a bias here
        self.in_layers = nn.ModuleList(
            weight_norm(nn.Conv1d(channels, 2 * channels, kernel, dilation=2 ** i, padding=(kernel - 1) * 2 ** i // 2))
            for i in range(layers))
        self.cond = weight_norm(_stacked([nn.Conv1d(c_cond, 2 * channels, 1) for _ in range(layers)]))
        self.res_skip_layers = nn.ModuleList(
            weight_norm(nn.Conv1d(channels, 2 * channels if i < layers - 1 else channels, 1)) for i in range(layers))

    def forward(self, audio: torch.Tensor, spect: torch.Tensor) -> torch.Tensor:
        audio = self.start(audio)
        output = None
        n = self.channels
        conds = self.cond(spect).split(2 * n, dim=1)
        for i, (conv, cond, res_skip) in enumerate(zip(self.in_layers, conds, self.res_skip_layers)):
            act = conv(audio) + cond
            acts = res_skip(torch.tanh(act[:, :n]) * torch.sigmoid(act[:, n:]))
            if i < len(self.in_layers) - 1:
                audio = audio + acts[:, :n]
                skip = acts[:, n:]
            else:
                skip = acts
            output = skip if output is None else output + skip
        return self.end(output)


class WaveGlow(nn.Module):
    def __init__(self, n_mel: int, n_flows: int, n_group: int, early_every: int, early_size: int, wn_layers: int,
                 wn_channels: int, wn_kernel: int, upsample_kernel: int = 1024, hop: int = 256):
        super().__init__()
        if n_group % 2 or wn_kernel % 2 == 0:
            raise ValueError(f"n_group ({n_group}) must be even and wn_kernel_size ({wn_kernel}) odd")
        self.n_group, self.early_every, self.early_size = n_group, early_every, early_size
        self.upsample = nn.ConvTranspose1d(n_mel, n_mel, upsample_kernel, stride=hop)
        self.convinv, self.wn = nn.ModuleList(), nn.ModuleList()
        remaining = n_group
        for k in range(n_flows):
            if k % early_every == 0 and k > 0:
                remaining -= early_size
            self.convinv.append(Invertible1x1Conv(remaining))
            self.wn.append(WN(remaining // 2, n_mel * n_group, wn_layers, wn_channels, wn_kernel))

    def forward(self, spect: torch.Tensor, audio: torch.Tensor):
        """(z, [log s], [log det W]) for mel `spect` [batch, mels, frames] and `audio` [batch, samples]."""
        spect = self.upsample(spect)[:, :, :audio.shape[1]]
        # [batch, mels, samples] -> [batch, mels * n_group, samples / n_group]
        spect = spect.unfold(2, self.n_group, self.n_group).permute(0, 2, 1, 3).flatten(2).transpose(1, 2)
        audio = audio.unfold(1, self.n_group, self.n_group).transpose(1, 2)
        early, log_s_list, log_det_list = [], [], []
        for k, (convinv, wn) in enumerate(zip(self.convinv, self.wn)):
            if k % self.early_every == 0 and k > 0:
                early.append(audio[:, :self.early_size])
                audio = audio[:, self.early_size:]
            audio, log_det = convinv(audio)
            half = audio.shape[1] // 2
            out = wn(audio[:, :half], spect)
            log_s, shift = out[:, half:], out[:, :half]
            audio = torch.cat([audio[:, :half], torch.exp(log_s) * audio[:, half:] + shift], 1)
            log_s_list.append(log_s)
            log_det_list.append(log_det)
        return torch.cat(early + [audio], 1), log_s_list, log_det_list


def waveglow_loss(z: torch.Tensor, log_s: list[torch.Tensor], log_det: list[torch.Tensor], sigma: float) -> torch.Tensor:
    """The flow's negative log-likelihood per audio sample (NVIDIA's WaveGlowLoss), summed in fp32."""
    total = (z.float() ** 2).sum() / (2 * sigma * sigma) - sum(s.float().sum() for s in log_s) - sum(log_det)
    return total / z.numel()
