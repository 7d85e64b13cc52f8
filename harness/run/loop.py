"""The one train-to-target loop: every model trains through it, top to bottom.

Between run_start and run_stop the model's evaluation schedule cuts the epochs into MLPerf blocks,
each closed by an evaluation; the run stops at the first evaluation that reaches the target
(status success) or after max_epochs (aborted). A schedule by samples evaluates inside epochs
instead, after the step that crosses each multiple of its sample count. MLPerf events follow the
0.7.0 rules: block_start/epoch_start/epoch_stop/eval_start/eval_accuracy/eval_stop/block_stop,
each with its epoch number. mode=throughput runs the same training steps on synthetic batches with
no evaluation and no MLPerf events.

    python -m harness.train model=ncf seed=1       # this loop, on NCF's embedded data
"""
from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass, replace
from typing import Callable, Optional

import torch

from harness.interface import Benchmark, EvalSchedule, Quality, QualitySpec, ThroughputBenchmark
from harness.observe import heartbeat
from harness.observe.board import Board
from harness.observe.meter import EpochCount, ThroughputMeter
from harness.observe.progress import Progress
from harness.run.mlperf_log import TRACKED_STATS, C, MLPerfLog
from harness.run.precision import PrecisionPolicy

log = logging.getLogger("harness.loop")


@dataclass(frozen=True)
class EpochRecord:
    epoch: int
    train_loss: float
    train_seconds: float
    throughput: Optional[float]  # samples/s over the epoch's counted steps, summed over ranks
    quality: Optional[Quality] = None  # the evaluation that closed this epoch's block
    eval_seconds: Optional[float] = None
    eval_epoch: Optional[float] = None  # the logged epoch_num of that evaluation (samples for a schedule by samples)


@dataclass(frozen=True)
class LoopResult:
    status: str  # "success" or "aborted"
    epochs: tuple[EpochRecord, ...] = ()
    evals: tuple[tuple[float, Quality], ...] = ()  # (epoch_num, quality) of every evaluation

    @property
    def epochs_to_converge(self) -> Optional[float]:
        """MLPerf's reading: the epoch_num of the last evaluation, if the run succeeded."""
        evals = self.evals
        return evals[-1][0] if self.status == C.SUCCESS and evals else None


@dataclass
class Judge:
    """How the loop evaluates: the model's metric, its target and its schedule."""

    quality: QualitySpec
    target: Quality
    schedule: EvalSchedule
    max_epochs: int


def train_epoch(
    bench: ThroughputBenchmark, epoch: int, precision: PrecisionPolicy, meter: ThroughputMeter, progress: Progress,
    max_steps: Optional[int] = None, after_step: Optional[Callable[[int], bool]] = None,
) -> tuple[float, EpochCount]:
    """One pass over the epoch's batches (at most max_steps); returns the mean training loss and the
    counted throughput. `after_step(samples this rank trained this epoch)` runs after every step and
    ends the epoch early by returning True (a schedule by samples that reached its target)."""
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
        heartbeat.tick()
        meter.step(samples)
        progress.step(steps, meter.epoch_samples_all * meter.world_size, lambda loss=loss: loss.item())
        if after_step is not None and after_step(meter.epoch_samples_all):
            break
    counted = meter.end_epoch()  # sync point: the epoch's work is finished
    progress.end_epoch()
    return (loss_sum / max(steps, 1)).item(), counted  # sync point: the epoch's mean loss


def evaluate(bench: Benchmark, epoch_num: float, judge: Judge, precision: PrecisionPolicy, mlperf: MLPerfLog,
             board: Optional[Board]) -> tuple[Quality, float]:
    """One evaluation between eval_start and eval_stop; (quality, seconds)."""
    mlperf.start(C.EVAL_START, metadata={"epoch_num": epoch_num})
    t0 = time.perf_counter()
    bench.model.eval()
    with heartbeat.phase("eval"), precision.autocast():  # an evaluation is judged on liveness alone
        raw = bench.evaluate(int(epoch_num))
        quality = judge.quality.value(raw)  # Python numbers: the device work is done
    seconds = time.perf_counter() - t0
    mlperf.event(C.EVAL_ACCURACY, value=quality, metadata={"epoch_num": epoch_num})
    mlperf.end(C.EVAL_STOP, metadata={"epoch_num": epoch_num})
    if board is not None:
        board.quality(epoch_num, judge.quality.scalars(quality), judge.quality.name)
    return quality, seconds


def _report(judge: Judge, epoch: float, quality: Quality, reached: bool, last: Optional[EpochRecord]) -> None:
    where = f"samples {epoch:,.0f}" if judge.schedule.by_samples else f"epoch {epoch:g}/{judge.max_epochs}"
    trained = f"  loss {last.train_loss:.4f}  {last.train_seconds:.1f} s training" if last is not None else ""
    log.info("%s  %s (target %s%s)%s", where, judge.quality.describe(quality),
             judge.quality.describe_target(judge.target), ", reached" if reached else "", trained)


def _trained(bench, epoch, precision, meter, progress, mlperf, board, after_step=None) -> EpochRecord:
    """One epoch between epoch_start and epoch_stop, with its tracked_stats line."""
    mlperf.start(C.EPOCH_START, metadata={"epoch_num": epoch})
    mean_loss, counted = train_epoch(bench, epoch, precision, meter, progress, after_step=after_step)
    mlperf.end(C.EPOCH_STOP, metadata={"epoch_num": epoch})
    if board is not None:
        board.epoch(epoch, loss=mean_loss, lr=_lr(bench), throughput=counted.throughput)
    # samples and seconds let a reader of the log alone total the run's throughput
    mlperf.event(TRACKED_STATS, metadata={"epoch_num": epoch}, value={
        "throughput": counted.throughput, "samples": counted.samples, "seconds": counted.seconds,
        "train_loss": mean_loss})
    return EpochRecord(epoch, mean_loss, meter.epoch_seconds, counted.throughput)


def train_to_target(bench: Benchmark, *, judge: Judge, precision: PrecisionPolicy, meter: ThroughputMeter,
                    progress: Progress, mlperf: MLPerfLog, board: Optional[Board] = None) -> LoopResult:
    """Train until the target or the epoch cap, evaluating as the model's schedule says."""
    if judge.schedule.by_samples:
        return _train_by_samples(bench, judge, precision, meter, progress, mlperf, board)
    epochs: list[EpochRecord] = []
    for first, count in judge.schedule.blocks(judge.max_epochs):
        mlperf.start(C.BLOCK_START, metadata={"first_epoch_num": first, "epoch_count": count})
        for epoch in range(first, first + count):
            epochs.append(_trained(bench, epoch, precision, meter, progress, mlperf, board))
        last = first + count - 1
        quality, seconds = evaluate(bench, last, judge, precision, mlperf, board)
        mlperf.end(C.BLOCK_STOP, metadata={"first_epoch_num": first})
        epochs[-1] = replace(epochs[-1], quality=quality, eval_seconds=seconds, eval_epoch=last)
        reached = judge.quality.reached(quality, judge.target)
        _report(judge, last, quality, reached, epochs[-1])
        if reached:
            return _ended(C.SUCCESS, epochs)
    return _ended(C.ABORTED, epochs)


def _ended(status: str, epochs: list[EpochRecord], evals: Optional[list[tuple[float, Quality]]] = None) -> LoopResult:
    if evals is None:
        evals = [(e.eval_epoch, e.quality) for e in epochs if e.quality is not None]
    return LoopResult(status, tuple(epochs), tuple(evals))


def _train_by_samples(bench: Benchmark, judge: Judge, precision: PrecisionPolicy, meter: ThroughputMeter,
                      progress: Progress, mlperf: MLPerfLog, board: Optional[Board]) -> LoopResult:
    """Evaluations every N training samples, inside epochs. Ranks step in lockstep on equal shards,
    so the samples of all ranks are this rank's times the world size (no per-step collective).
    Each block spans N samples: block_start carries the samples trained before it and N."""
    every = int(judge.schedule.every_samples)
    state = {"done": 0, "epoch_base": 0, "reached": False, "block": 0}
    evals: list[tuple[int, Quality, float]] = []

    def open_block() -> None:
        state["block"] = state["done"]
        mlperf.start(C.BLOCK_START, metadata={"first_epoch_num": state["done"], "epoch_count": every})

    def after_step(epoch_samples: int) -> bool:
        state["done"] = state["epoch_base"] + epoch_samples * meter.world_size
        if state["done"] < state["block"] + every:
            return False
        quality, seconds = evaluate(bench, state["done"], judge, precision, mlperf, board)
        mlperf.end(C.BLOCK_STOP, metadata={"first_epoch_num": state["block"]})
        bench.model.train()
        evals.append((state["done"], quality, seconds))
        state["reached"] = judge.quality.reached(quality, judge.target)
        _report(judge, state["done"], quality, state["reached"], None)
        if not state["reached"]:
            open_block()
        return state["reached"]

    epochs: list[EpochRecord] = []
    open_block()
    for epoch in range(1, judge.max_epochs + 1):
        seen = len(evals)
        record = _trained(bench, epoch, precision, meter, progress, mlperf, board, after_step)
        state["epoch_base"] = state["done"]
        for done, quality, seconds in evals[seen:]:  # the epoch's record keeps its last evaluation
            record = replace(record, quality=quality, eval_seconds=(record.eval_seconds or 0) + seconds,
                             eval_epoch=done)
        epochs.append(record)
        if state["reached"]:
            return _ended(C.SUCCESS, epochs, [(d, q) for d, q, _ in evals])
    if not evals or evals[-1][0] != state["done"]:  # the run ends on an evaluation, as every run does
        quality, seconds = evaluate(bench, state["done"], judge, precision, mlperf, board)
        epochs[-1] = replace(epochs[-1], quality=quality, eval_seconds=(epochs[-1].eval_seconds or 0) + seconds,
                             eval_epoch=state["done"])
        reached = judge.quality.reached(quality, judge.target)
        _report(judge, state["done"], quality, reached, epochs[-1])
        mlperf.end(C.BLOCK_STOP, metadata={"first_epoch_num": state["block"]})
        evals.append((state["done"], quality, seconds))
        return _ended(C.SUCCESS if reached else C.ABORTED, epochs, [(d, q) for d, q, _ in evals])
    mlperf.end(C.BLOCK_STOP, metadata={"first_epoch_num": state["block"]})
    return _ended(C.ABORTED, epochs, [(d, q) for d, q, _ in evals])


def measure_throughput(
    bench: ThroughputBenchmark, *, warmup_steps: int, steps: int, repeats: int, precision: PrecisionPolicy,
    meter: ThroughputMeter, progress: Progress, board: Optional[Board] = None,
) -> LoopResult:
    """mode=throughput: `warmup_steps` steps whose count is dropped, then `repeats` windows of `steps`
    steps on synthetic batches; each window is one epoch record, so the spread is visible."""
    if warmup_steps:
        train_epoch(bench, 0, precision, meter, progress, max_steps=warmup_steps)
    windows = []
    for window in range(1, repeats + 1):
        mean_loss, counted = train_epoch(bench, window, precision, meter, progress, max_steps=steps)
        windows.append(EpochRecord(window, mean_loss, meter.epoch_seconds, counted.throughput))
        if board is not None:
            board.epoch(window, loss=mean_loss, lr=_lr(bench), throughput=counted.throughput)
    return _ended(C.SUCCESS, windows, [])


def _lr(bench: ThroughputBenchmark) -> Optional[float]:
    """The learning rate now (a Python number, or a tensor read once per epoch)."""
    groups = bench.optimizer.param_groups
    return float(groups[0]["lr"]) if groups else None
