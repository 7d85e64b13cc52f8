"""GNMT's options (conf/model/gnmt.yaml holds the MLPerf reference's values; datasets scale them down).

    python -m harness.train --help model=gnmt
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from harness.interface import ModelOptions


@dataclass
class Synthetic:
    src_len: int = 30
    """Source length (tokens) of mode=throughput's random batches."""
    tgt_len: int = 30
    """Target length of those batches."""


@dataclass
class GNMTOptions(ModelOptions):
    vocab_size: int = 32320
    """mode=throughput only; a real run takes it from vocab.bpe.32000, padded to a multiple of 8."""
    hidden_size: int = 1024
    """LSTM width of encoder and decoder."""
    num_layers: int = 4
    """LSTM layers of the encoder and of the decoder."""
    dropout: float = 0.2
    """Dropout between LSTM layers."""
    learning_rate: float = 2.0e-3
    """Adam's base rate at the global batch lr_reference_batch."""
    lr_scaling: str = "none"
    """How the rate follows the global batch: none, linear or sqrt (docs/distributed.md)."""
    lr_reference_batch: int = 128
    """The global batch learning_rate was tuned at."""
    adam_beta1: float = 0.9
    """Adam's beta1."""
    adam_beta2: float = 0.999
    """Adam's beta2."""
    adam_eps: float = 1.0e-8
    """Adam's epsilon."""
    warmup_steps: int = 200
    """Exponential warm-up from 1% of the rate over this many steps."""
    warmup_samples: Optional[int] = None
    """When set, the warm-up covers this many training sentences instead of warmup_steps: warmup_samples
    / global batch steps (at least one), the same share of an epoch however many ranks share the batch."""
    remain_steps: float = 0.666
    """Fraction of all iterations (max_epochs x steps per epoch) at the full rate (or a step count if >= 1)."""
    decay_interval: Optional[int] = None
    """Steps between decays; null: the steps after remain_steps split over decay_steps."""
    decay_steps: int = 4
    """How many times the rate decays."""
    decay_factor: float = 0.5
    """Factor of each decay."""
    compile_attention: bool = False
    """CUDA: torch.compile the attention scores (docs/benchmarks/perf_notes.md)."""
    label_smoothing: float = 0.1
    """Label smoothing of the cross-entropy loss."""
    grad_clip: float = 5.0
    """Max global gradient norm."""
    min_length: int = 0
    """Training pairs shorter than this (tokens, BOS and EOS included) are discarded."""
    max_length: int = 75
    """Training pairs longer than this are discarded (max_sequence_length, method discard)."""
    max_length_test: int = 150
    """Decoding limit."""
    eval_batch_size: int = 128
    """Sentences decoded together."""
    beam_size: int = 5
    """Beam width of the evaluation's search."""
    len_norm_factor: float = 0.6
    """Length normalisation factor of the beam search."""
    len_norm_const: float = 5.0
    """Length normalisation constant."""
    cov_penalty_factor: float = 0.1
    """Coverage penalty factor."""
    synthetic: Synthetic = field(default_factory=Synthetic)
    """mode=throughput: the shapes of the random batches."""
