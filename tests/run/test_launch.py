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
