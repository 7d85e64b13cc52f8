"""How many ranks share this process's CPUs when SLURM started it: the thread policy
(harness/run/threads.py) splits the usable CPUs among them. Stdlib only: it runs before torch starts.

srun and submitit tasks get `--cpus-per-task` CPUs each (SLURM_CPUS_PER_TASK). Where SLURM binds
each task to its own CPUs (task/affinity, task/cgroup), the CPUs this process may use are already
its share: dividing them again by the node's ranks would leave most of them idle (16 bound CPUs,
4 ranks per node: 4 threads instead of 16). Where it does not bind, the ranks of a node share the
node's (or the job's) CPUs and split them.

    srun -n2 -c4 python -c "from harness.run.slurm_binding import ranks_sharing; print(ranks_sharing(2))"
"""
from __future__ import annotations

import os
from typing import Mapping, Optional


def ranks_sharing(local_ranks: int, usable_cpus: Optional[int] = None, env: Mapping[str, str] = os.environ) -> int:
    """Ranks of this node whose threads run on this process's usable CPUs."""
    per_task = env.get("SLURM_CPUS_PER_TASK", "")
    if usable_cpus is None:
        usable_cpus = len(os.sched_getaffinity(0))
    if per_task.isdigit() and usable_cpus <= int(per_task):
        return 1  # bound: these CPUs are this task's alone
    return local_ranks
