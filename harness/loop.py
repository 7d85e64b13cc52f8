"""The one train-to-target loop: every model trains through it, top to bottom.

Between run_start and run_stop: blocks of `eval_every` epochs, each closed by an evaluation; stop
at the first evaluation that reaches the target (status success) or at max_epochs (aborted). The
MLPerf events follow the 0.7.0 rules: block_start/epoch_start/epoch_stop/eval_start/eval_accuracy/
eval_stop/block_stop, each carrying the 1-based epoch number. mode=throughput runs the same
training steps on synthetic batches, with no evaluation and no MLPerf events.
"""
from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Optional

import torch

from harness.interface import Benchmark
from harness.meter import EpochCount, ThroughputMeter
from harness.mlperf_log import TRACKED_STATS, C, MLPerfLog
from harness.precision import PrecisionPolicy
from harness.progress import Progress
from harness.tensorboard_log import Board

log = logging.getLogger("harness.loop")


@dataclass
class EpochRecord:
    epoch: int
    train_loss: float
    train_seconds: float
    throughput: Optional[float]  # samples/s over the epoch's counted steps, summed over ranks
    quality: Optional[float] = None  # set on the epochs that end a block
    eval_seconds: Optional[float] = None  # the evaluation that ended this epoch's block


@dataclass
class LoopResult:
    status: str  # "success" or "aborted"
    epochs: list[EpochRecord] = field(default_factory=list)

    @property
    def epochs_to_converge(self) -> Optional[int]:
        """MLPerf's reading: the epoch of the last evaluation, if the run succeeded."""
        evaluated = [e.epoch for e in self.epochs if e.quality is not None]
        return evaluated[-1] if self.status == C.SUCCESS and evaluated else None


def train_epoch(
    bench: Benchmark, epoch: int, precision: PrecisionPolicy, meter: ThroughputMeter, progress: Progress,
    max_steps: Optional[int] = None,
) -> tuple[float, EpochCount]:
    """One pass over the epoch's batches (at most max_steps); returns the mean training loss and
    the counted throughput."""
    model, optimizer, scaler, master = bench.model, bench.optimizer, precision.scaler, precision.master
    # the optimizer's parameters: the model's own, or their fp32 copies with master_weights=true
    params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
    model.train()
    progress.begin_epoch(epoch, bench.steps_per_epoch())
    meter.begin_epoch()
    loss_sum = torch.zeros((), device=precision.device)  # summed on the device: no per-step sync
    steps = 0
    for batch in itertools.islice(bench.train_batches(epoch), max_steps):
        with precision.autocast():
            loss, samples = bench.loss(batch)
        if scaler is not None:
            scaler.scale(loss).backward()
        else:
            loss.backward()
        if master is not None:
            master.grads_to_master()
        if bench.grad_clip_norm is not None:
            if scaler is not None:
                scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(params, bench.grad_clip_norm)
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if master is not None:
            master.master_to_model()
            model.zero_grad(set_to_none=True)
        if bench.lr_scheduler is not None:
            bench.lr_scheduler.step()
        loss_sum += loss.detach()
        steps += 1
        meter.step(samples)
        progress.step(steps, meter.epoch_samples_all * meter.world_size, lambda: loss.item())
    counted = meter.end_epoch()  # sync point: the epoch's work is finished
    progress.end_epoch()
    return (loss_sum / max(steps, 1)).item(), counted


def train_to_target(
    bench: Benchmark,
    *,
    target: float,
    max_epochs: int,
    eval_every: int,
    precision: PrecisionPolicy,
    meter: ThroughputMeter,
    progress: Progress,
    mlperf: MLPerfLog,
    quality_name: str,
    result: LoopResult,
    board: Optional[Board] = None,
) -> LoopResult:
    """Train until the target or the epoch cap. `result` is filled as epochs finish, so a caller
    that sees an exception still has every finished epoch."""
    for block_first in range(1, max_epochs + 1, eval_every):
        block_last = min(block_first + eval_every - 1, max_epochs)
        mlperf.start(C.BLOCK_START, metadata={"first_epoch_num": block_first, "epoch_count": block_last - block_first + 1})
        for epoch in range(block_first, block_last + 1):
            mlperf.start(C.EPOCH_START, metadata={"epoch_num": epoch})
            mean_loss, counted = train_epoch(bench, epoch, precision, meter, progress)
            mlperf.end(C.EPOCH_STOP, metadata={"epoch_num": epoch})
            result.epochs.append(EpochRecord(epoch, mean_loss, meter.epoch_seconds, counted.throughput))
            if board is not None:
                board.epoch(epoch, loss=mean_loss, lr=_lr(bench), throughput=counted.throughput, quality=None,
                            quality_name=quality_name)
            # samples and seconds let a reader of the log alone total the run's throughput
            mlperf.event(TRACKED_STATS, metadata={"epoch_num": epoch}, value={
                "throughput": counted.throughput, "samples": counted.samples,
                "seconds": counted.seconds, "train_loss": mean_loss})

        mlperf.start(C.EVAL_START, metadata={"epoch_num": block_last})
        eval_t0 = time.perf_counter()
        bench.model.eval()
        with precision.autocast():
            quality = bench.evaluate(block_last)  # a Python number: the device work is done
        result.epochs[-1].eval_seconds = time.perf_counter() - eval_t0
        mlperf.event(C.EVAL_ACCURACY, value=quality, metadata={"epoch_num": block_last})
        mlperf.end(C.EVAL_STOP, metadata={"epoch_num": block_last})
        mlperf.end(C.BLOCK_STOP, metadata={"first_epoch_num": block_first})
        result.epochs[-1].quality = quality
        if board is not None:
            board.epoch(block_last, loss=None, lr=None, throughput=None, quality=quality, quality_name=quality_name)
        reached = quality >= target
        log.info(
            "epoch %d/%d  %s %.4f (target %.4f%s)  loss %.4f  %.1f s training",
            block_last, max_epochs, quality_name, quality, target, ", reached" if reached else "",
            result.epochs[-1].train_loss, result.epochs[-1].train_seconds,
        )
        if reached:
            result.status = C.SUCCESS
            return result
    result.status = C.ABORTED
    return result


def measure_throughput(
    bench: Benchmark, *, warmup_steps: int, steps: int, repeats: int, precision: PrecisionPolicy,
    meter: ThroughputMeter, progress: Progress, result: LoopResult, board: Optional[Board] = None,
) -> LoopResult:
    """mode=throughput: `warmup_steps` steps whose count is dropped, then `repeats` windows of `steps`
    steps on synthetic batches; each window is one epoch record, so the spread is visible."""
    if warmup_steps:
        train_epoch(bench, 0, precision, meter, progress, max_steps=warmup_steps)
    for window in range(1, repeats + 1):
        mean_loss, counted = train_epoch(bench, window, precision, meter, progress, max_steps=steps)
        result.epochs.append(EpochRecord(window, mean_loss, meter.epoch_seconds, counted.throughput))
        if board is not None:
            board.epoch(window, loss=mean_loss, lr=_lr(bench), throughput=counted.throughput, quality=None,
                        quality_name="")
    result.status = C.SUCCESS
    return result


def _lr(bench: Benchmark) -> Optional[float]:
    """The learning rate now (a Python number, or a tensor read once per epoch)."""
    groups = bench.optimizer.param_groups
    return float(groups[0]["lr"]) if groups else None
