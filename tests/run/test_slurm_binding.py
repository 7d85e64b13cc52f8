"""Ranks bound to their own CPUs by SLURM do not split them again; unbound ones share the node's."""
from __future__ import annotations

from harness.run.slurm_binding import ranks_sharing


def test_a_task_bound_to_its_cpus_has_them_to_itself():
    assert ranks_sharing(4, usable_cpus=16, env={"SLURM_CPUS_PER_TASK": "16"}) == 1
    assert ranks_sharing(2, usable_cpus=1, env={"SLURM_CPUS_PER_TASK": "1"}) == 1


def test_unbound_tasks_share_what_they_see():
    assert ranks_sharing(4, usable_cpus=64, env={"SLURM_CPUS_PER_TASK": "16"}) == 4  # the node's, not bound
    assert ranks_sharing(2, usable_cpus=2, env={}) == 2  # srun without --cpus-per-task
