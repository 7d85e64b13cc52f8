"""NVML's sampler: the GPU a run uses found by UUID, its figures and its energy (the counter, or the
power integrated). No GPU here: NVML is played by a small stand-in with NVML's API."""
from __future__ import annotations

import json
import sys
import time
import types

import pytest

from harness.observe import nvml, telemetry


class FakeNvml:
    """Two GPUs as NVML numbers them; the run uses NVML's GPU 1 only (CUDA_VISIBLE_DEVICES=1)."""

    NVML_CLOCK_SM = 1
    NVML_TEMPERATURE_GPU = 0

    def __init__(self):
        self.t0 = time.time()
        self.uuids = ["GPU-aaaa", "GPU-bbbb"]
        self.energy_mj = {"GPU-aaaa": 5_000_000, "GPU-bbbb": 1_000_000}
        self.asked: list[str] = []

    def nvmlDeviceGetHandleByUUID(self, uuid):
        self.asked.append(uuid)
        return uuid

    def nvmlDeviceGetUtilizationRates(self, h):
        return types.SimpleNamespace(gpu=90 if h == "GPU-bbbb" else 0, memory=40)

    def nvmlDeviceGetMemoryInfo(self, h):
        return types.SimpleNamespace(used=3 * 2**30, total=141 * 2**30)

    def nvmlDeviceGetPowerUsage(self, h):
        return 500_000  # mW

    def nvmlDeviceGetClockInfo(self, h, clock):
        return 1980

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 55

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 0x4  # sw power cap: throttled

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        self.energy_mj[h] += 250_000  # 250 J per reading
        return self.energy_mj[h]

    def nvmlShutdown(self):
        pass


def test_nvml_sampler_reads_the_gpu_the_run_uses_and_its_energy(monkeypatch, tmp_path):
    fake = FakeNvml()
    fake.nvmlInit = lambda: None
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    # torch's cuda:0 is NVML's GPU 1 here: the UUID is what both sides agree on
    monkeypatch.setattr(nvml, "cuda_uuid", lambda index: fake.uuids[1])
    monkeypatch.setattr("torch.cuda.get_device_name", lambda index: "NVIDIA H200")
    seen = []
    path = tmp_path / "telemetry.jsonl"
    sampler = telemetry.open_sampler("cuda", 0, 1, path, interval_s=0.02, on_sample=seen.append).start()
    sampler.begin()
    time.sleep(0.1)
    sampler.end()
    sampler.stop()
    assert fake.asked == ["GPU-bbbb"]
    s = sampler.summary()
    assert s["source"] == "nvml" and s["gpu_count"] == 1 and s["gpus"][0]["name"] == "NVIDIA H200"
    assert s["energy_j"] == pytest.approx(250.0) and s["gpus"][0]["energy_method"] == "counter"
    assert s["util_mean_pct"] == 90 and s["util_peak_pct"] == 90 and s["memory_used_peak_mib"] == 3072
    assert s["power_mean_w"] == 500 and s["throttled_fraction"] == 1.0
    assert s["gpus"][0]["throttle_reasons_seen"] == ["sw_power_cap"]
    lines = [json.loads(l) for l in path.read_text().splitlines()]
    assert len(lines) >= 3 and lines[0]["gpus"][0]["power_w"] == 500 and seen  # TensorBoard got them too


def test_without_an_energy_counter_power_is_integrated(monkeypatch):
    fake = FakeNvml()
    del_energy = lambda h: (_ for _ in ()).throw(RuntimeError("NVML_ERROR_NOT_SUPPORTED"))
    fake.nvmlDeviceGetTotalEnergyConsumption = del_energy
    sampler = nvml.NvmlSampler(fake, [{"index": 0, "uuid": "GPU-bbbb", "name": "X", "handle": "GPU-bbbb"}],
                               interval_s=0.02).start()
    sampler.begin()
    time.sleep(0.2)
    sampler.end()
    sampler.stop()
    s = sampler.summary()
    assert s["gpus"][0]["energy_method"] == "power_integral"
    assert s["energy_j"] == pytest.approx(500 * s["window_s"], rel=0.25)
