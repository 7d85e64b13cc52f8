"""Start the ranks of a run.

- One rank (gpus=1, nodes=1): in this process.
- Several (gpus=N and/or nodes=M): torch.distributed's elastic launcher starts N ranks on this host
  (c10d rendezvous; localhost with a free port for one node, `rdzv_endpoint` for several) with no
  restarts, since a restarted run would corrupt its time to train. When any rank fails the launcher
  stops the others and this process reports the first failure with its rank and traceback.
- Already distributed (torchrun, srun/submitit): this process is one rank of that world; it joins it.

    python -m harness.train model=ncf device=cpu gpus=2 seed=1
"""
from __future__ import annotations

import logging
import os
import shutil
import signal
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch
from omegaconf import DictConfig, OmegaConf

from harness.errors import ConfigError
from harness.observe import console
from harness.run import distributed
from harness.run.distributed import World
from harness.run.precision import precision_name
from harness.run.session import RankJob, RankResult, run_rank

log = logging.getLogger("harness.launch")


class RankFailed(RuntimeError):
    """A rank of a multi-rank run failed; carries the rank and that rank's own traceback."""

    def __init__(self, rank: int, message: str, traceback: Optional[str]):
        super().__init__(f"rank {rank} failed: {message}")
        self.rank = rank
        self.child_traceback = traceback


def check_resources(cfg: DictConfig) -> None:
    """Refuse, before anything starts, a run this host cannot hold."""
    if distributed.from_environment() is not None:
        return  # the outside launcher decided the layout
    wants_cuda = str(cfg.device) == "cuda" or (str(cfg.device) == "auto" and torch.cuda.is_available())
    if wants_cuda:
        have = torch.cuda.device_count()
        if have == 0:
            raise ConfigError("device=cuda but PyTorch sees no CUDA device; use device=cpu")
        if cfg.gpus > have:
            raise ConfigError(f"gpus={cfg.gpus} but this host has {have} GPU(s); ask for at most {have}")
    if cfg.nodes > 1 and not (cfg.rdzv_endpoint and cfg.run_id):
        raise ConfigError(f"nodes={cfg.nodes} needs rdzv_endpoint=HOST:PORT and run_id=NAME, the same on "
                          "every node (or hydra/launcher=slurm, where SLURM places the ranks)")


def launch(cfg: DictConfig, run_dir: Path, data_dir: Optional[Path], world: Optional[World]) -> Optional[dict]:
    """Run every rank of the run; returns rank 0's RankResult as a dict (this rank's own when this
    process is one rank of an outside launcher's world). A failed or interrupted run raises."""
    if world is not None:  # torchrun / srun: this process is one rank
        log.info("world: %s", world.describe())
        return _run_in_process(cfg, run_dir, data_dir, world).to_dict()
    check_resources(cfg)
    ranks = cfg.gpus * cfg.nodes
    if ranks == 1:
        return _run_in_process(cfg, run_dir, data_dir, distributed.SINGLE).to_dict()
    log.info("world: %d rank(s) = %d node(s) x %d, device=%s (%s), precision=%s; per-rank logs in %s",
             ranks, cfg.nodes, cfg.gpus, cfg.device, "nccl" if _uses_cuda(cfg) else "gloo", precision_name(cfg), run_dir)
    return _run_elastic(cfg, run_dir, data_dir)


def _uses_cuda(cfg: DictConfig) -> bool:
    return str(cfg.device) == "cuda" or (str(cfg.device) == "auto" and torch.cuda.is_available())


def _run_in_process(cfg: DictConfig, run_dir: Path, data_dir: Optional[Path], world: World) -> RankResult:
    try:
        return run_rank(RankJob(cfg=cfg, run_dir=run_dir, data_dir=data_dir, world=world))
    finally:
        distributed.destroy_process_group()


@dataclass(frozen=True)
class _Payload:
    """What a spawned rank needs: plain strings, so that it pickles across the spawn."""

    config_yaml: str
    run_dir: str
    data_dir: Optional[str]


def _run_elastic(cfg: DictConfig, run_dir: Path, data_dir: Optional[Path]) -> Optional[dict]:
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    config = LaunchConfig(
        min_nodes=cfg.nodes, max_nodes=cfg.nodes, nproc_per_node=cfg.gpus,
        run_id=str(cfg.run_id or uuid.uuid4().hex), rdzv_backend="c10d",
        rdzv_endpoint=str(cfg.rdzv_endpoint or "localhost:0"),  # port 0: the launcher picks a free one
        max_restarts=0, monitor_interval=0.2, start_method="spawn",
        # the launcher's own per-rank files (error reports) stay inside the run directory
        logs_specs=DefaultLogsSpecs(log_dir=str(run_dir / ".elastic")),
    )
    payload = _Payload(OmegaConf.to_yaml(cfg, resolve=True), str(run_dir), None if data_dir is None else str(data_dir))
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        returned = elastic_launch(config, _rank_entry)(payload)
    except ChildFailedError as err:
        _tidy(run_dir)
        rank, failure = err.get_first_failure()
        message, trace = _failure_text(failure)
        if _was_interrupted(failure):
            raise KeyboardInterrupt from None
        raise RankFailed(rank, message, trace) from None
    except Exception as err:
        if type(err).__name__ == "SignalException":  # the launcher turns Ctrl-C into this
            _tidy(run_dir)
            raise KeyboardInterrupt from None
        raise
    finally:
        for sig, handler in saved.items():  # the launcher installs its own handlers
            signal.signal(sig, handler)
    _tidy(run_dir)
    return returned.get(0)


def _failure_text(failure) -> tuple[str, Optional[str]]:
    if failure.exitcode < 0:
        return f"killed by {failure.signal_name()} (exit code {failure.exitcode})", None
    msg = failure.message
    if isinstance(msg, dict):
        extra = msg.get("extraInfo", {})
        return str(msg.get("message", "failed")).splitlines()[0], extra.get("py_callstack")
    text = str(msg) if msg else f"exited with code {failure.exitcode}"
    return text.splitlines()[0], None


def _was_interrupted(failure) -> bool:
    if failure.exitcode in (-signal.SIGINT, 130):
        return True
    msg = failure.message
    return isinstance(msg, dict) and str(msg.get("message", "")).startswith("KeyboardInterrupt")


def _tidy(run_dir: Path) -> None:
    """Drop the launcher's folder when it holds no error report."""
    elastic = run_dir / ".elastic"
    if elastic.is_dir() and not any(p.is_file() for p in elastic.rglob("*")):
        shutil.rmtree(elastic, ignore_errors=True)


def _rank_entry(payload: _Payload) -> Optional[dict]:
    """One spawned rank: its logs, its process group, the run, and (rank 0) its result."""
    from torch.distributed.elastic.multiprocessing.errors import record as record_errors

    return record_errors(_rank_main)(payload)


class Terminated(BaseException):
    """SIGTERM from the launcher: another rank failed, or the run is being stopped."""


def _rank_main(payload: _Payload) -> Optional[dict]:
    world = distributed.from_environment(source="elastic")
    run_dir = Path(payload.run_dir)
    console.setup_rank_logging(world.rank, run_dir)
    log.info("%s, pid %d", world.describe(), os.getpid())

    def _terminate(signum, frame):
        raise Terminated(f"signal {signum}")

    signal.signal(signal.SIGTERM, _terminate)
    if "OMP_NUM_THREADS" not in os.environ:
        # As torchrun does: ranks sharing a host share its cores, or CPU ranks oversubscribe them.
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world.local_world_size))
    cfg = OmegaConf.create(payload.config_yaml)
    job = RankJob(cfg=cfg, run_dir=run_dir, data_dir=None if payload.data_dir is None else Path(payload.data_dir),
                  world=world)
    try:
        result = run_rank(job)
    finally:
        distributed.destroy_process_group()
    return result.to_dict() if world.is_main else None
