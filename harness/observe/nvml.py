"""GPUs through NVML: one sampler per node (in local rank 0) reads every GPU the node's ranks use,
matched to NVML by UUID so that CUDA_VISIBLE_DEVICES and any device order are honoured: utilization,
memory used, power, SM clock, temperature and clock-throttle reasons. Energy to train is the
difference of NVML's energy counter between run_start and run_stop (the power samples, integrated,
where a GPU has no counter). harness/observe/telemetry.py opens it on a GPU run.

    python -c "from harness.observe.nvml import throttle_names; print(throttle_names(0x24))"
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Callable, Optional

from harness.observe.sampler import Sampler
from harness.observe.telemetry_summary import combine_gpus, integrate, mean, peak

log = logging.getLogger("harness.telemetry")

# NVML's clock-event (throttle) bits; the names are nvml.h's without their prefix. Idle, application
# clocks, sync boost and the display clock are not throttling: a run slowed by them is not "throttled".
THROTTLE_BITS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}
THROTTLING = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


def throttle_names(mask: Optional[int]) -> list[str]:
    return [name for bit, name in THROTTLE_BITS.items() if mask and mask & bit]


class NvmlSampler(Sampler):
    """GPUs through NVML, by UUID."""

    source = "nvml"

    def __init__(self, nvml, gpus: list[dict], *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.nvml = nvml
        self.gpus = gpus  # {"index" (torch's), "uuid", "name", "handle"}

    def _call(self, fn: str, *args):
        try:
            return getattr(self.nvml, fn)(*args)
        except Exception:  # NotSupported on this GPU, or an older nvidia-ml-py: the field is None
            return None

    def _read(self) -> dict:
        out = []
        for g in self.gpus:
            h = g["handle"]
            util, mem = self._call("nvmlDeviceGetUtilizationRates", h), self._call("nvmlDeviceGetMemoryInfo", h)
            power = self._call("nvmlDeviceGetPowerUsage", h)
            reasons = self._call("nvmlDeviceGetCurrentClocksEventReasons", h)
            if reasons is None:
                reasons = self._call("nvmlDeviceGetCurrentClocksThrottleReasons", h)
            out.append({
                "index": g["index"],
                "util_pct": None if util is None else util.gpu,
                "mem_util_pct": None if util is None else util.memory,
                "memory_used_mib": None if mem is None else round(mem.used / 2**20, 1),
                "power_w": None if power is None else power / 1000.0,
                "sm_clock_mhz": self._call("nvmlDeviceGetClockInfo", h, getattr(self.nvml, "NVML_CLOCK_SM", 1)),
                "temperature_c": self._call("nvmlDeviceGetTemperature", h, getattr(self.nvml, "NVML_TEMPERATURE_GPU", 0)),
                "throttle": reasons,
                "throttle_reasons": throttle_names(reasons),
            })
        return {"gpus": out}

    def _energy(self) -> dict[int, Optional[int]]:
        return {g["index"]: self._call("nvmlDeviceGetTotalEnergyConsumption", g["handle"]) for g in self.gpus}

    def _close(self) -> None:
        self._call("nvmlShutdown")

    def summary(self) -> dict[str, Any]:
        w, per_gpu = self.window, []
        for g in self.gpus:
            rows = [r for s in w.samples for r in s["gpus"] if r["index"] == g["index"]]
            start, stop = w.energy_start_mj.get(g["index"]), w.energy_stop_mj.get(g["index"])
            energy: Optional[float]
            if start is not None and stop is not None:
                energy, method = (stop - start) / 1000.0, "counter"
            else:
                energy, method = integrate([(s["time"], r["power_w"]) for s in w.samples for r in s["gpus"]
                                            if r["index"] == g["index"]]), "power_integral"
            flags = [r["throttle"] for r in rows if r["throttle"] is not None]
            per_gpu.append({
                "index": g["index"], "uuid": g["uuid"], "name": g["name"],
                "util_mean_pct": mean([r["util_pct"] for r in rows]),
                "util_peak_pct": peak([r["util_pct"] for r in rows]),
                "memory_used_peak_mib": peak([r["memory_used_mib"] for r in rows]),
                "power_mean_w": mean([r["power_w"] for r in rows]),
                "energy_j": energy, "energy_method": method,
                "throttled_fraction": (sum(1 for f in flags if f & THROTTLING) / len(flags)) if flags else None,
                "throttle_reasons_seen": sorted({n for r in rows for n in r["throttle_reasons"]}),
            })
        return {
            "source": self.source, "reason": None, "interval_s": self.interval_s, "samples": len(w.samples),
            "window_s": w.seconds(),
            **combine_gpus(per_gpu), "gpus": per_gpu,
        }


def open_nvml(local_world_size: int, path: Optional[Path], interval_s: float,
              on_sample: Optional[Callable[[dict], None]]) -> Sampler:
    """The node's GPUs through NVML, or the null sampler with the reason NVML could not be used."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as err:  # no library, no driver: the run goes on without telemetry
        reason = f"NVML unavailable: {type(err).__name__}: {err}".strip()
        log.info("telemetry off (%s)", reason)
        return Sampler(reason, interval_s=interval_s)
    try:
        gpus = [_match(pynvml, i) for i in range(local_world_size)]
    except Exception as err:
        pynvml.nvmlShutdown()
        reason = f"GPUs not found in NVML: {err}"
        log.warning("telemetry off (%s)", reason)
        return Sampler(reason, interval_s=interval_s)
    return NvmlSampler(pynvml, gpus, path=path, interval_s=interval_s, on_sample=on_sample)


def _match(nvml, index: int) -> dict:
    """torch's device `index` as NVML knows it. CUDA's order and CUDA_VISIBLE_DEVICES both renumber
    GPUs, NVML's indices do not: the UUID is the one name they share."""
    import torch

    uuid = cuda_uuid(index)
    if uuid is not None:
        handle = nvml.nvmlDeviceGetHandleByUUID(uuid)
    else:  # a torch without device UUIDs: CUDA_VISIBLE_DEVICES as written, else NVML's order
        visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
        token = visible[index] if index < len(visible) else str(index)
        handle = (nvml.nvmlDeviceGetHandleByUUID(token) if not token.isdigit()
                  else nvml.nvmlDeviceGetHandleByIndex(int(token)))
        uuid = _text(nvml.nvmlDeviceGetUUID(handle))
    return {"index": index, "uuid": uuid, "name": torch.cuda.get_device_name(index), "handle": handle}


def cuda_uuid(index: int) -> Optional[str]:
    """'GPU-xxxxxxxx-...' as NVML writes it, from torch's device properties."""
    import torch

    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    if uuid is None:
        return None
    text = str(uuid)
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
