"""GNMT's options, at the MLPerf reference's values (rnn_translator, ruleset 0.7.0, WMT16 En-De);
conf/model/gnmt.yaml adds its batch, target and epoch cap; conf/model_for/ scales it down.

    python -m harness.train --help model=gnmt
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional

from harness.interface import Broken, Choice, LrScaling, ModelOptions, option


class CompileShapes(Choice):
    """The shapes the compiled attention and loss kernels are specialised to (compile_shapes)."""

    auto = "auto"
    static = "static"
    dynamic = "dynamic"


class AttentionGrads(Choice):
    """How the compiled attention's backward computes its gradients (attention_grads)."""

    reductions = "reductions"  # two compiled reductions, tanh recomputed in each
    one_pass = "one_pass"  # one Triton kernel, each tanh once


@dataclass
class Synthetic:
    src_len: int = option(30, ge=2)
    """Source length (tokens, BOS and EOS included) of mode=throughput's random batches."""
    tgt_len: int = option(30, ge=2)
    """Target length of those batches."""


@dataclass
class GNMTOptions(ModelOptions):
    vocab_size: int = option(32320, ge=5)
    """mode=throughput only (above the 4 reserved ids); a real run takes it from vocab.bpe.32000, padded
    to a multiple of 8."""
    hidden_size: int = option(1024, ge=1)
    """LSTM width of encoder and decoder."""
    num_layers: int = option(4, ge=2)
    """LSTM layers of the encoder and of the decoder (the encoder's first two are its bidirectional
    layer and the one after it)."""
    dropout: float = option(0.2, ge=0, lt=1)
    """Dropout between LSTM layers."""
    learning_rate: float = option(2.0e-3, gt=0)
    """Adam's base rate at the global batch lr_reference_batch (MLPerf's GNMT runs kept 2e-3 from 1,024
    to 2,048)."""
    lr_scaling: LrScaling = LrScaling.none
    """How the rate follows the global batch: none, linear or sqrt (docs/distributed.md)."""
    lr_reference_batch: int = option(128, ge=1)
    """The global batch learning_rate was tuned at."""
    adam_beta1: float = option(0.9, ge=0, lt=1)
    """Adam's beta1."""
    adam_beta2: float = option(0.999, ge=0, lt=1)
    """Adam's beta2."""
    adam_eps: float = option(1.0e-8, gt=0)
    """Adam's epsilon."""
    lr_warmup_steps: int = option(200, ge=0)
    """Exponential warm-up from 1% of the rate over this many steps."""
    lr_warmup_samples: Optional[int] = option(None, ge=1)
    """When set, the warm-up covers this many training sentences instead of lr_warmup_steps: lr_warmup_samples
    / global batch steps (at least one), the same share of an epoch however many ranks share the batch."""
    remain_steps: float = option(0.666, gt=0)
    """Fraction of all iterations (max_epochs x steps per epoch) at the full rate (or a step count if >= 1)."""
    decay_interval: Optional[int] = option(None, ge=1)
    """Steps between decays; null: the steps after remain_steps split over decay_steps."""
    decay_steps: int = option(4, ge=1)
    """How many times the rate decays."""
    decay_factor: float = option(0.5, gt=0, le=1)
    """Factor of each decay."""
    compile_attention: bool = False
    """CUDA: the attention scores and their gradients in compiled reductions (reference_models/gnmt/scores.py)."""
    attention_grads: AttentionGrads = AttentionGrads.reductions
    """With compile_attention: how the scores' backward computes the queries', keys', bias's and v's
    gradients. one_pass (the fast path's, with compile_attention): one Triton kernel that computes each
    tanh(q + k + b) once and both sums from it (reference_models/gnmt/scores_grads.py: 5.4 ms at b2048 on an
    H100); reductions: two compiled reductions, each recomputing it (12.5 ms together)."""
    compile_loss: bool = False
    """CUDA: the label-smoothed cross-entropy in compiled kernels (reference_models/gnmt/loss.py) that read the
    fp16 logits (tokens x 32,320) once forward and once backward, instead of a copy to fp32 walked by
    log-softmax, the smoothing and their backward."""
    compile_shapes: CompileShapes = CompileShapes.auto
    """With compile_attention or compile_loss: `static` compiles their kernels for each shape they meet,
    `dynamic` once with the batch and sentence lengths as symbols, one graph for every bucket's lengths; `auto`:
    dynamic in mode=train (its batches come in many lengths, compiled in the warm-up before run_start), static
    in mode=throughput (its one batch, as measured)."""
    label_smoothing: float = option(0.1, ge=0, lt=1)
    """Label smoothing of the cross-entropy loss."""
    grad_clip: float = option(5.0, gt=0)
    """Max global gradient norm."""
    min_length: int = option(0, ge=0)
    """Training pairs shorter than this (tokens, BOS and EOS included) are discarded."""
    max_length: int = option(75, ge=3)
    """Training pairs longer than this are discarded (max_sequence_length, method discard); BOS, EOS and
    one token at least."""
    max_length_test: int = option(150, ge=1)
    """Decoding limit."""
    eval_batch_size: int = option(128, ge=1)
    """Sentences decoded together."""
    beam_size: int = option(5, ge=1)
    """Beam width of the evaluation's search."""
    len_norm_factor: float = option(0.6, ge=0)
    """Length normalisation factor of the beam search."""
    len_norm_const: float = option(5.0, ge=0)
    """Length normalisation constant."""
    cov_penalty_factor: float = option(0.1, ge=0)
    """Coverage penalty factor."""
    synthetic: Synthetic = field(default_factory=Synthetic)
    """mode=throughput: the shapes of the random batches."""

    def dynamic_shapes(self, training: bool) -> bool:
        """Whether the compiled kernels take symbolic batch and sentence lengths (compile_shapes); `training`:
        the run has a dataset to train on (mode=train)."""
        return self.compile_shapes == CompileShapes.dynamic or (self.compile_shapes == CompileShapes.auto and training)

    def relations(self, max_epochs: int) -> Iterator[Broken]:
        if self.attention_grads == AttentionGrads.one_pass and not self.compile_attention:
            yield Broken("attention_grads", self.attention_grads.value,
                         "compile_attention=true (it is the compiled attention's backward), or reductions")
        if self.min_length > self.max_length:
            yield Broken("min_length", self.min_length, f"<= max_length ({self.max_length}): else no pair is kept")
