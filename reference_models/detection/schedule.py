"""The detectors' learning rate: a linear warm-up, then a step decay at fixed boundaries.

Both references use this shape: SSD warms up over `--warmup` epochs from base x (1 - 1/2^warmup_factor) to the
base rate (MLPerf's warm-up rule) and multiplies by 0.1 at epochs 40 and 50; maskrcnn-benchmark's
WarmupMultiStepLR warms up linearly from warmup_factor x base over WARMUP_ITERS and multiplies by GAMMA
at each of SOLVER.STEPS. Boundaries here are optimizer steps; the models convert epochs to steps.

    python -c "from reference_models.detection.schedule import WarmupMultiStep as W; print([W(4, 0.0, (6,), 0.1).multiplier(s) for s in range(8)])"
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class WarmupMultiStep:
    warmup_steps: int  # steps of linear warm-up (0: none)
    warmup_start: float  # the multiplier at step 0, rising linearly to 1 at warmup_steps
    boundaries: tuple[int, ...]  # steps from which the rate is multiplied by `factor` once more
    factor: float

    def multiplier(self, step: int) -> float:
        decay = self.factor ** bisect.bisect_right(self.boundaries, step)
        if step < self.warmup_steps:
            return decay * (self.warmup_start + (1 - self.warmup_start) * step / self.warmup_steps)
        return decay

    def scheduler(self, optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LambdaLR:
        """Stepped once per optimizer step by the harness's loop."""
        return torch.optim.lr_scheduler.LambdaLR(optimizer, self.multiplier)
