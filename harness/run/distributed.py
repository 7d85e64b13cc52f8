"""The world a run's ranks live in: who started them, where they are, and their process group.

Three ways a rank comes to be:
- `elastic`: `python -m harness.train gpus=N [nodes=M ...]` started it through torch.distributed's
  elastic launcher (harness/launch.py);
- `torchrun` or `slurm`: an outside launcher started every process with `python -m harness.train`
  (torchrun sets RANK/WORLD_SIZE/...; srun, which submitit uses, sets SLURM_PROCID/SLURM_NTASKS/...);
  the harness joins that world and never spawns again;
- `single`: one process, no process group.

    python -c "from harness.run.distributed import from_environment; print(from_environment())"
"""
from __future__ import annotations

import datetime
import os
import socket
import subprocess
from dataclasses import dataclass
from typing import Mapping, Optional

import torch
import torch.distributed as dist


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


def slurm_rendezvous(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """MASTER_ADDR/MASTER_PORT for a SLURM step: the step's first host, and a port every task
    derives alike from the job id (srun, unlike torchrun, sets neither)."""
    nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST", "localhost")
    try:
        hosts = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True,
                               check=True, timeout=30).stdout.split()
    except (OSError, subprocess.SubprocessError):
        hosts = [nodelist.split(",")[0]]  # a plain host list needs no scontrol
    port = 20000 + int(env.get("SLURM_JOB_ID", "0")) % 20000
    return {"MASTER_ADDR": hosts[0], "MASTER_PORT": str(port)}


def backend_for(device: torch.device) -> str:
    return "nccl" if device.type == "cuda" else "gloo"


def init_process_group(world: World, device: torch.device, timeout_s: float = 600) -> None:
    """Join the world's process group (env:// rendezvous); a no-op for a single process."""
    if world.world_size == 1 or (dist.is_available() and dist.is_initialized()):
        return
    if world.source == "slurm":
        for key, value in slurm_rendezvous().items():
            os.environ.setdefault(key, value)
    os.environ.setdefault("RANK", str(world.rank))
    os.environ.setdefault("WORLD_SIZE", str(world.world_size))
    os.environ.setdefault("LOCAL_RANK", str(world.local_rank))
    dist.init_process_group(
        backend=backend_for(device), init_method="env://", rank=world.rank, world_size=world.world_size,
        timeout=datetime.timedelta(seconds=timeout_s),
        **({"device_id": device} if device.type == "cuda" else {}),
    )


def destroy_process_group() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def broadcast_int(value: int, device: torch.device) -> int:
    """Rank 0's value on every rank, as a 64-bit integer (seeds go this way, as in MLPerf's GNMT)."""
    if not (dist.is_available() and dist.is_initialized()):
        return value
    t = torch.tensor([value], dtype=torch.int64, device=device)
    dist.broadcast(t, src=0)
    return int(t.item())


def wrap_ddp(model: torch.nn.Module, bucket_mb: float, **options) -> torch.nn.parallel.DistributedDataParallel:
    """The model as every multi-rank run trains it (and the profiling scripts measure it).

    device_ids=None: batches are already on the device, and DDP must not move the CPU tensors a
    model keeps on purpose (GNMT's sequence lengths, for cuDNN's packing). gradient_as_bucket_view:
    gradients live in DDP's all-reduce buckets, so no copy out of them each step. `options` go to
    DistributedDataParallel as they are (static_graph, for one).
    """
    return torch.nn.parallel.DistributedDataParallel(
        model, device_ids=None, gradient_as_bucket_view=True, bucket_cap_mb=bucket_mb, **options)


def sum_over_ranks(device: torch.device):
    """A function that adds a list of numbers over ranks (the identity on one rank): the meter's
    once-per-epoch total."""
    if not (dist.is_available() and dist.is_initialized()):
        return lambda values: values

    def all_ranks_sum(values: list[float]) -> list[float]:
        t = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(t)  # sync point: once per epoch
        return t.tolist()

    return all_ranks_sum
