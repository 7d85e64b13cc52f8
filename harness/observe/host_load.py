"""How busy the machine is: the CPU time that processes other than this run's take from its CPUs.

A time to train measured while a neighbour spins on a core measures the neighbour too. This module
reads the kernel's own counters through psutil (no torch, so it runs before torch starts):

- the busy time of the CPUs this process may use (os.sched_getaffinity), psutil.cpu_times(percpu=True);
- the CPU time of this run's own processes: the run's root process (this one, or the launcher that
  started this rank) and every descendant (ranks, data-loader workers), psutil.Process.cpu_times(),
  whose children_user/children_system count the children already reaped;

and calls the difference "other processes' CPU", in percent of one core (100 = one core busy).
`measure` takes one reading over a short window; `HostLoadMonitor` samples through a run so that the
mean over run_start..run_stop can be told. Where the counters cannot be read, every figure is None.

    python -m harness.check.show host        # prints this machine's load now
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Optional

import psutil

from harness.observe.ticker import Ticker

BUSY_CORES = 0.5  # other processes at this many cores or more make a run "busy" (docs/results.md)


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (a SLURM or container CPU set, not the whole host)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


@dataclass(frozen=True)
class Reading:
    """One look at the counters, in CPU seconds."""

    cpus_busy: float  # busy time of the usable CPUs since boot
    cpus_total: float  # busy + idle time of the usable CPUs since boot
    family: float  # CPU time of the run's processes, live and reaped


def _cpu_times(cpus: list[int]) -> Optional[tuple[float, float]]:
    try:
        per_cpu = psutil.cpu_times(percpu=True)
    except (OSError, RuntimeError):
        return None
    busy = total = 0.0
    for c in cpus:
        if c >= len(per_cpu):
            continue
        t = per_cpu[c]
        # user nice system idle iowait irq softirq steal; guest time is inside user already
        fields = [getattr(t, name, 0.0) for name in ("user", "nice", "system", "idle", "iowait", "irq", "softirq",
                                                     "steal")]
        total += sum(fields)
        busy += sum(fields) - t.idle - getattr(t, "iowait", 0.0)
    return (busy, total) if total else None


def _own_cpu(process: psutil.Process) -> float:
    t = process.cpu_times()
    return t.user + t.system + t.children_user + t.children_system


def family_cpu_seconds(root: int) -> Optional[float]:
    """CPU time of `root` and all its descendants, with the children they have already reaped."""
    try:
        top = psutil.Process(root)
        total = _own_cpu(top)
        family = top.children(recursive=True)
    except (psutil.Error, OSError):
        return None
    for child in family:
        try:
            total += _own_cpu(child)
        except (psutil.Error, OSError):
            continue  # ended meanwhile: its time is in its parent's children_* once reaped
    return total


def read(root: int, cpus: list[int]) -> Optional[Reading]:
    stat = _cpu_times(cpus)
    family = family_cpu_seconds(root)
    if stat is None or family is None:
        return None
    return Reading(stat[0], stat[1], family)


def other_cpu_pct(a: Reading, b: Reading, n_cpus: int) -> Optional[float]:
    """Other processes' CPU between two readings, in percent of one core."""
    wall = (b.cpus_total - a.cpus_total) / max(n_cpus, 1)  # seconds of wall time per CPU
    if wall <= 0:
        return None
    others = (b.cpus_busy - a.cpus_busy) - (b.family - a.family)
    return round(max(0.0, 100.0 * others / wall), 1)


def run_root(world_source: str) -> int:
    """The process whose descendants are this run: this one, or the launcher (torchrun's agent,
    slurmstepd, the harness's elastic launcher) that started this rank and its siblings."""
    return os.getpid() if world_source == "single" else os.getppid()


def measure(root: Optional[int] = None, window_s: float = 0.25) -> Optional[float]:
    """Other processes' CPU over the next `window_s` seconds (this process sleeps meanwhile)."""
    cpus = usable_cpus()
    root = os.getpid() if root is None else root
    first = read(root, cpus)
    if first is None:
        return None
    time.sleep(window_s)
    second = read(root, cpus)
    return None if second is None else other_cpu_pct(first, second, len(cpus))


def load_average() -> Optional[list[float]]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


class HostLoadMonitor:
    """Other processes' CPU, sampled every `interval_s` in a daemon thread; the mean of any window.
    Reads only the kernel's counters: it adds no work to the run beyond a few small reads a second."""

    def __init__(self, root: int, interval_s: float = 1.0):
        self.root = root
        self.interval_s = interval_s
        self.cpus = usable_cpus()
        self.samples: list[tuple[float, float]] = []  # (end time of the interval, other CPU %)
        self._last: Optional[Reading] = None
        self._ticker = Ticker(interval_s, self._sample, "harness-host-load")

    def start(self) -> "HostLoadMonitor":
        self._last = read(self.root, self.cpus)
        if self._last is not None:  # no counters: nothing to sample
            self._ticker.start()
        return self

    def stop(self) -> None:
        self._ticker.stop()

    def _sample(self) -> bool:
        now = read(self.root, self.cpus)
        if now is None or self._last is None:
            return True  # the counters went away: stop sampling
        pct = other_cpu_pct(self._last, now, len(self.cpus))
        if pct is not None:
            self.samples.append((time.time(), pct))
        self._last = now
        return False

    def mean(self, t_start: Optional[float] = None, t_stop: Optional[float] = None) -> Optional[float]:
        """The mean over the samples whose interval ended inside [t_start, t_stop + one interval]."""
        lo = t_start if t_start is not None else float("-inf")
        hi = t_stop + self.interval_s if t_stop is not None else float("inf")
        inside = [pct for t, pct in list(self.samples) if lo < t <= hi]
        return round(sum(inside) / len(inside), 1) if inside else None


def summary(start_pct: Optional[float], mean_pct: Optional[float], load_avg: Optional[list[float]],
            cpus: Optional[int] = None) -> dict:
    """result.json's and system.json's host_load (docs/results.md)."""
    n = cpus or len(usable_cpus())
    seen = [p for p in (start_pct, mean_pct) if p is not None]
    worst = max(seen) if seen else None
    busy = worst is not None and worst >= 100 * BUSY_CORES
    if busy and worst is not None:
        when = "during the run" if mean_pct is not None and mean_pct == worst else "just before the run"
        note = (f"other processes used {worst / 100:.2f} of {n} CPUs {when}: "
                "time to train measures the machine's neighbours too")
    else:
        note = None
    return {"cpus": n, "load_avg_start": load_avg, "other_cpu_pct_start": start_pct,
            "other_cpu_pct_mean": mean_pct, "busy": busy, "note": note}

