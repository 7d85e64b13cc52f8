"""result.json written: the run's record assembled however the run ended, then replaced in one step.

`assemble` takes rank 0's record, or, for a run that was interrupted or crashed, what rank 0 noted once
initialised (`note_initialised`: the platform, the model's hyperparameters and global batch, the seed) and
what its own mlperf.log says it did (epochs, evaluations, time to train up to the aborting run_stop), applies
how the run ended and derives the totals. `write` replaces result.json in one step with strict JSON (no
NaN: a value that is not a number is null). The record itself is harness/record.py.

    python -m harness.train model=ncf seed=1   # writes outputs/runs/<run>/result.json through here
"""
from __future__ import annotations

import json
import platform
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Optional

from harness import files
from harness.record import SUCCESS, Epoch, Evaluation, RunEnd, RunRecord, derive, problems, strict, to_json

INITIALISED = ".initialised.json"  # in the run directory from rank 0's initialisation until result.json
# what rank 0 learns while initialising and the command that owns the run directory does not know
_LEARNED = ("seed", "world_size", "device", "platform", "accelerator", "hyperparameters", "init_time_s", "warm_up_s",
            "threads")


def assemble(start: RunRecord, rank0: Optional[RunRecord], end: Optional[RunEnd], log_path: Optional[Path],
             **finish: Any) -> RunRecord:
    """The run's record: rank 0's when the run ended normally, else `start` with what its MLPerf log
    says it did; then how it ended, the command's `finish` fields (finished_at, host_load), and the
    totals derived from the rest."""
    noted = _take_initialised(Path(start.run_dir)) if start.run_dir else {}  # not the working directory's
    record = rank0 if rank0 is not None else replace(start, **noted)
    if rank0 is None and log_path is not None and log_path.is_file():
        record = from_log(record, log_path)
    if end is not None:
        record = replace(record, status=end.status, reason=end.reason, error=end.error)
    return derive(replace(record, **finish), overhead=record.status == SUCCESS or rank0 is not None)


def note_initialised(run_dir: Path, record: RunRecord) -> None:
    """Rank 0's facts of the run once initialised, where the command that owns the run directory finds them
    should the rank never return its record (interrupted, crashed, killed): a throughput measurement has no
    MLPerf log to read them back from, and without them its result.json had no platform, accelerator or
    global batch, so the report set it apart from the runs it was measured beside."""
    facts = {k: getattr(record, k) for k in _LEARNED}
    try:
        files.write_atomic(run_dir / INITIALISED, json.dumps(strict(facts), default=str, allow_nan=False))
    except files.DiskFull:
        pass  # the run goes on: only an unfinished run's record would lack these


def _take_initialised(run_dir: Path) -> dict[str, Any]:
    """`note_initialised`'s facts, its file removed; none where it is missing, unreadable or badly typed."""
    path = run_dir / INITIALISED
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    finally:
        path.unlink(missing_ok=True)
    if not isinstance(data, dict) or problems(data):
        return {}
    return {k: data[k] for k in _LEARNED if data.get(k) is not None}


def from_log(record: RunRecord, path: Path) -> RunRecord:
    """What a run that did not end normally had done, from its own mlperf.log (the harness's
    format: one JSON record per :::MLLOG line)."""
    from harness.results.read.parse import LogError, parse_file

    try:
        summary = parse_file(path)
    except LogError:
        return record
    epochs: dict[Any, dict[str, Any]] = {}
    evals: list[Evaluation] = []
    hyper = dict(record.hyperparameters)
    seed = record.seed
    eval_t0 = None
    hyper_phase = False  # the hyperparameters are the records the run logs between its seed and init_stop
    for key, value, meta, t in _records(path):
        if key in ("seed", "init_stop"):
            hyper_phase = key == "seed"
        elif hyper_phase and key not in ("train_samples", "eval_samples"):
            hyper.setdefault(key, value)
        epoch: Any = meta.get("epoch_num")
        if key == "tracked_stats" and isinstance(value, dict):
            epochs[epoch] = {"epoch": epoch, "train_loss": value.get("train_loss"), "train_seconds": value.get("seconds"),
                             "throughput": value.get("throughput"), "data_wait_s": value.get("data_wait_s"),
                             "data_wait_warmup_s": value.get("data_wait_warmup_s"),
                             "loss_terms": value.get("loss_terms")}
        elif key == "eval_start":
            eval_t0 = t
        elif key == "eval_accuracy":
            evals.append(Evaluation(epoch, value))
            if epoch in epochs:
                epochs[epoch]["quality"] = value
        elif key == "eval_stop" and epoch in epochs and eval_t0 is not None:
            epochs[epoch]["eval_seconds"] = (t - eval_t0) / 1000.0
        elif key == "seed" and value is not None:
            seed = value
        elif key == "global_batch_size" and value is not None:
            hyper.setdefault(key, value)
    return replace(record, time_to_train_s=summary.time_to_train_s, init_time_s=summary.init_time_s,
                   throughput=summary.throughput, platform=summary.platform or record.platform,
                   world_size=summary.world_size or record.world_size, mlperf_log=str(path), seed=seed,
                   hyperparameters=hyper, evals=tuple(evals), epochs=tuple(Epoch(**e) for e in epochs.values()))


def _records(path: Path) -> Iterator[tuple[str, Any, dict, float]]:
    """(key, value, metadata, time_ms) of each record of a harness log."""
    from harness.results.read import formats

    with open(path, encoding="utf-8", errors="replace") as f:
        for r in formats.read(f).records:
            yield r.key, r.value, r.meta, r.t


def write(record: RunRecord, path: Path) -> None:
    """Replace path in one step, so a reader never sees half a result; a disk too full for it
    leaves no half-written file behind and raises DiskFull."""
    files.write_atomic(path, to_json(record))


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
