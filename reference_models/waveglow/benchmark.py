"""WaveGlow plugged into the harness as a throughput-only model: audio segments of LJSpeech's length
(8,000 samples at 22,050 Hz) with their 80-bin mel spectrograms, counted in audio samples.

    python -m harness.train model=waveglow mode=throughput precision=amp
"""
from __future__ import annotations

from typing import Any

import torch

from harness.interface import RunContext
from reference_models.synthetic import SyntheticBenchmark, adam
from reference_models.waveglow.model import WaveGlow, waveglow_loss
from reference_models.waveglow.options import WaveGlowOptions


class WaveGlowBenchmark(SyntheticBenchmark):
    def __init__(self, ctx: RunContext[WaveGlowOptions]):
        hp = ctx.options
        super().__init__(ctx)
        self.model = WaveGlow(hp.n_mel_channels, hp.n_flows, hp.n_group, hp.n_early_every, hp.n_early_size,
                              hp.wn_layers, hp.wn_channels, hp.wn_kernel_size, hp.upsample_kernel,
                              hp.hop_length).to(ctx.device)
        self.compile_if_asked(list(self.model.wn))
        if hp.cudnn_benchmark and ctx.device.type == "cuda":
            # process-wide, as NVIDIA's train.py sets it: a run trains one model at fixed shapes
            torch.backends.cudnn.benchmark = True
        self.optimizer = adam(self.model, ctx.device, hp.learning_rate, (0.9, 0.999), 1e-8)
        self.grad_clip_norm = hp.grad_clip
        b, samples = int(hp.batch_size), int(hp.segment_length)
        frames = samples // hp.hop_length + 1  # the STFT's frames of one segment (centred windows)
        audio = (0.1 * torch.randn(b, samples, generator=self.generator, device=ctx.device)).clamp(-1, 1)
        mel = torch.randn(b, hp.n_mel_channels, frames, generator=self.generator, device=ctx.device) - 5.0
        self.batch = (mel, audio)

    def loss(self, model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, int]:
        mel, audio = batch
        z, log_s, log_det = model(mel, audio)
        return waveglow_loss(z, log_s, log_det, self.hp.sigma), audio.numel()

    def hyperparameters(self) -> dict[str, Any]:
        return {**super().hyperparameters(), "segment_length": self.hp.segment_length}
