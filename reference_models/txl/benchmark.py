"""Transformer-XL plugged into the harness as a throughput-only model: a synthetic segment of tgt_len
tokens with WikiText-103's frequency profile, trained on at every step with the memory carried from
step to step (mem_len states of every layer), counted in target tokens as NVIDIA's train.py counts them.

    python -m harness.train model=txl_base mode=throughput precision=amp
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import torch

from harness.errors import ConfigError
from harness.interface import RunContext
from reference_models.synthetic import SyntheticBenchmark, adam
from reference_models.txl.adaptive import bounds
from reference_models.txl.model import MemTransformerLM, init_weights
from reference_models.txl.options import TXLOptions


def zipf_tokens(n_tokens: int, shape: Sequence[int], generator: torch.Generator, device: torch.device,
                exponent: float = 1.0) -> torch.Tensor:
    """Token ids drawn as a word-level corpus has them: the vocabulary sorted by frequency, rank r
    drawn with probability proportional to 1 / (r + 1)^exponent (Zipf's law)."""
    weights = torch.arange(1, n_tokens + 1, device=device, dtype=torch.float64).pow(-exponent).float()
    return torch.multinomial(weights, math.prod(shape), replacement=True, generator=generator).view(*shape)


def build_model(hp) -> MemTransformerLM:
    try:
        bounds(hp.n_token, list(hp.cutoffs))
    except ValueError as err:
        raise ConfigError(f"model.cutoffs: {err}") from None
    model = MemTransformerLM(hp.n_token, list(hp.cutoffs), hp.n_layer, hp.d_model, hp.n_head, hp.d_head, hp.d_inner,
                             d_embed=hp.d_embed, div_val=hp.div_val, dropout=hp.dropout, dropatt=hp.dropatt,
                             mem_len=hp.mem_len, same_length=hp.same_length, clamp_len=hp.clamp_len)
    init_weights(model, hp.init_std, hp.proj_init_std)
    return model


class TXLBenchmark(SyntheticBenchmark):
    def __init__(self, ctx: RunContext[TXLOptions]):
        hp = ctx.options
        super().__init__(ctx)
        self.model = build_model(hp).to(ctx.device)
        self.compile_if_asked(list(self.model.layers))  # the adaptive softmax's gathers change shape every step
        # NVIDIA's configs train with LAMB, which PyTorch does not ship: Adam does the same
        # per-parameter elementwise work in one fused kernel, without LAMB's per-tensor norms
        self.optimizer = adam(self.model, ctx.device, hp.learning_rate, (hp.adam_beta1, hp.adam_beta2), hp.adam_eps)
        self.grad_clip_norm = hp.grad_clip
        self.batch = self._segment()
        # the segment is trained on at every step: its targets per adaptive cluster are read once
        # here, so the step has no sync (a loader would count them on the host, before the copy)
        self.counts = self.model.crit.cluster_counts(self.batch[1].flatten())
        self.mems = None

    def _segment(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(data, target) of one stream of tgt_len + 1 tokens, [tgt_len, batch] each, the target one
        token on. Every adaptive cluster appears in the segment, so every parameter gets a gradient each
        step (DDP needs that; at real scale Zipf's law puts thousands of tokens in each cluster anyway)."""
        hp, b, length = self.hp, int(self.hp.batch_size), int(self.hp.tgt_len)
        stream = zipf_tokens(hp.n_token, (length + 1, b), self.generator, self.device, hp.zipf_exponent)
        firsts = torch.tensor([first for first, _ in bounds(hp.n_token, list(hp.cutoffs))], device=self.device)
        stream[1: 1 + len(firsts), 0] = firsts  # targets
        stream[: len(firsts), min(1, b - 1)] = firsts  # inputs
        # the last target token opens the stream's next segment, whose inputs start the same way
        stream[length, min(1, b - 1)] = firsts[0]
        return stream[:length], stream[1:]

    def loss(self, model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, int]:
        data, target = batch
        counts = self.counts if target is self.batch[1] else None  # the same tensor, moved nowhere
        loss, self.mems = model(data, target, self.mems, counts)
        return loss, target.numel()

    def hyperparameters(self) -> dict[str, Any]:
        hp = self.hp
        return {**super().hyperparameters(), "tgt_len": hp.tgt_len, "mem_len": hp.mem_len,
                "n_layer": hp.n_layer, "d_model": hp.d_model}
