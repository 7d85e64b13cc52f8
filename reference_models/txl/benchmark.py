"""Transformer-XL plugged into the harness as a throughput-only model: a synthetic token stream with
WikiText-103's frequency profile, cut into tgt_len segments that carry the memory from step to step,
counted in target tokens as NVIDIA's train.py counts them.

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
    def __init__(self, ctx: RunContext):
        hp = ctx.cfg.model
        super().__init__(ctx)
        self.model = build_model(hp).to(ctx.device)
        self.compile_if_asked(self.model.layers)  # the adaptive softmax's gathers change shape every step
        # NVIDIA's configs train with LAMB, which PyTorch does not ship: Adam does the same
        # per-parameter elementwise work in one fused kernel, without LAMB's per-tensor norms
        self.optimizer = adam(self.model, ctx.device, hp.learning_rate, (hp.adam_beta1, hp.adam_beta2), hp.adam_eps)
        self.grad_clip_norm = hp.grad_clip
        self.batches = self._segments()
        self.mems = None

    def _segments(self) -> tuple[tuple[torch.Tensor, torch.Tensor], ...]:
        """`segments` consecutive (data, target) pairs of one stream, [tgt_len, batch] each. Every
        adaptive cluster appears in every segment, so every parameter gets a gradient each step
        (DDP needs that; at real scale Zipf's law puts thousands of tokens in each cluster anyway)."""
        hp, b, length = self.hp, int(self.hp.batch_size), int(self.hp.tgt_len)
        stream = zipf_tokens(hp.n_token, (hp.segments * length + 1, b), self.generator, self.device, hp.zipf_exponent)
        firsts = torch.tensor([first for first, _ in bounds(hp.n_token, list(hp.cutoffs))], device=self.device)
        for s in range(hp.segments):
            stream[s * length + 1: s * length + 1 + len(firsts), 0] = firsts  # targets of this segment
            stream[s * length: s * length + len(firsts), min(1, b - 1)] = firsts  # its inputs
        return tuple((stream[s * length:(s + 1) * length], stream[s * length + 1:(s + 1) * length + 1])
                     for s in range(hp.segments))

    def loss(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, int]:
        data, target = batch
        loss, self.mems = self.model(data, target, self.mems)
        return loss, target.numel()

    def hyperparameters(self) -> dict[str, Any]:
        hp = self.hp
        return {**super().hyperparameters(), "tgt_len": hp.tgt_len, "mem_len": hp.mem_len,
                "n_layer": hp.n_layer, "d_model": hp.d_model}
