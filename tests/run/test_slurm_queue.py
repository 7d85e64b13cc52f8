"""Fitting a SLURM request to a partition, and reading what sinfo and squeue say, without a cluster
(tests/e2e/test_slurm.py runs against a real one)."""
from __future__ import annotations

import pytest

from harness.errors import ConfigError
from harness.run import slurm_queue
from harness.run.slurm_queue import JobState, Node, Partition, fit, gres_gpus, minutes

CPU_NODE = Partition("debug", (Node("vm", 2, 0),), None)
GPU_NODES = Partition("gpu", (Node("g1", 64, 8), Node("g2", 64, 8)), 240)


def _fit(part=CPU_NODE, nodes=1, tasks=2, cpus=None, device="cpu", timeout=60):
    return fit(part, nodes=nodes, tasks_per_node=tasks, cpus_per_task=cpus, device=device, timeout_min=timeout)


def test_cpu_ranks_ask_no_gpu_and_share_the_node_cpus():
    got = _fit()
    assert (got.cpus_per_task, got.gpus_per_node) == (1, None)
    assert "CPU ranks" in got.note and "the node's 2 CPUs / 2 rank(s)" in got.note
    assert _fit(tasks=1).cpus_per_task == 2


def test_device_auto_follows_the_partition():
    assert _fit(device="auto").gpus_per_node is None  # no GPUs there: CPU ranks
    got = _fit(GPU_NODES, nodes=2, tasks=8, device="auto")
    assert (got.gpus_per_node, got.cpus_per_task) == (8, 8)
    assert _fit(GPU_NODES, tasks=8, device="cpu").gpus_per_node is None


@pytest.mark.parametrize("kwargs, says", [
    ({"tasks": 3}, "gpus=3 ranks per node but partition debug's nodes have 2 CPU(s): one rank needs one CPU at "
                   "least; ask for gpus<=2"),
    ({"cpus": 8}, "hydra.launcher.cpus_per_task=8 x 2 rank(s) asks 16 CPUs per node but partition debug's nodes "
                  "have 2; ask for cpus_per_task<=1 or leave it null"),
    ({"nodes": 2}, "nodes=2 but partition debug has 1 node(s); ask for at most 1"),
    ({"device": "cuda"}, "gpus=2 ranks per node but partition debug has no GPUs; ask for fewer gpus, another "
                         "partition (hydra.launcher.partition=...), or device=cpu"),
    ({"part": GPU_NODES, "tasks": 8, "device": "cuda", "timeout": 300},
     "hydra.launcher.timeout_min=300 exceeds partition gpu's limit of 240 min; ask for at most 240"),
])
def test_a_request_that_could_never_start_is_one_line(kwargs, says):
    with pytest.raises(ConfigError) as err:
        _fit(**kwargs)
    assert str(err.value) == says


def test_sinfo_fields():
    assert gres_gpus("gpu:8") == 8 and gres_gpus("gpu:h100:4(S:0-1)") == 4 and gres_gpus("(null)") == 0
    assert gres_gpus("gpu:a100:2,gpu:v100:2,shard:4") == 4
    assert minutes("infinite") is None and minutes("30:00") == 30 and minutes("4:00:00") == 240
    assert minutes("2-00:00:00") == 2880 and minutes("1:00:30") == 61


def test_the_default_partition_and_an_unknown_one(monkeypatch):
    rows = "vm|debug*|2|(null)|infinite\ng1|gpu|64+|gpu:8|4:00:00\ng2|gpu|32|gpu:4|4:00:00\n"
    monkeypatch.setattr(slurm_queue, "_sinfo", lambda *args: rows)
    assert slurm_queue.partition(None) == CPU_NODE
    gpu = slurm_queue.partition("gpu")
    assert gpu.nodes == (Node("g1", 64, 8), Node("g2", 32, 4)) and gpu.max_time_min == 240
    assert fit(gpu, nodes=2, tasks_per_node=4, cpus_per_task=None, device="cuda", timeout_min=60).cpus_per_task == 8
    with pytest.raises(ConfigError, match="no partition 'big' on this cluster; choose one of: debug, gpu"):
        slurm_queue.partition("big")


def test_pending_reasons_that_never_clear():
    assert JobState("PENDING", "PartitionConfig").never_starts
    assert not JobState("PENDING", "Resources").never_starts and not JobState("RUNNING").never_starts
    assert JobState("CANCELLED").ended and JobState("UNKNOWN").ended and not JobState("COMPLETING").ended
