"""Tacotron 2's options (conf/model/tacotron2.yaml holds NVIDIA's LJSpeech values).

    python -m harness.train --help model=tacotron2
"""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.interface import ModelOptions


@dataclass
class Utterances:
    """LJSpeech's shapes: 13,100 clips of 1.1 to 10.1 s (mean 6.6 s), about 100 symbols each; at
    22,050 Hz and hop 256 that is 86 mel frames a second."""

    mel_mean: float = 566.0
    """Mean mel frames per utterance (6.57 s)."""
    mel_std: float = 190.0
    """Spread of the mel frames per utterance."""
    mel_min: int = 96
    """Shortest utterance in frames (1.11 s)."""
    mel_max: int = 870
    """Longest utterance in frames (10.10 s)."""
    frames_per_symbol: float = 5.66
    """Mel frames per input symbol: text length = frames / this."""


@dataclass
class Tacotron2Options(ModelOptions):
    n_symbols: int = 148
    """Input symbols: padding, punctuation, letters and ARPAbet (NVIDIA's symbols.py)."""
    symbols_embedding_dim: int = 512
    """Symbol embedding width."""
    encoder_n_convolutions: int = 3
    """Encoder convolutions."""
    encoder_kernel_size: int = 5
    """Their kernel size."""
    encoder_embedding_dim: int = 512
    """Encoder width (the bidirectional LSTM has half of it each way)."""
    n_mel_channels: int = 80
    """Mel bins."""
    prenet_dim: int = 256
    """Width of the decoder's two pre-net layers."""
    attention_rnn_dim: int = 1024
    """Attention LSTM units."""
    attention_dim: int = 128
    """Attention hidden width."""
    attention_location_n_filters: int = 32
    """Location-sensitive attention filters."""
    attention_location_kernel_size: int = 31
    """Their kernel size."""
    decoder_rnn_dim: int = 1024
    """Decoder LSTM units."""
    p_attention_dropout: float = 0.1
    """Dropout on the attention LSTM's output."""
    p_decoder_dropout: float = 0.1
    """Dropout on the decoder LSTM's output."""
    postnet_embedding_dim: int = 512
    """Post-net width."""
    postnet_kernel_size: int = 5
    """Post-net kernel size."""
    postnet_n_convolutions: int = 5
    """Post-net convolutions."""
    learning_rate: float = 1.0e-3
    """Adam's rate."""
    weight_decay: float = 1.0e-6
    """Adam's weight decay (L2, as torch.optim.Adam applies it)."""
    grad_clip: float = 1.0
    """Max global gradient norm."""
    utterances: Utterances = field(default_factory=Utterances)
    """Synthetic batches: how utterance lengths spread (LJSpeech's)."""
    compile: bool = False
    """CUDA: torch.compile the decoder's step (compilation falls in the warm-up steps)."""
