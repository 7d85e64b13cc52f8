"""Telemetry while a run trains: GPUs through NVML, or the process itself on CPU.

    python -m harness.train model=gnmt seed=1                 # telemetry.jsonl and a summary in result.json
    python -m harness.train model=gnmt seed=1 telemetry=false

On GPUs, one sampler per node (in local rank 0) reads every GPU the node's ranks use about once a
second (harness/observe/nvml.py); energy to train is counted between run_start and run_stop. Without
NVML (no driver, no library) the sampler is null: no error, "n/a" in reports. CPU runs sample their
own process: resident memory and CPU time (harness/observe/sampler.py). The summary's figures, and
the merge of every node's, are harness/observe/telemetry_summary.py's.

Sampling runs in a daemon thread and touches nothing on the device: no sync point for the loop.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from harness.observe.nvml import open_nvml
from harness.observe.sampler import ProcessSampler, Sampler


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
    return open_nvml(local_world_size, path, interval_s, on_sample)
