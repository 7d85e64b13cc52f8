"""result.json's `telemetry`: a sampler's figures over the training window, its GPUs' combined into
the run's, and every node's merged on rank 0 (harness/observe/watchers.py). Numbers only; the samples
come from harness/observe/sampler.py (the process) and harness/observe/nvml.py (GPUs).

    python -c "from harness.observe.telemetry_summary import integrate; print(integrate([(0, 100), (2, 300)]))"
"""
from __future__ import annotations

from typing import Any, Optional


def combine_gpus(per_gpu: list[dict]) -> dict[str, Any]:
    """The run's figures from its GPUs': power and energy add up, utilization averages, peaks peak."""
    def col(k):
        return [g.get(k) for g in per_gpu]

    energies = col("energy_j")
    return {
        "gpu_count": len(per_gpu),
        "util_mean_pct": mean(col("util_mean_pct")),
        "util_peak_pct": peak(col("util_peak_pct")),
        "memory_used_peak_mib": peak(col("memory_used_peak_mib")),
        "power_mean_w": total(col("power_mean_w")),
        "energy_j": None if not energies or any(e is None for e in energies) else sum(energies),
        "throttled_fraction": mean(col("throttled_fraction")),
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
        return {**real[0], "rss_peak_mib": peak([s.get("rss_peak_mib") for s in real]),
                "cpu_seconds": total([s.get("cpu_seconds") for s in real]), "processes": len(real)}
    return real[0]


def window_seconds(t_begin: Optional[float], t_end: Optional[float]) -> Optional[float]:
    """The training window's length; None while it was never opened or never closed."""
    return None if t_begin is None or t_end is None else round(t_end - t_begin, 3)


def _clean(values) -> list[float]:
    return [float(v) for v in values if v is not None]


def mean(values) -> Optional[float]:
    """The mean of the values that were read (None where a GPU did not report the field)."""
    v = _clean(values)
    return round(sum(v) / len(v), 3) if v else None


def peak(values) -> Optional[float]:
    v = _clean(values)
    return max(v) if v else None


def total(values) -> Optional[float]:
    v = _clean(values)
    return round(sum(v), 3) if v else None


def integrate(points: list[tuple[float, Optional[float]]]) -> Optional[float]:
    """Joules from (time, watts) samples, by the trapezoid rule."""
    pts = [(t, w) for t, w in points if w is not None]
    if len(pts) < 2:
        return None
    return round(sum((t1 - t0) * (w0 + w1) / 2 for (t0, w0), (t1, w1) in zip(pts, pts[1:])), 3)
