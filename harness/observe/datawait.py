"""How long the ranks wait for their batches: result.json's data_wait_s, data_wait_share and
data_wait_rank, each epoch's data_wait_s, mlperf.log's tracked_stats, TensorBoard's
train/data_wait_s and the console summary. Each rank times its own wait; the figure is the longest
any rank waited (DataWait says why).

    python -m harness.train model=resnet seed=1     # "data wait: ..." after the result line

Measured without a sync per step, for each step's batch:

- host: the time the loop waits in the batch iterator's next() for it (a DataLoader's queue, a
  model's generator, launching the batch's copy), timed by the loop itself (harness/run/loop.py, as
  detectron2's loop times data_time) and handed over in StepDone.host_wait; the hooks' own work and
  an evaluation inside an epoch are not in it, whatever order the hooks run in. On a CPU this is the
  wait.
- device (CUDA): how long the GPU stood idle for the batch, from CUDA events on the compute stream
  (StepDone.device_wait, recorded by harness/run/feed.py): from where the loop asked for it (the
  previous step's work done, or the host's ask if the GPU was done first) to where the step may
  start (its copy waited for, the host holding it). A host that runs ahead of the GPU (a compiled
  step, or one replayed from a CUDA graph, queues its work in a fraction of the GPU's time) spends
  most of each step waiting in next() while the GPU still trains on queued work: that wait costs
  nothing, and the GPU's idle time is what the step lost. The step's wait is the smaller of the two
  (the host's plus the copy's, and the GPU's idle time), so an event's own launch latency never
  counts as waiting.

Both count over the steps the throughput meter counts (after warm-up), so data_wait_share compares
the wait with the training time of the same steps. The warm-up steps' wait is kept apart
(data_wait_warmup_s): the first batch's wait is the loaders' start-up (workers forked, files opened,
the first batches decoded), which is inside the time to train but would swamp the steady share.
"""
from __future__ import annotations

from typing import Callable, Optional

from harness.observe.hooks import DeviceWait, EpochStats, Hook, StepDone


class DataWait(Hook):
    """The data-wait timer: it adds up what this rank's loop measured, at any place among the hooks, and
    at each epoch's end gathers every rank's. `gather` hands each rank's list of numbers to every rank
    (the identity on one rank): under DDP a rank whose batches come late holds the others in the
    gradients' all-reduce, where rank 0's own wait never shows it, so the epoch's figure is the
    longest any rank waited, and `data_wait_ranks` keeps each rank's."""

    def __init__(self, warmup_steps: int, gather: Callable[[list[float]], list[list[float]]] = lambda v: [v]):
        self.warmup_steps, self.gather = warmup_steps, gather
        self._counted: list[tuple[float, Optional[DeviceWait]]] = []  # this epoch's counted steps' waits
        self._warm: Optional[list[tuple[float, Optional[DeviceWait]]]] = None  # and warm-up's (None: none)

    def before_epoch(self, epoch: int, steps: Optional[int]) -> None:
        self._counted, self._warm = [], None

    def after_step(self, done: StepDone) -> None:
        if done.global_step > self.warmup_steps:
            kept = self._counted
        else:
            kept = self._warm = [] if self._warm is None else self._warm
        kept.append((done.host_wait, done.device_wait))

    def end_epoch(self, stats: EpochStats) -> None:
        warm = -1.0 if self._warm is None else waited(self._warm)
        ranks = self.gather([waited(self._counted), warm])  # sync point (several ranks): once per epoch
        stats.data_wait_ranks = [counted for counted, _ in ranks]
        stats.data_wait_s = max(stats.data_wait_ranks)
        if self._warm is not None:
            stats.data_wait_warmup_s = max(w for _, w in ranks)
        self._counted, self._warm = [], None


def waited(steps: list[tuple[float, Optional[DeviceWait]]]) -> float:
    """Seconds these steps waited for their batches: each step's host wait, or where the GPU's events
    are there, the smaller of that plus the copy's wait and the GPU's idle time (the module docstring)."""
    timed = [device for _, device in steps if device is not None]
    if timed:
        timed[-1].ready.synchronize()  # sync point, once per epoch: every event of the compute stream is done
    total = 0.0
    for host, device in steps:
        if device is None:
            total += host
        else:
            copy = device.asked.elapsed_time(device.copied) / 1000.0
            total += min(host + copy, device.asked.elapsed_time(device.ready) / 1000.0)
    return total
