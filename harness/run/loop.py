"""The one training loop: every model trains through it, top to bottom.

Between run_start and run_stop the model's evaluation schedule cuts the run into MLPerf blocks, each
closed by an evaluation; the run stops at the first evaluation that reaches the target (status
success), after max_epochs (aborted), or when a hook ends it (a loss that is not finite: failed).
One path serves every kind of schedule: each block the schedule opens (harness/interface/schedule.py)
says where its evaluation falls, after the step that crosses a sample count (inside an epoch) or
after an epoch. MLPerf events follow the 0.7.0 rules: block_start, epoch_start, epoch_stop,
tracked_stats, eval_start, eval_accuracy, eval_stop, block_stop, each with its epoch number.
mode=throughput (harness/run/throughput.py) runs the same training step on the model's synthetic
batch, with no evaluation and no MLPerf events. What watches the loop is a hook
(harness/observe/hooks.py).

    python -m harness.train model=ncf seed=1                         # train_to_target on NCF's embedded data
    HARNESS_MODELS=tests.models.twopart python -m harness.train model=twopart model.eval_every_samples=1000
"""
from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass, replace
from typing import Any, Iterator, Optional

import torch

from harness.interface import EvalSchedule, Quality, QualitySpec
from harness.interface.gather import broadcast_buffers
from harness.interface.schedule import Block
from harness.observe.finite import NonFiniteLoss
from harness.observe.hooks import EpochStats, Hook, StepDone
from harness.record import ABORTED, FAILED, SUCCESS, Epoch, Evaluation, Failure
from harness.run.build import BuiltRun
from harness.run.graph import step_for
from harness.run.step import Step
from harness.run.mlperf_log import TRACKED_STATS, C, MLPerfLog

log = logging.getLogger("harness.loop")
_END = object()  # the batches have run out


@dataclass(frozen=True)
class Judge:
    """How the loop evaluates: the model's metric, its target and its schedule."""

    quality: QualitySpec
    target: Quality
    schedule: EvalSchedule
    max_epochs: int


@dataclass(frozen=True)
class LoopResult:
    status: str  # success, aborted (the epoch cap) or failed (a hook ended the run)
    epochs: tuple[Epoch, ...] = ()
    evals: tuple[Evaluation, ...] = ()
    reason: Optional[str] = None
    error: Optional[Failure] = None
    data_wait_s: Optional[float] = None  # the longest any rank waited over the counted steps of the kept epochs
    data_wait_warmup_s: Optional[float] = None  # over their warm-up steps (None: none ran)
    counted_seconds: float = 0.0  # this rank's training seconds of the same steps
    data_wait_rank: Optional[int] = None  # several ranks: the one that waited data_wait_s
    warmup_steps: Optional[int] = None  # mode=throughput: the steps the warm-up ran
    window_steps: Optional[int] = None  # mode=throughput: the steps of each window
    fallback: Optional[str] = None  # why a fast path fell back to the eager step (capture)
    graph_fell_back: bool = False  # the CUDA-graph capture failed and the eager step ran

    @property
    def epochs_to_converge(self) -> Optional[float]:
        """MLPerf's reading: the epoch_num of the last evaluation, if the run succeeded."""
        return self.evals[-1].epoch if self.status == SUCCESS and self.evals else None

    @property
    def data_wait_share(self) -> Optional[float]:
        if self.data_wait_s is None or self.counted_seconds <= 0:
            return None
        return min(1.0, self.data_wait_s / self.counted_seconds)


class EpochTraining:
    """One epoch's steps, trained in one go or (a schedule by samples) in pieces between evaluations.
    The losses add up on the device: no sync per step."""

    def __init__(self, run: BuiltRun, epoch: int, batches: Iterator[tuple[Any, Any]], hooks: Hook,
                 steps: Optional[int], first_step: int, step: Optional[Step] = None):
        self.run, self.epoch, self.hooks, self.batches = run, epoch, hooks, batches
        self.step = step or step_for(run)  # mode=train's graphed step with cuda_graph=true (run/graph.py)
        self.steps, self.samples, self.global_step = 0, 0, first_step
        self.loss_sum = torch.zeros((), device=run.ctx.device)
        self.term_sums: Optional[dict[str, torch.Tensor]] = None
        self.finished = False
        run.trained.train()
        hooks.before_epoch(epoch, steps)

    def train(self, until_samples: Optional[int] = None) -> None:
        """Train until this rank's samples this epoch reach `until_samples`, or the batches end.
        Each step's wait for its batch is the time next() takes, as detectron2's loop times data_time:
        the hooks get it in StepDone, so no hook's own work counts as waiting, whatever their order."""
        while True:
            asked = time.perf_counter()
            batch, device_wait = next(self.batches, (_END, None))
            if batch is _END:
                break
            host_wait = time.perf_counter() - asked
            self.global_step += 1
            self.hooks.before_step(self.global_step)
            loss, terms, samples = self.step(self.run, batch)
            self.loss_sum += loss
            if terms is not None:
                sums = self.term_sums or {k: torch.zeros((), device=loss.device) for k in terms}
                self.term_sums = {k: sums[k] + v.float() for k, v in terms.items()}
            self.steps += 1
            self.samples += samples
            self.hooks.after_step(StepDone(self.epoch, self.steps, self.global_step, samples, self.samples, loss,
                                           terms, device_wait, host_wait))
            if until_samples is not None and self.samples >= until_samples:
                return
        self.finished = True

    def close(self) -> tuple[Epoch, EpochStats]:
        """The epoch's record: the hooks' figures and the mean losses."""
        stats = EpochStats(self.epoch, self.steps)
        self.hooks.end_epoch(stats)  # sync points: the meter's clock and all-reduce, the loss check
        steps = max(self.steps, 1)
        terms: Optional[dict[str, Optional[float]]] = None
        if self.term_sums is not None:
            terms = {k: float((v / steps).item()) for k, v in self.term_sums.items()}  # sync point: each term's mean
        mean = (self.loss_sum / steps).item()  # sync point: the epoch's mean loss
        return Epoch(self.epoch, train_loss=mean, train_seconds=stats.train_seconds, throughput=stats.throughput,
                     data_wait_s=stats.data_wait_s, data_wait_warmup_s=stats.data_wait_warmup_s, loss_terms=terms, steps=self.steps, samples=stats.samples), stats


def train_epoch(run: BuiltRun, epoch: int, hooks: Hook, max_steps: Optional[int] = None) -> Epoch:
    """One epoch as a run trains it (at most max_steps): the model's batches of `epoch`, or with
    mode=throughput its synthetic batch at every step. For tests and scripts/tools: no MLPerf events."""
    if run.mode == "throughput":
        batches, steps = repeat_batch(run.synthetic_batch(), max_steps), max_steps
    else:
        batches = run.feed.batches(run.task.train_batches(epoch), max_steps)
        steps = run.task.steps_per_epoch()
    training = EpochTraining(run, epoch, batches, hooks, steps, 0)
    training.train()
    return training.close()[0]


def evaluate(run: BuiltRun, epoch_num: float, judge: Judge, mlperf: MLPerfLog, hooks: Hook) -> tuple[Quality, float]:
    """One evaluation between eval_start and eval_stop, on the module itself (never DDP's wrapper)
    with rank 0's buffers; (quality, seconds)."""
    hooks.before_eval(epoch_num)  # the loss check runs here: a model that diverged is not evaluated
    position = judge.schedule.metadata(epoch_num)
    mlperf.start(C.EVAL_START, metadata=position)
    t0 = time.perf_counter()
    module = run.module
    module.eval()
    broadcast_buffers(module)  # sync point (several ranks): each rank's batch-norm statistics drifted apart
    with torch.no_grad(), run.precision.autocast():
        raw = run.task.evaluate(module, int(epoch_num))
        quality = judge.quality.value(raw)  # Python numbers: the device work is done
    seconds = time.perf_counter() - t0
    mlperf.event(C.EVAL_ACCURACY, value=quality, metadata=position)
    mlperf.end(C.EVAL_STOP, metadata=position)
    hooks.after_eval(epoch_num, judge.quality.scalars(quality), seconds)
    run.trained.train()
    return quality, seconds


class _Blocks:
    """MLPerf's blocks: each opened with block_start where the schedule says, then closed by an
    evaluation, which is logged, kept and reported, and block_stop."""

    def __init__(self, run: BuiltRun, judge: Judge, mlperf: MLPerfLog, hooks: Hook):
        self.run, self.judge, self.mlperf, self.hooks = run, judge, mlperf, hooks
        self.current: Optional[Block] = None  # the open block
        self.evals: list[Evaluation] = []
        self.pending: list[tuple[Quality, float]] = []  # evaluations not yet in an epoch's record

    def open(self, epoch: int, samples: int) -> None:
        """Open the block the schedule starts before `epoch`, `samples` trained (all ranks)."""
        block = self.judge.schedule.block_at(epoch, samples, self.judge.max_epochs)
        self.mlperf.start(C.BLOCK_START, metadata=self.judge.schedule.block_metadata(block, start=True))
        self.current = block

    def close(self) -> None:
        assert self.current is not None
        self.mlperf.end(C.BLOCK_STOP, metadata=self.judge.schedule.block_metadata(self.current, start=False))
        self.current = None

    def until(self, trained: int, world: int) -> Optional[int]:
        """This rank's samples this epoch at which the open block's evaluation falls inside it (None:
        the whole epoch), `trained` samples (all ranks) having been trained before the epoch."""
        at = self.current.at_samples if self.current is not None else None
        return None if at is None else -(-(at - trained) // world)  # ranks step in lockstep on equal shards

    def due(self, done: int) -> bool:
        """Whether the open block's evaluation falls inside an epoch and `done` samples reach it."""
        return self.current is not None and self.current.at_samples is not None and done >= self.current.at_samples

    def evaluate(self, epoch_num: int, last: Optional[Epoch]) -> bool:
        """Evaluate, close the block, keep and report the quality; whether the target is reached.
        `last`: the epoch just closed, for the report line (None inside an epoch)."""
        quality, seconds = evaluate(self.run, epoch_num, self.judge, self.mlperf, self.hooks)
        self.close()
        self.evals.append(Evaluation(self.judge.schedule.logged(epoch_num), quality))  # as the log has it
        self.pending.append((quality, seconds))
        reached = self.judge.quality.reached(quality, self.judge.target)
        _report(self.judge, epoch_num, quality, reached, last)
        return reached

    def into(self, record: Epoch) -> Epoch:
        """The epoch's record with its last evaluation, and the time of all that fell in it."""
        if not self.pending:
            return record
        quality = self.pending[-1][0]
        seconds = (record.eval_seconds or 0.0) + sum(s for _, s in self.pending)
        self.pending.clear()
        return replace(record, quality=quality, eval_seconds=seconds)


def train_to_target(run: BuiltRun, *, judge: Judge, mlperf: MLPerfLog, hooks: Hook) -> LoopResult:
    """Train until the target, the epoch cap or a hook's verdict, evaluating as the model's schedule says:
    inside an epoch where the open block's evaluation falls at a sample count, after the epoch where
    the schedule evaluates after it."""
    schedule, world, bench = judge.schedule, run.ctx.world_size, run.task
    blocks = _Blocks(run, judge, mlperf, hooks)
    epochs: list[Epoch] = []
    kept: list[EpochStats] = []
    done = 0  # samples trained so far, all ranks: ranks step in lockstep on equal shards
    reached = False
    hooks.before_run()
    try:
        for epoch in range(1, judge.max_epochs + 1):
            if blocks.current is None:
                blocks.open(epoch, done)
            mlperf.start(C.EPOCH_START, metadata={"epoch_num": epoch})
            training = EpochTraining(run, epoch, run.feed.batches(bench.train_batches(epoch)), hooks,
                                     bench.steps_per_epoch(), steps_so_far(kept))
            base = done
            while not training.finished and not reached:
                training.train(blocks.until(base, world))
                done = base + training.samples * world
                if blocks.due(done):
                    reached = blocks.evaluate(schedule.epoch_num(epoch, done), None)
                    if not reached:
                        blocks.open(epoch, done)
            record, stats = training.close()
            mlperf.end(C.EPOCH_STOP, metadata={"epoch_num": epoch})
            # samples and seconds let a reader of the log alone total the run's throughput
            mlperf.event(TRACKED_STATS, metadata={"epoch_num": epoch}, value=_tracked(record, stats))
            epochs.append(blocks.into(record))
            kept.append(stats)
            hooks.after_epoch(epochs[-1])
            if not reached and schedule.evaluates_after(epoch, judge.max_epochs):
                reached = blocks.evaluate(schedule.epoch_num(epoch, done), epochs[-1])
                epochs[-1] = blocks.into(epochs[-1])
            if reached:
                break
        else:  # the epoch cap inside an open block: a run ends on an evaluation, as every run does
            last = schedule.epoch_num(judge.max_epochs, done)
            if blocks.current is not None and blocks.evals and blocks.evals[-1].epoch == schedule.logged(last):
                blocks.close()  # the block opened after the last evaluation holds none
            elif blocks.current is not None:
                reached = blocks.evaluate(last, epochs[-1])
                epochs[-1] = blocks.into(epochs[-1])
    except NonFiniteLoss as err:
        return _graphed(run, ended(FAILED, epochs, blocks.evals, kept, reason=str(err),
                                   error=Failure("NonFiniteLoss", str(err), err.rank)))
    finally:
        hooks.after_run()
    return _graphed(run, ended(SUCCESS if reached else ABORTED, epochs, blocks.evals, kept))


def _graphed(run: BuiltRun, result: LoopResult) -> LoopResult:
    """The result naming the eager step where mode=train's CUDA-graph capture failed (the record's path)."""
    why = getattr(run.train_graph, "fallback", None)
    return replace(result, fallback=why, graph_fell_back=True) if why else result


def repeat_batch(batch: Any, steps: Optional[int]) -> Iterator[tuple[Any, Any]]:
    return itertools.repeat((batch, None)) if steps is None else itertools.repeat((batch, None), steps)


def steps_so_far(kept: list[EpochStats]) -> int:
    return sum(s.steps for s in kept)


def _tracked(record: Epoch, stats: EpochStats) -> dict[str, Any]:
    """tracked_stats' value: the epoch's counted figures, its mean loss and its data wait."""
    value: dict[str, Any] = {"throughput": stats.throughput, "samples": stats.samples, "seconds": stats.seconds,
                             "train_loss": record.train_loss, "data_wait_s": record.data_wait_s}
    if record.data_wait_warmup_s is not None:
        value["data_wait_warmup_s"] = record.data_wait_warmup_s
    if record.loss_terms:
        value["loss_terms"] = record.loss_terms
    return value


def ended(status: str, epochs: list[Epoch], evals: list[Evaluation], kept: list[EpochStats],
           reason: Optional[str] = None, error: Optional[Failure] = None) -> LoopResult:
    by_rank = [s.data_wait_ranks for s in kept[:len(epochs)]]
    wait, rank = None, None
    if by_rank and all(by_rank):
        totals = [sum(ranks) for ranks in zip(*by_rank)]  # each rank's wait over the run
        wait = max(totals)
        rank = totals.index(wait) if len(totals) > 1 else None
    warm = [s.data_wait_warmup_s for s in kept[:len(epochs)] if s.data_wait_warmup_s is not None]
    return LoopResult(status, tuple(epochs), tuple(evals), reason, error, wait, sum(warm) if warm else None,
                      sum(s.own_seconds for s in kept[:len(epochs)]), data_wait_rank=rank)


def _report(judge: Judge, epoch: float, quality: Quality, reached: bool, last: Optional[Epoch]) -> None:
    where = judge.schedule.where(epoch, judge.max_epochs)
    trained = (f"  loss {last.train_loss:.4f}  {last.train_seconds:.1f} s training"
               if last is not None and last.train_loss is not None and last.train_seconds is not None else "")
    log.info("%s  %s (target %s%s)%s", where, judge.quality.describe(quality),
             judge.quality.describe_target(judge.target), ", reached" if reached else "", trained)
