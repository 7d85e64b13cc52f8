"""What watches the training loop plugs in here, as detectron2's HookBase does: one small class
whose methods the loop calls at fixed points, each a no-op unless a hook overrides it.

    before_run                        run_start (a throughput measurement: its first window)
      before_epoch(epoch, steps)
        before_step(step) / after_step(done)          every training step
        before_eval(epoch_num) / after_eval(...)      an evaluation inside or after the epoch
      end_epoch(stats)                measuring hooks fill in the epoch's figures ...
      after_epoch(epoch)              ... which reporting hooks then read, whole
    after_run                         run_stop, or the run ending any other way (an exception too)

The progress line, the throughput meter, the data-wait timer, TensorBoard, telemetry, the heartbeat,
the non-finite-loss check and the disk check are hooks (harness/observe/*); the loop itself owns
the MLPerf events, the training step and the timing of each step's wait for its batch, which it hands
the hooks in StepDone, so that what one hook measures never depends on where it sits among them
(harness/run/loop.py). A hook that must end the run raises
(NonFiniteLoss, DiskFull); the loop turns that into the run's end.

    python -m harness.train model=ncf seed=1       # every hook of a run, in the order of Hooks below
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Optional

if TYPE_CHECKING:
    import torch

    from harness.record import Epoch


@dataclass(frozen=True)
class StepDone:
    """One training step, as the hooks see it. Tensors stay on the device: reading one is a sync."""

    epoch: int  # the epoch (the window, in mode=throughput; 0 for its warm-up)
    step: int  # this rank's steps in this epoch, this one included
    global_step: int  # this rank's steps in the run, this one included
    samples: int  # what this step counts for the throughput meter, on this rank
    epoch_samples: int  # this rank's samples in this epoch so far
    loss: "torch.Tensor"  # the step's loss, detached
    terms: Optional[dict[str, "torch.Tensor"]] = None  # its named parts, where the model returns several
    device_wait: Optional["DeviceWait"] = None  # CUDA only: the compute stream's events around this batch
    host_wait: float = 0.0  # seconds the loop waited in the batch iterator's next() for this batch


@dataclass(frozen=True)
class DeviceWait:
    """Three CUDA events recorded on the compute stream as one batch is handed over (harness/run/feed.py),
    read once the epoch's work is done (harness/observe/datawait.py): each one's time is when the GPU
    reached it, which is when the host recorded it if the stream stood idle by then."""

    asked: Any  # where the loop asked for the batch: the previous step's work done, or the host's ask
    copied: Any  # once the stream has waited for the batch's copy
    ready: Any  # where the step may start: the host holds the batch and the next one's copy is launched


@dataclass
class EpochStats:
    """The figures of one epoch that hooks measure (filled in by end_epoch, in the hooks' order)."""

    epoch: int
    steps: int
    samples: float = 0.0  # counted samples, summed over ranks (warm-up steps left out)
    seconds: float = 0.0  # counted training seconds, the mean over ranks
    own_seconds: float = 0.0  # this rank's own counted training seconds
    train_seconds: float = 0.0  # this rank's training time of the epoch, warm-up included
    throughput: Optional[float] = None  # samples / seconds
    data_wait_s: Optional[float] = None  # the longest any rank waited for batches over the counted steps
    data_wait_warmup_s: Optional[float] = None  # and over the warm-up steps (None: the epoch had none)
    data_wait_ranks: Optional[list[float]] = None  # each rank's wait over the counted steps, by rank


class Hook:
    """The base of every hook: override what you need."""

    def before_run(self) -> None:
        pass

    def before_epoch(self, epoch: int, steps: Optional[int]) -> None:
        pass

    def before_step(self, step: int) -> None:
        """`step`: this rank's global step count about to run (1-based)."""

    def after_step(self, done: StepDone) -> None:
        pass

    def end_epoch(self, stats: EpochStats) -> None:
        pass

    def after_epoch(self, epoch: "Epoch") -> None:
        pass

    def before_eval(self, epoch_num: float) -> None:
        pass

    def after_eval(self, epoch_num: float, scalars: dict[str, float], seconds: float) -> None:
        """`scalars`: the quality, one named number per part (QualitySpec.scalars)."""

    def after_run(self) -> None:
        pass


class Hooks(Hook):
    """Several hooks called in order; after_run reaches every hook even when one of them raises."""

    def __init__(self, hooks: Iterable[Hook]):
        self.hooks = [h for h in hooks if h is not None]

    def before_run(self) -> None:
        for h in self.hooks:
            h.before_run()

    def before_epoch(self, epoch: int, steps: Optional[int]) -> None:
        for h in self.hooks:
            h.before_epoch(epoch, steps)

    def before_step(self, step: int) -> None:
        for h in self.hooks:
            h.before_step(step)

    def after_step(self, done: StepDone) -> None:
        for h in self.hooks:
            h.after_step(done)

    def end_epoch(self, stats: EpochStats) -> None:
        for h in self.hooks:
            h.end_epoch(stats)

    def after_epoch(self, epoch: "Epoch") -> None:
        for h in self.hooks:
            h.after_epoch(epoch)

    def before_eval(self, epoch_num: float) -> None:
        for h in self.hooks:
            h.before_eval(epoch_num)

    def after_eval(self, epoch_num: float, scalars: dict[str, float], seconds: float) -> None:
        for h in self.hooks:
            h.after_eval(epoch_num, scalars, seconds)

    def after_run(self) -> None:
        first: Optional[BaseException] = None
        for h in self.hooks:
            try:
                h.after_run()
            except BaseException as err:  # the others must still close what they hold
                first = first or err
        if first is not None:
            raise first
