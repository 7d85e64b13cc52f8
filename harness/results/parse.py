"""Read any MLPerf training log, the harness's own or an official result_*.txt, into a RunSummary.

mlperf_logging's parser (compliance_checker.mlp_parser) is the reference for what a log line is,
and this module reads lines the same way: the text from the last ':::MLLOG ' of a line on is one
JSON record. It is not used directly because it raises on the first record it cannot read
(KeyError on seconds-based 'time_s' records, for instance), while a report over a pile of logs
must name each problem, keep what can be trusted and carry on with the other files.

Definitions follow MLPerf: time to train = run_stop - run_start; epochs to converge = epoch_num
of the last eval_accuracy before a run_stop whose status is success.

    python -m harness.results.parse FILE...     # one JSON object per file
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

TOKEN = ":::MLLOG "
SUCCESS = "success"
INCOMPLETE = "incomplete"  # no run_stop: crashed, killed or still running


@dataclass
class RunSummary:
    path: str
    benchmark: Optional[str] = None
    status: str = INCOMPLETE  # run_stop's status (success, aborted, ...) or incomplete
    org: Optional[str] = None
    division: Optional[str] = None
    platform: Optional[str] = None
    seed: Optional[int] = None
    world_size: Optional[int] = None  # number_of_nodes x accelerators_per_node, when logged
    precision: Optional[str] = None  # a harness extension key; absent from official logs
    global_batch_size: Optional[int] = None
    run_start_ms: Optional[float] = None
    run_stop_ms: Optional[float] = None
    time_to_train_s: Optional[float] = None
    time_to_train_min: Optional[float] = None
    init_time_s: Optional[float] = None  # init_stop - first init_start
    epochs_to_converge: Optional[float] = None
    evals: list[tuple[float, Any]] = field(default_factory=list)  # (epoch_num, eval_accuracy)
    throughput: Optional[float] = None  # from tracked_stats samples and seconds, when logged
    timestamp_unit: str = "ms"
    problems: list[str] = field(default_factory=list)  # why this run cannot be scored as it is
    # from the harness's files beside the log (result.json, system.json); absent from official logs
    accelerator: Optional[str] = None  # the GPU model, or CPU
    energy_j: Optional[float] = None  # energy to train: run_start..run_stop, all GPUs of the run
    power_w: Optional[float] = None  # mean power over that window, all GPUs of the run

    @property
    def scorable(self) -> bool:
        """Clean enough for MLPerf's summarizer to score: it drops runs with any parse problem."""
        return not self.problems

    @property
    def converged(self) -> bool:
        return self.status == SUCCESS and self.scorable

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["evals"] = [list(e) for e in self.evals]
        out["scorable"] = self.scorable
        return out


class LogError(ValueError):
    """A file that holds no run that can be read; the message names the problem."""


def parse_file(path: str | Path) -> RunSummary:
    path = Path(path)
    try:
        with open(path, encoding="latin-1") as f:  # as mlp_parser reads: never a decode error
            lines = f.readlines()
    except OSError as err:
        raise LogError(f"cannot read: {err.strerror or err}") from None
    run = parse_lines(lines, str(path))
    if path.name == "mlperf.log":
        add_run_files(run, path.parent)
    return run


def add_run_files(run: RunSummary, run_dir: Path) -> None:
    """GPU model, energy and power from a harness run's result.json (system.json for the model when
    result.json is missing); nothing changes when they are absent or unreadable."""
    try:
        result = json.loads((run_dir / "result.json").read_text())
    except (OSError, ValueError):
        result = {}
    if not isinstance(result, dict):
        result = {}
    tele = result.get("telemetry") if isinstance(result.get("telemetry"), dict) else {}
    run.energy_j, run.power_w = tele.get("energy_j"), tele.get("power_mean_w")
    run.accelerator = result.get("accelerator") or None
    if run.accelerator is None:
        try:
            run.accelerator = json.loads((run_dir / "system.json").read_text()).get("accelerator_model_name")
        except (OSError, ValueError, AttributeError):
            pass


def parse_lines(lines: list[str], path: str = "<log>") -> RunSummary:
    run = RunSummary(path=path)
    records: list[tuple[int, dict[str, Any]]] = []
    bad_json: list[int] = []
    seconds_based = False
    no_time: list[int] = []
    for lineno, line in enumerate(lines, start=1):
        at = line.rfind(TOKEN)
        if at < 0:
            continue
        try:
            record = json.loads(line[at + len(TOKEN):])
        except ValueError:
            bad_json.append(lineno)
            continue
        if not isinstance(record, dict) or "key" not in record:
            bad_json.append(lineno)
            continue
        if "time_ms" in record:
            t = record["time_ms"]
        elif "time_s" in record:
            seconds_based = True
            t = record["time_s"] * 1000.0 if isinstance(record["time_s"], (int, float)) else None
        else:
            t = None
        if not isinstance(t, (int, float)):
            no_time.append(lineno)
            continue
        record["_t"] = float(t)
        records.append((lineno, record))

    if not records and not bad_json and not no_time:
        raise LogError("no :::MLLOG lines: not an MLPerf log (or an empty file)")
    if bad_json:
        run.problems.append(f"{len(bad_json)} line(s) are not valid MLLOG JSON (first at line {bad_json[0]})")
    if no_time:
        run.problems.append(f"{len(no_time)} line(s) have no time_ms timestamp (first at line {no_time[0]})")
    if seconds_based:
        run.timestamp_unit = "s"
        run.problems.append(
            "timestamps are seconds ('time_s'), not 'time_ms': not in the 0.7.0 log format "
            "(its time to train is read from the seconds)"
        )

    starts = [(n, r) for n, r in records if r["key"] == "run_start"]
    if len(starts) > 1:
        raise LogError(
            f"holds {len(starts)} runs (run_start at lines {', '.join(str(n) for n, _ in starts)}); "
            "MLPerf wants one run per file: split it"
        )
    _read_keys(run, records)
    return run


def _read_keys(run: RunSummary, records: list[tuple[int, dict[str, Any]]]) -> None:
    first: dict[str, Any] = {}
    init_start: Optional[float] = None
    init_stop: Optional[float] = None
    samples = seconds = 0.0
    nodes = accel = None
    for lineno, r in records:
        key, value, t = r["key"], r.get("value"), r["_t"]
        meta = r.get("metadata") if isinstance(r.get("metadata"), dict) else {}
        if key.startswith("submission_") or key in ("seed", "global_batch_size", "precision"):
            if key in first and first[key] != value and key.startswith("submission_"):
                run.problems.append(f"{key} logged twice with different values ({first[key]!r}, {value!r})")
            first.setdefault(key, value)
        elif key == "init_start":
            init_start = t if init_start is None else min(init_start, t)
        elif key == "init_stop" and init_stop is None:
            init_stop = t
        elif key == "run_start":
            run.run_start_ms = t
        elif key == "run_stop" and run.run_stop_ms is None:
            run.run_stop_ms = t
            run.status = str(meta.get("status", "unknown"))
        elif key == "eval_accuracy" and run.run_stop_ms is None:
            run.evals.append((meta.get("epoch_num"), value))
        elif key == "tracked_stats" and isinstance(value, dict):
            if isinstance(value.get("samples"), (int, float)) and isinstance(value.get("seconds"), (int, float)):
                samples += value["samples"]
                seconds += value["seconds"]
        elif key == "number_of_nodes":
            nodes = value
        elif key == "accelerators_per_node":
            accel = value

    run.benchmark = first.get("submission_benchmark")
    run.org = first.get("submission_org")
    run.division = first.get("submission_division")
    run.platform = first.get("submission_platform")
    run.seed = first.get("seed")
    run.precision = first.get("precision")
    run.global_batch_size = first.get("global_batch_size")
    if isinstance(nodes, int) and isinstance(accel, int):
        run.world_size = nodes * accel
    if init_start is not None and init_stop is not None:
        run.init_time_s = (init_stop - init_start) / 1000.0
    if seconds > 0:
        run.throughput = samples / seconds
    if run.benchmark is None:
        run.problems.append("no submission_benchmark")
    if run.run_start_ms is None:
        run.problems.append("no run_start: the run never started its timed region")
        run.status = INCOMPLETE
    elif run.run_stop_ms is None:
        run.problems.append("no run_stop: the run did not finish (crashed, killed or still running)")
    else:
        elapsed = run.run_stop_ms - run.run_start_ms
        run.time_to_train_s = elapsed / 1000.0
        run.time_to_train_min = elapsed / 60 / 1000  # MLPerf's summarizer's own arithmetic, to the bit
        if elapsed < 0:
            run.problems.append("run_stop is earlier than run_start")
    if run.status == SUCCESS:
        epochs = [e for e, _ in run.evals if isinstance(e, (int, float))]
        if epochs:
            run.epochs_to_converge = epochs[-1]
        else:
            run.problems.append("status success but no eval_accuracy with an epoch_num")


def from_result_json(path: str | Path) -> Optional[RunSummary]:
    """A harness run that failed before its MLPerf log began (bad data, a crash at start): its
    result.json is all there is. None for throughput measurements, which are not MLPerf runs."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return RunSummary(path=str(path), problems=["result.json cannot be read"])
    if not isinstance(data, dict) or data.get("mode") == "throughput":
        return None
    reason = data.get("reason") or "no MLPerf log"
    return RunSummary(
        path=str(path), benchmark=data.get("benchmark") or None, status=str(data.get("status", "failed")),
        platform=data.get("platform") or None, seed=data.get("seed"), world_size=data.get("world_size"),
        precision=data.get("precision") or None, global_batch_size=data.get("global_batch_size"),
        problems=[f"no mlperf.log: the run ended before its log began ({reason})"],
        accelerator=data.get("accelerator") or None,
    )


def main(argv: list[str]) -> int:
    code = 0
    for name in argv:
        try:
            print(json.dumps(parse_file(name).to_dict()))
        except LogError as err:
            print(f"{name}: {err}", file=sys.stderr)
            code = 1
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
