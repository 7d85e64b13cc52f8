"""result.json: what one run did, written atomically by the process that owns the run directory.

The schema is documented in docs/results.md; `schema` names its version.
"""
from __future__ import annotations

import json
import os
import platform
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

SCHEMA = "harness.result/1"

SUCCESS, ABORTED, FAILED = "success", "aborted", "failed"


@dataclass
class RunRecord:
    status: str = FAILED  # success | aborted (target not reached, or interrupted) | failed (crashed)
    mode: str = "train"  # train | throughput (synthetic batches, no target, no MLPerf log)
    model: str = ""
    benchmark: str = ""
    dataset: str = ""
    quality_metric: str = ""
    target: Optional[float] = None
    seed: Optional[int] = None
    world_size: int = 1
    device: str = ""
    platform: str = ""
    accelerator: str = ""  # system.json's accelerator_model_name: the GPU model, or CPU
    precision: str = ""
    global_batch_size: Optional[int] = None
    time_to_train_s: Optional[float] = None  # run_stop - run_start, from the logged times
    time_to_train_min: Optional[float] = None
    init_time_s: Optional[float] = None  # init_stop - init_start
    # time to train outside training epochs and evaluations: logging, telemetry, checks, progress
    overhead_s: Optional[float] = None
    overhead_fraction: Optional[float] = None
    epochs_to_converge: Optional[int] = None  # epoch of the last evaluation of a successful run
    epochs_run: int = 0
    final_quality: Optional[float] = None
    throughput: Optional[float] = None  # summed over ranks, training time only, after warm-up
    throughput_unit: str = ""
    warmup_steps: Optional[int] = None  # steps left out of the throughput figure
    evals: list[dict[str, Any]] = field(default_factory=list)  # {"epoch", "quality"}
    epochs: list[dict[str, Any]] = field(default_factory=list)  # per-epoch loss, seconds, throughput
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    reason: Optional[str] = None  # one line: why the run is aborted or failed
    error: Optional[dict[str, Any]] = None  # {"type", "message", "rank", "traceback"} when failed
    run_dir: str = ""
    mlperf_log: Optional[str] = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    command: list[str] = field(default_factory=list)
    versions: dict[str, Optional[str]] = field(default_factory=dict)
    telemetry: Optional[dict[str, Any]] = None  # the sampler's summary over run_start..run_stop (docs/results.md)
    schema: str = SCHEMA

    def set_time_to_train(self, run_start_ms: int, run_stop_ms: int) -> None:
        self.time_to_train_s = (run_stop_ms - run_start_ms) / 1000.0
        self.time_to_train_min = (run_stop_ms - run_start_ms) / 60 / 1000

    def account_overhead(self) -> None:
        """What the harness itself costs: time to train less the epochs' training and evaluation
        time (each measured after the device finished). The log's millisecond clock can put the
        difference a hair below zero: that reads as none."""
        if not self.time_to_train_s or not self.epochs:
            return
        busy = sum(e["train_seconds"] + (e.get("eval_seconds") or 0.0) for e in self.epochs)
        self.overhead_s = round(max(0.0, self.time_to_train_s - busy), 4)
        self.overhead_fraction = round(self.overhead_s / self.time_to_train_s, 5)


def write(record: RunRecord, path: Path) -> None:
    """Replace path in one step, so a reader never sees half a result."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".result-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(asdict(record), f, indent=2, default=str)
        f.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def read(path: Path) -> dict[str, Any]:
    with open(path) as f:
        return json.load(f)


def versions() -> dict[str, Optional[str]]:
    import hydra
    import mlperf_logging
    import numpy
    import torch

    import harness

    def dist_version(name: str) -> Optional[str]:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(name)
        except PackageNotFoundError:
            return None

    return {
        "harness": harness.__version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else None,
        "mlperf_logging": dist_version("mlperf-logging") or getattr(mlperf_logging, "__version__", None),
        "hydra": hydra.__version__,
        "numpy": numpy.__version__,
        "host": platform.node(),
        "os": f"{platform.system()} {platform.release()}",
    }
