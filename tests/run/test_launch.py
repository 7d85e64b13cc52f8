"""The launcher's word before it starts more CPU ranks than the host has cores (the runs themselves:
tests/e2e/test_multirank.py)."""
from __future__ import annotations

import logging

import pytest

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


def _spawned_rank(proc) -> bool:
    """A rank the launcher spawned is there (multiprocessing's resource tracker, its first child, is not one)."""
    from pathlib import Path

    try:
        kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        return any(b"spawn_main" in Path(f"/proc/{kid}/cmdline").read_bytes() for kid in kids)
    except OSError:
        return False


@pytest.mark.e2e
@pytest.mark.parametrize("after_s", [0.03, 0.1])
def test_ctrl_c_as_the_ranks_start_is_the_run_s_one_line_and_no_traceback(tmp_path, after_s):
    """A terminal's Ctrl-C reaches the spawned ranks too. In their first moments (Python's own start-up, the
    imports) it printed each rank's KeyboardInterrupt traceback, 30-60 lines, before the run's one line: the
    ranks are now born with Ctrl-C held until they run, and it stops them there. The run ends within
    seconds: the launcher's own stop is that SIGINT too, and a rank that dropped it ran on while the
    launcher waited 30 s to kill it (the limit below is under those 30 s)."""
    import time

    from tests.helpers import ctrl_c, said

    seen: list[float] = []

    def when(proc, out) -> bool:
        if not seen and _spawned_rank(proc):
            seen.append(time.monotonic())
        return bool(seen) and time.monotonic() - seen[0] >= after_s

    rc, _, err = ctrl_c("harness.train", "model=ncf", "+debug=ncf", "device=cpu", "gpus=2", "seed=1",
                        "progress=false", "output_root=out", "data_root=data", cwd=tmp_path, when=when, timeout=25)
    lines = [line for line in said(err) if "start-up held the time to train back" not in line]  # a busy host's
    assert rc == 130 and lines == ["harness.train: interrupted; the run is marked aborted in its result.json"], err
    (result,) = (tmp_path / "out").rglob("result.json")
    assert '"status": "aborted"' in result.read_text()
