"""What watches a run besides its MLPerf log: system.json, TensorBoard and telemetry, for one rank.

harness/run/session.py opens them once the device is known; as a loop hook they bracket the training
window (before_run/after_run: run_start to run_stop, where energy to train is counted), and the
session calls finish() whatever happened: the sampler stops,
rank 0 gets every node's telemetry summary (over the process group only when the run ended normally:
after a crash a collective could wait for a rank that is gone) and TensorBoard gets the hparams row.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Protocol

import torch
import torch.distributed as dist
from omegaconf import DictConfig

from harness.observe import system
from harness.observe.board import Board
from harness.observe.hooks import Hook
from harness.observe.sampler import Sampler
from harness.observe.telemetry import open_sampler
from harness.observe.telemetry_summary import combine_nodes

log = logging.getLogger("harness.observe")


class Placement(Protocol):
    """Where this rank runs, as the observers read it: harness.run.world.World, handed over as it is
    (observe/ imports nothing of run/)."""

    @property
    def local_rank(self) -> int: ...

    @property
    def world_size(self) -> int: ...

    @property
    def local_world_size(self) -> int: ...

    @property
    def node_rank(self) -> int: ...

    @property
    def nodes(self) -> int: ...

    @property
    def is_main(self) -> bool: ...


@dataclass
class Observers(Hook):
    board: Board
    sampler: Sampler
    where: Placement
    platform: str  # submission_platform: "<ranks>x<accelerator>" unless mlperf.platform says otherwise
    accelerator: str  # system.json's accelerator_model_name: the GPU model, or CPU

    def before_run(self) -> None:
        self.sampler.begin()

    def after_run(self) -> None:
        self.sampler.end()

    def finish(self, *, ended_normally: bool, hparams: dict[str, Any],
               results: dict[str, Optional[float]]) -> Optional[dict]:
        """Stop watching; returns the run's telemetry summary (every node's, on rank 0)."""
        self.sampler.end()
        self.sampler.stop()
        own = self.sampler.summary()
        summary = own
        if ended_normally and self.where.world_size > 1 and dist.is_initialized():
            # one collective at the very end of a run: every rank reaches it
            gathered: list[Optional[dict]] = [None] * self.where.world_size
            dist.all_gather_object(gathered, own if own.get("source") != "none" else None)
            summary = combine_nodes(gathered) or own
        if self.where.is_main:
            self.board.hparams(hparams, {**results, "result/energy_j": (summary or {}).get("energy_j")})
        self.board.close()
        return summary


def open_observers(cfg: DictConfig, where: Placement, run_dir: Path, device: torch.device,
                   versions: dict[str, Optional[str]], host_load: Optional[dict] = None) -> Observers:
    """system.json (rank 0), the platform name, TensorBoard (rank 0) and this rank's sampler."""
    description = system.describe(
        org=cfg.mlperf.org, division=str(cfg.mlperf.division), status=str(cfg.mlperf.status),
        nodes=where.nodes, ranks_per_node=where.local_world_size, device=device, versions=versions,
        host_load=host_load,
    )
    if where.is_main:
        system.write(description, run_dir / "system.json")
    board = Board(run_dir if where.is_main else None, enabled=bool(cfg.tensorboard))
    if where.is_main:
        path = run_dir / "telemetry.jsonl"
    elif device.type == "cuda" and where.local_rank == 0:
        path = run_dir / f"telemetry_node{where.node_rank}.jsonl"
    else:
        path = None  # CPU ranks other than 0 keep their samples for the summary alone
    sampler = open_sampler(
        device.type, where.local_rank, where.local_world_size, path,
        interval_s=float(cfg.telemetry_interval_s), enabled=bool(cfg.telemetry),
        on_sample=board.telemetry if board.enabled else None,
    ).start()
    return Observers(board, sampler, where, platform=cfg.mlperf.platform or
                     system.platform_name(description, where.world_size),
                     accelerator=description["accelerator_model_name"])
