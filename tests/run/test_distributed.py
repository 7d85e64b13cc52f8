"""The world a rank belongs to, its seeds, and the batch policy's learning-rate rule."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.run import seeding
from harness.config import ConfigError, compose, compose_unchecked
from harness.outputs import _run_dir, _shared_stamp
from harness.run.launch import check_resources
from harness.run.distributed import from_environment, slurm_rendezvous
from harness.interface import scaled_learning_rate


def test_a_plain_process_is_not_distributed():
    assert from_environment({}) is None
    assert from_environment({"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_STEP_ID": "0"}) is None


def test_torchrun_layout():
    env = {"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1"}
    w = from_environment(env)
    assert (w.rank, w.local_rank, w.world_size, w.local_world_size, w.node_rank, w.nodes, w.source) == (
        5, 1, 8, 4, 1, 2, "torchrun")
    assert not w.is_main


def test_srun_layout_and_torchrun_inside_slurm():
    env = {"SLURM_PROCID": "3", "SLURM_LOCALID": "1", "SLURM_NTASKS": "4", "SLURM_STEP_ID": "0",
           "SLURM_NNODES": "2", "SLURM_NODEID": "1"}
    w = from_environment(env)
    assert (w.rank, w.local_rank, w.world_size, w.local_world_size, w.node_rank, w.nodes, w.source) == (
        3, 1, 4, 2, 1, 2, "slurm")
    both = {**env, "RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0"}
    assert from_environment(both).source == "torchrun"


def test_slurm_rendezvous_is_the_same_for_every_task():
    env = {"SLURM_JOB_NODELIST": "gpu-a,gpu-b", "SLURM_JOB_ID": "123456"}
    assert slurm_rendezvous(env) == {"MASTER_ADDR": "gpu-a", "MASTER_PORT": str(20000 + 123456 % 20000)}


def test_run_directory_stamp_is_shared_by_the_ranks_of_one_run(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "abc123")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("TORCHELASTIC_USE_AGENT_STORE", "False")  # no store to share a time stamp through
    assert _shared_stamp() == "torchrun-abc123"
    assert _shared_stamp("nightly-7") == "run-nightly-7"
    assert _run_dir(str(tmp_path), None, "ncf") == str(tmp_path / "runs" / "torchrun-abc123_ncf")
    monkeypatch.setenv("TORCHELASTIC_USE_AGENT_STORE", "True")  # torchrun's agent runs one: rank 0's stamp
    assert _shared_stamp() is None
    monkeypatch.delenv("TORCHELASTIC_USE_AGENT_STORE")
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("TORCHELASTIC_RUN_ID")
    assert _shared_stamp() is None  # a plain run: a time stamp, claimed by the run that made it
    a, b = _run_dir(str(tmp_path), None, "ncf"), _run_dir(str(tmp_path), None, "ncf")
    assert a != b and Path(a).is_dir() and Path(b).is_dir()


def test_rank_seeds_are_derived_from_the_master_seed():
    a = [seeding.derive(42, r, 4) for r in range(4)]
    assert len({s.rank for s in a}) == 4  # each rank its own stream
    assert len({s.shared for s in a}) == 1  # one shared stream for data order
    assert a == [seeding.derive(42, r, 4) for r in range(4)]
    assert a[0].rank != seeding.derive(43, 0, 4).rank


def test_batch_policy_learning_rate_rules():
    assert scaled_learning_rate(1e-3, "none", 4096, 1024) == 1e-3
    assert scaled_learning_rate(1e-3, "linear", 4096, 1024) == pytest.approx(4e-3)
    assert scaled_learning_rate(1e-3, "sqrt", 4096, 1024) == pytest.approx(2e-3)


def test_multi_node_needs_a_rendezvous_and_a_run_id():
    with pytest.raises(ConfigError, match="nodes=2 needs rdzv_endpoint=HOST:PORT and run_id=NAME"):
        check_resources(compose(["nodes=2", "device=cpu"]))
    check_resources(compose(["nodes=2", "device=cpu", "rdzv_endpoint=127.0.0.1:29400", "run_id=r1"]))  # resolves anywhere


def test_more_gpus_than_the_host_has_is_refused_before_anything_starts():
    with pytest.raises(ConfigError, match=r"device=cuda but PyTorch sees no CUDA device|ask for at most"):
        check_resources(compose(["device=cuda", "gpus=64"]))


def test_slurm_preset_places_one_rank_per_task():
    cfg = compose_unchecked(["hydra/launcher=slurm", "gpus=4", "nodes=2"], hydra=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert (launcher.nodes, launcher.tasks_per_node, launcher.gpus_per_node) == (2, 4, 4)


def test_torchruns_ranks_share_rank_0s_time_stamped_directory_through_the_agents_store(monkeypatch, tmp_path):
    from datetime import timedelta

    from torch.distributed import TCPStore

    from harness.outputs import _torchrun_dir

    agent = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=30))
    for key, value in {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(agent.port), "TORCHELASTIC_RUN_ID": "r1",
                       "TORCHELASTIC_USE_AGENT_STORE": "True"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("RANK", "0")
    mine = _run_dir(str(tmp_path), None, "ncf")
    monkeypatch.setenv("RANK", "1")
    assert _torchrun_dir(str(tmp_path), "ncf") == mine and Path(mine).is_dir()
    assert Path(mine).name.endswith("_ncf") and not Path(mine).name.startswith("torchrun-")
