"""A rank's closing records: whatever stops it, and whenever the launcher's SIGTERM lands, the MLPerf
log ends with run_stop aborted and the reason."""
from __future__ import annotations

import json
import os
import signal

import pytest

from harness import registry
from harness.config import compose
from harness.run import session
from harness.run.plan import plan_run
from harness.signals import stop_on_sigterm
from harness.run.world import World

TWO = World(rank=0, local_rank=0, world_size=2, local_world_size=2, node_rank=0, nodes=1, source="elastic")


def _last_record(path) -> dict:
    return json.loads(path.read_text().splitlines()[-1][len(":::MLLOG "):])


def test_the_launchers_sigterm_while_a_rank_names_its_dead_peer_still_ends_the_log(tmp_path, monkeypatch):
    """Rank 1 is killed; rank 0's collective fails and, while rank 0 is still finding out which rank
    died, the elastic agent's SIGTERM arrives. The log must still end with run_stop aborted."""

    def failing_run(job, training, held):
        held.run_start = held.mlperf.start(session.C.RUN_START)
        held.mlperf.start(session.C.EPOCH_START, metadata={"epoch_num": 1})
        raise RuntimeError("[gloo] Connection reset by peer. This may indicate a remote worker died")

    def dead_peer_then_sigterm(run_dir, world_size, me, seen):
        os.kill(os.getpid(), signal.SIGTERM)  # the agent's SIGTERM, mid-way through the handler
        return 1, "its process 4242 ended without a word (killed: SIGKILL, out of memory, or a crash)"

    monkeypatch.setattr(session, "_run", failing_run)
    monkeypatch.setattr(session.peers, "dead_peer", dead_peer_then_sigterm)
    monkeypatch.setattr(session.heartbeat, "start", lambda run_dir, rank: None)
    saved = signal.getsignal(signal.SIGTERM)
    stop_on_sigterm()
    try:
        plan = plan_run(compose(["model=ncf", "device=cpu"]), registry.get("ncf"), cuda=False)
        job = session.RankJob(plan=plan, run_dir=tmp_path,
                              data_dir=None, world=TWO)
        with pytest.raises(session.PeerDied) as caught:  # the dead peer is the run's error, not the signal
            session.run_rank(job)
    finally:
        signal.signal(signal.SIGTERM, saved)
    assert caught.value.rank == 1
    last = _last_record(tmp_path / "mlperf.log")
    assert last["key"] == "run_stop" and last["metadata"]["status"] == "aborted"
    assert last["metadata"]["reason"].startswith("rank 1 failed: its process 4242")


def test_a_rank_runs_on_a_read_only_config_and_a_failed_capture_is_named_from_the_loop(tmp_path, monkeypatch):
    """Nothing writes to the config once the rank starts (every real run in the suite runs so); a CUDA-graph
    capture that fell back is named in the record from the loop's result, not written into the config."""
    from omegaconf import OmegaConf
    from omegaconf.errors import ReadonlyConfigError

    from harness import fastpath

    seen = {}

    def run(job, training, held):
        seen["readonly"] = OmegaConf.is_readonly(job.plan.cfg)
        with pytest.raises(ReadonlyConfigError):
            job.plan.cfg.cuda_graph = False
        raise RuntimeError("stop here")

    monkeypatch.setattr(session, "_run", run)
    monkeypatch.setattr(session.heartbeat, "start", lambda run_dir, rank: None)
    one = World(rank=0, local_rank=0, world_size=1, local_world_size=1, node_rank=0, nodes=1, source="elastic")
    plan = plan_run(compose(["model=ncf", "device=cpu", "mode=throughput"]), registry.get("ncf"), cuda=False)
    job = session.RankJob(plan=plan, run_dir=tmp_path, data_dir=None, world=one)
    with pytest.raises(RuntimeError, match="stop here"):
        session.run_rank(job)
    assert seen["readonly"]
    cfg = OmegaConf.create({"precision": "amp", "cuda_graph": True, "model": {"name": "ncf"}})
    assert fastpath.label(cfg) == "amp+graph" and fastpath.label(cfg, graph_fell_back=True) == "amp"
