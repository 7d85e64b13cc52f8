"""Telemetry: which sampler a process runs, the null one where NVML is missing or telemetry is off,
and a CPU run's own process. NVML's sampler is tests/observe/test_nvml.py's."""
from __future__ import annotations

import json
import sys
import types

from harness.observe import telemetry


def test_no_nvml_gives_the_null_sampler_and_the_run_goes_on(monkeypatch, tmp_path):
    broken = types.ModuleType("pynvml")

    def fail():
        raise OSError("NVML Shared Library Not Found")

    broken.nvmlInit = fail
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    path = tmp_path / "telemetry.jsonl"
    sampler = telemetry.open_sampler("cuda", 0, 1, path, interval_s=0.01).start()
    sampler.begin()
    sampler.end()
    sampler.stop()
    summary = sampler.summary()
    assert summary["source"] == "none" and "NVML unavailable" in summary["reason"]
    assert not path.exists()


def test_switched_off_and_other_local_ranks_sample_nothing():
    assert telemetry.open_sampler("cuda", 0, 1, None, enabled=False).summary()["reason"] == "telemetry=false"
    assert telemetry.open_sampler("cuda", 1, 2, None).summary()["source"] == "none"


def test_a_cpu_process_sampler_reports_memory_and_cpu_time(tmp_path):
    sampler = telemetry.open_sampler("cpu", 0, 1, tmp_path / "t.jsonl", interval_s=0.02).start()
    sampler.begin()
    sum(i * i for i in range(300_000))  # some CPU time inside the window
    sampler.end()
    sampler.stop()
    s = sampler.summary()
    assert s["source"] == "process" and s["rss_peak_mib"] > 10 and s["cpu_seconds"] > 0
    assert json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])["process"]["rss_mib"] > 10
