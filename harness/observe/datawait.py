"""How long a rank waits for its batches: result.json's data_wait_s and data_wait_share, each epoch's
data_wait_s, mlperf.log's tracked_stats, TensorBoard's train/data_wait_s and the console summary.

    python -m harness.train model=resnet seed=1     # "data wait: ..." after the result line

Two parts, measured without a sync per step:

- host: the gap between the end of one training step and the start of the next, timed with the
  host's clock. The loop spends it in the batch iterator's next() (a DataLoader's queue, a model's
  generator) and launching the batch's copy; an evaluation inside an epoch is left out. On a GPU the
  device may still be busy with queued steps during a host wait, so the host part is what the rank's
  Python thread waited: an upper bound on the time it kept the device idle.
- copy (CUDA only): how long the compute stream stood waiting for the batch's copy on the harness's
  copy stream (harness/run/feed.py): CUDA events recorded on the compute stream just before and just
  after it waits for the copy, read once the epoch's work is done. On a CPU nothing is copied: zero.

Both count over the steps the throughput meter counts (after warm-up), so data_wait_share compares
the wait with the training time of the same steps.
"""
from __future__ import annotations

import time
from typing import Any, Optional

from harness.observe.hooks import EpochStats, Hook, StepDone


class DataWait(Hook):
    """The data-wait timer of one rank."""

    def __init__(self, warmup_steps: int):
        self.warmup_steps = warmup_steps
        self._since = time.perf_counter()  # when the rank began waiting for its next batch
        self._host = 0.0  # this epoch's counted host wait
        self._copies: list[tuple[Any, Any]] = []  # this epoch's counted (before, after) CUDA events

    def before_epoch(self, epoch: int, steps: Optional[int]) -> None:
        self._host, self._copies = 0.0, []
        self._since = time.perf_counter()

    def before_step(self, step: int) -> None:
        if step > self.warmup_steps:
            self._host += time.perf_counter() - self._since

    def after_step(self, done: StepDone) -> None:
        if done.copy_wait is not None and done.global_step > self.warmup_steps:
            self._copies.append(done.copy_wait)
        self._since = time.perf_counter()  # last of the after_step hooks: what follows is waiting

    def after_eval(self, epoch_num: float, scalars: dict[str, float], seconds: float) -> None:
        self._since = time.perf_counter()  # an evaluation is not a wait for data

    def end_epoch(self, stats: EpochStats) -> None:
        stats.data_wait_s = self._host + copy_seconds(self._copies)
        self._copies = []


def copy_seconds(pairs: list[tuple[Any, Any]]) -> float:
    """Seconds between each pair of CUDA events, summed."""
    if not pairs:
        return 0.0
    pairs[-1][1].synchronize()  # sync point, once per epoch: every event of the compute stream is done
    return sum(start.elapsed_time(end) for start, end in pairs) / 1000.0
