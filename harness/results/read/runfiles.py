"""What a harness run directory adds to its mlperf.log: result.json and system.json.

result.json gives the GPU model, energy and power (telemetry), the quality metric, its direction and
target (a number or named parts), the epoch unit, the throughput unit, the data wait (the share of
training time rank 0 waited for batches) and the host's load (a run made while other processes used
the machine is marked busy: docs/report.md). A run that failed before its log began is read from
result.json alone. Official logs have none of these files.

Every field the report reads is checked for its type first (`problems`): a result.json with a badly
typed field (`world_size: "one"`, `seed: [1]`, a throughput of `"fast"`) is named with the field and
skipped, so one bad file cannot take the other runs' report with it. Beside a good mlperf.log, the run
is then read from its log alone.
"""
from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any, Callable, Optional

from harness.results.read.jsonfile import loads
from harness.results.read.summary import LogError, RunSummary, interrupted_by

MAX_NAMED = 3  # fields named per file; the rest are counted


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# no run measures a figure this large (1e15 J is 280 GWh, 1e15 s 30 million years); one is a damaged
# file, and sums of a few would overflow a float
LARGEST = 1e15


def _nonneg(x: Any) -> bool:
    return _number(x) and 0 <= x < LARGEST


def _integer(lo: int) -> Callable[[Any], bool]:
    return lambda x: isinstance(x, int) and not isinstance(x, bool) and x >= lo


def _quality(x: Any) -> bool:
    return _number(x) or (isinstance(x, dict) and all(isinstance(k, str) and _number(v) for k, v in x.items()))


def _one_of(*allowed: str) -> Callable[[Any], bool]:
    return lambda x: x in allowed


def _list_of_dicts(x: Any) -> bool:
    return isinstance(x, list) and all(isinstance(e, dict) for e in x)


NONNEG = f"a non-negative number below {LARGEST:g}"
# field -> (check, what it should be); None is allowed for every field (absent or unknown)
TOP: dict[str, tuple[Callable[[Any], bool], str]] = {
    "status": (lambda x: isinstance(x, str), "a string"),
    "mode": (_one_of("train", "throughput"), "train or throughput"),
    **{k: (lambda x: isinstance(x, str), "a string") for k in (
        "benchmark", "model", "platform", "precision", "accelerator", "quality_metric", "throughput_unit", "reason")},
    "seed": (lambda x: isinstance(x, int) and not isinstance(x, bool), "an integer"),
    "world_size": (_integer(0), "a non-negative integer"),
    "global_batch_size": (_integer(1), "a positive integer"),
    **{k: (_nonneg, NONNEG) for k in (
        "time_to_train_s", "time_to_train_min", "throughput", "init_time_s", "epochs_to_converge", "data_wait_s")},
    "data_wait_share": (lambda x: _number(x) and 0 <= x <= 1, "a number from 0 to 1"),
    "quality_direction": (_one_of("higher", "lower"), "higher or lower"),
    "epoch_unit": (_one_of("epochs", "samples"), "epochs or samples"),
    "target": (_quality, "a number or named numbers"),
    "evals": (_list_of_dicts, "a list of objects"),
    "epochs": (_list_of_dicts, "a list of objects"),
    "telemetry": (lambda x: isinstance(x, dict), "an object"),
    "host_load": (lambda x: isinstance(x, dict), "an object"),
    "hyperparameters": (lambda x: isinstance(x, dict), "an object"),
}
NESTED: dict[str, dict[str, tuple[Callable[[Any], bool], str]]] = {
    "telemetry": {"energy_j": (_nonneg, NONNEG), "power_mean_w": (_nonneg, NONNEG)},
    "host_load": {"busy": (lambda x: isinstance(x, bool), "true or false"), "note": (lambda x: isinstance(x, str), "a string")},
    "hyperparameters": {"workload": (lambda x: isinstance(x, str), "a string"),
                        "global_batch_size": (_integer(1), "a positive integer")},
}
PER_EPOCH: dict[str, tuple[Callable[[Any], bool], str]] = {
    "throughput": (_nonneg, NONNEG), "data_wait_s": (_nonneg, NONNEG)}
PER_EVAL: dict[str, tuple[Callable[[Any], bool], str]] = {
    "epoch": (_nonneg, NONNEG), "quality": (_quality, "a number or named numbers")}


def _shown(x: Any) -> str:
    text = json.dumps(x)
    return text if len(text) <= 40 else text[:37] + "..."


def _fields(obj: dict, fields: dict[str, tuple[Callable[[Any], bool], str]], prefix: str) -> list[str]:
    return [f"{prefix}{name} is {_shown(obj[name])}, not {want}" for name, (check, want) in fields.items()
            if obj.get(name) is not None and not check(obj[name])]


def problems(data: Any) -> list[str]:
    """'world_size is "one", not a non-negative integer' for each badly typed field the report reads."""
    if not isinstance(data, dict):
        return [f"holds {type(data).__name__ if data is not None else 'null'}, not a JSON object"]
    found = []
    for key, (check, want) in TOP.items():
        value = data.get(key)
        if value is not None and not check(value):
            found.append(f"{key} is {_shown(value)}, not {want}")
    for key, fields in NESTED.items():
        found += _fields(_obj(data.get(key)), fields, f"{key}.")
    for listed, fields in (("epochs", PER_EPOCH), ("evals", PER_EVAL)):
        items: list[dict] = data[listed] if _list_of_dicts(data.get(listed)) else []
        for i, item in enumerate(items):
            found += _fields(item, fields, f"{listed}[{i}].")
    if data.get("mode") == "throughput" and data.get("status") == "success" and data.get("throughput") is None:
        found.append("throughput is missing from a successful throughput measurement")
    return found


def describe(found: list[str]) -> str:
    """One line: the first fields named, the rest counted."""
    text = "; ".join(found[:MAX_NAMED])
    if len(found) > MAX_NAMED:
        text += f"; and {len(found) - MAX_NAMED} more"
    return text


@functools.lru_cache(maxsize=4096)
def _load(path: str, _mtime_ns: int, _size: int) -> tuple[Optional[dict[str, Any]], tuple[str, ...]]:
    try:
        data = loads(Path(path).read_text())
    except OSError as err:
        return None, (f"cannot be read: {err.strerror or err}",)
    except ValueError as err:
        return None, (f"not valid JSON: {err}",)
    found = problems(data)
    return (None, tuple(found)) if found else (data, ())


def read_result(path: str | Path) -> tuple[Optional[dict[str, Any]], list[str]]:
    """(the result.json's data, []) when every field the report reads is well typed; (None, problems)
    otherwise; (None, []) when there is no such file. Cached by path, mtime and size, so the report's
    worker reads each file once."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return None, []
    data, found = _load(str(p), st.st_mtime_ns, st.st_size)
    return data, list(found)


def add_run_files(run: RunSummary, run_dir: Path) -> None:
    """Fill what result.json (system.json for the GPU model when result.json is missing) says;
    nothing changes when they are absent, unreadable or badly typed (`read_result` names why)."""
    result, _ = read_result(run_dir / "result.json")
    if result is not None:
        _from_result(run, result)
    if run.accelerator is None:
        name = _read_json(run_dir / "system.json").get("accelerator_model_name")
        run.accelerator = name if isinstance(name, str) and name else None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _from_result(run: RunSummary, result: dict[str, Any]) -> None:
    tele = _obj(result.get("telemetry"))
    run.energy_j, run.power_w = _num(tele.get("energy_j")), _num(tele.get("power_mean_w"))
    run.accelerator = _str(result.get("accelerator"))
    run.quality_metric = _str(result.get("quality_metric")) or run.quality_metric
    direction = result.get("quality_direction")
    run.quality_direction = direction if direction in ("higher", "lower") else run.quality_direction
    if result.get("target") is not None:
        run.target = result["target"]
    if result.get("epoch_unit") in ("epochs", "samples"):
        run.epoch_unit = result["epoch_unit"]
    if run.throughput is not None and not run.throughput_derived:
        run.throughput_unit = _str(result.get("throughput_unit")) or run.throughput_unit or "samples/s"
    if result.get("status") == "aborted" and run.interrupted is None:  # a log cut off before its run_stop
        run.interrupted = interrupted_by(result.get("reason"))
    load = _obj(result.get("host_load"))
    if isinstance(load.get("busy"), bool):
        run.busy = load["busy"]
        run.host_note = _str(load.get("note"))
    run.data_wait_s, run.data_wait_share = _num(result.get("data_wait_s")), _num(result.get("data_wait_share"))


def _obj(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _num(x: Any) -> Optional[float]:
    return float(x) if _number(x) else None


def _str(x: Any) -> Optional[str]:
    return x if isinstance(x, str) and x else None


def from_result_json(path: str | Path) -> Optional[RunSummary]:
    """A harness run that failed before its MLPerf log began (bad data, a crash at start): its
    result.json is all there is. None for throughput measurements, which are not MLPerf runs
    (harness.results.analysis.throughput reads those). LogError names the fields of a badly typed file."""
    data, found = read_result(path)
    if data is None:
        raise LogError(describe(found) if found else "cannot be read")
    if data.get("mode") == "throughput":
        return None
    reason = data.get("reason") or "no MLPerf log"
    stopped = interrupted_by(reason) if data.get("status") == "aborted" else None
    run = RunSummary(
        path=str(path), benchmark=data.get("benchmark") or None, status=str(data.get("status", "failed")),
        platform=data.get("platform") or None, seed=data.get("seed"), world_size=data.get("world_size"),
        precision=data.get("precision") or None, global_batch_size=data.get("global_batch_size"),
        problems=[] if stopped else [f"no mlperf.log: the run ended before its log began ({reason})"],
        interrupted=stopped,
    )
    evals = data["evals"] if isinstance(data.get("evals"), list) else []
    run.evals = [(e.get("epoch"), e.get("quality")) for e in evals if isinstance(e, dict)]
    _from_result(run, data)
    return run
