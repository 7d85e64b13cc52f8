"""One rank of a run: device, seeds, the model, the MLPerf init phase, the loop, and the result.

Rank 0 writes mlperf.log; every rank runs the same code. The caller owns the run directory and
result.json: run_rank fills the RunRecord it is given as the run progresses, so that whatever
happens (target reached, epoch cap, crash, Ctrl-C) the caller can still write what was done.
"""
from __future__ import annotations

import logging
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import torch
import torch.distributed as dist
from omegaconf import DictConfig

from harness import distributed, seeding
from harness.interrupts import shielded
from harness.config import ConfigError
from harness.distributed import SINGLE, World
from harness.interface import Benchmark, Logged, ModelSpec, RunContext
from harness.loop import LoopResult, measure_throughput, train_to_target
from harness.meter import ThroughputMeter
from harness.mlperf_log import C, MLPerfLog
from harness.observe import Observers, open_observers
from harness.precision import PrecisionPolicy, policy, precision_name
from harness.progress import Progress
from harness.results.record import ABORTED, RunRecord

log = logging.getLogger("harness.worker")


@dataclass(frozen=True)
class RankJob:
    cfg: DictConfig  # resolved; cfg.seed is the master seed, already drawn (on rank 0 at least)
    spec: ModelSpec
    run_dir: Path
    data_dir: Optional[Path]
    world: World = SINGLE


def build_benchmark(spec: ModelSpec, ctx: RunContext) -> tuple[Benchmark, PrecisionPolicy]:
    """The model and optimizer as a run trains them, before any DDP wrapper: built by the model,
    then, with master_weights=true, the weights in 16 bits and fp32 copies in the optimizer (which
    must happen before DDP takes the parameters). scripts/ build through here too, so that what
    they measure is what a run trains."""
    precision = policy(str(ctx.cfg.precision), ctx.device)
    bench = spec.build(ctx)
    if ctx.cfg.master_weights:
        precision.keep_master_weights(bench.model, bench.optimizer)
    return bench, precision


def pick_device(cfg: DictConfig, local_rank: int) -> torch.device:
    want = str(cfg.device)
    if want == "cpu" or (want == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ConfigError("device=cuda but PyTorch sees no CUDA device; use device=cpu")
    torch.cuda.set_device(local_rank)
    return torch.device("cuda", local_rank)


def clear_page_cache() -> bool:
    """Drop the OS page cache as MLPerf submissions must; True only if it really happened."""
    try:
        subprocess.run(["sync"], check=False, timeout=120)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError as err:
        log.warning("clear_caches=true but the page cache could not be dropped (%s); logging cache_clear false", err)
        return False


def device_sync(device: torch.device) -> Callable[[], None]:
    """A function that waits for the device's queued work (a no-op on a CPU): the meters' clock."""
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def _sum_over_ranks(device: torch.device):
    if not (dist.is_available() and dist.is_initialized()):
        return lambda values: values

    def all_ranks_sum(values: list[float]) -> list[float]:
        t = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(t)
        return t.tolist()

    return all_ranks_sum


def run_rank(job: RankJob, record: RunRecord) -> None:
    cfg, spec, rank, world = job.cfg, job.spec, job.world.rank, job.world.world_size
    throughput_mode = cfg.mode == "throughput"
    # a throughput measurement is not an MLPerf run: it writes no MLPerf log
    mlperf = MLPerfLog(job.run_dir / "mlperf.log" if rank == 0 and not throughput_mode else None)
    record.mlperf_log = str(mlperf.path) if mlperf.enabled else None
    run_start: Optional[int] = None
    loop_result = LoopResult(status=ABORTED)
    watch: Optional[Observers] = None
    ended_normally = False
    try:
        mlperf.event(C.CACHE_CLEAR, value=clear_page_cache() if cfg.clear_caches and rank == 0 else False)
        init_start = mlperf.start(C.INIT_START)
        device = pick_device(cfg, job.world.local_rank)
        distributed.init_process_group(job.world, device)
        record.device = str(device)
        watch = open_observers(cfg, job, device, record)  # system.json, platform name, TensorBoard, telemetry
        mlperf.event(C.SUBMISSION_BENCHMARK, value=spec.benchmark)
        mlperf.event(C.SUBMISSION_ORG, value=cfg.mlperf.org)
        mlperf.event(C.SUBMISSION_DIVISION, value=str(cfg.mlperf.division))
        mlperf.event(C.SUBMISSION_STATUS, value=str(cfg.mlperf.status))
        mlperf.event(C.SUBMISSION_PLATFORM, value=record.platform)
        mlperf.event("number_of_nodes", value=job.world.nodes)
        # ranks per node: GPUs, or CPU processes with device=cpu (docs/results.md)
        mlperf.event("accelerators_per_node", value=job.world.local_world_size)
        mlperf.event("precision", value=precision_name(cfg))  # a harness key, for grouping runs

        # every rank takes rank 0's master seed: under torchrun each process drew its own
        master = distributed.broadcast_int(int(cfg.seed), device)
        record.seed = master
        seeds = seeding.derive(master, rank, world)
        seeding.seed_everything(seeds.rank)
        mlperf.event(C.SEED, value=seeds.master)

        ctx = RunContext(
            cfg=cfg, data_dir=job.data_dir, device=device, rank=rank, world_size=world,
            seed=seeds.rank, shared_seed=seeds.shared,
            synthetic=throughput_mode,
        )
        bench, precision = build_benchmark(spec, ctx)
        if world > 1:
            bench.model = distributed.wrap_ddp(bench.model, cfg.ddp_bucket_mb)
        hyper = bench.hyperparameters()
        for key, value in hyper.items():
            if isinstance(value, Logged):
                mlperf.event(key, value=value.value, metadata=value.metadata)
            else:
                mlperf.event(key, value=value)
        mlperf.event(C.TRAIN_SAMPLES, value=bench.train_samples())
        mlperf.event(C.EVAL_SAMPLES, value=bench.eval_samples())
        record.hyperparameters = {k: v.value if isinstance(v, Logged) else v for k, v in hyper.items()}
        record.global_batch_size = record.hyperparameters.get("global_batch_size")
        init_stop = mlperf.end(C.INIT_STOP)
        record.init_time_s = (init_stop - init_start) / 1000.0
        log.info("initialised in %.1f s on %s: %s", record.init_time_s, record.platform,
                 ", ".join(f"{k}={v}" for k, v in record.hyperparameters.items()))

        if world > 1:
            dist.barrier()  # every rank starts the clock together
        sync, all_ranks_sum = device_sync(device), _sum_over_ranks(device)
        progress = Progress(enabled=cfg.progress and rank == 0,
                            max_epochs=cfg.throughput_repeats if throughput_mode else cfg.max_epochs,
                            unit=spec.sample_unit)
        if throughput_mode:
            meter = ThroughputMeter(0, sync, all_ranks_sum, world)  # warm-up is a window of its own
            watch.begin()
            try:
                measure_throughput(
                    bench, warmup_steps=cfg.warmup_steps, steps=cfg.throughput_steps,
                    repeats=cfg.throughput_repeats, precision=precision, meter=meter, progress=progress,
                    result=loop_result, board=watch.board)
            finally:
                watch.end()
                progress.clear()
                _fill_from_loop(record, loop_result)
            windows = [e.throughput for e in loop_result.epochs if e.throughput]
            record.throughput = statistics.median(windows) if windows else None
            record.status = loop_result.status
            ended_normally = True
            return
        meter = ThroughputMeter(cfg.warmup_steps, sync, all_ranks_sum, world)
        run_start = mlperf.start(C.RUN_START)
        watch.begin()  # energy to train counts from run_start to run_stop
        try:
            train_to_target(
                bench, target=cfg.model.target, max_epochs=cfg.max_epochs, eval_every=cfg.eval_every,
                precision=precision, meter=meter, progress=progress, mlperf=mlperf,
                quality_name=spec.quality_metric, result=loop_result, board=watch.board,
            )
        finally:
            watch.end()
            progress.clear()
            _fill_from_loop(record, loop_result)
        record.throughput = meter.throughput()
        run_stop = mlperf.end(C.RUN_STOP, metadata={"status": loop_result.status})
        record.set_time_to_train(run_start, run_stop)
        record.account_overhead()
        record.status = loop_result.status
        if loop_result.status == ABORTED:
            record.reason = f"{spec.quality_metric} target {cfg.model.target} not reached in {cfg.max_epochs} epochs"
        ended_normally = True
    except BaseException as err:
        if run_start is not None:
            # The log must still end: an interrupted or crashed run is an aborted run to MLPerf.
            why = "interrupted" if isinstance(err, KeyboardInterrupt) else type(err).__name__
            with shielded():  # the launcher's forwarded signal must not cut the last line off
                stop = mlperf.end(C.RUN_STOP, metadata={"status": C.ABORTED, "reason": why})
                record.set_time_to_train(run_start, stop)
        raise
    finally:
        with shielded():
            mlperf.close()
        if watch is not None:
            _finish(watch, record, ended_normally)


def _finish(watch: Observers, record: RunRecord, ended_normally: bool) -> None:
    try:
        watch.finish(record, ended_normally=ended_normally)
    except Exception as err:  # telemetry and TensorBoard must not turn a finished run into a failed one
        log.warning("telemetry/TensorBoard summary failed: %s", err)


def _fill_from_loop(record: RunRecord, result: LoopResult) -> None:
    record.epochs_run = len(result.epochs)
    record.epochs = [
        {"epoch": e.epoch, "train_loss": e.train_loss, "train_seconds": e.train_seconds,
         "eval_seconds": e.eval_seconds, "throughput": e.throughput, "quality": e.quality}
        for e in result.epochs
    ]
    record.evals = [{"epoch": e.epoch, "quality": e.quality} for e in result.epochs if e.quality is not None]
    record.final_quality = record.evals[-1]["quality"] if record.evals else None
    record.epochs_to_converge = result.epochs_to_converge

