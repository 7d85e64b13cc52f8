"""The launcher's word before it starts more CPU ranks than the host has cores (the runs themselves:
tests/e2e/test_multirank.py)."""
from __future__ import annotations

import logging

from harness import registry
from harness.config import compose
from harness.run import launch, threads
from harness.run.plan import RunPlan, plan_run


def _plan(gpus: str) -> RunPlan:
    return plan_run(compose(["model=ncf", gpus, "device=cpu", "seed=1"]), registry.get("ncf"), cuda=False)


def test_more_cpu_ranks_than_cores_is_one_warning_line(tmp_path, monkeypatch, caplog):
    started = []
    monkeypatch.setattr(threads.host_load, "usable_cpus", lambda: [0, 1])
    monkeypatch.setattr(launch, "_run_elastic", lambda cfg, *a: started.append(cfg.gpus))
    with caplog.at_level(logging.INFO, logger=launch.log.name):
        launch.launch(_plan("gpus=8"), tmp_path, None, None, None)  # type: ignore[arg-type]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == ["warning: 8 CPU ranks on 2 usable CPU(s): more ranks than cores take turns on them, and time "
                        "to train measures that; ask for gpus=2 or fewer on this host"]
    assert started == [8]  # a warning, not a refusal: the ranks still run
    caplog.clear()
    launch.launch(_plan("gpus=2"), tmp_path, None, None, None)  # type: ignore[arg-type]
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == [] and started == [8, 2]


def test_a_spawned_rank_ignores_ctrl_c_while_it_imports_the_harness():
    """A terminal's Ctrl-C reaches the ranks while they import torch and the model: raised there, it printed a
    traceback per rank before the run's one line. The launcher sets HARNESS_RANK_STARTING for its ranks; the
    rank takes Ctrl-C again as it runs (launch._rank_main)."""
    import subprocess
    import sys

    from tests.helpers import REPO, child_env

    probe = "import signal, harness; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"
    for env, ignored in (({"HARNESS_RANK_STARTING": "1"}, "True"), ({}, "False")):
        done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=child_env(**env), capture_output=True,
                              text=True, timeout=60)
        assert done.stdout.strip() == ignored, done.stderr
