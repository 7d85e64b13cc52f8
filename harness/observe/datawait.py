"""How long the ranks wait for their batches: result.json's data_wait_s, data_wait_share and
data_wait_rank, each epoch's data_wait_s, mlperf.log's tracked_stats, TensorBoard's
train/data_wait_s and the console summary. Each rank times its own wait; the figure is the longest
any rank waited (DataWait says why).

    python -m harness.train model=resnet seed=1     # "data wait: ..." after the result line

Two parts, measured without a sync per step:

- host: the time the loop waits in the batch iterator's next() for each step's batch (a DataLoader's
  queue, a model's generator, launching the batch's copy), timed by the loop itself
  (harness/run/loop.py, as detectron2's loop times data_time) and handed over in StepDone.host_wait;
  the hooks' own work and an evaluation inside an epoch are not in it, whatever order the hooks run
  in. On a GPU the device may still be busy with queued steps during a host wait, so the host part is
  what the rank's Python thread waited: an upper bound on the time it kept the device idle.
- copy (CUDA only): how long the compute stream stood waiting for the batch's copy on the harness's
  copy stream (harness/run/feed.py): CUDA events recorded on the compute stream just before and just
  after it waits for the copy, read once the epoch's work is done. On a CPU nothing is copied: zero.

Both count over the steps the throughput meter counts (after warm-up), so data_wait_share compares
the wait with the training time of the same steps. The warm-up steps' wait is kept apart
(data_wait_warmup_s): the first batch's wait is the loaders' start-up (workers forked, files opened,
the first batches decoded), which is inside the time to train but would swamp the steady share.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from harness.observe.hooks import EpochStats, Hook, StepDone


class DataWait(Hook):
    """The data-wait timer: it adds up what this rank's loop measured, at any place among the hooks, and
    at each epoch's end gathers every rank's. `gather` hands each rank's list of numbers to every rank
    (the identity on one rank): under DDP a rank whose batches come late holds the others in the
    gradients' all-reduce, where rank 0's own wait never shows it, so the epoch's figure is the
    longest any rank waited, and `data_wait_ranks` keeps each rank's."""

    def __init__(self, warmup_steps: int, gather: Callable[[list[float]], list[list[float]]] = lambda v: [v]):
        self.warmup_steps, self.gather = warmup_steps, gather
        self._host = 0.0  # this epoch's counted host wait
        self._copies: list[tuple[Any, Any]] = []  # this epoch's counted (before, after) CUDA events
        self._warm: Optional[float] = None  # this epoch's host wait over warm-up steps (None: it had none)
        self._warm_copies: list[tuple[Any, Any]] = []

    def before_epoch(self, epoch: int, steps: Optional[int]) -> None:
        self._host, self._copies, self._warm, self._warm_copies = 0.0, [], None, []

    def after_step(self, done: StepDone) -> None:
        counted = done.global_step > self.warmup_steps
        if counted:
            self._host += done.host_wait
        else:
            self._warm = (self._warm or 0.0) + done.host_wait
        if done.copy_wait is not None:
            (self._copies if counted else self._warm_copies).append(done.copy_wait)

    def end_epoch(self, stats: EpochStats) -> None:
        warm = -1.0 if self._warm is None else self._warm + copy_seconds(self._warm_copies)
        ranks = self.gather([self._host + copy_seconds(self._copies), warm])  # sync point (several ranks): once per epoch
        stats.data_wait_ranks = [counted for counted, _ in ranks]
        stats.data_wait_s = max(stats.data_wait_ranks)
        if self._warm is not None:
            stats.data_wait_warmup_s = max(w for _, w in ranks)
        self._copies, self._warm_copies = [], []


def copy_seconds(pairs: list[tuple[Any, Any]]) -> float:
    """Seconds between each pair of CUDA events, summed."""
    if not pairs:
        return 0.0
    pairs[-1][1].synchronize()  # sync point, once per epoch: every event of the compute stream is done
    return sum(start.elapsed_time(end) for start, end in pairs) / 1000.0
