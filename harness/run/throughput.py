"""mode=throughput: the loop's training step on the model's synthetic batch, timed in windows after a
warm-up, with no data, evaluation or MLPerf events (harness/run/loop.py trains to the target). By
default the windows are sized in seconds (3 s of timed warm-up, then 5 windows of 2 s), so a
measurement ends in seconds at any batch; throughput_steps=N counts N steps a window instead.

    python -m harness.train model=ncf mode=throughput device=cpu
    python -m harness.train model=ncf mode=throughput device=cpu warmup_s=2 throughput_window_s=1
    python -m harness.train model=ncf mode=throughput device=cpu throughput_steps=200 warmup_steps=20
"""
from __future__ import annotations

import logging
import statistics
import time
from dataclasses import replace
from typing import Any, Callable, Iterator, Optional


from harness.observe.finite import NonFiniteLoss
from harness.observe.hooks import EpochStats, Hook
from harness.observe.progress import figure
from harness.record import FAILED, SUCCESS, Epoch, Failure
from harness.run.build import BuiltRun, device_sync
from harness.run.distributed import sum_over_ranks
from harness.run.graph import EAGER_STEPS, CaptureFailed, CapturedStep
from harness.run.loop import EpochTraining, LoopResult, ended, repeat_batch, steps_so_far
from harness.run.step import Step, train_step

log = logging.getLogger("harness.loop")  # the loop's lines, whichever of its two modes writes them

def measure_throughput(run: BuiltRun, *, warmup_steps: int, steps: int, repeats: int, hooks: Hook,
                       warmup_s: Optional[float] = None, window_s: Optional[float] = None,
                       unit: str = "samples") -> LoopResult:
    """mode=throughput: `warmup_steps` steps whose figures are dropped, then `repeats` windows of
    `steps` steps on the model's synthetic batch, moved to the device once; each window is one epoch
    record, so the spread is visible, and a line per window says its figure in `unit`.

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
    graph_fell_back = False
    windows: list[Epoch] = []
    kept: list[EpochStats] = []
    timed = warmup_s is not None or window_s is not None
    warmup_steps = max(warmup_steps, 1) if timed else warmup_steps
    agree = _agreement(run)
    hooks.before_run()
    try:
        t0 = time.perf_counter()
        if warmup_steps:
            warmup = EpochTraining(run, 0, repeat_batch(batch, warmup_steps), hooks, warmup_steps, 0)
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
                graph_fell_back = True  # the record names the path that ran (the config is never written)
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
            log.info("warm-up: %d steps in %.1f s; a step takes %.4g s, so %d steps a window%s", ran,
                     time.perf_counter() - t0, step_s, steps, "" if _settled(step_times) else
                     f" (the last {SETTLED_STEPS} warm-up steps still differed by more than {SETTLED_SPREAD}x:"
                     " raise warmup_s)")
        for window in range(1, repeats + 1):
            training = EpochTraining(run, window, repeat_batch(batch, steps), hooks, steps, ran + steps_so_far(kept), step)
            training.train()
            record, stats = training.close()
            log.info("window %d/%d: %d steps in %.2f s, %s %s/s", window, repeats, record.steps or 0,
                     record.train_seconds or 0.0, "n/a" if record.throughput is None else figure(record.throughput),
                     unit)
            windows.append(record)
            kept.append(stats)
            hooks.after_epoch(record)
    except NonFiniteLoss as err:
        return ended(FAILED, windows, [], kept, reason=str(err), error=Failure("NonFiniteLoss", str(err), err.rank))
    finally:
        hooks.after_run()
    return replace(ended(SUCCESS, windows, [], kept), warmup_steps=ran, window_steps=steps,
                   fallback="; ".join(fallbacks) or None, graph_fell_back=graph_fell_back)


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
