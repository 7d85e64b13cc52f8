"""WaveGlow at NVIDIA's LJSpeech scale (parameter count) and its flow."""
from __future__ import annotations

import pytest
import torch

from harness.config import compose
from harness.run.build import build_run, context_for
from reference_models.waveglow.model import WaveGlow


def waveglow_params(mel=80, flows=12, group=8, every=4, size=2, layers=8, c=512, k=3, up=1024) -> int:
    """From NVIDIA's waveglow/model.py: the transposed-convolution upsampler; per flow a c_f x c_f
    invertible convolution and a WN whose weight-normalised convolutions carry a gain per output
    channel beside their weights and biases (start, dilated in_layers, cond_layers, res_skip_layers)
    and whose plain end convolution does not."""
    total = mel * mel * up + mel
    remaining = group
    for f in range(flows):
        if f % every == 0 and f > 0:
            remaining -= size
        half = remaining // 2
        wn = (half * c + 2 * c) + layers * (2 * c * c * k + 4 * c) + layers * (2 * c * mel * group + 4 * c)
        wn += (layers - 1) * (2 * c * c + 4 * c) + (c * c + 2 * c) + (c * 2 * half + 2 * half)
        total += remaining * remaining + wn
    return total


@pytest.mark.parametrize("channels,expected", [(512, 268_294_760), (256, 87_879_272)])
def test_waveglow_has_its_parameter_count(channels, expected):
    """512 channels is what NVIDIA trains; 256 is the paper's published model: 87.88M."""
    assert waveglow_params(c=channels) == expected
    with torch.device("meta"):
        model = WaveGlow(80, 12, 8, 4, 2, 8, channels, 3)
    assert sum(p.numel() for p in model.parameters()) == expected


def test_the_real_scale_preset_is_nvidias_and_the_flow_starts_as_a_rotation(tmp_path):
    real = compose(["model=waveglow", "mode=throughput"]).model
    assert (real.wn_channels, real.segment_length, real.batch_size, real.n_mel_channels) == (512, 8000, 10, 80)
    cfg = compose(["model=waveglow", "+debug=waveglow", "mode=throughput", "device=cpu", "seed=1",
                   f"output_root={tmp_path}"])
    bench = build_run(cfg, context_for(cfg)).bench
    mel, audio = bench.synthetic_batch()
    assert audio.shape == (2, 512) and mel.shape == (2, 8, 512 // 64 + 1)
    z, log_s, log_det = bench.model(mel, audio)
    assert z.shape == (2, 8, 64)
    assert all(s.abs().max() == 0 for s in log_s)  # the zeroed end layers: every coupling is the identity
    assert sum(log_det).abs() < 1e-3  # rotations: |det W| = 1
    assert z.pow(2).sum().item() == pytest.approx(audio.pow(2).sum().item(), rel=1e-4)
    loss, samples = bench.loss(bench.model, (mel, audio))
    loss.backward()
    assert samples == 1024 and torch.isfinite(loss)
