"""What a harness run directory adds to its mlperf.log: result.json and system.json.

result.json gives the GPU model, energy and power (telemetry), the quality metric, its direction and
target (a number or named parts), the epoch unit, the throughput unit and the host's load (a run made
while other processes used the machine is marked busy: docs/report.md). A run that failed before its
log began is read from result.json alone. Official logs have none of these files.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from harness.results.summary import RunSummary, interrupted_by


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def add_run_files(run: RunSummary, run_dir: Path) -> None:
    """Fill what result.json (system.json for the GPU model when result.json is missing) says;
    nothing changes when they are absent or unreadable."""
    result = _read_json(run_dir / "result.json")
    _from_result(run, result)
    if run.accelerator is None:
        name = _read_json(run_dir / "system.json").get("accelerator_model_name")
        run.accelerator = name if isinstance(name, str) and name else None


def _from_result(run: RunSummary, result: dict[str, Any]) -> None:
    tele = result.get("telemetry") if isinstance(result.get("telemetry"), dict) else {}
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
    load = result.get("host_load") if isinstance(result.get("host_load"), dict) else {}
    if isinstance(load.get("busy"), bool):
        run.busy = load["busy"]
        run.host_note = _str(load.get("note"))


def _num(x: Any) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _str(x: Any) -> Optional[str]:
    return x if isinstance(x, str) and x else None


def from_result_json(path: str | Path) -> Optional[RunSummary]:
    """A harness run that failed before its MLPerf log began (bad data, a crash at start): its
    result.json is all there is. None for throughput measurements, which are not MLPerf runs
    (harness.results.throughput reads those)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return RunSummary(path=str(path), problems=["result.json cannot be read"])
    if not isinstance(data, dict) or data.get("mode") == "throughput":
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
    evals = data.get("evals") if isinstance(data.get("evals"), list) else []
    run.evals = [(e.get("epoch"), e.get("quality")) for e in evals if isinstance(e, dict)]
    _from_result(run, data)
    return run
