"""Tacotron 2's options, at NVIDIA's LJSpeech values (DeepLearningExamples,
DGXA100_tacotron2_AMP_1NGPU_train.sh); conf/model/tacotron2.yaml adds its batch.

    python -m harness.train --help model=tacotron2
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from harness.interface import Broken, CompileMode, ModelOptions, option


@dataclass
class Utterances:
    """LJSpeech's shapes: 13,100 clips of 1.1 to 10.1 s (mean 6.6 s), about 100 symbols each; at
    22,050 Hz and hop 256 that is 86 mel frames a second."""

    mel_mean: float = option(566.0, gt=0)
    """Mean mel frames per utterance (6.57 s)."""
    mel_std: float = option(190.0, ge=0)
    """Spread of the mel frames per utterance."""
    mel_min: int = option(96, ge=1)
    """Shortest utterance in frames (1.11 s)."""
    mel_max: int = option(870, ge=1)
    """Longest utterance in frames (10.10 s), at least mel_min."""
    frames_per_symbol: float = option(5.66, gt=0)
    """Mel frames per input symbol: text length = frames / this."""


@dataclass
class Tacotron2Options(ModelOptions):
    n_symbols: int = option(148, ge=2)
    """Input symbols: padding, punctuation, letters and ARPAbet (NVIDIA's symbols.py)."""
    symbols_embedding_dim: int = option(512, ge=1)
    """Symbol embedding width: the encoder's input, so equal to encoder_embedding_dim."""
    encoder_n_convolutions: int = option(3, ge=1)
    """Encoder convolutions."""
    encoder_kernel_size: int = option(5, ge=1)
    """Their kernel size (odd: the convolutions keep the length)."""
    encoder_embedding_dim: int = option(512, ge=2)
    """Encoder width (even: the bidirectional LSTM has half of it each way)."""
    n_mel_channels: int = option(80, ge=1)
    """Mel bins."""
    prenet_dim: int = option(256, ge=1)
    """Width of the decoder's two pre-net layers."""
    attention_rnn_dim: int = option(1024, ge=1)
    """Attention LSTM units."""
    attention_dim: int = option(128, ge=1)
    """Attention hidden width."""
    attention_location_n_filters: int = option(32, ge=1)
    """Location-sensitive attention filters."""
    attention_location_kernel_size: int = option(31, ge=1)
    """Their kernel size (odd)."""
    decoder_rnn_dim: int = option(1024, ge=1)
    """Decoder LSTM units."""
    p_attention_dropout: float = option(0.1, ge=0, lt=1)
    """Dropout on the attention LSTM's output."""
    p_decoder_dropout: float = option(0.1, ge=0, lt=1)
    """Dropout on the decoder LSTM's output."""
    postnet_embedding_dim: int = option(512, ge=1)
    """Post-net width."""
    postnet_kernel_size: int = option(5, ge=1)
    """Post-net kernel size (odd)."""
    postnet_n_convolutions: int = option(5, ge=1)
    """Post-net convolutions."""
    learning_rate: float = option(1.0e-3, gt=0)
    """Adam's rate."""
    weight_decay: float = option(1.0e-6, ge=0)
    """Adam's weight decay (L2, as torch.optim.Adam applies it)."""
    grad_clip: float = option(1.0, gt=0)
    """Max global gradient norm."""
    utterances: Utterances = field(default_factory=Utterances)
    """Synthetic batches: how utterance lengths spread (LJSpeech's)."""
    compile: bool = False
    """CUDA: torch.compile the decoder's step (compilation falls in the warm-up steps)."""
    compile_mode: CompileMode = CompileMode["default"]  # type: ignore[valid-type]
    """torch.compile mode: default, max-autotune-no-cudagraphs, reduce-overhead (CUDA graphs) or max-autotune."""

    def relations(self, max_epochs: int) -> Iterator[Broken]:
        if self.symbols_embedding_dim != self.encoder_embedding_dim:
            yield Broken("symbols_embedding_dim", self.symbols_embedding_dim,
                         f"== encoder_embedding_dim ({self.encoder_embedding_dim}): the encoder reads the embedding")
        if self.encoder_embedding_dim % 2:
            yield Broken("encoder_embedding_dim", self.encoder_embedding_dim, "an even width (half each LSTM direction)")
        for name in ("encoder_kernel_size", "attention_location_kernel_size", "postnet_kernel_size"):
            if getattr(self, name) % 2 == 0:
                yield Broken(name, getattr(self, name), "an odd kernel (the convolution keeps the length)")
        if self.utterances.mel_max < self.utterances.mel_min:
            yield Broken("utterances.mel_max", self.utterances.mel_max, f">= utterances.mel_min ({self.utterances.mel_min})")
