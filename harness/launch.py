"""Start the ranks of a run.

One rank runs in this process. Several local ranks (gpus=N) are started with torch.distributed's
elastic launcher; an environment that is already distributed (torchrun, srun, submitit) is used
as it is, never spawned into again.
"""
from __future__ import annotations

import logging
from pathlib import Path

import torch
from omegaconf import DictConfig

from harness.config import ConfigError
from harness.interface import ModelSpec
from harness.results.record import RunRecord
from harness.worker import RankJob, run_rank

log = logging.getLogger("harness.launch")


def check_resources(cfg: DictConfig) -> None:
    """Refuse, before anything starts, a run this host cannot hold."""
    wants_cuda = str(cfg.device) == "cuda" or (str(cfg.device) == "auto" and torch.cuda.is_available())
    if wants_cuda:
        have = torch.cuda.device_count()
        if have == 0:
            raise ConfigError("device=cuda but PyTorch sees no CUDA device; use device=cpu")
        if cfg.gpus > have:
            raise ConfigError(f"gpus={cfg.gpus} but this host has {have} GPU(s); ask for at most {have}")
    if cfg.gpus > 1:
        raise ConfigError(
            f"gpus={cfg.gpus}: this build runs one rank per run; use gpus=1"
        )


def launch(cfg: DictConfig, spec: ModelSpec, run_dir: Path, data_dir: Path, record: RunRecord) -> None:
    check_resources(cfg)
    record.world_size = cfg.gpus
    log.info("world: %d rank(s) on this host, device=%s, precision=%s", cfg.gpus, cfg.device, cfg.precision)
    run_rank(RankJob(cfg=cfg, spec=spec, run_dir=run_dir, data_dir=data_dir), record)
