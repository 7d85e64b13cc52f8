"""Which rank this process is, from its environment alone (no torch: the thread policy reads it
before torch starts).

- `elastic`: `python -m harness.train gpus=N [nodes=M ...]` started it through torch.distributed's
  elastic launcher (harness/run/launch.py);
- `torchrun` or `slurm`: an outside launcher started every process with `python -m harness.train`
  (torchrun sets RANK/WORLD_SIZE/...; srun, which submitit uses, sets SLURM_PROCID/SLURM_NTASKS/...);
  the harness joins that world and never spawns again;
- `single`: one process, no process group.

    python -c "from harness.run.world import from_environment; print(from_environment())"
"""
from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Mapping, Optional


@dataclass(frozen=True)
class World:
    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    node_rank: int
    nodes: int
    source: str  # single | elastic | torchrun | slurm

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def describe(self) -> str:
        return (f"rank {self.rank}/{self.world_size} (local {self.local_rank}/{self.local_world_size}, "
                f"node {self.node_rank}/{self.nodes}, {self.source}) on {socket.gethostname()}")


SINGLE = World(0, 0, 1, 1, 0, 1, "single")


def from_environment(env: Mapping[str, str] = os.environ, source: str = "torchrun") -> Optional[World]:
    """The world an outside launcher set up, or None when this process is on its own.

    torchrun's variables win over SLURM's: torchrun run inside a SLURM allocation is torchrun's world.
    A single-task SLURM job (SLURM_NTASKS=1, an sbatch script, say) is not a distributed world.
    """
    if "RANK" in env and "WORLD_SIZE" in env:
        world = int(env["WORLD_SIZE"])
        local_world = int(env.get("LOCAL_WORLD_SIZE", world))
        return World(
            rank=int(env["RANK"]), local_rank=int(env.get("LOCAL_RANK", 0)), world_size=world,
            local_world_size=local_world, node_rank=int(env.get("GROUP_RANK", 0)),
            nodes=max(1, world // max(local_world, 1)), source=source,
        )
    if "SLURM_PROCID" in env and int(env.get("SLURM_NTASKS", "1")) > 1 and "SLURM_STEP_ID" in env:
        world = int(env["SLURM_NTASKS"])
        nodes = int(env.get("SLURM_STEP_NUM_NODES", env.get("SLURM_NNODES", "1")))
        return World(
            rank=int(env["SLURM_PROCID"]), local_rank=int(env.get("SLURM_LOCALID", 0)), world_size=world,
            local_world_size=world // max(nodes, 1), node_rank=int(env.get("SLURM_NODEID", 0)),
            nodes=nodes, source="slurm",
        )
    return None
