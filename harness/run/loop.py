"""The one training loop: every model trains through it, top to bottom.

Between run_start and run_stop the model's evaluation schedule cuts the run into MLPerf blocks, each
closed by an evaluation; the run stops at the first evaluation that reaches the target (status
success), after max_epochs (aborted), or when a hook ends it (a loss that is not finite: failed).
Under a schedule by samples the evaluations fall inside epochs, after the step that crosses each
multiple of the sample count. MLPerf events follow the 0.7.0 rules: block_start, epoch_start,
epoch_stop, tracked_stats, eval_start, eval_accuracy, eval_stop, block_stop, each with its epoch
number. mode=throughput runs the same training step on the model's synthetic batch, with no
evaluation and no MLPerf events. What watches the loop is a hook (harness/observe/hooks.py).

    python -m harness.train model=ncf seed=1                         # train_to_target on NCF's embedded data
    python -m harness.train model=ncf mode=throughput device=cpu     # measure_throughput
"""
from __future__ import annotations

import itertools
import logging
import statistics
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Optional

import torch
from omegaconf import open_dict

from harness.interface import EvalSchedule, Quality, QualitySpec
from harness.interface.gather import broadcast_buffers
from harness.observe.finite import NonFiniteLoss
from harness.observe.hooks import EpochStats, Hook, StepDone
from harness.results.record import ABORTED, FAILED, SUCCESS, Epoch, Evaluation, Failure
from harness.run.build import BuiltRun, device_sync
from harness.run.distributed import sum_over_ranks
from harness.run.graph import EAGER_STEPS, CaptureFailed, CapturedStep
from harness.run.step import Step, train_step
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
    data_wait_s: Optional[float] = None  # over the counted steps of the kept epochs
    counted_seconds: float = 0.0  # this rank's training seconds of the same steps
    warmup_steps: Optional[int] = None  # mode=throughput: the steps the warm-up ran
    window_steps: Optional[int] = None  # mode=throughput: the steps of each window
    fallback: Optional[str] = None  # why a fast path fell back to the eager step (capture)

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
                 steps: Optional[int], first_step: int, step: Step = train_step):
        self.run, self.epoch, self.hooks, self.batches, self.step = run, epoch, hooks, batches, step
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
            batch, copy_wait = next(self.batches, (_END, None))
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
                                           terms, copy_wait, host_wait))
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
                     data_wait_s=stats.data_wait_s, loss_terms=terms, steps=self.steps, samples=stats.samples), stats


def train_epoch(run: BuiltRun, epoch: int, hooks: Hook, max_steps: Optional[int] = None) -> Epoch:
    """One epoch as a run trains it (at most max_steps): the model's batches of `epoch`, or with
    mode=throughput its synthetic batch at every step. For tests and scripts/lab: no MLPerf events."""
    bench = run.bench
    if run.mode == "throughput":
        batches, steps = _repeat(run.synthetic_batch(), max_steps), max_steps
    else:
        batches = run.feed.batches(bench.train_batches(epoch), max_steps)  # type: ignore[attr-defined]
        steps = bench.steps_per_epoch()  # type: ignore[attr-defined]
    training = EpochTraining(run, epoch, batches, hooks, steps, 0)
    training.train()
    return training.close()[0]


def evaluate(run: BuiltRun, epoch_num: float, judge: Judge, mlperf: MLPerfLog, hooks: Hook) -> tuple[Quality, float]:
    """One evaluation between eval_start and eval_stop, on the module itself (never DDP's wrapper)
    with rank 0's buffers; (quality, seconds)."""
    hooks.before_eval(epoch_num)  # the loss check runs here: a model that diverged is not evaluated
    mlperf.start(C.EVAL_START, metadata={"epoch_num": epoch_num})
    t0 = time.perf_counter()
    module = run.module
    module.eval()
    broadcast_buffers(module)  # sync point (several ranks): each rank's batch-norm statistics drifted apart
    with torch.no_grad(), run.precision.autocast():
        raw = run.bench.evaluate(module, int(epoch_num))  # type: ignore[attr-defined]
        quality = judge.quality.value(raw)  # Python numbers: the device work is done
    seconds = time.perf_counter() - t0
    mlperf.event(C.EVAL_ACCURACY, value=quality, metadata={"epoch_num": epoch_num})
    mlperf.end(C.EVAL_STOP, metadata={"epoch_num": epoch_num})
    hooks.after_eval(epoch_num, judge.quality.scalars(quality), seconds)
    run.trained.train()
    return quality, seconds


class _Blocks:
    """MLPerf's blocks: each opened with block_start, then closed by an evaluation, which is logged,
    kept and reported, and block_stop. Written once for both kinds of schedule."""

    def __init__(self, run: BuiltRun, judge: Judge, mlperf: MLPerfLog, hooks: Hook):
        self.run, self.judge, self.mlperf, self.hooks = run, judge, mlperf, hooks
        schedule = judge.schedule
        self.counts = {} if schedule.by_samples else dict(schedule.blocks(judge.max_epochs))
        self.first: Optional[int] = None  # the open block's first epoch (or samples trained before it)
        self.evals: list[Evaluation] = []
        self.pending: list[tuple[Quality, float]] = []  # evaluations not yet in an epoch's record

    def open(self, first: int) -> None:
        count = self.judge.schedule.every_samples if self.judge.schedule.by_samples else self.counts[first]
        self.mlperf.start(C.BLOCK_START, metadata={"first_epoch_num": first, "epoch_count": count})
        self.first = first

    def close(self) -> None:
        self.mlperf.end(C.BLOCK_STOP, metadata={"first_epoch_num": self.first})
        self.first = None

    def evaluate(self, epoch_num: int, last: Optional[Epoch]) -> bool:
        """Evaluate, close the block, keep and report the quality; whether the target is reached.
        `last`: the epoch just closed, for the report line (None inside an epoch)."""
        quality, seconds = evaluate(self.run, epoch_num, self.judge, self.mlperf, self.hooks)
        self.close()
        self.evals.append(Evaluation(epoch_num, quality))
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
    """Train until the target, the epoch cap or a hook's verdict, evaluating as the model's schedule says."""
    schedule, world, bench = judge.schedule, run.ctx.world_size, run.bench
    blocks = _Blocks(run, judge, mlperf, hooks)
    epochs: list[Epoch] = []
    kept: list[EpochStats] = []
    done = 0  # samples trained so far, all ranks: ranks step in lockstep on equal shards
    reached = False
    hooks.before_run()
    try:
        if schedule.by_samples:
            blocks.open(0)
        for epoch in range(1, judge.max_epochs + 1):
            if blocks.first is None and not schedule.by_samples:
                blocks.open(epoch)
            mlperf.start(C.EPOCH_START, metadata={"epoch_num": epoch})
            training = EpochTraining(run, epoch, run.feed.batches(bench.train_batches(epoch)), hooks,  # type: ignore[attr-defined]
                                     bench.steps_per_epoch(), _steps_so_far(kept))  # type: ignore[attr-defined]
            base = done
            while not training.finished and not reached:
                until = None
                if schedule.by_samples:  # this rank's samples at which the block's evaluation falls
                    until = -(-((blocks.first or 0) + int(schedule.every_samples) - base) // world)  # type: ignore[arg-type]
                training.train(until)
                done = base + training.samples * world
                if schedule.by_samples and done >= (blocks.first or 0) + int(schedule.every_samples):  # type: ignore[arg-type]
                    reached = blocks.evaluate(done, None)
                    if not reached:
                        blocks.open(done)
            record, stats = training.close()
            mlperf.end(C.EPOCH_STOP, metadata={"epoch_num": epoch})
            # samples and seconds let a reader of the log alone total the run's throughput
            mlperf.event(TRACKED_STATS, metadata={"epoch_num": epoch}, value=_tracked(record, stats))
            epochs.append(blocks.into(record))
            kept.append(stats)
            hooks.after_epoch(epochs[-1])
            if not reached and not schedule.by_samples and schedule.evaluates_after(epoch, judge.max_epochs):
                reached = blocks.evaluate(epoch, epochs[-1])
                epochs[-1] = blocks.into(epochs[-1])
            if reached:
                break
        else:  # the epoch cap: a run ends on an evaluation, as every run does
            if schedule.by_samples and (not blocks.evals or blocks.evals[-1].epoch != done):
                reached = blocks.evaluate(done, epochs[-1])
                epochs[-1] = blocks.into(epochs[-1])
            elif schedule.by_samples:
                blocks.close()  # the block opened after the last evaluation holds none
    except NonFiniteLoss as err:
        return _ended(FAILED, epochs, blocks.evals, kept, reason=str(err),
                      error=Failure("NonFiniteLoss", str(err), err.rank))
    finally:
        hooks.after_run()
    return _ended(SUCCESS if reached else ABORTED, epochs, blocks.evals, kept)


def measure_throughput(run: BuiltRun, *, warmup_steps: int, steps: int, repeats: int, hooks: Hook,
                       warmup_s: Optional[float] = None, window_s: Optional[float] = None) -> LoopResult:
    """mode=throughput: `warmup_steps` steps whose figures are dropped, then `repeats` windows of
    `steps` steps on the model's synthetic batch, moved to the device once; each window is one epoch
    record, so the spread is visible.

    With `warmup_s` or `window_s` (seconds) the warm-up goes on, one timed step at a time, until it
    has lasted `warmup_s` and its last three timed steps agree (see `_timed`), and each window is sized
    to `window_s` from the median of those three steps' times instead of `steps`: a window then covers the same stretch of
    time whatever the model's step costs, and the bench and a direct call that pass the same seconds
    measure windows of the same length (their step counts follow each run's own warm-up, so they can
    differ by a step). Ranks agree on every choice (the mean over ranks, rounded).

    With cuda_graph=true the step is captured after `warmup_steps` (harness/run/graph.py: the steps
    the capture trains count as warm-up), and the timed warm-up and the windows replay it."""
    batch = run.synthetic_batch()
    step: Step = train_step
    fallbacks: list[str] = []
    windows: list[Epoch] = []
    kept: list[EpochStats] = []
    timed = warmup_s is not None or window_s is not None
    warmup_steps = max(warmup_steps, 1) if timed else warmup_steps
    agree = _agreement(run)
    hooks.before_run()
    try:
        t0 = time.perf_counter()
        if warmup_steps:
            warmup = EpochTraining(run, 0, _repeat(batch, warmup_steps), hooks, warmup_steps, 0)
            warmup.train()
            warmup.close()
        ran = warmup_steps
        if run.ctx.cfg.get("cuda_graph"):
            try:
                captured = CapturedStep.capture(run, batch)  # the steps it trains are warm-up steps too
                step, ran = captured, ran + captured.warmup_steps
            except CaptureFailed as err:  # never a failed run for a failed optimisation
                log.warning("warning: %s: the eager step runs instead", err)
                fallbacks.append(str(err))
                ran += EAGER_STEPS
                with open_dict(run.ctx.cfg):
                    run.ctx.cfg.cuda_graph = False  # the record names the path that ran
        if timed:
            step_times: list[float] = []
            more = EpochTraining(run, 0, _timed(batch, t0, warmup_s or 0.0, step_times, run, agree), hooks, None,
                                 ran, step)
            more.train()
            more.close()
            ran += more.steps
            step_s = statistics.median(step_times[-SETTLED_STEPS:])
            if window_s is not None:
                steps = max(1, round(agree(window_s / step_s)))
            log.info("warm-up: %d steps in %.1f s; a step takes %.3f s, so %d steps a window%s", ran,
                     time.perf_counter() - t0, step_s, steps, "" if _settled(step_times) else
                     f" (the last {SETTLED_STEPS} warm-up steps still differed by more than {SETTLED_SPREAD}x:"
                     " raise warmup_s)")
        for window in range(1, repeats + 1):
            training = EpochTraining(run, window, _repeat(batch, steps), hooks, steps, ran + _steps_so_far(kept), step)
            training.train()
            record, stats = training.close()
            windows.append(record)
            kept.append(stats)
            hooks.after_epoch(record)
    except NonFiniteLoss as err:
        return _ended(FAILED, windows, [], kept, reason=str(err), error=Failure("NonFiniteLoss", str(err), err.rank))
    finally:
        hooks.after_run()
    return replace(_ended(SUCCESS, windows, [], kept), warmup_steps=ran, window_steps=steps,
                   fallback="; ".join(fallbacks) or None)


# The timed warm-up ends once its last SETTLED_STEPS steps agree within SETTLED_SPREAD: the first steps
# after torch.compile's compilation still record CUDA graphs or autotune (TXL's reduce-overhead steps
# took 0.43 s while recording and 26 ms after, on an H200), and windows sized from them would be a few
# steps long. A warm-up that never settles stops after SETTLE_LIMIT times warmup_s plus SETTLE_EXTRA_S
# seconds, and says so.
SETTLED_STEPS, SETTLED_SPREAD, SETTLE_LIMIT, SETTLE_EXTRA_S = 3, 1.5, 4.0, 10.0


def _settled(step_times: list[float]) -> bool:
    last = step_times[-SETTLED_STEPS:]
    return len(last) == SETTLED_STEPS and max(last) <= SETTLED_SPREAD * min(last)


def _timed(batch: Any, t0: float, until_s: float, step_times: list[float], run: BuiltRun,
           agree: Callable[[float], float]) -> Iterator[tuple[Any, Any]]:
    """The timed warm-up steps: the batch, again and again, until the warm-up begun at `t0` has lasted
    `until_s` seconds and its last SETTLED_STEPS steps agree (at least that many timed), or it has lasted
    SETTLE_LIMIT times `until_s` plus SETTLE_EXTRA_S; each step's seconds go into `step_times`."""
    sync = device_sync(run.ctx.device)
    sync()  # sync point (warm-up only): each timed step starts on an idle device
    last = time.perf_counter()
    while True:
        yield batch, None
        sync()  # sync point (warm-up only): the step's work is finished
        now = time.perf_counter()
        step_times.append(now - last)
        last = now
        lasted = now - t0
        more = len(step_times) < SETTLED_STEPS or lasted < until_s or (
            not _settled(step_times) and lasted < SETTLE_LIMIT * until_s + SETTLE_EXTRA_S)
        if agree(float(more)) < 0.5:
            return


def _agreement(run: BuiltRun) -> Callable[[float], float]:
    """A number's mean over ranks (the identity on one rank): every rank makes the same choice."""
    total = sum_over_ranks(run.ctx.device)
    world = max(run.ctx.world_size, 1)
    return lambda value: total([float(value)])[0] / world


def _repeat(batch: Any, steps: Optional[int]) -> Iterator[tuple[Any, Any]]:
    return itertools.repeat((batch, None)) if steps is None else itertools.repeat((batch, None), steps)


def _steps_so_far(kept: list[EpochStats]) -> int:
    return sum(s.steps for s in kept)


def _tracked(record: Epoch, stats: EpochStats) -> dict[str, Any]:
    """tracked_stats' value: the epoch's counted figures, its mean loss and its data wait."""
    value: dict[str, Any] = {"throughput": stats.throughput, "samples": stats.samples, "seconds": stats.seconds,
                             "train_loss": record.train_loss, "data_wait_s": record.data_wait_s}
    if record.loss_terms:
        value["loss_terms"] = record.loss_terms
    return value


def _ended(status: str, epochs: list[Epoch], evals: list[Evaluation], kept: list[EpochStats],
           reason: Optional[str] = None, error: Optional[Failure] = None) -> LoopResult:
    waits = [s.data_wait_s for s in kept[:len(epochs)]]
    wait = sum(w for w in waits if w is not None) if waits and None not in waits else None
    return LoopResult(status, tuple(epochs), tuple(evals), reason, error, wait,
                      sum(s.own_seconds for s in kept[:len(epochs)]))


def _report(judge: Judge, epoch: float, quality: Quality, reached: bool, last: Optional[Epoch]) -> None:
    where = f"samples {epoch:,.0f}" if judge.schedule.by_samples else f"epoch {epoch:g}/{judge.max_epochs}"
    trained = (f"  loss {last.train_loss:.4f}  {last.train_seconds:.1f} s training"
               if last is not None and last.train_loss is not None and last.train_seconds is not None else "")
    log.info("%s  %s (target %s%s)%s", where, judge.quality.describe(quality),
             judge.quality.describe_target(judge.target), ", reached" if reached else "", trained)
