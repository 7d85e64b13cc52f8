"""result.json's record: what one run did, typed and defined once, written by the run, read by the report.

The command that owns the run directory makes the record's start (`RunRecord` with what it knows:
the run directory, the command, versions, the model's facts); the run's rank 0 returns the same record
filled in (harness/run/session.py); harness/run/record_file.py assembles the end and writes the file.
Readers take it back through `problems` (each badly typed field named, types from the annotations and
READS) then `from_dict`, or strictly through `load`. This module imports nothing of the harness, so
every layer can use it. docs/results.md documents the schema; `schema` names its version.

    python -c "from harness.record import load; print(load('outputs/runs/<run>/result.json').status)"
"""
from __future__ import annotations

import json
import math
import typing
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Callable, Optional

SCHEMA = "harness.result/3"

SUCCESS, ABORTED, FAILED = "success", "aborted", "failed"
INPUT_BOUND = 0.05  # a wait for batches over this share of training time: the figures measure the loader


@dataclass(frozen=True)
class Epoch:
    """One epoch of training (one measured window, in mode=throughput)."""

    epoch: float  # 1-based; a sample count for a model evaluated every N samples
    train_loss: Optional[float] = None  # the mean over the epoch's steps on rank 0
    train_seconds: Optional[float] = None  # rank 0's training time, warm-up included, evaluation excluded
    eval_seconds: Optional[float] = None  # the evaluations that closed this epoch (or fell inside it)
    throughput: Optional[float] = None  # counted samples / counted seconds, summed over ranks
    quality: Any = None  # the last evaluation of the epoch: a number, or one per quality part
    data_wait_s: Optional[float] = None  # the longest any rank waited for batches over the epoch's counted steps
    data_wait_warmup_s: Optional[float] = None  # and over its warm-up steps (None: it had none)
    loss_terms: Optional[dict[str, Optional[float]]] = None  # {term: mean} where the loss has named parts
    steps: Optional[int] = None  # training steps of the epoch (of the window, in mode=throughput)
    samples: Optional[float] = None  # counted samples of those steps, summed over ranks


@dataclass(frozen=True)
class Evaluation:
    epoch: float  # as the log's epoch_num
    quality: Any  # a number, or one per quality part


@dataclass(frozen=True)
class Failure:
    """What failed a run: the error's type and message, the rank it happened on, its traceback."""

    type: str
    message: str
    rank: Optional[int] = None
    traceback: Optional[str] = None


@dataclass(frozen=True)
class RunEnd:
    """How a run that did not end normally ended: aborted (a signal) or failed (the error)."""

    status: str
    reason: str
    error: Optional[Failure] = None


@dataclass(frozen=True)
class RunRecord:
    status: str = FAILED  # success | aborted (target not reached, or interrupted) | failed (crashed, NaN, full disk)
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
    precision: str = ""  # the grouping label: precision, "+master", then the path when not eager ("amp+graph")
    path: str = ""  # the step that ran: "eager", "graph", "compile(reduce-overhead)", ... (harness/fastpath.py)
    fallback: Optional[str] = None  # why the model's fast path fell back to the eager step, where it did
    global_batch_size: Optional[int] = None
    time_to_train_s: Optional[float] = None  # run_stop - run_start, from the logged times
    time_to_train_min: Optional[float] = None
    init_time_s: Optional[float] = None  # init_stop - init_start
    warm_up_s: Optional[float] = None  # of init_time_s, the warm-up's before run_start (harness/run/warmup.py)
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
    throughput_steps: Optional[int] = None  # mode=throughput: steps per window (sized from throughput_window_s, if set)
    data_wait_s: Optional[float] = None  # the longest any rank waited for batches (host + copy), counted steps
    data_wait_rank: Optional[int] = None  # several ranks: the rank that waited data_wait_s
    data_wait_warmup_s: Optional[float] = None  # and over the warm-up steps (the loaders' start-up), in the TTT
    # model FLOPs utilisation (harness/run/flops.py): training FLOPs a sample (3 x the forward's, counted on the
    # synthetic batch), throughput x that / 1e12, that over the GPU's dense peak for the precision x ranks
    model_flops_per_sample: Optional[float] = None
    achieved_tflops: Optional[float] = None
    mfu: Optional[float] = None
    peak_tflops: Optional[float] = None  # one GPU's dense peak for the run's precision
    peak_source: Optional[str] = None  # the GPU, the peak's column and the datasheet it comes from
    mfu_note: Optional[str] = None  # why mfu is null (a CPU, a GPU not in the table, FLOPs not counted)
    data_wait_share: Optional[float] = None  # data_wait_s / rank 0's training seconds of the same steps (DDP: ~all's)
    evals: tuple[Evaluation, ...] = ()
    epochs: tuple[Epoch, ...] = ()
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    reason: Optional[str] = None  # one line: why the run is aborted or failed
    error: Optional[Failure] = None  # when failed
    run_dir: str = ""
    mlperf_log: Optional[str] = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    command: tuple[str, ...] = ()
    versions: dict[str, Optional[str]] = field(default_factory=dict)
    telemetry: Optional[dict[str, Any]] = None  # the sampler's summary over run_start..run_stop (docs/results.md)
    host_load: Optional[dict[str, Any]] = None  # other processes' CPU before and during the run (docs/results.md)
    threads: Optional[dict[str, Any]] = None  # OpenMP threads and wait policy the ranks ran with (docs/results.md)
    data_findings: Optional[dict[str, int]] = None  # what the loader dropped or repaired, counted (docs/results.md)
    schema: str = SCHEMA


def derive(r: RunRecord, overhead: bool = True) -> RunRecord:
    """The fields computed from others: minutes, epochs run, the final quality, the global batch,
    the harness's own overhead and the data-wait totals."""
    derived: dict[str, Any] = {
        "time_to_train_min": None if r.time_to_train_s is None else r.time_to_train_s / 60,
        "epochs_run": len(r.epochs),
        "final_quality": r.evals[-1].quality if r.evals else None,
        "global_batch_size": r.hyperparameters.get("global_batch_size", r.global_batch_size),
    }
    if overhead and r.time_to_train_s and r.epochs:
        # time to train less the epochs' training and evaluation time (each measured after the device
        # finished); the log's millisecond clock can put the difference a hair below zero: none
        busy = sum((e.train_seconds or 0.0) + (e.eval_seconds or 0.0) for e in r.epochs)
        derived["overhead_s"] = round(max(0.0, r.time_to_train_s - busy), 4)
        derived["overhead_fraction"] = round(derived["overhead_s"] / r.time_to_train_s, 5)
    if r.data_wait_s is None and r.epochs and all(e.data_wait_s is not None for e in r.epochs):
        # a record rebuilt from the log: the epochs' waits over their training seconds
        wait = sum(e.data_wait_s or 0.0 for e in r.epochs)
        seconds = sum(e.train_seconds or 0.0 for e in r.epochs)
        derived["data_wait_s"] = wait
        derived["data_wait_share"] = min(1.0, wait / seconds) if seconds > 0 else None
    warm = [e.data_wait_warmup_s for e in r.epochs if e.data_wait_warmup_s is not None]
    if r.data_wait_warmup_s is None and warm:
        derived["data_wait_warmup_s"] = sum(warm)
    return replace(r, **derived)


def strict(value: Any) -> Any:
    """`value` with every float that is not a number (NaN, infinities) as None: strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    return value


def to_json(record: RunRecord) -> str:
    return json.dumps(strict(asdict(record)), indent=2, default=str, allow_nan=False) + "\n"


# -- reading: each field's annotation gives its type, READS narrows those the report computes with; None always passes

Check = tuple[Callable[[Any], bool], str]  # (accepts, what the value should be)
# no run measures a figure this large (1e15 J is 280 GWh): a damaged file; sums of a few would overflow
LARGEST = 1e15
NONNEG = f"a non-negative number below {LARGEST:g}"


def number(x: Any) -> bool:
    """A finite JSON number (not a boolean)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _nonneg(x: Any) -> bool:
    return number(x) and 0 <= x < LARGEST


def _integer(lo: Optional[int] = None) -> Callable[[Any], bool]:
    return lambda x: isinstance(x, int) and not isinstance(x, bool) and (lo is None or x >= lo)


def _quality(x: Any) -> bool:
    return number(x) or (isinstance(x, dict) and all(isinstance(k, str) and number(v) for k, v in x.items()))


def _one_of(*allowed: str) -> Check:
    return (lambda x: x in allowed), " or ".join(allowed)


_STRING: Check = (lambda x: isinstance(x, str), "a string")
_OBJECT: Check = (lambda x: isinstance(x, dict), "an object")
_QUALITY: Check = (_quality, "a number or named numbers")
_NONNEG: Check = (_nonneg, NONNEG)
READS: dict[str, Check] = {
    "mode": _one_of("train", "throughput"), "world_size": (_integer(0), "a non-negative integer"),
    "global_batch_size": (_integer(1), "a positive integer"), "quality_direction": _one_of("higher", "lower"),
    "epoch_unit": _one_of("epochs", "samples"), "target": _QUALITY, "final_quality": _QUALITY,
    "data_wait_share": (lambda x: number(x) and 0 <= x <= 1, "a number from 0 to 1"),
    **{k: _NONNEG for k in ("time_to_train_s", "time_to_train_min", "throughput", "init_time_s", "epochs_to_converge",
                            "data_wait_s", "data_wait_warmup_s", "warm_up_s")},
}
NESTED: dict[str, dict[str, Check]] = {  # inside the fields that hold an object
    "telemetry": {"energy_j": _NONNEG, "power_mean_w": _NONNEG},
    "host_load": {"busy": (lambda x: isinstance(x, bool), "true or false"), "note": _STRING},
    "hyperparameters": {"workload": _STRING, "global_batch_size": (_integer(1), "a positive integer")},
}
PER_EPOCH: dict[str, Check] = {"throughput": _NONNEG, "data_wait_s": _NONNEG, "data_wait_warmup_s": _NONNEG}
PER_EVAL: dict[str, Check] = {"epoch": _NONNEG, "quality": _QUALITY}


def _of_type(hint: Any) -> Optional[Check]:
    """The check an annotation implies (Optional[T] as T); None where it says nothing (Any)."""
    if typing.get_origin(hint) is typing.Union:
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return _of_type(inner[0]) if len(inner) == 1 else None
    origin = typing.get_origin(hint) or hint
    if origin is str:
        return _STRING
    if origin is bool:
        return (lambda x: isinstance(x, bool), "true or false")
    if origin is int:
        return (_integer(), "an integer")
    if origin is float:
        return (number, "a number")
    if origin is dict or is_dataclass(origin):
        return _OBJECT
    if origin is tuple:
        item = typing.get_args(hint)[0]
        if is_dataclass(item):
            return (lambda x: isinstance(x, list) and all(isinstance(e, dict) for e in x), "a list of objects")
        return (lambda x: isinstance(x, list) and all(isinstance(e, str) for e in x), "a list of strings")
    return None


def _checks(cls: type, narrowed: dict[str, Check]) -> dict[str, Check]:
    hints = typing.get_type_hints(cls)
    found = {f.name: narrowed.get(f.name) or _of_type(hints[f.name]) for f in fields(cls)}
    return {name: check for name, check in found.items() if check is not None}


_TOP, _EPOCH, _EVAL = _checks(RunRecord, READS), _checks(Epoch, PER_EPOCH), _checks(Evaluation, PER_EVAL)


def _shown(x: Any) -> str:
    text = json.dumps(x)
    return text if len(text) <= 40 else text[:37] + "..."


def _named(obj: dict[str, Any], checks: dict[str, Check], prefix: str) -> list[str]:
    return [f"{prefix}{name} is {_shown(obj[name])}, not {want}" for name, (accepts, want) in checks.items()
            if obj.get(name) is not None and not accepts(obj[name])]


def problems(data: Any) -> list[str]:
    """'world_size is "one", not a non-negative integer' for each badly typed field, in the record's order;
    fields this version does not know are let be (a reader of an older or newer file)."""
    if not isinstance(data, dict):
        return [f"holds {type(data).__name__ if data is not None else 'null'}, not a JSON object"]
    found = _named(data, _TOP, "")
    for key, checks in NESTED.items():
        found += _named(data[key] if isinstance(data.get(key), dict) else {}, checks, f"{key}.")
    for listed, checks in (("epochs", _EPOCH), ("evals", _EVAL)):
        items = data[listed] if isinstance(data.get(listed), list) else []
        for i, item in enumerate(items):
            if isinstance(item, dict):
                found += _named(item, checks, f"{listed}[{i}].")
    if data.get("mode") == "throughput" and data.get("status") == "success" and data.get("throughput") is None:
        found.append("throughput is missing from a successful throughput measurement")
    return found


def from_dict(data: dict[str, Any]) -> RunRecord:
    """The record of a result.json whose `problems` are none: fields this version does not know are left
    out; an evaluation that lacks its epoch or quality, or an item that is not an object, too."""
    known = {f.name for f in fields(RunRecord)}
    kept = {k: v for k, v in data.items() if k in known}
    kept["epochs"] = tuple(Epoch(**{"epoch": i, **_known(e, Epoch)}) for i, e in enumerate(kept.get("epochs") or (), 1)
                           if isinstance(e, dict))  # an epoch without its number is numbered by its place
    kept["evals"] = tuple(Evaluation(**_known(e, Evaluation)) for e in kept.get("evals") or ()
                          if isinstance(e, dict) and {"epoch", "quality"} <= set(e))
    kept["command"] = tuple(kept.get("command") or ())
    error = kept.get("error")
    kept["error"] = Failure(**_known(error, Failure)) if isinstance(error, dict) and {"type", "message"} <= set(error) \
        else None
    return RunRecord(**{k: v for k, v in kept.items() if v is not None or k in _NULLABLE})


def _known(obj: dict[str, Any], cls: type) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in obj.items() if k in names}


# fields whose None is a value of its own (the rest fall back to the record's default when null)
_NULLABLE = {f.name for f in fields(RunRecord) if f.default is None}


def read(path: Path) -> dict[str, Any]:
    with open(path) as f:
        return json.load(f)


def load(path: Path) -> RunRecord:
    """A result.json as the record it was written from. A field this version does not know is an
    error that names it (a file of another schema), never dropped."""
    data = read(path)
    known = {f.name for f in fields(RunRecord)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{path}: fields {', '.join(unknown)} are not in {SCHEMA} (written by schema "
                         f"{data.get('schema', 'unknown')})")
    data["epochs"] = tuple(Epoch(**e) for e in data.get("epochs") or ())
    data["evals"] = tuple(Evaluation(**e) for e in data.get("evals") or ())
    data["command"] = tuple(data.get("command") or ())
    if data.get("error") is not None:
        data["error"] = Failure(**data["error"])
    return RunRecord(**data)
