"""The host's load as a run sees it: other processes' CPU (the run's own left out), and the
busy verdict that result.json, system.json and the console carry."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from harness.observe import host_load
from harness.observe.host_load import HostLoadMonitor, Reading, other_cpu_pct, summary

linux = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="the kernel's counters of Linux")


def test_other_processes_cpu_is_the_cpus_busy_time_less_the_runs_own():
    a, b = Reading(10.0, 50.0, 2.0), Reading(13.0, 54.0, 3.5)  # 2 CPUs: 2 s of wall time each
    assert other_cpu_pct(a, b, 2) == 75.0  # 3 s busy, 1.5 of them the run's
    assert other_cpu_pct(a, Reading(11.0, 54.0, 4.0), 2) == 0.0  # never below zero
    assert other_cpu_pct(a, a, 2) is None


@linux
def test_the_runs_own_processes_count_as_its_own_live_or_reaped():
    before = host_load.family_cpu_seconds(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "import time\nt=time.process_time()\n"
                              "while time.process_time() - t < 0.6: pass\ntime.sleep(30)"])
    try:
        deadline = time.time() + 120
        while host_load.family_cpu_seconds(os.getpid()) - before < 0.5 and time.time() < deadline:
            time.sleep(0.2)
        live = host_load.family_cpu_seconds(os.getpid()) - before
        assert live >= 0.5  # the child's 0.6 s of CPU, counted while it lives
    finally:
        child.kill()
        child.wait()
    # reaped: in our cutime, still ours (the same clock ticks, summed in another order: float rounding)
    assert host_load.family_cpu_seconds(os.getpid()) - before >= live - 1e-6


def test_a_run_is_busy_when_others_used_half_a_core_at_the_start_or_during_it():
    quiet = summary(10.0, 20.0, [0.3, 0.2, 0.1], cpus=2)
    assert quiet == {"cpus": 2, "load_avg_start": [0.3, 0.2, 0.1], "other_cpu_pct_start": 10.0,
                     "other_cpu_pct_mean": 20.0, "busy": False, "note": None}
    during = summary(10.0, 95.0, None, cpus=2)
    assert during["busy"] and during["note"] == (
        "other processes used 0.95 of 2 CPUs during the run: time to train measures the machine's neighbours too")
    assert summary(60.0, None, None, cpus=2)["note"].endswith("just before the run: time to train measures "
                                                              "the machine's neighbours too")
    assert summary(None, None, None, cpus=2)["busy"] is False  # not measurable: not called busy


def test_the_monitor_averages_the_timed_window_only():
    m = HostLoadMonitor(os.getpid(), interval_s=1.0)
    m.samples = [(100.0, 0.0), (101.0, 90.0), (102.0, 110.0), (103.0, 0.0)]
    assert m.mean(100.2, 101.5) == 100.0  # intervals ending in (100.2, 102.5]
    assert m.mean() == 50.0 and m.mean(200.0, 201.0) is None


@linux
def test_the_monitor_samples_in_the_background():
    m = HostLoadMonitor(os.getpid(), interval_s=0.2).start()
    time.sleep(1.0)
    m.stop()
    assert m.samples and all(pct >= 0 for _, pct in m.samples)
