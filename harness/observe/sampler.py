"""A sampler: a daemon thread that reads a source about once a second into telemetry.jsonl, keeps what
it saw inside the training window (begin() at run_start, end() at run_stop) and sums it up for
result.json. `Sampler` itself is the null one (no source: a reason, no file); `ProcessSampler` reads
a CPU run's own process; harness/observe/nvml.py reads GPUs. harness/observe/telemetry.py picks one.

    python -c "from harness.observe.sampler import ProcessSampler; s = ProcessSampler().start(); s.begin(); s.end(); s.stop(); print(s.summary())"

Sampling touches nothing on the device: no sync point for the loop.
"""
from __future__ import annotations

import json
import logging
import resource
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import psutil

from harness import files
from harness.observe.telemetry_summary import mean, window_seconds

log = logging.getLogger("harness.telemetry")


@dataclass
class Window:
    """What the sampler saw between begin() and end(): the training window."""

    samples: list[dict] = field(default_factory=list)
    energy_start_mj: dict[int, Optional[int]] = field(default_factory=dict)
    energy_stop_mj: dict[int, Optional[int]] = field(default_factory=dict)
    t_begin: Optional[float] = None
    t_end: Optional[float] = None

    def seconds(self) -> Optional[float]:
        return window_seconds(self.t_begin, self.t_end)


class Sampler:
    """The null sampler, and the shape of the others: start, begin/end around training, stop, summary."""

    source = "none"

    def __init__(self, reason: str = "", path: Optional[Path] = None, interval_s: float = 1.0,
                 on_sample: Optional[Callable[[dict], None]] = None):
        self.reason = reason
        self.path = path
        self.interval_s = interval_s
        self.on_sample = on_sample
        self.window = Window()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._file: Optional[files.RecordFile] = None
        self._t0 = time.time()
        self._lock = threading.Lock()
        self._in_window = False

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> "Sampler":
        if self.source == "none":
            return self
        if self.path is not None:
            self._file = files.RecordFile(self.path, exclusive=False)  # whole lines: a crash keeps what was seen
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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
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
            "window_s": self.window.seconds(),
            # ru_maxrss is the true peak (kilobytes on Linux), not just the sampled one
            "rss_peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "cpu_seconds": round(_cpu_seconds() - start, 3),
            "cpu_pct_mean": mean([x["process"]["cpu_pct"] for x in s]),
        }


def _cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _rss_bytes() -> int:
    return psutil.Process().memory_info().rss
