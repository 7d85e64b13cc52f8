"""What MLPerf v0.5's logs need read their own way, found on the whole published round (training_results_v0.5):
no official checker reads them, so these rules are the report's, each named where it applies.

    python -m harness.report training_results_v0.5/ --md round.md

- `run_stop`'s success: a JSON boolean in most logs, the text "true" in Google's ResNet and SSD logs, and absent
  from NVIDIA's ResNet and Transformer logs (a bare `run_stop`). Absent, the run's last evaluation against the
  `eval_target` the log states says whether it converged, as the submitters' own code judged it.
- Quality at float32: loggers wrote single-precision numbers at full length (BLEU 21.8 as 21.799999237), and the
  code that judged the run compared in float32: a value that is the target at float32 reaches it.
- A seed of "none": Google's TPU logs say that no seed was set; the run has no seed, which is no fault.
- Throughput: `train_epoch: N` .. the next `eval_start`, `train_epoch` or `run_stop`, with the `input_size` logged
  in it, where those records time the epochs (timed_epochs says where they do not).
"""
from __future__ import annotations

import struct
from typing import Any, Optional, Sequence

from harness.results.read.formats import NAME_OF, V05, Record

SUCCESS, ABORTED, UNKNOWN = "success", "aborted", "unknown"
# epochs that time less than this share of the run were logged in a burst, not as they trained
BURST = 0.05
# v0.5's SSD logs write the image's side (300) as `input_size` too: no v0.5 training set (COCO's 118k images the
# smallest) has an epoch of under this many samples
MIN_EPOCH = 10_000


def reached(value: float, target: float) -> bool:
    """At or above the target, where the two are compared as the float32 numbers the logger wrote."""
    return value >= target or _float32(value) >= _float32(target)


def reached_as_logged(log_format: Optional[str], quality: Any, target: Any) -> bool:
    """A v0.5 log's scalar quality that reaches a scalar, higher-is-better target at float32 (as `reached`); False
    for any other log, where the report's own comparison stands."""
    return log_format == NAME_OF[V05] and _number(quality) and _number(target) and reached(quality, target)


def _float32(x: float) -> float:
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:  # beyond float32's range: compared as it is
        return x


def status(stop_value: Any, last_quality: Any, target: Any) -> tuple[str, Optional[str]]:
    """The run's status from its `run_stop` value, and a warning where it was not stated as a boolean."""
    said = stop_value.get("success") if isinstance(stop_value, dict) else None
    if isinstance(said, bool):
        return (SUCCESS if said else ABORTED), None
    if isinstance(said, str) and said.strip().lower() in ("true", "false"):
        flag = said.strip().lower() == "true"
        return (SUCCESS if flag else ABORTED), f'run_stop\'s success is the text "{said}": read as {str(flag).lower()}'
    if said is None and _number(last_quality) and _number(target):
        ok = reached(float(last_quality), float(target))
        return (SUCCESS if ok else ABORTED), (
            f"run_stop states no success: its last evaluation ({last_quality:g}) "
            f"{'reaches' if ok else 'is below'} the eval_target it logs ({target:g})")
    return UNKNOWN, None


def no_seed(value: Any) -> bool:
    """A v0.5 seed that says none was set."""
    return isinstance(value, str) and value.strip().lower() == "none"


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def timed_epochs(timed: Sequence[Record], start: Optional[float], stop: Optional[float]
                 ) -> tuple[float, float, Optional[float]]:
    """(epochs, seconds of training, samples or None) of a v0.5 log's timed records: by its `train_epoch` records,
    or by its evaluations where those records were logged in a burst or are too few for the epochs evaluated."""
    timed = [r for r in timed if r.key != "input_size" or (_number(r.value) and r.value >= MIN_EPOCH)]
    epochs, seconds, samples = _by_train_epoch(timed, stop)
    burst = start is not None and stop is not None and seconds < BURST * (stop - start) / 1000.0
    if start is not None and (burst or epochs < _evaluated(timed) / 2):
        return _by_evaluation(timed, start)
    return epochs, seconds, samples


def _by_train_epoch(records: Sequence[Record], stop: Optional[float]) -> tuple[float, float, Optional[float]]:
    count, seconds, samples, known = 0, 0.0, 0.0, True
    begun: Optional[float] = None
    size: Optional[float] = None
    for r in records:
        if r.key == "input_size" and _positive_number(r.value):
            size = float(r.value)
        ends = r.key in ("eval_start", "train_epoch", "run_stop")
        if begun is not None and ends:
            seconds += (r.t - begun) / 1000.0
            count += 1
            if size is None:
                known = False
            else:
                samples += size
            begun = None
        if r.key == "train_epoch":
            begun, size = r.t, None
    if begun is not None and stop is not None:
        seconds += (stop - begun) / 1000.0
        count += 1
        known = known and size is not None
        samples += size or 0.0
    return count, seconds, (samples if known and samples > 0 else None)


def _by_evaluation(records: Sequence[Record], start: float) -> tuple[float, float, Optional[float]]:
    """v0.5 logs whose `train_epoch` records do not time their epochs, timed by evaluation instead: Google's
    TensorFlow ResNet logs write every train_epoch in one burst after training (62 within 0.1 s: 469 epochs a
    second), its TPU logs one train_epoch and then evaluations numbered by epoch (32, 42, 48: read as one epoch in
    the whole run). Each eval_start closes a stretch of training from the end of the evaluation before (or the
    training loop's start; where the next eval_start comes before an evaluation's result, as on TPUs that evaluate
    on another slice, training ran on through it). A stretch trained the `input_size` logged before its
    eval_start, and the run the epochs up to its last evaluation's number (counted from 0)."""
    seconds, samples, known, stretches = 0.0, 0.0, True, 0
    since: Optional[float] = start
    paused: Optional[float] = None  # the last eval_start, while its result is awaited
    size: Optional[float] = None
    epoch: Optional[float] = None
    awaiting = False  # the last stretch's epoch comes with its evaluation's result
    for r in records:
        if r.key in ("train_loop", "train_epoch") and stretches == 0 and since == start:
            since = r.t
        elif r.key == "input_size" and _positive_number(r.value):
            size = float(r.value)
        elif r.key == "eval_start":
            begun = since if since is not None else paused
            if begun is not None:
                seconds, stretches = seconds + (r.t - begun) / 1000.0, stretches + 1
                samples, known = samples + (size or 0.0), known and size is not None
                awaiting = not _positive_number(r.value)
                epoch = epoch if awaiting else float(r.value)
            since, paused, size = None, r.t, None
        elif r.key in ("eval_accuracy", "eval_stop"):
            found = r.value.get("epoch") if isinstance(r.value, dict) else None
            if awaiting and isinstance(found, (int, float)) and not isinstance(found, bool):
                epoch, awaiting = float(found), False
            since = r.t if since is None else since
    return (stretches if epoch is None else epoch + 1), seconds, (samples if known and samples > 0 else None)


def _evaluated(records: Sequence[Record]) -> float:
    """The epochs a v0.5 log's evaluations say were trained (their highest epoch number, counted from 0)."""
    numbers = [r.value.get("epoch") for r in records if r.key == "eval_accuracy" and isinstance(r.value, dict)]
    return max([n + 1 for n in numbers if isinstance(n, (int, float)) and not isinstance(n, bool)], default=0)


def _positive_number(x: Any) -> bool:
    return _number(x) and x > 0
