"""The Transformer's options (conf/model/transformer.yaml holds the MLPerf reference's values; datasets
scale them down).

    python -m harness.train --help model=transformer
"""
from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

from harness.interface import ModelOptions


@dataclass
class Synthetic:
    src_len: int = 64
    """Source length (tokens) of mode=throughput's random batches; batch_size // max(src_len,
    tgt_len) sentences make one."""
    tgt_len: int = 64
    """Target length of those batches."""


@dataclass
class TransformerOptions(ModelOptions):
    batch_size: int = MISSING
    """Tokens per rank per step, as the reference counts them: a batch of sentences padded to
    length L holds at most batch_size // L of them (its bucket's bound), so at most batch_size
    padded tokens per side. The global batch is batch_size x ranks."""
    vocab_size: int = 33708
    """mode=throughput only; a real run takes it from vocab.ende.32768 (33,708 subtokens for WMT17)."""
    vocab_multiple: int = 1
    """Round the embedding's rows up to a multiple of this (8 suits tensor cores); 1: the
    vocabulary's size, as the reference."""
    hidden_size: int = 1024
    """d_model: width of the embeddings and of every layer."""
    num_layers: int = 6
    """Layers of the encoder and of the decoder."""
    num_heads: int = 16
    """Attention heads."""
    filter_size: int = 4096
    """Inner width of the feed-forward layers."""
    dropout: float = 0.1
    """Dropout on the embeddings and on every sublayer's output (layer_postprocess_dropout)."""
    attention_dropout: float = 0.1
    """Dropout on the attention weights."""
    relu_dropout: float = 0.1
    """Dropout after the feed-forward ReLU."""
    label_smoothing: float = 0.1
    """Probability mass spread evenly over the other tokens of the vocabulary."""
    learning_rate: float = 2.0
    """The schedule's scale: the peak rate is learning_rate x (hidden_size x warmup_steps)^-0.5."""
    lr_scaling: str = "none"
    """How the rate follows the global batch: none, linear or sqrt (docs/distributed.md)."""
    lr_reference_batch: int = 4096
    """The global batch (tokens) learning_rate was tuned at."""
    warmup_steps: int = 16000
    """Steps of linear warm-up, after which the rate falls as 1/sqrt(step)."""
    adam_beta1: float = 0.9
    """Adam's beta1."""
    adam_beta2: float = 0.997
    """Adam's beta2."""
    adam_eps: float = 1.0e-9
    """Adam's epsilon (MLPerf's closed division requires 1e-9)."""
    max_length: int = 256
    """Training pairs with more tokens than this on either side are discarded (max_sequence_length,
    method discard)."""
    eval_batch_size: int = 64
    """Test sentences decoded together."""
    beam_size: int = 4
    """Beam width of the evaluation's search."""
    alpha: float = 0.6
    """Length normalisation exponent of the beam search."""
    extra_decode_length: int = 50
    """Decoding stops at the padded source length plus this many tokens."""
    compile: bool = False
    """CUDA: torch.compile the model's forward pass and the loss (docs/transformer.md)."""
    synthetic: Synthetic = field(default_factory=Synthetic)
    """mode=throughput: the shapes of the random batches."""
