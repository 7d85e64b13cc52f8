"""What MLPerf v0.5's logs need read their own way, found on the whole published round (training_results_v0.5):
no official checker reads them, so these rules are the report's, each named where it applies.

    python -m harness.report training_results_v0.5/ --md round.md

- `run_stop`'s success: a JSON boolean in most logs, the text "true" in Google's ResNet and SSD logs, and absent
  from NVIDIA's ResNet and Transformer logs (a bare `run_stop`). Absent, the run's last evaluation against the
  `eval_target` the log states says whether it converged, as the submitters' own code judged it.
- Quality at float32: loggers wrote single-precision numbers at full length (BLEU 21.8 as 21.799999237), and the
  code that judged the run compared in float32: a value that is the target at float32 reaches it.
- A seed of "none": Google's TPU logs say that no seed was set; the run has no seed, which is no fault.
"""
from __future__ import annotations

import struct
from typing import Any, Optional

SUCCESS, ABORTED, UNKNOWN = "success", "aborted", "unknown"


def reached(value: float, target: float) -> bool:
    """At or above the target, where the two are compared as the float32 numbers the logger wrote."""
    return value >= target or _float32(value) >= _float32(target)


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
