"""Throughput over training time only: evaluation and the first warm-up steps are left out.

    python -m harness.train model=ncf seed=1       # result.json's throughput, and each epoch's
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

from harness.observe.hooks import EpochStats, Hook, StepDone


@dataclass(frozen=True)
class EpochCount:
    """One epoch's counted training, summed over ranks: samples, and seconds (mean over ranks)."""

    samples: float
    seconds: float
    own_seconds: float = 0.0  # this rank's counted seconds

    @property
    def throughput(self) -> Optional[float]:
        return self.samples / self.seconds if self.seconds > 0 and self.samples > 0 else None


class ThroughputMeter(Hook):
    """Samples per second while training, summed over ranks, after `warmup_steps` steps.

    `sync` waits for queued device work (torch.cuda.synchronize on a GPU) so that clock readings
    measure finished work: it runs at epoch boundaries and once when warm-up ends, never per step.
    `all_ranks_sum` adds a list of numbers over ranks (the identity on one rank), once per epoch.
    """

    def __init__(
        self,
        warmup_steps: int,
        sync: Callable[[], None],
        all_ranks_sum: Callable[[list[float]], list[float]] = lambda v: v,
        world_size: int = 1,
    ):
        self.warmup_steps = warmup_steps
        self.sync = sync
        self.all_ranks_sum = all_ranks_sum
        self.world_size = world_size
        self.steps = 0
        self.samples = 0.0  # counted samples over the run, all ranks
        self.seconds = 0.0  # counted training seconds over the run (mean over ranks)
        self.own_seconds = 0.0  # ... this rank's own
        self.epoch_seconds = 0.0  # the last epoch's training time, warm-up included
        self._t0 = 0.0
        self._epoch_t0 = 0.0
        self._epoch_samples = 0

    # -- the hook ---------------------------------------------------------------------------------
    def before_epoch(self, epoch: int, steps: Optional[int]) -> None:
        self.begin_epoch()

    def after_step(self, done: StepDone) -> None:
        self.step(done.samples)

    def end_epoch(self, stats: EpochStats) -> None:
        counted = self.finish_epoch()
        stats.samples, stats.seconds, stats.throughput = counted.samples, counted.seconds, counted.throughput
        stats.own_seconds = counted.own_seconds
        stats.train_seconds = self.epoch_seconds

    # -- the meter --------------------------------------------------------------------------------
    def begin_epoch(self) -> None:
        self.sync()  # sync point: the epoch's clock starts on an idle device
        self._t0 = self._epoch_t0 = time.perf_counter()
        self._epoch_samples = 0

    def step(self, samples: int) -> None:
        self.steps += 1
        if self.steps > self.warmup_steps:
            self._epoch_samples += samples
        elif self.steps == self.warmup_steps:
            self.sync()  # sync point, once per run: warm-up ends when its last step has really finished
            self._t0 = time.perf_counter()

    def counted(self) -> bool:
        """Whether the next step counts (warm-up is over)."""
        return self.steps >= self.warmup_steps

    def finish_epoch(self) -> EpochCount:
        self.sync()  # sync point: the epoch's work is finished
        now = time.perf_counter()
        self.epoch_seconds = now - self._epoch_t0
        counted = self.steps > self.warmup_steps and self._epoch_samples > 0
        local = [float(self._epoch_samples), now - self._t0] if counted else [0.0, 0.0]
        samples, seconds = self.all_ranks_sum(local)  # sync point (several ranks): once per epoch
        epoch = EpochCount(samples, seconds / self.world_size, local[1])
        self.samples += epoch.samples
        self.seconds += epoch.seconds
        self.own_seconds += epoch.own_seconds
        return epoch

    def throughput(self) -> Optional[float]:
        """Samples/s over every counted step of the run, or None if the run never left warm-up."""
        return self.samples / self.seconds if self.seconds > 0 else None
