"""The reference's learning rate: linear warm-up, then inverse square root (transformer_main.py).

    lr(step) = learning_rate x d_model^-0.5 x min(step / warmup, 1) x max(step, warmup)^-0.5

with `step` the global step before the update (0 for the first one, whose rate is therefore 0, as
in the reference's TensorFlow graph). The peak, reached at step = warmup, is
learning_rate x (d_model x warmup)^-0.5: the rate MLPerf's opt_base_learning_rate reports (2.0 at
d_model 1024 and 16,000 warm-up steps gives 4.94e-4).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class InverseSqrt:
    learning_rate: float  # the reference's unit-free scale (2.0)
    d_model: int
    warmup_steps: int

    @property
    def peak(self) -> float:
        return self.learning_rate * (self.d_model * max(self.warmup_steps, 1)) ** -0.5

    def factor(self, step: int) -> float:
        """The rate at `step` as a fraction of the peak."""
        warmup = max(self.warmup_steps, 1)
        return min(step / warmup, 1.0) * (warmup / max(step, warmup)) ** 0.5

    def rate(self, step: int) -> float:
        return self.peak * self.factor(step)

    def scheduler(self, optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LambdaLR:
        """The optimizer's rate set to the peak, which LambdaLR then scales, counting updates from 0."""
        for group in optimizer.param_groups:
            group["lr"] = self.peak
        return torch.optim.lr_scheduler.LambdaLR(optimizer, self.factor)
