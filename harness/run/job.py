"""One run of `python -m harness.train`, as the process that owns its run directory sees it: the
record it starts, the ranks it launches, how the run ended, and the result.json it always leaves.

    python -m harness.train model=ncf seed=1       # run_job, once (a -m sweep: once per job)

Under torchrun or srun each process is one rank of the run and runs this too; only rank 0 writes
the run's files. Exit-status decisions are harness/train.py's.
"""
from __future__ import annotations

import logging
import traceback
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from harness import files, registry
from harness.errors import ConfigError
from harness.interface import DataError
from harness.observe import console, host_load
from harness.observe.progress import figure
from harness.run import record_file as rec
from harness.record import ABORTED, FAILED, INPUT_BOUND, Failure, RunEnd, RunRecord
from harness.run import distributed, threads, windows
from harness.run.distributed import World
from harness.signals import shielded, signal_name
from harness.run.flops import describe
from harness.run.launch import RankFailed, launch, uses_cuda
from harness.run.plan import RunPlan, counts_epochs, plan_run

log = logging.getLogger("harness.train")


def run_job(cfg: DictConfig) -> RunRecord:
    """One run in the run directory Hydra made for it; always leaves a result.json behind."""
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    world = distributed.from_environment()
    spec = registry.get(str(cfg.model.name))  # once: the rest of the run is handed it
    main_rank = world is None or world.is_main
    if world is not None and not world.is_main:
        console.setup_rank_logging(world.rank, run_dir)
    files.reset()
    files.watch_logging()  # a full disk stops the run instead of a traceback per log line
    # the record's cheap facts first: a signal landing in what follows (the versions' imports, the host's
    # load) still ends in a result.json
    start = RunRecord(run_dir=str(run_dir), started_at=_now(), command=tuple(HydraConfig.get().overrides.task),
                      mode=str(cfg.mode), world_size=cfg.gpus * cfg.nodes if world is None else world.world_size)
    reserve: Optional[files.Reserve] = None
    monitor: Optional[host_load.HostLoadMonitor] = None
    load: Optional[dict] = None
    log_path = run_dir / "mlperf.log" if main_rank else None
    rank0: Optional[RunRecord] = None
    end: Optional[RunEnd] = None
    stopped: Optional[KeyboardInterrupt] = None
    try:
        try:
            reserve = files.Reserve(run_dir / ".reserve") if main_rank else None  # room for the run's own end
            start = replace(start, versions=rec.versions(), warmup_steps=windows.warmup_steps(cfg),
                            threads=threads.current().record())
            if main_rank:
                monitor, load = _watch_host(world)
            # the precision and fast path the device gets (a rank of torchrun or srun decides for itself; an
            # option on the command line wins over the model's fast path) and the seed: from here the run
            # reads its plan and never writes its config (what a step learns is a field of what it returns)
            plan = plan_run(cfg, spec, uses_cuda(cfg), given=HydraConfig.get().overrides.task)
            start = _record_plan(plan, start)
            if main_rank:
                files.write_atomic(run_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
            log.info("%s on %s, seed %d -> %s", spec.name, start.dataset or "synthetic batches", plan.seed, run_dir)
            # synthetic batches need no data
            data_dir = None if not plan.training or spec.task is None else spec.task.prepare(cfg)
            rank0 = launch(plan, run_dir, data_dir, world, start, load)
        except KeyboardInterrupt as err:
            end = RunEnd(ABORTED, _interrupted(err, log_path if cfg.mode == "train" else None))
            stopped = err
            raise
        except Exception as err:
            end = _failed(err, cfg)
    finally:
        # Held until result.json is written: a signal landing here (Ctrl-C just after run_stop) lost it. One
        # that came as a finished run ended is raised after, carrying the record (its end stands: the run
        # finished), so the command still stops, and a sweep starts no further run.
        try:
            with shielded():
                record = _close(cfg, world, main_rank, run_dir, start, rank0, end, log_path, reserve, monitor, load)
        except KeyboardInterrupt as late:
            late.run_ended = record  # type: ignore[attr-defined]
            raise
        if stopped is not None:
            stopped.record = record  # type: ignore[attr-defined]  # harness.train: what it says of the stop
    return record


def _close(cfg: DictConfig, world: Optional[World], main_rank: bool, run_dir: Path, start: RunRecord,
           rank0: Optional[RunRecord], end: Optional[RunEnd], log_path: Optional[Path],
           reserve: Optional[files.Reserve], monitor: Optional[host_load.HostLoadMonitor],
           load: Optional[dict]) -> RunRecord:
    """The run's record, written to result.json by the main rank, and the console's account of it."""
    if reserve is not None:
        reserve.release()
    during = _host_load_during(monitor, load, run_dir / "mlperf.log") if monitor and load else None
    record = rec.assemble(start, rank0, end, log_path, finished_at=_now(),
                          **({"host_load": during} if during is not None else {}))
    if world is None and cfg.nodes > 1 and rank0 is None and end is None:
        log.info("run dir: %s (rank 0 ran on another node, whose launcher writes result.json)", run_dir)
    elif main_rank:
        try:
            rec.write(record, run_dir / "result.json")
        except files.DiskFull as err:
            record = replace(record, status=FAILED, reason=str(err))
        _summarise(record)
    return record


def _record_plan(plan: RunPlan, start: RunRecord) -> RunRecord:
    """The plan's facts in the record: which model, benchmark, metric and target, the seed, the precision
    and the path. harness.train checked the config already."""
    cfg, spec = plan.cfg, plan.spec
    start = replace(start, model=spec.name, benchmark=spec.benchmark, seed=plan.seed, precision=plan.label,
                    path=plan.path, throughput_unit=f"{spec.sample_unit}/s",
                    dataset=cfg.dataset.name if cfg.get("dataset") else "")
    if spec.task is None:
        return start
    target = cfg.model.target
    return replace(start, quality_metric=spec.task.quality.name, quality_direction=spec.task.quality.direction,
                         target=OmegaConf.to_object(target) if OmegaConf.is_config(target) else target,
                         epoch_unit="samples" if cfg.model.get("eval_every_samples") and not counts_epochs(spec)
                         else "epochs")


def _failed(err: Exception, cfg: Optional[DictConfig] = None) -> RunEnd:
    """A failed run's end: the one-line reason, and the error (its traceback in train.log)."""
    if isinstance(err, RankFailed):
        if err.child_traceback:  # the console gets the one-line cause at the end; train.log all of it
            log.error("rank %d's traceback:\n%s", err.rank, err.child_traceback, extra=console.FILE_ONLY)
        reason = str(err) + _memory_fix(str(err), cfg)
        return RunEnd(FAILED, reason, Failure("RankFailed", reason, err.rank, err.child_traceback))
    if files.is_full(err):
        full = err if isinstance(err, files.DiskFull) else files.DiskFull(getattr(err, "filename", None) or "a file",
                                                                         err)  # type: ignore[arg-type]
        return RunEnd(FAILED, str(full), Failure("DiskFull", str(full), 0))
    if isinstance(err, (ConfigError, DataError)):
        return RunEnd(FAILED, str(err), Failure(type(err).__name__, str(err), 0))
    # a crash: the result names it, train.log keeps the traceback
    trace = traceback.format_exc()
    log.error("run failed:\n%s", trace, extra=console.FILE_ONLY)
    reason = f"{type(err).__name__}: {err}".splitlines()[0]
    return RunEnd(FAILED, reason + _memory_fix(reason, cfg), Failure(type(err).__name__, str(err), 0, trace))


def _memory_fix(reason: str, cfg: Optional[DictConfig]) -> str:
    """What to change when the GPU ran out of memory: the batch per rank (every model's model.batch_size)."""
    name = (OmegaConf.select(cfg, "model.name") if cfg is not None else None) or "NAME"
    sizes = f"python -m harness.train --help model={name} lists them"
    if "DefaultCPUAllocator" in reason:  # the host's memory, on a CPU run: a model option or the batch
        return f"; the host's memory cannot hold it: lower the model's sizes ({sizes}) or model.batch_size"
    if "out of memory" not in reason or "CUDA" not in reason:
        return ""
    batch = OmegaConf.select(cfg, "model.batch_size") if cfg is not None else None
    if batch == 1:  # halving is no answer: the model itself, its gradients and optimizer state fill the GPU
        return ("; the model does not fit on the GPU even at 1 per rank: a GPU with more memory, more GPUs for a "
                f"model that shards itself (gpus=N), or smaller sizes ({sizes})")
    smaller = f"model.batch_size={max(1, batch // 2)}" if isinstance(batch, int) else "model.batch_size=N"
    now = f" (now {batch} per rank)" if isinstance(batch, int) else ""
    return (f"; the batch does not fit on the GPU{now}: lower it with {smaller}, or in harness.bench "
            f"--set {smaller}")


def _watch_host(world: Optional[World]) -> tuple[host_load.HostLoadMonitor, dict]:
    """How busy the machine is now (the run's own processes left out), and a monitor for the rest
    of the run; a busy machine is said on the console, since time to train then measures it too."""
    root = host_load.run_root("single" if world is None else world.source)
    start = host_load.summary(host_load.measure(root), None, host_load.load_average())
    if start["busy"]:
        log.warning("warning: the machine is busy: %s", start["note"])
    return host_load.HostLoadMonitor(root).start(), start


def _host_load_during(monitor: host_load.HostLoadMonitor, start: dict, log_path: Path) -> dict:
    monitor.stop()
    t0 = t1 = None
    if log_path.is_file():  # the timed region as the log has it; a throughput run: all of it
        from harness.results.read.parse import LogError, parse_file

        try:
            summary = parse_file(log_path)
            t0, t1 = (None if t is None else t / 1000 for t in (summary.run_start_ms, summary.run_stop_ms))
        except LogError:
            pass
    during = host_load.summary(start["other_cpu_pct_start"], monitor.mean(t0, t1), start["load_avg_start"],
                               start["cpus"])
    if during["busy"] and not start["busy"]:
        log.warning("warning: the machine got busy during the run: %s", during["note"])
    return during


def _interrupted(err: KeyboardInterrupt, log_path: Optional[Path]) -> str:
    """result.json's reason: the signal, where it went, and whether a training run's timed region
    had begun (a throughput measurement has no MLPerf log)."""
    reason = f"interrupted ({signal_name(err)}{getattr(err, 'where', '')})"
    started = log_path is None or (log_path.is_file() and '"key": "run_start"' in log_path.read_text(errors="replace"))
    return reason if started else reason + " before run_start: no time to train"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _summarise(r: RunRecord) -> None:
    """The console's account of the run: the result line, the data wait, the overhead, the run dir."""
    if r.status == FAILED:
        log.error("error: %s", r.reason)
        log.info("run dir: %s", r.run_dir)
        return
    wait = _data_wait_line(r)
    if r.mode == "throughput":
        if not r.throughput:
            # ended before its windows did (a signal, a limit, a failed window): why there is no figure, not a
            # line of the empty fields of a measurement that never happened
            log.info("THROUGHPUT: n/a (%s: %s); %s", r.status, r.reason or "no window finished", r.precision)
            log.info("run dir: %s", r.run_dir)
            return
        tput = f"{figure(r.throughput)} {r.throughput_unit}"
        log.info("THROUGHPUT: %s (%s warm-up steps left out), %s, %s, global batch %s; %s",
                 tput, r.warmup_steps, r.platform, r.precision, r.global_batch_size,
                 describe(r.model_flops_per_sample, r.achieved_tflops, r.mfu, r.mfu_note))
        if wait:
            log.info(wait)
        log.info("run dir: %s", r.run_dir)
        return
    spec = registry.get(r.model) if r.model else None
    quality = (spec.task.quality.describe(r.final_quality) if r.final_quality is not None and spec and spec.task
               else "no evaluation")
    ttt = f"{r.time_to_train_s:.1f} s ({r.time_to_train_min:.2f} min)" if r.time_to_train_s is not None else "n/a"
    if r.epochs_to_converge is not None:
        epochs = f"{r.epochs_to_converge:,g} {r.epoch_unit} to converge"
    else:
        epochs = f"{r.epochs_run} epochs"
    tput = f"{r.throughput:,.0f} {r.throughput_unit}" if r.throughput else "throughput n/a"
    target = spec.task.quality.describe_target(r.target) if spec and spec.task and r.target is not None else r.target
    line = (f"{r.status.upper()}: {quality} (target {target}), time to train {ttt}, {epochs}, {tput}, {r.precision}; "
            + describe(r.model_flops_per_sample, r.achieved_tflops, r.mfu, r.mfu_note))
    if r.reason:
        line += f" [{r.reason}]"
    log.info(line)
    if r.host_load and r.host_load.get("busy"):
        log.warning("warning: %s", r.host_load["note"])
    if wait:
        log.info(wait)
    startup = _startup_wait_line(r)
    if startup:
        log.warning(startup)
    if r.overhead_s is not None and r.overhead_fraction is not None:
        log.info("harness overhead: %.2f s, %.2f%% of time to train (outside training steps and evaluation)",
                 r.overhead_s, 100 * r.overhead_fraction)
    log.info("run dir: %s", r.run_dir)


def _data_wait_line(r: RunRecord) -> Optional[str]:
    if r.data_wait_s is None:
        return None
    share = f", {100 * r.data_wait_share:.1f}% of training time" if r.data_wait_share is not None else ""
    who = f"rank {r.data_wait_rank}, the longest of {r.world_size} ranks' waits" if r.data_wait_rank is not None \
        else "waiting"
    idle = ": the time the GPU stood idle for them" if str(r.device).startswith("cuda") else ""
    line = f"data wait: {r.data_wait_s:.2f} s{share} ({who} for batches{idle})"
    if r.data_wait_warmup_s is not None and r.warmup_steps:
        line += f"; the {r.warmup_steps} warm-up steps before it waited {r.data_wait_warmup_s:.2f} s"
    return line


def _startup_wait_line(r: RunRecord) -> Optional[str]:
    """A warning where the warm-up steps' wait (the loaders' start-up, the first batches) is over
    INPUT_BOUND of the time to train: left out of the data-wait share, it still held the clock back."""
    if r.data_wait_warmup_s is None or not r.time_to_train_s or not r.warmup_steps:
        return None
    share = r.data_wait_warmup_s / r.time_to_train_s
    if share <= INPUT_BOUND:
        return None
    return (f"warning: the loaders' start-up held the time to train back: its first {r.warmup_steps} steps waited "
            f"{r.data_wait_warmup_s:.2f} s for their batches, {100 * share:.1f}% of it")
