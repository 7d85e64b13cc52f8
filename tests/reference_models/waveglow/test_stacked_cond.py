"""WaveGlow's stacked conditioning convolution against one weight-normalised convolution per layer
(the reference's cond_layers): the same initial values from the same seed, and the same output and
gradients for one fixed batch (fp32 on the CPU, within 1e-5; the one GEMM sums in another order)."""
from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

from reference_models.waveglow.model import WN


class PlainWN(nn.Module):
    """The reference's WN, built in its order: start, end, in_layers, cond_layers, res_skip_layers."""

    def __init__(self, c_in: int, c_cond: int, layers: int, channels: int, kernel: int):
        super().__init__()
        self.n = channels
        self.start = weight_norm(nn.Conv1d(c_in, channels, 1))
        self.end = nn.Conv1d(channels, 2 * c_in, 1)
        nn.init.zeros_(self.end.weight)
        nn.init.zeros_(self.end.bias)  # type: ignore[arg-type]  # Conv1d has a bias here
        self.ins = nn.ModuleList(weight_norm(nn.Conv1d(channels, 2 * channels, kernel, dilation=2 ** i,
                                                       padding=(kernel - 1) * 2 ** i // 2)) for i in range(layers))
        self.conds = nn.ModuleList(weight_norm(nn.Conv1d(c_cond, 2 * channels, 1)) for _ in range(layers))
        self.res = nn.ModuleList(weight_norm(nn.Conv1d(channels, 2 * channels if i < layers - 1 else channels, 1))
                                 for i in range(layers))

    def forward(self, audio: torch.Tensor, spect: torch.Tensor) -> torch.Tensor:
        audio = self.start(audio)
        output = None
        n, layers = self.n, len(self.ins)
        for i, (conv, cond, res_skip) in enumerate(zip(self.ins, self.conds, self.res)):
            act = conv(audio) + cond(spect)
            acts = res_skip(torch.tanh(act[:, :n]) * torch.sigmoid(act[:, n:]))
            skip = acts[:, n:] if i < layers - 1 else acts
            if i < layers - 1:
                audio = audio + acts[:, :n]
            output = skip if output is None else output + skip
        return self.end(output)


def test_one_stacked_conditioning_convolution_is_the_per_layer_ones():
    shape = (2, 24, 4, 16, 3)  # c_in, c_cond, layers, channels, kernel
    torch.manual_seed(0)
    plain = PlainWN(*shape)
    torch.manual_seed(0)
    fused = WN(*shape)
    cond_v = torch.cat([c.parametrizations.weight.original1 for c in plain.conds])
    cond_g = torch.cat([c.parametrizations.weight.original0 for c in plain.conds])
    assert fused.cond.parametrizations.weight.original1.equal(cond_v)  # drawn in the reference's order
    assert fused.cond.parametrizations.weight.original0.equal(cond_g)
    assert fused.cond.bias.equal(torch.cat([c.bias for c in plain.conds]))
    assert fused.in_layers[3].parametrizations.weight.original1.equal(plain.ins[3].parametrizations.weight.original1)
    assert fused.res_skip_layers[-1].bias.equal(plain.res[-1].bias)  # the draws after it are unshifted too
    for m in (fused.end, plain.end):  # a live end layer, so that gradients reach every layer
        nn.init.normal_(m.weight, 0, 0.1)
        nn.init.normal_(m.bias, 0, 0.1)
    plain.end.load_state_dict(fused.end.state_dict())
    audio, spect = torch.randn(3, 2, 40), torch.randn(3, 24, 40)
    out, ref = fused(audio, spect), plain(audio, spect)
    assert torch.allclose(out, ref, rtol=1e-5, atol=1e-6)
    g = torch.randn_like(out)
    grad = torch.autograd.grad(out, [fused.cond.parametrizations.weight.original0,
                                     fused.cond.parametrizations.weight.original1, fused.cond.bias], g)
    plain_params = [[c.parametrizations.weight.original0 for c in plain.conds],
                    [c.parametrizations.weight.original1 for c in plain.conds], [c.bias for c in plain.conds]]
    ref_grad = torch.autograd.grad(ref, [p for group in plain_params for p in group], g)
    per_layer = len(plain.conds)
    for k, got in enumerate(grad):
        want = torch.cat(ref_grad[k * per_layer:(k + 1) * per_layer])
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)
