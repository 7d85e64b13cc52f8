"""What watches a run besides its MLPerf log: system.json, TensorBoard and telemetry, for one rank.

worker.run_rank opens them once the device is known, brackets the training window with begin()
and end() (run_start to run_stop), and calls finish() whatever happened: the sampler stops, rank 0
gets every node's telemetry summary (over the process group only when the run ended normally: after
a crash a collective could wait for a rank that is gone) and TensorBoard gets the hparams row.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Optional

import torch
import torch.distributed as dist
from omegaconf import DictConfig

from harness import system, telemetry
from harness.distributed import World
from harness.results.record import RunRecord
from harness.tensorboard_log import STATUS_CODE, Board

log = logging.getLogger("harness.observe")


@dataclass
class Observers:
    board: Board
    sampler: telemetry.Sampler
    world: World

    def begin(self) -> None:
        self.sampler.begin()

    def end(self) -> None:
        self.sampler.end()

    def finish(self, record: RunRecord, *, ended_normally: bool) -> None:
        self.sampler.end()
        self.sampler.stop()
        own = self.sampler.summary()
        summary = own
        if ended_normally and self.world.world_size > 1 and dist.is_initialized():
            # one collective at the very end of a run: every rank reaches it
            gathered: list[Optional[dict]] = [None] * self.world.world_size
            dist.all_gather_object(gathered, own if own.get("source") != "none" else None)
            summary = telemetry.combine_nodes(gathered) or own
        record.telemetry = summary
        if self.world.is_main:
            self.board.hparams(_hparams(record), {
                "result/time_to_train_min": record.time_to_train_min,
                "result/epochs_to_converge": record.epochs_to_converge,
                "result/final_quality": record.final_quality,
                "result/throughput": record.throughput,
                "result/status": STATUS_CODE.get(record.status),
                "result/energy_j": (summary or {}).get("energy_j"),
            })
        self.board.close()


def open_observers(cfg: DictConfig, job, device: torch.device, record: RunRecord) -> Observers:
    """system.json (rank 0), the platform name, TensorBoard (rank 0) and this rank's sampler."""
    world = job.world
    description = system.describe(
        org=cfg.mlperf.org, division=str(cfg.mlperf.division), status=str(cfg.mlperf.status),
        nodes=world.nodes, ranks_per_node=world.local_world_size, device=device, versions=record.versions,
    )
    record.accelerator = description["accelerator_model_name"]
    record.platform = cfg.mlperf.platform or system.platform_name(description, world.world_size)
    if world.is_main:
        system.write(description, job.run_dir / "system.json")
    board = Board(job.run_dir if world.is_main else None, enabled=bool(cfg.tensorboard))
    if world.is_main:
        path = job.run_dir / "telemetry.jsonl"
    elif device.type == "cuda" and world.local_rank == 0:
        path = job.run_dir / f"telemetry_node{world.node_rank}.jsonl"
    else:
        path = None  # CPU ranks other than 0 keep their samples for the summary alone
    sampler = telemetry.open_sampler(
        device.type, world.local_rank, world.local_world_size, path,
        interval_s=float(cfg.telemetry_interval_s), enabled=bool(cfg.telemetry),
        on_sample=board.telemetry if board.enabled else None,
    ).start()
    return Observers(board, sampler, world)


def _hparams(record: RunRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"model": record.model, "dataset": record.dataset, "seed": record.seed,
                           "world_size": record.world_size, "precision": record.precision,
                           "platform": record.platform}
    out.update({f"hp/{k}": v for k, v in record.hyperparameters.items()})
    return out
