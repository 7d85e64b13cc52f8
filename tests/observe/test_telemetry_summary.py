"""result.json's telemetry summary: several nodes' merged into one on rank 0."""
from __future__ import annotations

from harness.observe.telemetry_summary import combine_gpus, combine_nodes


def test_nodes_merge_into_one_summary():
    gpu = {"index": 0, "uuid": "u", "name": "H200", "util_mean_pct": 80.0, "util_peak_pct": 99.0,
           "memory_used_peak_mib": 1000.0, "power_mean_w": 400.0, "energy_j": 1000.0, "throttled_fraction": 0.0}
    node = {"source": "nvml", "reason": None, "samples": 10, **combine_gpus([gpu]), "gpus": [gpu]}
    merged = combine_nodes([node, None, {**node, "gpus": [{**gpu, "power_mean_w": 600.0}]}, None])
    assert merged["nodes"] == 2 and merged["gpu_count"] == 2
    assert merged["power_mean_w"] == 1000 and merged["energy_j"] == 2000 and merged["samples"] == 20
