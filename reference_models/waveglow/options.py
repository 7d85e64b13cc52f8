"""WaveGlow's options, at NVIDIA's LJSpeech values (DeepLearningExamples,
DGXA100_waveglow_AMP_1NGPU_train.sh); conf/model/waveglow.yaml adds its batch.

    python -m harness.train --help model=waveglow
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from harness.interface import Broken, CompileMode, ModelOptions, option


@dataclass
class WaveGlowOptions(ModelOptions):
    n_mel_channels: int = option(80, ge=1)
    """Mel bins of the conditioning spectrogram."""
    n_flows: int = option(12, ge=1)
    """Steps of flow (each an invertible 1x1 convolution and an affine coupling layer)."""
    n_group: int = option(8, ge=2)
    """Audio samples squeezed into the channels of one time step (even: the coupling splits them in halves)."""
    n_early_every: int = option(4, ge=1)
    """Flows between early outputs."""
    n_early_size: int = option(2, ge=0)
    """Channels output early each time (even, leaving at least 2 to the last flow)."""
    wn_layers: int = option(8, ge=1)
    """Dilated convolution layers of each coupling network (WN)."""
    wn_channels: int = option(512, ge=1)
    """Residual channels of WN (NVIDIA trains 512: "512 residual channels in the coupling layer")."""
    wn_kernel_size: int = option(3, ge=1)
    """Kernel of WN's dilated convolutions (odd)."""
    sigma: float = option(1.0, gt=0)
    """Standard deviation of the Gaussian the flow maps audio to."""
    segment_length: int = option(8000, ge=1)
    """Audio samples per training example (--segment-length 8000), at least n_group."""
    hop_length: int = option(256, ge=1)
    """STFT hop: the conditioning spectrogram has segment_length // hop_length + 1 frames."""
    upsample_kernel: int = option(1024, ge=1)
    """Kernel of the transposed convolution that brings the spectrogram to audio rate (the STFT's filter
    length), at least hop_length so that it covers the segment."""
    learning_rate: float = option(1.0e-4, gt=0)
    """Adam's rate."""
    grad_clip: float = option(65504.0, gt=0)
    """Max global gradient norm (NVIDIA's scripts clip at fp16's largest value)."""
    compile: bool = False
    """CUDA: torch.compile each coupling network (compilation falls in the warm-up steps)."""
    compile_mode: CompileMode = CompileMode["default"]  # type: ignore[valid-type]
    """torch.compile mode: default, max-autotune-no-cudagraphs, reduce-overhead (CUDA graphs) or max-autotune."""
    cudnn_benchmark: bool = True
    """CUDA: cuDNN times its algorithms for each of the run's fixed convolution shapes in the first
    steps (warm-up) and keeps the fastest, as NVIDIA's scripts ask with --cudnn-benchmark; false: its
    heuristics pick without timing."""

    def relations(self, max_epochs: int) -> Iterator[Broken]:
        if self.n_group % 2:
            yield Broken("n_group", self.n_group, "an even count (the coupling layer splits the channels in halves)")
        if self.wn_kernel_size % 2 == 0:
            yield Broken("wn_kernel_size", self.wn_kernel_size, "an odd kernel")
        early = (self.n_flows - 1) // self.n_early_every  # early outputs: after flows every, 2 x every, ...
        left = self.n_group - self.n_early_size * early
        if (early and self.n_early_size % 2) or left < 2:
            yield Broken("n_early_size", self.n_early_size, f"an even count that leaves the last flow at least 2 of "
                                                            f"n_group's {self.n_group} channels (it leaves {left})")
        if self.segment_length < self.n_group:
            yield Broken("segment_length", self.segment_length, f">= n_group ({self.n_group})")
        if self.upsample_kernel < self.hop_length:
            yield Broken("upsample_kernel", self.upsample_kernel, f">= hop_length ({self.hop_length})")
