"""A throughput-only stand-in: no dataset, target or evaluation; synthetic batches only.

    HARNESS_MODELS=tests.models.tputonly python -m harness.train model=tputonly mode=throughput
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from harness.interface import ModelOptions, ModelSpec, RunContext


@dataclass
class TputOptions(ModelOptions):
    batch_size: int = 32
    """Samples per rank per step."""
    width: int = 64
    """Width of the MLP."""
    crash_on_rank: int = -1
    """This rank raises while the model is built (a failing rank, for tests); -1: none."""


class TputOnly:
    def __init__(self, ctx: RunContext):
        import torch

        hp = ctx.cfg.model
        if ctx.rank == hp.crash_on_rank:
            raise RuntimeError(f"crash_on_rank={ctx.rank}: this rank fails on purpose")
        self.model = torch.nn.Sequential(torch.nn.Linear(hp.width, hp.width), torch.nn.ReLU(),
                                         torch.nn.Linear(hp.width, 1)).to(ctx.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.lr_scheduler, self.grad_clip_norm = None, None
        gen = torch.Generator(device=ctx.device).manual_seed(ctx.shared_seed)
        self.x = torch.randn(hp.batch_size, hp.width, generator=gen, device=ctx.device)
        self.batch, self.world, self.steps = hp.batch_size, ctx.world_size, ctx.cfg.throughput_steps

    def hyperparameters(self) -> dict[str, Any]:
        return {"global_batch_size": self.batch * self.world}

    def steps_per_epoch(self) -> int:
        return self.steps

    def train_batches(self, epoch: int):
        return itertools.repeat(self.x)

    def loss(self, batch):
        return self.model(batch).square().mean(), len(batch)


SPEC = ModelSpec(name="tputonly", options=TputOptions, sample_unit="samples", build=TputOnly,
                 summary="test stand-in: throughput only")
