"""The process group a run's ranks share: joining it, and the collectives the harness needs.
Which rank a process is comes from harness/run/world.py (re-exported here).

    python -c "from harness.run.distributed import from_environment; print(from_environment())"
"""
from __future__ import annotations

import datetime
import os
import socket
import subprocess
from typing import Callable, Mapping

import torch
import torch.distributed as dist

from harness.run.world import SINGLE, World, from_environment  # noqa: F401  (the run's world, for callers)


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
    if backend_for(device) == "gloo" and world.nodes == 1 and _LOOPBACK is not None:
        # one host: gloo binds where this host's name resolves, and a name that resolves nowhere printed a
        # C++ warning per rank before gloo fell back to loopback; an interface the user names still wins
        os.environ.setdefault("GLOO_SOCKET_IFNAME", _LOOPBACK)
    dist.init_process_group(
        backend=backend_for(device), init_method="env://", rank=world.rank, world_size=world.world_size,
        timeout=datetime.timedelta(seconds=timeout_s), device_id=device if device.type == "cuda" else None,
    )


def _loopback_interface() -> str | None:
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return None
    return next((n for n in ("lo", "lo0") if n in names), None)


_LOOPBACK = _loopback_interface()


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


def gather_from_ranks(device: torch.device) -> Callable[[list[float]], list[list[float]]]:
    """A function that hands every rank each rank's list of numbers, by rank ([values] on one rank):
    the data-wait timer's once-per-epoch gather."""
    if not (dist.is_available() and dist.is_initialized()):
        return lambda values: [values]

    def gather(values: list[float]) -> list[list[float]]:
        mine = torch.tensor(values, dtype=torch.float64, device=device)
        ranks = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
        dist.all_gather(ranks, mine)  # sync point: once per epoch
        return [t.tolist() for t in ranks]

    return gather


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
