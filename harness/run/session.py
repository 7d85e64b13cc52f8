"""One rank of a run: device, seeds, the MLPerf init phase, the loop with its hooks, and the rank's record.

Rank 0 writes mlperf.log; every rank runs the same code. `run_rank` returns the run's RunRecord
(the command's start record, filled in) when the run ends by itself: target reached, epoch cap, or a
loss that is not finite (status failed, the step named). An interrupted or crashed run raises, after
ending its MLPerf log with run_stop aborted and the reason (the signal, the error, or the rank whose
death caused it), and the caller rebuilds what was done from that log.

    python -m harness.train model=ncf seed=1       # one rank, in the command's own process
"""
from __future__ import annotations

import logging
import os
import statistics
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

import torch
import torch.distributed as dist
from omegaconf import DictConfig

from harness import files
from harness.interface import EvalSchedule, Logged
from harness.interface.workers import stop_workers
from harness.observe import heartbeat
from harness.observe.board import BoardHook
from harness.observe.datawait import DataWait
from harness.observe.disk import DiskCheck
from harness.observe.finite import FiniteLossCheck
from harness.observe.heartbeat import HeartbeatHook
from harness.observe.hooks import Hooks
from harness.observe.meter import ThroughputMeter
from harness.observe.progress import Progress
from harness.observe.watchers import Observers, open_observers
from harness.record import FAILED, SUCCESS, Evaluation, RunRecord
from harness.run import compile_guard, distributed, flops, peers, record_file, threads
from harness.run.build import BuiltRun, build_run, clear_page_cache, context_for, device_sync, pick_device
from harness.run.distributed import SINGLE, World
from harness.signals import shielded, signal_name
from harness.run.loop import Judge, LoopResult, train_to_target
from harness.run import throughput
from harness.run.warmup import warm_up
from harness.run.watchdog import stop_note
from harness.run import windows as timing
from harness.run.mlperf_log import C, MLPerfLog
from harness.run.plan import RunPlan, counts_epochs

log = logging.getLogger("harness.session")
MAX_INIT_S = 1200  # MLPerf training rules, Run Results: "a maximum of 20 minutes of model initialization time"


@dataclass(frozen=True)
class RankJob:
    plan: RunPlan  # the run resolved, typed and read-only; its seed is the master seed (on rank 0 at least)
    run_dir: Path
    data_dir: Optional[Path]
    world: World = SINGLE
    host_load: Optional[dict] = None  # other processes' CPU at the start, for system.json
    record: RunRecord = field(default_factory=RunRecord)  # what the command knows; the rank fills in the rest


class PeerDied(RuntimeError):
    """Another rank died and took this rank's collective down with it; the message says how."""

    def __init__(self, rank: int, message: str):
        super().__init__(message)
        self.rank = rank


def schedule_of(cfg: DictConfig, epoch_samples: Optional[int] = None) -> EvalSchedule:
    """The model's evaluation schedule; the top-level eval_every overrides the model's epoch count.
    `epoch_samples`: a schedule by samples of a benchmark counted in epochs logs fractions of them."""
    m = cfg.model
    return EvalSchedule.of(every=cfg.eval_every, offset=m.get("eval_offset") or 0, epochs=m.get("eval_epochs"),
                           every_samples=m.get("eval_every_samples"), epoch_samples=epoch_samples)


def _log_init(mlperf: MLPerfLog, plan: RunPlan, world: World, watch: Observers) -> None:
    cfg = plan.cfg
    mlperf.event(C.SUBMISSION_BENCHMARK, value=plan.spec.benchmark)
    mlperf.event(C.SUBMISSION_ORG, value=cfg.mlperf.org)
    mlperf.event(C.SUBMISSION_DIVISION, value=str(cfg.mlperf.division))
    mlperf.event(C.SUBMISSION_STATUS, value=str(cfg.mlperf.status))
    mlperf.event(C.SUBMISSION_PLATFORM, value=watch.platform)
    mlperf.event("number_of_nodes", value=world.nodes)
    # ranks per node: GPUs, or CPU processes with device=cpu (docs/results.md)
    mlperf.event("accelerators_per_node", value=world.local_world_size)
    mlperf.event("precision", value=plan.label)  # a harness key, for grouping runs


def _log_hyperparameters(mlperf: MLPerfLog, built: BuiltRun, training: bool) -> dict[str, Any]:
    hyper = built.bench.hyperparameters()
    for key, value in hyper.items():
        if isinstance(value, Logged):
            mlperf.event(key, value=value.value, metadata=value.metadata)
        else:
            mlperf.event(key, value=value)
    if training:
        mlperf.event(C.TRAIN_SAMPLES, value=built.task.train_samples())
        mlperf.event(C.EVAL_SAMPLES, value=built.task.eval_samples())
    return {k: v.value if isinstance(v, Logged) else v for k, v in hyper.items()}


@dataclass
class _Open:
    """What a rank has open and must close whatever happens."""

    mlperf: MLPerfLog
    watch: Optional[Observers] = None
    run_start: Optional[int] = None
    run_stopped: bool = False
    launcher: int = 0  # the process that started this one (a spawned rank's: the elastic launcher)


def run_rank(job: RankJob) -> RunRecord:
    # planned before the rank starts (harness/run/plan.py): the run reads its config, read-only, and what it
    # learns (a fallback, the path that ran) goes into its results, never back into the config
    plan, world = job.plan, job.world
    training = plan.training
    # a throughput measurement is not an MLPerf run: it writes no MLPerf log
    held = _Open(MLPerfLog(job.run_dir / "mlperf.log" if world.is_main and training else None), launcher=os.getppid())
    heartbeat.start(job.run_dir, world.rank)  # the watchdog reads it (harness/run/watchdog.py), one rank or many
    try:
        record = _run(job, training, held)
    except BaseException as err:
        # From here the launcher's SIGTERM (sent the moment it sees a peer die, while this rank is
        # still naming the dead peer from gloo's error) is held: arriving mid-way, it would replace
        # this handler's work and leave the log without its run_stop. The re-raise inside the block
        # drops a held signal, as the run already ends with this error.
        with shielded():
            cause = _cause(job, err)
            if not held.run_stopped:
                # The log must still end: an interrupted or crashed run is an aborted run to MLPerf.
                # Before run_start the run_stop carries no time to train (docs/results.md).
                meta: dict[str, Any] = {"status": C.ABORTED, "reason": _stop_reason(err, cause, job, held.launcher)}
                if held.run_start is None:
                    meta["before_run_start"] = True
                try:
                    held.mlperf.end(C.RUN_STOP, metadata=meta)
                except files.DiskFull:
                    pass  # the log ends at its last whole record; result.json says why
            if held.watch is not None:
                _finish(held.watch, None, plan)
            if cause is not None:
                raise cause from err
            raise
    finally:
        with shielded():
            held.mlperf.close()
            stop_workers()  # the loaders' worker processes, before the exit's collector finalizes them
        heartbeat.stop()
    return _finish(held.watch, record, plan) or record


def _cause(job: RankJob, err: BaseException) -> Optional[PeerDied]:
    """A peer whose death is what this rank's error (a broken collective, the launcher's SIGTERM)
    reports, named as result.json names it."""
    if job.world.world_size < 2 or not isinstance(err, Exception) and signal_name(err) != "SIGTERM":
        return None
    dead = peers.dead_peer(job.run_dir, job.world.world_size, job.world.rank, err)
    return None if dead is None else PeerDied(*dead)


def _stop_reason(err: BaseException, cause: Optional[PeerDied], job: RankJob, launcher: int) -> str:
    """run_stop's reason: the signal's name, the rank that died, the watchdog's verdict (its SIGTERM stops a
    stalled rank), the launcher's death, or the error, in one line."""
    if cause is not None:
        return f"rank {cause.rank} failed: {cause}"
    name = signal_name(err)
    if name == "SIGINT" and job.world.source == "elastic" and _launcher_gone(launcher):
        # torch's spawn sends its ranks SIGINT when their launcher dies (killed: the out-of-memory killer, a
        # SIGKILL): no one pressed Ctrl-C, and the report must not say so
        return f"the launcher (process {launcher}) ended before this rank ({name} on its death)"
    if name == "SIGTERM":
        verdict = stop_note(job.run_dir, job.world.rank)
        if verdict is not None:
            return verdict
    if name is not None:
        return name
    if isinstance(err, files.DiskFull):
        return f"DiskFull: {err}"
    return type(err).__name__


def _launcher_gone(launcher: int, wait_s: float = 0.25) -> bool:
    """This rank's launcher has ended (the death signal comes as its spawning thread ends, while its other threads,
    the rank's parent until the last one ends, may still be ending). Alive: a Ctrl-C, which reached both."""
    deadline = time.monotonic() + wait_s
    while os.getppid() == launcher and time.monotonic() < deadline:
        time.sleep(0.01)
    return os.getppid() != launcher


def _run(job: RankJob, training: bool, held: _Open) -> RunRecord:
    plan, world, mlperf = job.plan, job.world, held.mlperf
    cfg, spec = plan.cfg, plan.spec
    mlperf.event(C.CACHE_CLEAR, value=clear_page_cache() if plan.config.clear_caches and world.is_main else False)
    init_start = mlperf.start(C.INIT_START)
    device = pick_device(cfg, world.local_rank)
    distributed.init_process_group(world, device)
    watch = held.watch = open_observers(cfg, world, job.run_dir, device, record_file.versions(), job.host_load)
    _log_init(mlperf, plan, world, watch)
    # every rank takes rank 0's master seed: under torchrun each process drew its own
    master = distributed.broadcast_int(plan.seed, device)
    mlperf.event(C.SEED, value=master)
    ctx = context_for(cfg, data_dir=job.data_dir, world=world, device=device, master_seed=master)
    built = build_run(plan, ctx)
    hyper = _log_hyperparameters(mlperf, built, training)
    warm_s = warm_up(built) if training and plan.config.warm_up else None  # compilation, off the clock
    init_s = (mlperf.end(C.INIT_STOP) - init_start) / 1000.0
    log.info("initialised in %.1f s on %s: %s", init_s, watch.platform, ", ".join(f"{k}={v}" for k, v in hyper.items()))
    if init_s > MAX_INIT_S:
        log.warning("initialisation took %.0f s: MLPerf's rules allow %d s before the clock starts", init_s, MAX_INIT_S)

    if world.world_size > 1:
        dist.barrier()  # sync point: every rank starts the clock together
    # throughput mode: the warm-up is a window of its own, so every window counts from its first step
    warmup = timing.warmup_steps(cfg) if training else 0
    meter = ThroughputMeter(warmup, device_sync(device), distributed.sum_over_ranks(device), world.world_size)
    progress = Progress(enabled=plan.config.progress and world.is_main, unit=spec.sample_unit,
                        world_size=world.world_size,
                        max_epochs=plan.config.max_epochs if training else plan.config.throughput_repeats)
    # in order: the meter, the data-wait timer and the loss check measure; the board reports what they measured
    hooks = Hooks([meter, DataWait(warmup, distributed.gather_from_ranks(device)), progress, HeartbeatHook(), watch, DiskCheck(),
                   FiniteLossCheck(device, world.rank),
                   BoardHook(watch.board, spec.task.quality.name if spec.task else "", lambda: _lr(built))])
    base = replace(job.record, seed=master, world_size=world.world_size, device=str(device), platform=watch.platform,
                   accelerator=watch.accelerator, hyperparameters=hyper, init_time_s=init_s, warm_up_s=warm_s,
                   threads=threads.current().record(torch.get_num_threads()))
    if world.is_main:
        record_file.note_initialised(job.run_dir, base)
    if not training:
        w = timing.Windows.of(cfg)
        loop = throughput.measure_throughput(built, warmup_steps=w.warmup_steps, steps=w.steps, repeats=w.repeats,
                                             hooks=hooks, warmup_s=w.warmup_s, window_s=w.window_s,
                                             unit=spec.sample_unit)
        windows = [e.throughput for e in loop.epochs if e.throughput]
        median = statistics.median(windows) if windows and loop.status == SUCCESS else None
        base = replace(base, warmup_steps=loop.warmup_steps if loop.warmup_steps is not None else base.warmup_steps,
                       throughput_steps=loop.window_steps)
        record = _record(base, loop, ttt_s=None, throughput=median, plan=plan)
        if loop.status != SUCCESS:
            return record
        # counted after the windows: a forward that never returns hangs a step under the progress
        # watchdog first, and the one extra forward changes nothing the windows measured
        return _utilisation(built, record, flops.flops_per_sample(built, built.synthetic_batch()), plan.precision)

    task = spec.task
    assert task is not None  # config.check refuses mode=train for a throughput-only model
    epoch_samples = built.task.train_samples() if counts_epochs(spec) else None  # the log's epoch_num a fraction
    judge = Judge(task.quality, task.quality.value(plan.config.model.target, "target"), schedule_of(cfg, epoch_samples),
                  plan.config.max_epochs)
    held.run_start = mlperf.start(C.RUN_START)
    loop = train_to_target(built, judge=judge, mlperf=mlperf, hooks=hooks)  # energy to train counts in here
    reason = loop.reason
    if loop.status == C.ABORTED:
        reason = (f"{task.quality.name} target {task.quality.describe_target(judge.target)} not reached in "
                  f"{plan.config.max_epochs} epochs")
    stop: dict[str, Any] = {"status": C.SUCCESS if loop.status == SUCCESS else C.ABORTED}
    if loop.status == FAILED:
        stop["reason"] = reason  # MLPerf's run_stop knows success and aborted only: the reason says why
    run_stop = mlperf.end(C.RUN_STOP, metadata=stop)
    held.run_stopped = True
    findings = getattr(built.bench, "data_findings", None)  # optional; a collective: every rank calls it
    if findings is not None:
        base = replace(base, data_findings=findings())
    record = _record(base, replace(loop, reason=reason), ttt_s=(run_stop - held.run_start) / 1000.0,
                     throughput=meter.throughput(), mlperf=mlperf, plan=plan)
    if loop.status == FAILED:
        return record
    # counted after run_stop, outside the timed region: the extra forward changes nothing the run measured
    return _utilisation(built, record, flops.flops_per_sample(built, built.synthetic_batch()), plan.precision)


def _utilisation(built: BuiltRun, record: RunRecord, counted: tuple[Optional[float], Optional[str]],
                 precision: str) -> RunRecord:
    """The record with its model FLOPs a sample, achieved TFLOP/s and MFU (harness/run/flops.py) at the
    run's `precision` (the peak it is measured against)."""
    per_sample, why = counted
    return replace(record, **flops.utilisation(per_sample, record.throughput, flops.device_name(built.ctx.device),
                                               precision, record.world_size, why))


def _record(base: RunRecord, loop: LoopResult, *, ttt_s: Optional[float], throughput: Optional[float],
            plan: RunPlan, mlperf: Optional[MLPerfLog] = None) -> RunRecord:
    fell_back = [*([loop.fallback] if loop.fallback else []), *compile_guard.failures()]
    label, path = plan.ran(loop.graph_fell_back)  # the path that ran, after any fallback
    base = replace(base, precision=label, path=path)
    return replace(
        base, fallback="; ".join(fell_back) or None, status=loop.status, time_to_train_s=ttt_s, throughput=throughput, epochs=loop.epochs,
        epochs_to_converge=loop.epochs_to_converge, reason=loop.reason, error=loop.error,
        mlperf_log=str(mlperf.path) if mlperf is not None and mlperf.path else None,
        evals=tuple(Evaluation(e.epoch, e.quality) for e in loop.evals),
        data_wait_s=loop.data_wait_s, data_wait_share=loop.data_wait_share, data_wait_warmup_s=loop.data_wait_warmup_s,
        data_wait_rank=loop.data_wait_rank,
    )


def _lr(built: BuiltRun) -> Optional[float]:
    """The learning rate now (a Python number, or a tensor read once per epoch)."""
    groups = built.bench.optimizer.param_groups
    return float(groups[0]["lr"]) if groups else None


def _finish(watch: Optional[Observers], record: Optional[RunRecord], plan: RunPlan) -> Optional[RunRecord]:
    """Stop the observers; the record gains the telemetry summary. Telemetry and TensorBoard must
    not turn a finished run into a failed one."""
    if watch is None:
        return record
    dataset = plan.cfg.dataset.name if plan.cfg.get("dataset") else None
    hparams = {"model": plan.spec.name, "dataset": dataset, "seed": plan.seed, "world_size": watch.where.world_size,
               "precision": plan.label, "platform": watch.platform}
    results: dict[str, Optional[float]] = {}
    if record is not None:
        hparams.update({f"hp/{k}": v for k, v in record.hyperparameters.items()})
        final = record.evals[-1].quality if record.evals else None
        results = {"result/time_to_train_min": None if record.time_to_train_s is None else record.time_to_train_s / 60,
                   "result/epochs_to_converge": record.epochs_to_converge,
                   "result/final_quality": final if isinstance(final, (int, float)) else None,
                   "result/throughput": record.throughput,
                   "result/data_wait_share": record.data_wait_share,
                   "result/status": {"success": 1.0, "aborted": 0.0, "failed": -1.0}.get(record.status)}
    try:
        summary = watch.finish(ended_normally=record is not None, hparams=hparams, results=results)
    except Exception as err:
        log.warning("telemetry/TensorBoard summary failed: %s", err)
        return record
    return replace(record, telemetry=summary) if record is not None else None
