"""result.json: what one run did, written atomically by the process that owns the run directory.

`assemble` makes it from what the command knows (run directory, command, versions, the model's
facts), rank 0's result when the run ended normally, and otherwise the run's own mlperf.log: a run
that was interrupted or crashed is rebuilt from the log its rank 0 wrote up to the end (epochs,
evaluations, time to train with run_stop aborted). The schema is documented in docs/results.md;
`schema` names its version.
"""
from __future__ import annotations

import json
import os
import platform
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

SCHEMA = "harness.result/2"

SUCCESS, ABORTED, FAILED = "success", "aborted", "failed"


@dataclass
class RunRecord:
    status: str = FAILED  # success | aborted (target not reached, or interrupted) | failed (crashed)
    mode: str = "train"  # train | throughput (synthetic batches, no target, no MLPerf log)
    model: str = ""
    benchmark: str = ""
    dataset: str = ""
    quality_metric: str = ""
    quality_direction: Optional[str] = None  # "higher" or "lower" is better; None for throughput-only models
    target: Any = None  # a number, or one number per quality part
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
    epochs_to_converge: Optional[float] = None  # epoch_num of the last evaluation of a successful run
    epoch_unit: str = "epochs"  # what epoch numbers count: "samples" under a schedule by samples
    epochs_run: int = 0
    final_quality: Any = None  # a number, or one number per quality part
    throughput: Optional[float] = None  # summed over ranks, training time only, after warm-up
    throughput_unit: str = ""
    warmup_steps: Optional[int] = None  # steps left out of the throughput figure
    evals: list[dict[str, Any]] = field(default_factory=list)  # {"epoch", "quality"}; quality as final_quality
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
    host_load: Optional[dict[str, Any]] = None  # other processes' CPU before and during the run (docs/results.md)
    threads: Optional[dict[str, Any]] = None  # OpenMP threads and wait policy the ranks ran with (docs/results.md)
    data_findings: Optional[dict[str, int]] = None  # what the loader dropped or repaired, counted (docs/results.md)
    schema: str = SCHEMA

    def account_overhead(self) -> None:
        """What the harness itself costs: time to train less the epochs' training and evaluation
        time (each measured after the device finished). The log's millisecond clock can put the
        difference a hair below zero: that reads as none."""
        if not self.time_to_train_s or not self.epochs:
            return
        busy = sum((e.get("train_seconds") or 0.0) + (e.get("eval_seconds") or 0.0) for e in self.epochs)
        self.overhead_s = round(max(0.0, self.time_to_train_s - busy), 4)
        self.overhead_fraction = round(self.overhead_s / self.time_to_train_s, 5)


_FIELDS = set(RunRecord.__dataclass_fields__)


def assemble(facts: dict[str, Any], rank0: Optional[dict[str, Any]], failure: Optional[dict[str, Any]],
             log_path: Optional[Path]) -> RunRecord:
    """The run's record: `facts` from the command, then rank 0's result (a run that ended normally)
    or what its MLPerf log says (one that did not), then the failure that ended it, if any."""
    record = RunRecord(**{k: v for k, v in facts.items() if k in _FIELDS})
    if rank0 is not None:
        for key, value in rank0.items():
            if key in _FIELDS and key not in ("mode",):
                setattr(record, key, list(value) if isinstance(value, tuple) else value)
    elif log_path is not None and log_path.is_file():
        _from_log(record, log_path)
    if failure is not None:
        record.status = failure.get("status", FAILED)
        record.reason = failure.get("reason")
        record.error = failure.get("error")
    if record.time_to_train_s is not None:
        record.time_to_train_min = record.time_to_train_s / 60
    record.epochs_run = len(record.epochs)
    record.final_quality = record.evals[-1]["quality"] if record.evals else None
    record.global_batch_size = record.hyperparameters.get("global_batch_size", record.global_batch_size)
    if record.status == SUCCESS or rank0 is not None:
        record.account_overhead()
    return record


def _from_log(record: RunRecord, path: Path) -> None:
    """What a run that did not end normally had done, from its own mlperf.log (the harness's
    format: one JSON record per :::MLLOG line)."""
    from harness.results.parse import LogError, parse_file

    try:
        summary = parse_file(path)
    except LogError:
        return
    record.time_to_train_s = summary.time_to_train_s
    record.init_time_s = summary.init_time_s
    record.throughput = summary.throughput
    record.platform = summary.platform or record.platform
    record.world_size = summary.world_size or record.world_size
    record.mlperf_log = str(path)
    epochs: dict[Any, dict[str, Any]] = {}
    eval_t0 = None
    for key, value, meta, t in _records(path):
        epoch = meta.get("epoch_num")
        if key == "tracked_stats" and isinstance(value, dict):
            epochs[epoch] = {"epoch": epoch, "train_loss": value.get("train_loss"), "train_seconds": value.get("seconds"),
                             "eval_seconds": None, "throughput": value.get("throughput"), "quality": None}
        elif key == "eval_start":
            eval_t0 = t
        elif key == "eval_accuracy":
            record.evals.append({"epoch": epoch, "quality": value})
            if epoch in epochs:
                epochs[epoch]["quality"] = value
        elif key == "eval_stop" and epoch in epochs and eval_t0 is not None:
            epochs[epoch]["eval_seconds"] = (t - eval_t0) / 1000.0
        elif key in ("global_batch_size", "seed") and value is not None:
            if key == "seed":
                record.seed = value
            else:
                record.hyperparameters.setdefault(key, value)
    record.epochs = list(epochs.values())


def _records(path: Path):
    """(key, value, metadata, time_ms) of each record of a harness log."""
    from harness.results import formats

    with open(path, encoding="utf-8", errors="replace") as f:
        for r in formats.read(f).records:
            yield r.key, r.value, r.meta, r.t


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
