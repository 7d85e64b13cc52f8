"""Start the ranks of a run.

- One rank (gpus=1, nodes=1): in this process, watched by a thread of it (harness/run/watchdog.py).
- Several (gpus=N and/or nodes=M): torch.distributed's elastic launcher starts N ranks on this host
  (c10d rendezvous; for one node, on loopback with a free port, whatever this host's name resolves to;
  `rdzv_endpoint` for several) with no restarts, since a restarted run would corrupt its time to train.
  When any rank fails the launcher stops the others and this process reports the first failure with its
  rank and traceback (in train.log; the console gets one line). A rank that stops making progress is
  stopped by the watchdog (harness/run/watchdog.py). Each spawned rank gets the thread policy chosen here
  for N ranks (harness/run/threads.py); the launcher's temporary files stay inside the run directory.
- Already distributed (torchrun, srun/submitit): this process is one rank of that world; it joins it,
  and each node's local rank 0 watches the node's other ranks.

    python -m harness.train model=ncf device=cpu gpus=2 seed=1
"""
from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
import uuid
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from harness import fastpath, registry
from harness.errors import ConfigError
from harness.fastpath import check_device
from harness.observe import console
from harness.run import distributed, rendezvous, threads
from harness.run.build import QUEUES, hardware_queues
from harness.run.distributed import World
from harness.signals import Stopped, signal_number, spawning_ranks, stop_on_sigterm, take_ctrl_c
from harness.run.process_exit import before_exit
from harness.record import RunRecord
from harness.run.plan import RunPlan, read_plan
from harness.run.session import PeerDied, RankJob, run_rank
from harness.run.watchdog import Watchdog

log = logging.getLogger("harness.launch")


class RankFailed(RuntimeError):
    """A rank of a multi-rank run failed; carries the rank and that rank's own traceback.
    `stalled`: the watchdog stopped it, and the message says so in full."""

    def __init__(self, rank: int, message: str, traceback: Optional[str], stalled: bool = False):
        super().__init__(message if stalled else f"rank {rank} failed: {message}")
        self.rank = rank
        self.child_traceback = traceback


def check_resources(cfg: DictConfig) -> None:
    """Refuse, before anything starts, a run this host cannot hold. `cfg` resolved already (fastpath.resolve:
    the precision and fast path this host's device gets, by the command's checks or the job)."""
    if distributed.from_environment() is not None:
        return  # the outside launcher decided the layout
    wants_cuda = uses_cuda(cfg)
    if cfg.get("master_weights") and str(cfg.precision) not in ("amp", "bf16"):
        raise ConfigError(f"master_weights=true keeps fp16 or bf16 weights and this run trains in {cfg.precision} "
                          "(this host has no GPU): add precision=bf16")
    if cfg.get("fp8") and str(cfg.precision) not in ("amp", "bf16"):
        raise ConfigError(f"fp8=true multiplies in fp8 beside bf16 or fp16 autocast and this run trains in "
                          f"{cfg.precision} (this host has no GPU): add precision=bf16")
    check_device(cfg.precision, wants_cuda, where=" and this host has none")  # device=auto without a GPU
    fastpath.check_compiled(cfg, wants_cuda, where=" and this host has none")
    if cfg.get("cuda_graph") and not wants_cuda:
        raise ConfigError("cuda_graph=true captures CUDA work and this host has no GPU: run it on one, or leave "
                          "cuda_graph out")
    if wants_cuda:
        have = torch.cuda.device_count()
        if have == 0:
            raise ConfigError("device=cuda but PyTorch sees no CUDA device; use device=cpu")
        if cfg.gpus > have:
            raise ConfigError(f"gpus={cfg.gpus} but this host has {have} GPU(s); ask for at most {have}")
    if not wants_cuda:
        crowded = threads.far_too_many_ranks(cfg.gpus)
        if crowded:
            raise ConfigError(crowded)
    if cfg.nodes > 1 and not (cfg.rdzv_endpoint and cfg.run_id):
        raise ConfigError(f"nodes={cfg.nodes} needs rdzv_endpoint=HOST:PORT and run_id=NAME, the same on "
                          "every node (or hydra/launcher=slurm, where SLURM places the ranks)")
    if cfg.rdzv_endpoint and cfg.gpus * cfg.nodes > 1:  # the host the launcher's rendezvous would retry for minutes
        rendezvous.check_endpoint(str(cfg.rdzv_endpoint))


def launch(plan: RunPlan, run_dir: Path, data_dir: Optional[Path], world: Optional[World], record: RunRecord,
           host_load: Optional[dict] = None) -> Optional[RunRecord]:
    """Run every rank of the run; returns rank 0's record (this rank's own when this process is one
    rank of an outside launcher's world), or None when rank 0 ran on another node. `record`: what
    the command knows of the run. A failed or interrupted run raises."""
    cfg = plan.cfg
    if world is not None:  # torchrun / srun: this process is one rank
        log.info("world: %s", world.describe())
        job = RankJob(plan=plan, run_dir=run_dir, data_dir=data_dir, world=world, host_load=host_load, record=record)
        with _node_watchdog(cfg, run_dir, world) as dog:
            try:
                return _run_in_process(job)
            except PeerDied as err:  # a crash that a dead peer caused names that peer, not the rank that saw it
                if dog is not None and dog.verdict is not None:
                    raise RankFailed(dog.verdict[0], dog.verdict[1], None, stalled=True) from err
                raise RankFailed(err.rank, str(err), None) from err
            except BaseException as err:  # torchrun's SIGTERM too, once the stalled rank it stopped is gone
                if dog is not None and dog.verdict is not None:
                    raise RankFailed(dog.verdict[0], dog.verdict[1], None, stalled=True) from err
                raise
    check_resources(cfg)
    ranks = cfg.gpus * cfg.nodes
    if ranks == 1:
        job = RankJob(plan=plan, run_dir=run_dir, data_dir=data_dir, host_load=host_load, record=record)
        # a rank stuck in a read that never returns (a FIFO named .JPEG) ends as a stalled one of several does
        with Watchdog(run_dir, [0], float(cfg.progress_timeout_s)) as dog:
            try:
                return _run_in_process(job)
            except BaseException as err:  # the watchdog's SIGTERM to this process
                if dog.verdict is not None:
                    raise RankFailed(dog.verdict[0], dog.verdict[1], None, stalled=True) from err
                raise
    if str(cfg.device) == "auto" and not torch.cuda.is_available():
        log.info("no GPU on this host: gpus=%d runs %d CPU ranks (device=cpu, gloo)", cfg.gpus, cfg.gpus)
    crowded = None if uses_cuda(cfg) else threads.too_many_ranks(cfg.gpus)
    if crowded:
        log.warning("warning: %s", crowded)
    log.info("world: %d rank(s) = %d node(s) x %d, device=%s (%s), precision=%s; per-rank logs in %s",
             ranks, cfg.nodes, cfg.gpus, cfg.device, "nccl" if uses_cuda(cfg) else "gloo", plan.label, run_dir)
    return _run_elastic(cfg, run_dir, data_dir, record, host_load)


def uses_cuda(cfg: DictConfig) -> bool:
    """The run's ranks train on CUDA devices: device=cuda, or auto on a host whose PyTorch sees a GPU."""
    return str(cfg.device) == "cuda" or (str(cfg.device) == "auto" and torch.cuda.is_available())


def _run_in_process(job: RankJob) -> RunRecord:
    try:
        return run_rank(job)
    finally:
        distributed.destroy_process_group()


def _node_watchdog(cfg: DictConfig, run_dir: Path, world: World):
    """Under torchrun or srun no harness process sits above the ranks: each node's local rank 0
    watches the node's other ranks (their global ranks follow its own, as both launchers number them)."""
    if world.local_rank != 0 or world.local_world_size < 2:
        return nullcontext()
    return Watchdog(run_dir, range(world.rank + 1, world.rank + world.local_world_size), float(cfg.progress_timeout_s))


@dataclass(frozen=True)
class _Payload:
    """What a spawned rank needs: plain strings, so that it pickles across the spawn."""

    config_yaml: str
    run_dir: str
    data_dir: Optional[str]
    record: RunRecord  # a frozen dataclass of plain values: it pickles
    host_load: Optional[dict] = None


def _run_elastic(cfg: DictConfig, run_dir: Path, data_dir: Optional[Path], record: RunRecord,
                 host_load: Optional[dict]) -> Optional[RunRecord]:
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    elastic = run_dir / ".elastic"
    config = LaunchConfig(
        min_nodes=cfg.nodes, max_nodes=cfg.nodes, nproc_per_node=cfg.gpus,
        run_id=str(cfg.run_id or uuid.uuid4().hex), rdzv_backend="c10d",
        rdzv_endpoint=str(cfg.rdzv_endpoint or "localhost:0"),  # port 0: the launcher picks a free one
        max_restarts=0, monitor_interval=0.2, start_method="spawn",
        # torch's default, this host's name, held the ranks 300 s a try where it did not resolve, then a C++ trace
        local_addr="127.0.0.1" if cfg.nodes == 1 else None,
        # the launcher's own per-rank files (error reports) stay inside the run directory
        logs_specs=DefaultLogsSpecs(log_dir=str(elastic)),
    )
    payload = _Payload(OmegaConf.to_yaml(cfg, resolve=True), str(run_dir), None if data_dir is None else str(data_dir),
                       record, host_load)
    policy = threads.decide(cfg.gpus)  # the spawned ranks start OpenMP with what this says
    log.info("threads: %s per rank, OMP_WAIT_POLICY=%s (%s)", policy.omp_num_threads or "OpenMP's default",
             policy.omp_wait_policy or "OpenMP's default", policy.reason)
    saved_env = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", threads.ENV, QUEUES)}
    threads.export(policy)
    hardware_queues(cfg)  # in the ranks' environment from their start, before any CUDA call of theirs
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    # torch.multiprocessing's per-rank crash files, here, not in /tmp: a run writes only under its output root
    elastic.mkdir(exist_ok=True)
    saved_tmp, tempfile.tempdir = tempfile.tempdir, str(elastic)
    # rank r of this node is global rank node_rank * gpus + r: the watchdog acts on this host's heartbeats
    dog = Watchdog(run_dir, range(cfg.gpus * cfg.nodes), float(cfg.progress_timeout_s))
    try:
        with dog, _TorchLogsToFile(run_dir / "train.log"), spawning_ranks():
            returned = elastic_launch(config, _rank_entry)(payload)
    except ChildFailedError as err:
        rank, failure = err.get_first_failure()
        if dog.verdict is not None:
            raise RankFailed(dog.verdict[0], dog.verdict[1], None, stalled=True) from None
        message, trace = _failure_text(failure)
        signame = _stopping_signal(failure)
        if signame is not None:
            raise Stopped(signame, f" to rank {rank}") from None
        raise RankFailed(rank, message, trace) from None
    except Exception as err:
        if type(err).__name__ == "SignalException":  # the launcher turns a signal into this
            raise Stopped(signal.Signals(err.sigval).name) from None  # type: ignore[attr-defined]
        raise
    finally:
        tempfile.tempdir = saved_tmp
        for sig, handler in saved.items():  # the launcher installs its own handlers
            signal.signal(sig, handler)
        os.environ.update({k: v for k, v in saved_env.items() if v is not None})
        for key in [k for k, v in saved_env.items() if v is None]:
            os.environ.pop(key, None)
        _tidy(run_dir)
    return returned.get(0)  # None where another node holds rank 0: its launcher writes the run's result


class _TorchLogsToFile:
    """The launcher's own log lines (each failed rank's traceback, every SIGTERM it sends) go to
    train.log alone while the ranks run: the console gets the run's one-line cause."""

    NAMES = ("torch.distributed.elastic", "torch.multiprocessing", "torch.distributed.launcher")

    def __init__(self, path: Path):
        self.handler = logging.FileHandler(path, mode="a", encoding="utf-8", errors="surrogateescape")
        self.handler.setFormatter(logging.Formatter(console.FILE_FORMAT))
        self.saved: dict[str, bool] = {}

    def __enter__(self) -> None:
        for name in self.NAMES:
            logger = logging.getLogger(name)
            self.saved[name] = logger.propagate
            logger.propagate = False
            logger.addHandler(self.handler)

    def __exit__(self, *exc) -> None:
        for name, propagate in self.saved.items():
            logger = logging.getLogger(name)
            logger.propagate = propagate
            logger.removeHandler(self.handler)
        self.handler.close()


def _failure_text(failure) -> tuple[str, Optional[str]]:
    if failure.exitcode < 0:
        return f"killed by {failure.signal_name()} (exit code {failure.exitcode})", None
    msg = failure.message
    if isinstance(msg, dict):
        extra = msg.get("extraInfo", {})
        return str(msg.get("message", "failed")).splitlines()[0], extra.get("py_callstack")
    text = str(msg) if msg else f"exited with code {failure.exitcode}"
    return text.splitlines()[0], None


def _stopping_signal(failure) -> Optional[str]:
    """SIGINT or SIGTERM when that is what ended the rank (it dies by the signal: _rank_entry)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        if failure.exitcode in (-sig, 128 + sig):
            return sig.name
    msg = failure.message
    if isinstance(msg, dict) and str(msg.get("message", "")).startswith("KeyboardInterrupt"):
        return "SIGINT"
    return None


def _tidy(run_dir: Path) -> None:
    """Drop the launcher's folder when it holds no error report (torch.multiprocessing's pickled
    tracebacks repeat what the error reports and train.log hold), and any heartbeat left over."""
    elastic = run_dir / ".elastic"
    for pickled in elastic.glob("pytorch-errorfile-*.pickle"):
        pickled.unlink(missing_ok=True)
    if elastic.is_dir() and not any(p.is_file() for p in elastic.rglob("*")):
        shutil.rmtree(elastic, ignore_errors=True)
    shutil.rmtree(run_dir / ".heartbeat", ignore_errors=True)


def _rank_entry(payload: _Payload) -> Optional[RunRecord]:
    """One spawned rank: its logs, its process group, the run, and (rank 0) its result. Stopped by
    Ctrl-C or SIGTERM, it ends by that same signal once its log is closed, so the launcher sees
    which signal it was rather than an exception's exit code."""
    from torch.distributed.elastic.multiprocessing.errors import record as record_errors

    try:
        return record_errors(_rank_main)(payload)
    except KeyboardInterrupt as err:
        sig = signal_number(err)
        signal.signal(sig, signal.SIG_DFL)
        signal.raise_signal(sig)
        raise
    finally:
        # The rank's records are closed: a signal from here on (the launcher stopping every rank once another
        # has failed) has nothing left to stop. Raised as Stopped while the interpreter exits, it would print
        # an "Exception ignored in atexit callback" traceback beside the run's one line.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        before_exit()  # the process ends next; the launcher waits for that end (harness/run/process_exit.py)


def _rank_main(payload: _Payload) -> Optional[RunRecord]:
    take_ctrl_c()  # imported: Ctrl-C stops the rank from here on (held since its spawn: spawning_ranks)
    world = distributed.from_environment(source="elastic")
    assert world is not None  # the elastic launcher set RANK and WORLD_SIZE
    run_dir = Path(payload.run_dir)
    console.setup_rank_logging(world.rank, run_dir)
    log.info("%s, pid %d", world.describe(), os.getpid())
    stop_on_sigterm()  # the launcher stops ranks with SIGTERM: another rank failed, or the run is stopped
    policy = threads.current()  # chosen by the launcher before the spawn (harness/run/threads.py)
    if policy.omp_num_threads:
        torch.set_num_threads(policy.omp_num_threads)
    cfg = OmegaConf.create(payload.config_yaml)
    assert isinstance(cfg, DictConfig)
    # the YAML carries values, not the model's schema: typed again, as the launcher's config was
    # composed (RunContext.options builds the model's options dataclass from it)
    spec = registry.get(str(cfg.model.name))  # once in this process: the rank is handed it
    with open_dict(cfg):
        cfg.model = OmegaConf.merge(OmegaConf.structured(spec.options), cfg.model)
    job = RankJob(plan=read_plan(cfg, spec), run_dir=run_dir, world=world, host_load=payload.host_load,
                  data_dir=None if payload.data_dir is None else Path(payload.data_dir), record=payload.record)
    try:
        record = run_rank(job)
    finally:
        distributed.destroy_process_group()
    return record if world.is_main else None
