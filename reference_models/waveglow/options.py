"""WaveGlow's options (conf/model/waveglow.yaml holds NVIDIA's LJSpeech values).

    python -m harness.train --help model=waveglow
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.interface import ModelOptions


@dataclass
class WaveGlowOptions(ModelOptions):
    n_mel_channels: int = 80
    """Mel bins of the conditioning spectrogram."""
    n_flows: int = 12
    """Steps of flow (each an invertible 1x1 convolution and an affine coupling layer)."""
    n_group: int = 8
    """Audio samples squeezed into the channels of one time step."""
    n_early_every: int = 4
    """Flows between early outputs."""
    n_early_size: int = 2
    """Channels output early each time."""
    wn_layers: int = 8
    """Dilated convolution layers of each coupling network (WN)."""
    wn_channels: int = 512
    """Residual channels of WN (NVIDIA trains 512)."""
    wn_kernel_size: int = 3
    """Kernel of WN's dilated convolutions."""
    sigma: float = 1.0
    """Standard deviation of the Gaussian the flow maps audio to."""
    segment_length: int = 8000
    """Audio samples per training example."""
    hop_length: int = 256
    """STFT hop: the conditioning spectrogram has segment_length // hop_length + 1 frames."""
    upsample_kernel: int = 1024
    """Kernel of the transposed convolution that brings the spectrogram to audio rate (the STFT's filter length)."""
    learning_rate: float = 1.0e-4
    """Adam's rate."""
    grad_clip: float = 65504.0
    """Max global gradient norm (NVIDIA's scripts clip at fp16's largest value)."""
    compile: bool = False
    """CUDA: torch.compile each coupling network (compilation falls in the warm-up steps)."""
