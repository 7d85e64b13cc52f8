"""Telemetry while a run trains: GPUs through NVML, or the process itself on CPU.

    python -m harness.train model=gnmt seed=1                 # telemetry.jsonl and a summary in result.json
    python -m harness.train model=gnmt seed=1 telemetry=false

On GPUs, one sampler per node (in local rank 0) reads every GPU the node's ranks use, matched to
NVML by UUID so that CUDA_VISIBLE_DEVICES and any device order are honoured, about once a second:
utilization, memory used, power, SM clock, temperature and clock-throttle reasons. Energy to train
is the difference of NVML's energy counter between run_start and run_stop (the power samples,
integrated, where a GPU has no counter). Without NVML (no driver, no library) the sampler is null:
no error, "n/a" in reports. CPU runs sample their own process: resident memory and CPU time.

Sampling runs in a daemon thread and touches nothing on the device: no sync point for the loop.
"""
from __future__ import annotations

import json
import logging
import os
import resource
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import psutil

from harness.observe import disk

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


@dataclass
class _Window:
    """What the sampler saw between begin() and end(): the training window."""

    samples: list[dict] = field(default_factory=list)
    energy_start_mj: dict[int, Optional[int]] = field(default_factory=dict)
    energy_stop_mj: dict[int, Optional[int]] = field(default_factory=dict)
    t_begin: Optional[float] = None
    t_end: Optional[float] = None


class Sampler:
    """The null sampler, and the shape of the others: start, begin/end around training, stop, summary."""

    source = "none"

    def __init__(self, reason: str = "", path: Optional[Path] = None, interval_s: float = 1.0,
                 on_sample: Optional[Callable[[dict], None]] = None):
        self.reason = reason
        self.path = path
        self.interval_s = interval_s
        self.on_sample = on_sample
        self.window = _Window()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._file: Optional[disk.RecordFile] = None
        self._t0 = time.time()
        self._lock = threading.Lock()
        self._in_window = False

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> "Sampler":
        if self.source == "none":
            return self
        if self.path is not None:
            self._file = disk.RecordFile(self.path, exclusive=False)  # whole lines: a crash keeps what was seen
        self._sample_once()
        self._thread = threading.Thread(target=self._run, name="harness-telemetry", daemon=True)
        self._thread.start()
        return self

    def begin(self) -> None:
        """run_start (or the first measured step): the training window opens."""
        with self._lock:
            self.window.t_begin = time.time()
            self.window.energy_start_mj = self._energy()
            self._in_window = True
        self._sample_once()

    def end(self) -> None:
        """run_stop: the window closes (idempotent; a window never opened stays empty)."""
        if not self._in_window:
            return
        self._sample_once()
        with self._lock:
            self.window.t_end = time.time()
            self.window.energy_stop_mj = self._energy()
            self._in_window = False

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5 * self.interval_s + 5)
        if self._file is not None:
            self._file.close()
            self._file = None
        self._close()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample_once()

    def _sample_once(self) -> None:
        try:
            record = self._read()
        except Exception as err:  # telemetry must never take a run down
            log.debug("telemetry sample failed: %s", err)
            return
        record = {"time": round(time.time(), 3), "elapsed_s": round(time.time() - self._t0, 3), **record}
        with self._lock:
            if self._in_window:
                self.window.samples.append(record)
            if self._file is not None:
                try:
                    self._file.write_line(json.dumps(record))
                except OSError as err:  # a full disk: the run ends at its next step (disk.DiskCheck)
                    log.debug("telemetry.jsonl: %s", err)
                    self._file = None
        if self.on_sample is not None:
            try:
                self.on_sample(record)
            except Exception as err:
                log.debug("telemetry consumer failed: %s", err)

    # -- what a source implements ----------------------------------------------------------------
    def _read(self) -> dict:
        return {}

    def _energy(self) -> dict[int, Optional[int]]:
        return {}

    def _close(self) -> None:
        pass

    def summary(self) -> dict[str, Any]:
        return {"source": self.source, "reason": self.reason or None}


class ProcessSampler(Sampler):
    """A CPU run: this process's resident memory (psutil) and CPU time."""

    source = "process"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._cpu0 = _cpu_seconds()
        self._last = (time.time(), self._cpu0)
        self._cpu_at_begin: Optional[float] = None

    def begin(self) -> None:
        self._cpu_at_begin = _cpu_seconds()
        super().begin()

    def _read(self) -> dict:
        now, cpu = time.time(), _cpu_seconds()
        last_t, last_cpu = self._last
        self._last = (now, cpu)
        pct = 100.0 * (cpu - last_cpu) / (now - last_t) if now > last_t else None
        return {"process": {"rss_mib": round(_rss_bytes() / 2**20, 1), "cpu_seconds": round(cpu, 3),
                            "cpu_pct": None if pct is None else round(pct, 1)}}

    def summary(self) -> dict[str, Any]:
        s = self.window.samples
        start = self._cpu_at_begin if self._cpu_at_begin is not None else self._cpu0
        return {
            "source": self.source, "reason": None, "interval_s": self.interval_s, "samples": len(s),
            "window_s": _window(self.window),
            # ru_maxrss is the true peak (kilobytes on Linux), not just the sampled one
            "rss_peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "cpu_seconds": round(_cpu_seconds() - start, 3),
            "cpu_pct_mean": _mean([x["process"]["cpu_pct"] for x in s]),
        }


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
                energy, method = _integrate([(s["time"], r["power_w"]) for s in w.samples for r in s["gpus"]
                                             if r["index"] == g["index"]]), "power_integral"
            flags = [r["throttle"] for r in rows if r["throttle"] is not None]
            per_gpu.append({
                "index": g["index"], "uuid": g["uuid"], "name": g["name"],
                "util_mean_pct": _mean([r["util_pct"] for r in rows]),
                "util_peak_pct": _max([r["util_pct"] for r in rows]),
                "memory_used_peak_mib": _max([r["memory_used_mib"] for r in rows]),
                "power_mean_w": _mean([r["power_w"] for r in rows]),
                "energy_j": energy, "energy_method": method,
                "throttled_fraction": (sum(1 for f in flags if f & THROTTLING) / len(flags)) if flags else None,
                "throttle_reasons_seen": sorted({n for r in rows for n in r["throttle_reasons"]}),
            })
        return {
            "source": self.source, "reason": None, "interval_s": self.interval_s, "samples": len(w.samples),
            "window_s": _window(w),
            **combine_gpus(per_gpu), "gpus": per_gpu,
        }


def combine_gpus(per_gpu: list[dict]) -> dict[str, Any]:
    """The run's figures from its GPUs': power and energy add up, utilization averages, peaks peak."""
    def col(k):
        return [g.get(k) for g in per_gpu]

    energies = col("energy_j")
    return {
        "gpu_count": len(per_gpu),
        "util_mean_pct": _mean(col("util_mean_pct")),
        "util_peak_pct": _max(col("util_peak_pct")),
        "memory_used_peak_mib": _max(col("memory_used_peak_mib")),
        "power_mean_w": _sum(col("power_mean_w")),
        "energy_j": None if not energies or any(e is None for e in energies) else sum(energies),
        "throttled_fraction": _mean(col("throttled_fraction")),
    }


def combine_nodes(summaries: list[Optional[dict]]) -> Optional[dict]:
    """Rank 0's view of a multi-node run: every node leader's summary, merged."""
    real = [s for s in summaries if s]
    if len(real) <= 1:
        return real[0] if real else None
    if real[0].get("source") == "nvml":
        gpus = [g for s in real for g in s.get("gpus", [])]
        return {**real[0], "samples": sum(s.get("samples", 0) for s in real), **combine_gpus(gpus), "gpus": gpus,
                "nodes": len(real)}
    if real[0].get("source") == "process":
        return {**real[0], "rss_peak_mib": _max([s.get("rss_peak_mib") for s in real]),
                "cpu_seconds": _sum([s.get("cpu_seconds") for s in real]), "processes": len(real)}
    return real[0]


def open_sampler(device_type: str, local_rank: int, local_world_size: int, path: Optional[Path],
                 interval_s: float = 1.0, enabled: bool = True,
                 on_sample: Optional[Callable[[dict], None]] = None) -> Sampler:
    """The sampler this process should run: NVML in a GPU node's local rank 0, the process's own on
    CPU, else the null one (with the reason)."""
    if not enabled:
        return Sampler("telemetry=false", interval_s=interval_s)
    if device_type != "cuda":
        return ProcessSampler(path=path, interval_s=interval_s, on_sample=on_sample)
    if local_rank != 0:
        return Sampler("sampled by the node's local rank 0", interval_s=interval_s)
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


def _window(w: _Window) -> Optional[float]:
    return None if w.t_begin is None or w.t_end is None else round(w.t_end - w.t_begin, 3)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _rss_bytes() -> int:
    return psutil.Process().memory_info().rss


def _clean(values) -> list[float]:
    return [float(v) for v in values if v is not None]


def _mean(values) -> Optional[float]:
    v = _clean(values)
    return round(sum(v) / len(v), 3) if v else None


def _max(values) -> Optional[float]:
    v = _clean(values)
    return max(v) if v else None


def _sum(values) -> Optional[float]:
    v = _clean(values)
    return round(sum(v), 3) if v else None


def _integrate(points: list[tuple[float, Optional[float]]]) -> Optional[float]:
    """Joules from (time, watts) samples, by the trapezoid rule."""
    pts = [(t, w) for t, w in points if w is not None]
    if len(pts) < 2:
        return None
    return round(sum((t1 - t0) * (w0 + w1) / 2 for (t0, w0), (t1, w1) in zip(pts, pts[1:])), 3)
