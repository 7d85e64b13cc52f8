"""GNMT's learning-rate schedule, as MLPerf's reference (seq2seq/train/lr_scheduler.py) defines it.

Over `iterations` training steps: an exponential warm-up from 1% of the base rate over
`warmup_steps`; the base rate until `remain_steps` (a fraction of the iterations, 0.666 by default);
then `decay_steps` halvings (`decay_factor`), one every `decay_interval` steps (by default the
steps after remain_steps split evenly). The reference advances the schedule before each optimizer
step, so the first update already uses step 1.

The warm-up can also be given in sentences (model.lr_warmup_samples): its steps then follow the global
batch, so that a run on more ranks warms up over the same share of an epoch instead of spending
several epochs of its fewer, larger steps there.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch


def warmup_steps(steps: int, samples: int | None, global_batch: int) -> int:
    """The warm-up's length in steps: `samples` sentences at this global batch (at least one step)
    when given, else `steps`."""
    if samples is None:
        return int(steps)
    return max(1, round(samples / global_batch))


@dataclass(frozen=True)
class Schedule:
    base_lr: float
    warmup_steps: int
    remain_steps: int
    decay_interval: int
    decay_steps: int
    decay_factor: float

    @classmethod
    def for_run(cls, base_lr: float, iterations: int, warmup_steps: int = 200, remain_steps: float = 0.666,
                decay_interval: int | None = None, decay_steps: int = 4, decay_factor: float = 0.5) -> "Schedule":
        remain = int(remain_steps * iterations) if remain_steps < 1 else int(remain_steps)
        if decay_interval is None:
            decay_interval = max((iterations - remain) // decay_steps, 1)
        return cls(base_lr, min(warmup_steps, remain), remain, decay_interval, decay_steps, decay_factor)

    def factor(self, step: int) -> float:
        """Multiplier of the base rate at 1-based step `step`."""
        if step <= self.warmup_steps and self.warmup_steps > 0:
            return math.exp(math.log(0.01) / self.warmup_steps) ** (self.warmup_steps - step)
        if step >= self.remain_steps:
            return self.decay_factor ** min((step - self.remain_steps) // self.decay_interval + 1, self.decay_steps)
        return 1.0

    def scheduler(self, optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LambdaLR:
        # LambdaLR's step 0 is the first update: shift by one to match the reference
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: self.factor(step + 1))

    def mlperf_keys(self) -> dict[str, object]:
        return {
            "opt_learning_rate_alt_decay_func": True,
            "opt_learning_rate_alt_warmup_func": True,
            "opt_learning_rate_decay_interval": self.decay_interval,
            "opt_learning_rate_decay_factor": self.decay_factor,
            "opt_learning_rate_decay_steps": self.decay_steps,
            "opt_learning_rate_remain_steps": self.remain_steps,
            "opt_learning_rate_warmup_steps": self.warmup_steps,
        }
