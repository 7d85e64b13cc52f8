"""One rank of a run: device, seeds, the MLPerf init phase, the loop, and the rank's result.

Rank 0 writes mlperf.log; every rank runs the same code. `run_rank` returns an immutable RankResult
when the run ends normally (target reached or epoch cap); an interrupted or crashed run raises, after
ending its MLPerf log with run_stop aborted, and the caller rebuilds what was done from that log.

    python -m harness.train model=ncf seed=1       # one rank, in the command's own process
"""
from __future__ import annotations

import logging
import statistics
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

import torch
import torch.distributed as dist
from omegaconf import DictConfig, OmegaConf

from harness import registry
from harness.interface import EvalSchedule, Logged, ModelSpec
from harness.observe import heartbeat
from harness.observe.meter import ThroughputMeter
from harness.observe.progress import Progress
from harness.observe.watchers import Observers, Placement, open_observers
from harness.results.record import versions as software_versions
from harness.run import distributed
from harness.run.build import BuiltRun, build_run, clear_page_cache, context_for, device_sync, pick_device
from harness.run.distributed import SINGLE, World
from harness.run import threads
from harness.run.interrupts import shielded, signal_name
from harness.run.loop import Judge, LoopResult, measure_throughput, train_to_target
from harness.run.mlperf_log import C, MLPerfLog
from harness.run.precision import precision_name

log = logging.getLogger("harness.session")


@dataclass(frozen=True)
class RankJob:
    cfg: DictConfig  # resolved; cfg.seed is the master seed, already drawn (on rank 0 at least)
    run_dir: Path
    data_dir: Optional[Path]
    world: World = SINGLE
    host_load: Optional[dict] = None  # other processes' CPU at the start, for system.json


@dataclass(frozen=True)
class RankResult:
    """What one rank's run did (rank 0's is the run's); train.py turns it into result.json."""

    status: str  # success | aborted (target not reached by the epoch cap)
    mode: str
    seed: int
    world_size: int
    device: str
    platform: str
    accelerator: str
    hyperparameters: dict[str, Any]
    init_time_s: Optional[float]
    time_to_train_s: Optional[float]
    throughput: Optional[float]  # summed over ranks; mode=throughput: the median window
    epochs: tuple[dict, ...]  # per epoch (per window in mode=throughput): loss, seconds, throughput, quality
    epochs_to_converge: Optional[float]
    reason: Optional[str] = None
    telemetry: Optional[dict] = None
    mlperf_log: Optional[str] = None
    evals: tuple[dict, ...] = field(default=())
    threads: Optional[dict] = None  # the OpenMP threads and wait policy this rank ran with
    data_findings: Optional[dict] = None  # what the model's loader dropped or repaired (Benchmark.data_findings)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def schedule_of(cfg: DictConfig) -> EvalSchedule:
    """The model's evaluation schedule; the top-level eval_every overrides the model's epoch count."""
    m = cfg.model
    return EvalSchedule.of(every=cfg.eval_every, offset=m.get("eval_offset") or 0, epochs=m.get("eval_epochs"),
                           every_samples=m.get("eval_every_samples"))


def _log_init(mlperf: MLPerfLog, spec: ModelSpec, cfg: DictConfig, world: World, watch: Observers) -> None:
    mlperf.event(C.SUBMISSION_BENCHMARK, value=spec.benchmark)
    mlperf.event(C.SUBMISSION_ORG, value=cfg.mlperf.org)
    mlperf.event(C.SUBMISSION_DIVISION, value=str(cfg.mlperf.division))
    mlperf.event(C.SUBMISSION_STATUS, value=str(cfg.mlperf.status))
    mlperf.event(C.SUBMISSION_PLATFORM, value=watch.platform)
    mlperf.event("number_of_nodes", value=world.nodes)
    # ranks per node: GPUs, or CPU processes with device=cpu (docs/results.md)
    mlperf.event("accelerators_per_node", value=world.local_world_size)
    mlperf.event("precision", value=precision_name(cfg))  # a harness key, for grouping runs


def _log_hyperparameters(mlperf: MLPerfLog, built: BuiltRun, training: bool) -> dict[str, Any]:
    hyper = built.bench.hyperparameters()
    for key, value in hyper.items():
        if isinstance(value, Logged):
            mlperf.event(key, value=value.value, metadata=value.metadata)
        else:
            mlperf.event(key, value=value)
    if training:
        mlperf.event(C.TRAIN_SAMPLES, value=built.bench.train_samples())
        mlperf.event(C.EVAL_SAMPLES, value=built.bench.eval_samples())
    return {k: v.value if isinstance(v, Logged) else v for k, v in hyper.items()}


@dataclass
class _Open:
    """What a rank has open and must close whatever happens."""

    mlperf: MLPerfLog
    watch: Optional[Observers] = None
    run_start: Optional[int] = None
    run_stopped: bool = False


def run_rank(job: RankJob) -> RankResult:
    cfg, world = job.cfg, job.world
    spec = registry.get(str(cfg.model.name))
    training = cfg.mode != "throughput"
    # a throughput measurement is not an MLPerf run: it writes no MLPerf log
    held = _Open(MLPerfLog(job.run_dir / "mlperf.log" if world.is_main and training else None))
    if world.world_size > 1:
        heartbeat.start(job.run_dir, world.rank)
    try:
        result = _run(job, spec, training, held)
    except BaseException as err:
        if not held.run_stopped:
            # The log must still end: an interrupted or crashed run is an aborted run to MLPerf.
            # Before run_start the run_stop carries no time to train (docs/results.md).
            meta = {"status": C.ABORTED, "reason": signal_name(err) or type(err).__name__}
            if held.run_start is None:
                meta["before_run_start"] = True
            with shielded():  # the launcher's forwarded signal must not cut the last line off
                held.mlperf.end(C.RUN_STOP, metadata=meta)
        if held.watch is not None:
            _finish(held.watch, None, cfg, spec)
        raise
    finally:
        with shielded():
            held.mlperf.close()
        heartbeat.stop()
    return _finish(held.watch, result, cfg, spec)


def _run(job: RankJob, spec: ModelSpec, training: bool, held: _Open) -> RankResult:
    cfg, world, mlperf = job.cfg, job.world, held.mlperf
    mlperf.event(C.CACHE_CLEAR, value=clear_page_cache() if cfg.clear_caches and world.is_main else False)
    init_start = mlperf.start(C.INIT_START)
    device = pick_device(cfg, world.local_rank)
    distributed.init_process_group(world, device)
    where = Placement(world.rank, world.local_rank, world.world_size, world.local_world_size,
                      world.node_rank, world.nodes)
    watch = held.watch = open_observers(cfg, where, job.run_dir, device, software_versions(), job.host_load)
    _log_init(mlperf, spec, cfg, world, watch)
    # every rank takes rank 0's master seed: under torchrun each process drew its own
    master = distributed.broadcast_int(int(cfg.seed), device)
    mlperf.event(C.SEED, value=master)
    ctx = context_for(cfg, data_dir=job.data_dir, world=world, device=device, master_seed=master)
    built = build_run(cfg, ctx)
    hyper = _log_hyperparameters(mlperf, built, training)
    init_s = (mlperf.end(C.INIT_STOP) - init_start) / 1000.0
    log.info("initialised in %.1f s on %s: %s", init_s, watch.platform, ", ".join(f"{k}={v}" for k, v in hyper.items()))

    if world.world_size > 1:
        dist.barrier()  # sync point: every rank starts the clock together
    progress = Progress(enabled=cfg.progress and world.is_main, unit=spec.sample_unit,
                        max_epochs=cfg.max_epochs if training else cfg.throughput_repeats)
    sync, all_ranks_sum = device_sync(device), distributed.sum_over_ranks(device)
    facts = dict(cfg=cfg, seed=master, world=world, device=device, watch=watch, hyper=hyper, init_s=init_s)
    if not training:
        meter = ThroughputMeter(0, sync, all_ranks_sum, world.world_size)  # warm-up is a window of its own
        heartbeat.set_phase("train")
        watch.begin()
        try:
            loop = measure_throughput(built.bench, warmup_steps=cfg.warmup_steps, steps=cfg.throughput_steps,
                                      repeats=cfg.throughput_repeats, precision=built.precision, meter=meter,
                                      progress=progress, board=watch.board)
        finally:
            watch.end()
            progress.clear()
        windows = [e.throughput for e in loop.epochs if e.throughput]
        return _result(loop, **facts, ttt_s=None, throughput=statistics.median(windows) if windows else None)

    task = spec.task
    target = OmegaConf.to_object(cfg.model.target) if OmegaConf.is_config(cfg.model.target) else cfg.model.target
    judge = Judge(task.quality, task.quality.value(target, "target"), schedule_of(cfg), int(cfg.max_epochs))
    meter = ThroughputMeter(cfg.warmup_steps, sync, all_ranks_sum, world.world_size)
    held.run_start = mlperf.start(C.RUN_START)
    heartbeat.set_phase("train")
    watch.begin()  # energy to train counts from run_start to run_stop
    try:
        loop = train_to_target(built.bench, judge=judge, precision=built.precision, meter=meter, progress=progress,
                               mlperf=mlperf, board=watch.board)
    finally:
        watch.end()
        progress.clear()
    run_stop = mlperf.end(C.RUN_STOP, metadata={"status": loop.status})
    held.run_stopped = True
    reason = None if loop.status == C.SUCCESS else (
        f"{task.quality.name} target {task.quality.describe_target(judge.target)} not reached in "
        f"{cfg.max_epochs} epochs")
    findings = getattr(built.bench, "data_findings", None)  # optional; a collective: every rank calls it
    return replace(_result(loop, **facts, ttt_s=(run_stop - held.run_start) / 1000.0, throughput=meter.throughput(),
                           reason=reason, mlperf=mlperf), data_findings=findings() if findings else None)


def _result(loop: LoopResult, *, cfg: DictConfig, seed: int, world: World, device, watch: Observers,
            hyper: dict[str, Any], init_s: float, ttt_s: Optional[float], throughput: Optional[float],
            reason: Optional[str] = None, mlperf: Optional[MLPerfLog] = None) -> RankResult:
    epochs = tuple({"epoch": e.epoch, "train_loss": e.train_loss, "train_seconds": e.train_seconds,
                    "eval_seconds": e.eval_seconds, "throughput": e.throughput, "quality": e.quality}
                   for e in loop.epochs)
    return RankResult(
        status=loop.status, mode=str(cfg.mode), seed=seed, world_size=world.world_size, device=str(device),
        platform=watch.platform, accelerator=watch.accelerator, hyperparameters=hyper, init_time_s=init_s,
        time_to_train_s=ttt_s, throughput=throughput, epochs=epochs, epochs_to_converge=loop.epochs_to_converge,
        reason=reason, mlperf_log=str(mlperf.path) if mlperf is not None and mlperf.path else None,
        evals=tuple({"epoch": e, "quality": q} for e, q in loop.evals),
        threads=threads.current().record(torch.get_num_threads()),
    )


def _finish(watch: Optional[Observers], result: Optional[RankResult], cfg: DictConfig,
            spec: ModelSpec) -> Optional[RankResult]:
    """Stop the observers; the result gains the telemetry summary. Telemetry and TensorBoard must
    not turn a finished run into a failed one."""
    if watch is None:
        return result
    hparams = {"model": spec.name, "dataset": cfg.dataset.name if cfg.get("dataset") else None, "seed": cfg.seed,
               "world_size": watch.where.world_size, "precision": precision_name(cfg), "platform": watch.platform}
    results = {}
    if result is not None:
        hparams.update({f"hp/{k}": v for k, v in result.hyperparameters.items()})
        final = result.evals[-1]["quality"] if result.evals else None
        results = {"result/time_to_train_min": None if result.time_to_train_s is None else result.time_to_train_s / 60,
                   "result/epochs_to_converge": result.epochs_to_converge,
                   "result/final_quality": final if isinstance(final, (int, float)) else None,
                   "result/throughput": result.throughput,
                   "result/status": {"success": 1.0, "aborted": 0.0}.get(result.status)}
    try:
        summary = watch.finish(ended_normally=result is not None, hparams=hparams, results=results)
    except Exception as err:
        log.warning("telemetry/TensorBoard summary failed: %s", err)
        return result
    return replace(result, telemetry=summary) if result is not None else None
