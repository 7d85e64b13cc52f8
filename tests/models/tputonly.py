"""A throughput-only stand-in: no dataset, target or evaluation; synthetic batches only.

    HARNESS_MODELS=tests.models.tputonly python -m harness.train model=tputonly mode=throughput
"""
from __future__ import annotations

import time
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
    nan_at_step: int = -1
    """The loss of this step (1-based, counting warm-up) is NaN on rank nan_on_rank; -1: never."""
    nan_on_rank: int = 0
    """The rank whose loss nan_at_step makes NaN."""
    sleep_s: float = 0.0
    """Seconds each step's loss sleeps: a step of known length (window sizing tests)."""
    slow_steps: int = 0
    """The first this many steps sleep ten times sleep_s: one-off work such as compiling or recording
    CUDA graphs, which the timed warm-up must outlast."""


class TputOnly:
    def __init__(self, ctx: RunContext[TputOptions]):
        import torch

        hp = ctx.options
        if ctx.rank == hp.crash_on_rank:
            raise RuntimeError(f"crash_on_rank={ctx.rank}: this rank fails on purpose")
        self.model = torch.nn.Sequential(torch.nn.Linear(hp.width, hp.width), torch.nn.ReLU(),
                                         torch.nn.Linear(hp.width, 1)).to(ctx.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.lr_scheduler, self.grad_clip_norm = None, None
        gen = torch.Generator(device=ctx.device).manual_seed(ctx.shared_seed)
        self.x = torch.randn(hp.batch_size, hp.width, generator=gen, device=ctx.device)
        self.batch, self.world = hp.batch_size, ctx.world_size
        self.nan_step = hp.nan_at_step if ctx.rank == hp.nan_on_rank else -1
        self.sleep_s, self.slow_steps = float(hp.sleep_s), int(hp.slow_steps)
        self.steps = 0

    def hyperparameters(self) -> dict[str, Any]:
        return {"global_batch_size": self.batch * self.world}

    def synthetic_batch(self):
        return self.x

    def loss(self, model, batch):
        import torch

        self.steps += torch.is_grad_enabled()  # a training step's; the FLOP count's forward runs under no_grad
        if self.sleep_s:
            time.sleep(self.sleep_s * (10 if self.steps <= self.slow_steps else 1))
        loss = model(batch).square().mean()
        return (loss * float("nan") if self.steps == self.nan_step else loss), len(batch)


SPEC = ModelSpec(name="tputonly", options=TputOptions, sample_unit="samples", build=TputOnly,
                 summary="test stand-in: throughput only")
