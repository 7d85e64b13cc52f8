"""What a SLURM cluster offers and what became of a job, asked through its own commands (sinfo,
squeue, scancel; sacct only when the cluster keeps accounting): the facts the harness's SLURM
launcher (harness/run/slurm.py) decides by. No torch here: it runs in the submitting process.

    python -m harness.check.show slurm            # the default partition's nodes, as the launcher sees them
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from typing import Optional

from harness.errors import ConfigError

# Pending reasons that no amount of waiting clears (squeue's reason codes): the request exceeds what
# the partition, account or QOS will ever allow. A job pending for one of these is cancelled and
# reported; other reasons (Resources, Priority, ReqNodeNotAvail, ...) are shown and waited on.
NEVER_STARTS = frozenset({
    "BadConstraints", "PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "InvalidAccount",
    "InvalidQOS", "DependencyNeverSatisfied", "QOSMaxWallDurationPerJobLimit",
    "AssocMaxWallDurationPerJobLimit", "QOSMaxCpuPerJobLimit", "QOSMaxGRESPerJob", "QOSMaxNodePerJobLimit",
})
# Job states after which nothing more happens (squeue/sacct spellings, "CANCELLED by 0" trimmed)
ENDED = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
                   "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"})


@dataclass(frozen=True)
class Node:
    name: str
    cpus: int
    gpus: int


@dataclass(frozen=True)
class Partition:
    name: str
    nodes: tuple[Node, ...]
    max_time_min: Optional[int]  # None: no limit


@dataclass(frozen=True)
class Fit:
    """What to ask SLURM for, per node: the request as the launcher submits it."""

    cpus_per_task: int
    gpus_per_node: Optional[int]  # None: no GPU request (CPU ranks)
    note: str  # one line for the console: what was derived and why


def _sinfo(*args: str) -> str:
    try:
        out = subprocess.run(["sinfo", "-h", *args], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise ConfigError("hydra/launcher=slurm needs SLURM's commands (sinfo, sbatch) on this host's PATH; "
                          "run from a login node of the cluster") from None
    except subprocess.TimeoutExpired:
        raise ConfigError("sinfo did not answer in 60 s: is slurmctld up? (sinfo, scontrol ping)") from None
    if out.returncode != 0:
        first = (out.stderr.strip().splitlines() or ["no output"])[0]
        raise ConfigError(f"sinfo failed: {first}")
    return out.stdout


def gres_gpus(gres: str) -> int:
    """GPUs in a node's generic resources: "gpu:8", "gpu:h100:4(S:0-1)", "(null)"."""
    total = 0
    for item in gres.split(","):
        m = re.match(r"gpu(?::[^:(]+)?:(\d+)", item.strip())
        if m:
            total += int(m.group(1))
    return total


def minutes(limit: str) -> Optional[int]:
    """sinfo's time limit ("infinite", "30:00", "4:00:00", "2-00:00:00") in minutes."""
    if limit in ("infinite", "UNLIMITED", "n/a", ""):
        return None
    days, _, rest = limit.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    while len(parts) < 3:  # mm:ss or plain minutes
        parts = [0, *parts] if len(parts) == 2 else [0, parts[0], 0]
    h, m, s = parts
    return int(days or 0) * 1440 + h * 60 + m + (1 if s else 0)


def partition(name: Optional[str]) -> Partition:
    """The named partition (the cluster's default one when None) and its nodes."""
    rows = [line.split("|") for line in _sinfo("-N", "-o", "%N|%P|%c|%G|%l").splitlines() if line.strip()]
    if name is None:
        defaults = {r[1] for r in rows if r[1].endswith("*")}
        if not defaults:
            raise ConfigError("the cluster has no default partition: set hydra.launcher.partition=NAME "
                              "(sinfo lists them)")
        name = defaults.pop().rstrip("*")
    mine = [r for r in rows if r[1].rstrip("*") == name]
    if not mine:
        known = sorted({r[1].rstrip("*") for r in rows})
        raise ConfigError(f"no partition '{name}' on this cluster; choose one of: {', '.join(known)}")
    nodes = tuple(sorted({Node(r[0], int(r[2].rstrip("+")), gres_gpus(r[3])) for r in mine}, key=lambda n: n.name))
    return Partition(name, nodes, minutes(mine[0][4]))


def fit(part: Partition, *, nodes: int, tasks_per_node: int, cpus_per_task: Optional[int],
        device: str, timeout_min: int) -> Fit:
    """The request for `nodes` x `tasks_per_node` ranks on this partition, or a ConfigError that says
    in one line why it can never start there and what to ask for instead."""
    where = f"partition {part.name}"
    if nodes > len(part.nodes):
        raise ConfigError(f"nodes={nodes} but {where} has {len(part.nodes)} node(s); ask for at most {len(part.nodes)}")
    if part.max_time_min is not None and timeout_min > part.max_time_min:
        raise ConfigError(f"hydra.launcher.timeout_min={timeout_min} exceeds {where}'s limit of "
                          f"{part.max_time_min} min; ask for at most {part.max_time_min}")
    # the nodes the job would land on: the best `nodes` of them; each must hold one node's share
    gpu_nodes = sorted((n.gpus for n in part.nodes), reverse=True)[:nodes]
    cpus = sorted((n.cpus for n in part.nodes), reverse=True)[nodes - 1]
    if device == "cpu" or (device == "auto" and gpu_nodes[-1] == 0):
        gpus, what = None, "CPU ranks" + ("" if device == "cpu" else f" ({where} has no GPUs)")
    elif gpu_nodes[-1] < tasks_per_node:
        have = f"{gpu_nodes[-1]} GPU(s) per node" if gpu_nodes[-1] else "no GPUs"
        raise ConfigError(f"gpus={tasks_per_node} ranks per node but {where} has {have}; ask for fewer gpus, "
                          "another partition (hydra.launcher.partition=...), or device=cpu")
    else:
        gpus, what = tasks_per_node, f"{tasks_per_node} GPU(s) per node"
    if tasks_per_node > cpus:
        raise ConfigError(f"gpus={tasks_per_node} ranks per node but {where}'s nodes have {cpus} CPU(s): "
                          f"one rank needs one CPU at least; ask for gpus<={cpus}")
    if cpus_per_task is None:
        cpus_per_task, how = cpus // tasks_per_node, f"the node's {cpus} CPUs / {tasks_per_node} rank(s)"
    elif cpus_per_task * tasks_per_node > cpus:
        raise ConfigError(f"hydra.launcher.cpus_per_task={cpus_per_task} x {tasks_per_node} rank(s) asks "
                          f"{cpus_per_task * tasks_per_node} CPUs per node but {where}'s nodes have {cpus}; "
                          f"ask for cpus_per_task<={cpus // tasks_per_node} or leave it null")
    else:
        how = "hydra.launcher.cpus_per_task"
    return Fit(cpus_per_task, gpus, f"{nodes} node(s) x {tasks_per_node} task(s), {what}, "
                                    f"{cpus_per_task} CPU(s) per task ({how}) on {where}")


@dataclass(frozen=True)
class JobState:
    state: str  # PENDING, RUNNING, COMPLETED, CANCELLED, ...; UNKNOWN when SLURM no longer knows the job
    reason: str = ""

    @property
    def ended(self) -> bool:
        return self.state in ENDED or self.state == "UNKNOWN"

    @property
    def never_starts(self) -> bool:
        return self.state == "PENDING" and self.reason in NEVER_STARTS


def states(array_ids: set[str]) -> dict[str, JobState]:
    """The state of every task of these jobs (arrays expanded: "12_0", "12_1"), as squeue knows them
    (recently ended jobs included); jobs squeue has forgotten are asked of sacct when it works."""
    found: dict[str, JobState] = {}
    if not array_ids:
        return found
    out = subprocess.run(["squeue", "-h", "-r", "--states=all", "-j", ",".join(sorted(array_ids)),
                          "-o", "%i|%T|%r"], capture_output=True, text=True, timeout=60)
    for line in out.stdout.splitlines():
        job, state, reason = (line.split("|") + ["", ""])[:3]
        found[job.strip()] = JobState(state.strip(), "" if reason.strip() == "None" else reason.strip())
    forgotten = {a for a in array_ids if not any(j.split("_")[0] == a for j in found)}
    if forgotten:
        found.update(_accounted(forgotten))
    return found


def _accounted(array_ids: set[str]) -> dict[str, JobState]:
    """sacct's states, or nothing where the cluster keeps no accounting."""
    try:
        out = subprocess.run(["sacct", "-n", "-P", "-X", "-o", "JobID,State", "-j", ",".join(sorted(array_ids))],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found = {}
    for line in out.stdout.splitlines() if out.returncode == 0 else []:
        job, _, state = line.partition("|")
        found[job.strip()] = JobState(state.split()[0] if state.strip() else "UNKNOWN")
    return found


def cancel(job_id: str) -> None:
    subprocess.run(["scancel", job_id], capture_output=True, timeout=60)

