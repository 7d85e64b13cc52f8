"""Read any MLPerf training log, the harness's own or an official result_*.txt of any round from
v0.5 on, into a RunSummary.

Formats (harness.results.read.formats): `:::MLPv0.5.0` (v0.5), `:::MLL` (v0.6), `:::MLLOG` (v0.7 on), with
shell noise and rank prefixes around them. mlperf_logging's parsers are the reference for what a line
is; they are not used directly because they raise on the first record they cannot read, while a
report over a pile of logs must name each problem, keep what can be trusted and go on.

Definitions, by each round's own rules: time to train = run_stop - run_start; epochs to converge =
the epochs trained by the last eval_accuracy before a successful run_stop (v0.6 on: its epoch_num;
v0.5 counts epochs from 0, so its epoch + 1). v0.5's run_stop says {"success": true|false}. A log in
a submission tree takes world size, accelerator and framework from the tree (harness.results.read.tree);
throughput comes from tracked_stats, or is derived from the epoch intervals (harness.results.read.intervals).

Parsing says what the log says and nothing more: the checkers (the official compliance and RCP
checkers, the harness's sanity pass) are a step of their own (harness.results.read.checking), which the
report runs on what read_file returns and joins with these facts. A run stopped by a signal (run_stop's
reason SIGINT or SIGTERM) is interrupted, not a run that did not converge. A name or count logged as another
JSON type (a list for the platform, text for the seed) is named among the run's problems and not read.

    python -m harness.check.show log FILE...        # what each log says, one JSON object per file
    python -m harness.check.show checked FILE...    # and what the checkers say of it, joined
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from harness.results.read import clock, formats, tree
from harness.results.read import v05 as v05_rules
from harness.results.read.formats import Record
from harness.results.read.intervals import derived_throughput
from harness.results.read.runfiles import add_run_files, from_result_json
from harness.results.read.summary import INCOMPLETE, SUCCESS, LogError, RunSummary, interrupted_by, one_line

TOKEN = formats.MLLOG
NO_EPOCH = "status success but no eval_accuracy with an epoch_num"
MAX_LOG_BYTES = 64 << 20  # a real MLPerf log is under a few MB; one read and checked takes ~12x its size in memory
COUNT_KEYS = ("seed", "global_batch_size")  # integers; a submission_* key and precision are strings
_INTEGER = re.compile(r"[+-]?\d{1,15}(?:\.0*)?")  # 2048, 2048.0: an integer as a float or text; up to 2**53
__all__ = ["LogError", "RunSummary", "parse_file", "parse_lines", "from_result_json", "TOKEN", "SUCCESS", "INCOMPLETE"]


@dataclass(frozen=True)
class ReadLog:
    """A log file as read: its lines (what the official checker reads), its records (what the sanity pass
    reads) and what they say."""

    lines: list[str]
    records: list[Record]
    facts: RunSummary
    readable: bool = True  # False: a tree's log that holds no run (its facts say why): nothing to check


def read_file(path: str | Path, max_bytes: Optional[int] = MAX_LOG_BYTES) -> ReadLog:
    """One log file, read: raises LogError where it holds no run, except in a submission tree, where
    every result file of a folder counts toward its score, as the summarizer counts it; and where it is
    larger than `max_bytes` (None: no limit), before a line is read: a log takes about 12 times its size
    in memory once read and checked."""
    path = Path(path)
    try:
        with open(path, encoding="latin-1") as f:  # as mlp_parser reads: never a decode error
            size = os.fstat(f.fileno()).st_size
            if max_bytes is not None and size > max_bytes:
                raise LogError(f"{size / 2**20:,.0f} MiB, over the limit of {max_bytes / 2**20:,.0f} MiB a log: not "
                               "read (a real MLPerf log is a few MB; --max-log-mb raises the limit)")
            lines = f.readlines()
    except OSError as err:
        raise LogError(f"cannot read: {err.strerror or err}") from None
    place = tree.place_of(path) if path.name != "mlperf.log" else None
    try:
        log = read_lines(lines, str(path))
    except LogError as err:
        if place is None:
            raise
        run = RunSummary(path=str(path), benchmark=place.benchmark, status="unreadable", problems=[str(err)])
        _add_tree(run, path, place)
        return ReadLog(lines, [], run, readable=False)
    run = log.facts
    if path.name == "mlperf.log":
        add_run_files(run, path.parent)
        if run.interrupted is not None:  # stopped by a signal: an unfinished log is what that leaves
            run.problems = [p for p in run.problems if not p.startswith(("no run_stop", "no run_start"))]
    else:
        _add_tree(run, path, place)
    return log


def parse_file(path: str | Path) -> RunSummary:
    """What one log file says, as a run."""
    return read_file(path).facts


def _add_tree(run: RunSummary, path: Path, place: Optional[tree.Place]) -> None:
    system = tree.system_for(path)
    if system is not None:
        run.system = system.name
        run.world_size = system.world_size if system.world_size is not None else run.world_size
        run.accelerator = system.accelerator or run.accelerator
        run.framework = system.framework or run.framework
        run.platform = run.platform or system.hardware or system.name  # v0.5 logs name no platform
        run.division = system.division or run.division  # the summarizer reads the system file's
        if system.scored is not None:
            run.submitter_scored = str(path.resolve()) in system.scored
    if place is not None:
        run.folder = place.folder
        if run.benchmark != place.benchmark:
            run.warnings.append(f"logs benchmark {run.benchmark!r} in a {place.benchmark!r} folder: scored with the "
                                "folder, as the official summarizer scores it")
    found = round_in_path(path)
    if found and run.log_format == "MLLOG":
        run.round = found


def round_in_path(path: Path) -> Optional[str]:
    """'v0.7' from the folder of a round on the way to the file: the nearest one named for it alone
    (v0.7, v0.7.0, training_results_v0.7), else the nearest whose name holds a vX.Y word
    (mlperf_v0.7_results); a system or submission folder such as cloud_v3.8 does not outrank its round's."""
    parts = list(reversed(path.resolve().parts[:-1]))
    for pattern in (r"(?:training_results_)?v(\d+)\.(\d+)(?:\.\d+)?", r".*(?:^|[_-])v(\d+)\.(\d+)(?:\.\d+)?(?:$|[_-]).*"):
        for part in parts:
            m = re.fullmatch(pattern, part)
            if m:
                return f"v{m.group(1)}.{m.group(2)}"
    return None


def parse_lines(lines: list[str], path: str = "<log>") -> RunSummary:
    """What a log's lines say, as a run."""
    return read_lines(lines, path).facts


def read_lines(lines: list[str], path: str = "<log>") -> ReadLog:
    """A log's lines read (`path`: the file they come from; a tree's and a run's files are read_file's)."""
    got = formats.read(lines)
    run = RunSummary(path=path, round=got.round, log_format=got.format)
    if not got.records and not got.bad_json and not got.no_time:
        raise LogError("no :::MLLOG lines (nor :::MLL or :::MLPv0.5.0): not an MLPerf log (or an empty file)")
    if got.bad_json:
        what = "MLLOG JSON" if got.format in (None, "MLLOG") else f"{got.format} records"
        run.problems.append(f"{len(got.bad_json)} line(s) are not valid {what} (first at line {got.bad_json[0]})")
    if got.no_time:
        run.problems.append(f"{len(got.no_time)} line(s) have no time_ms timestamp (first at line {got.no_time[0]})")
    if got.mixed:
        run.problems.append(f"holds {got.format} lines and {', '.join(got.mixed)} lines: two log formats in one file")
    if got.seconds_based:
        run.timestamp_unit = "s"
        run.problems.append(
            "timestamps are seconds ('time_s'), not 'time_ms': not in the 0.7.0 log format "
            "(its time to train is read from the seconds)"
        )
    starts = [r for r in got.records if r.key == "run_start"]
    if len(starts) > 1:
        raise LogError(
            f"holds {len(starts)} runs (run_start at lines {', '.join(str(r.lineno) for r in starts)}); "
            "MLPerf wants one run per file: split it"
        )
    if got.token == formats.V05:
        run.benchmark = got.benchmark
    _read_keys(run, got.records, v05=got.token == formats.V05)
    return ReadLog(lines, got.records, run)


def _read_keys(run: RunSummary, records: list[Record], v05: bool) -> None:
    first: dict[str, Any] = {}
    init_start: Optional[float] = None
    init_stop: Optional[float] = None
    samples = seconds = 0.0
    nodes = accel = entry = None
    stops: list[Record] = []
    evals: list[tuple[int, tuple[Any, Any]]] = []
    for r in records:
        key, value, meta, t = r.key, r.value, r.meta, r.t
        if key.startswith("submission_") or key in ("seed", "global_batch_size", "precision"):
            value = _typed(run, key, value)
            if value is formats.MISSING:
                continue
            value = one_line(value) if isinstance(value, str) else value  # a name stays one line of a table
            if key in first and first[key] != value and key.startswith("submission_"):
                run.problems.append(f"{key} logged twice with different values ({first[key]!r}, {value!r})")
            first.setdefault(key, value)
        elif key == "init_start":
            init_start = t if init_start is None else min(init_start, t)
        elif key == "init_stop" and init_stop is None:
            init_stop = t
        elif key == "run_start":
            run.run_start_ms = t
        elif key == "run_stop":
            stops.append(r)
        elif key == "eval_accuracy":
            if v05 and isinstance(value, dict):
                evals.append((r.lineno, (value.get("epoch"), value.get("value"))))
            else:
                evals.append((r.lineno, (meta.get("epoch_num"), value)))
        elif key == "tracked_stats" and isinstance(value, dict):
            if _number(value.get("samples")) and _number(value.get("seconds")):
                samples += value["samples"]
                seconds += value["seconds"]
        elif key == "number_of_nodes":
            nodes = value
        elif key == "accelerators_per_node":
            accel = value
        elif key == "eval_target" and run.target is None:
            run.target = value
        elif v05 and key in ("run_set_random_seed", "input_batch_size") and not v05_rules.no_seed(value):
            value = _typed(run, key, value, "seed" if key == "run_set_random_seed" else "global_batch_size")
            if value is not formats.MISSING:
                first.setdefault("seed" if key == "run_set_random_seed" else "global_batch_size", value)
    entry = first.pop("submission_entry", None)
    run.benchmark = first.get("submission_benchmark", run.benchmark)
    run.org = first.get("submission_org")
    run.division = tree.division(first.get("submission_division"))
    run.platform = first.get("submission_platform")
    run.seed = first.get("seed")
    run.precision = first.get("precision")
    run.global_batch_size = first.get("global_batch_size")
    run.world_size = tree.world(nodes, accel) if accel is not None else None
    if entry is not None:  # v0.6 logs describe their system in the log itself
        system = tree.from_entry(entry, run.path)
        if system is not None:
            run.world_size = run.world_size if system.world_size is None else system.world_size
            run.accelerator, run.framework = system.accelerator, system.framework
    _stop(run, stops, evals, v05)
    if init_start is not None and init_stop is not None:
        run.init_time_s = (init_stop - init_start) / 1000.0
    if seconds > 0:
        run.throughput, run.throughput_unit = samples / seconds, "samples/s"
    else:
        run.throughput, run.throughput_unit = derived_throughput(records, v05)
        run.throughput_derived = run.throughput is not None
    _timing(run, v05, records)


def _stop(run: RunSummary, stops: list[Record], evals: list[tuple[int, tuple[Any, Any]]], v05: bool) -> None:
    """The run_stop that ends the run, and the evaluations before it: the first run_stop after the last
    evaluation (or the first, in a log without evaluations). Another run_stop before an evaluation of the run
    would end its timed region early: a fault that keeps the run out of every score."""
    if not stops:
        run.evals = [e for _, e in evals]
        return
    last_eval = evals[-1][0] if evals else 0
    stop = next((r for r in stops if r.lineno > last_eval), stops[-1])
    run.run_stop_ms = stop.t
    if v05:
        last = next((e[1] for lineno, e in reversed(evals) if lineno < stop.lineno), None)
        run.status, said = v05_rules.status(stop.value, last, run.target)
        run.warnings += [said] if said else []
    else:
        run.status = str(stop.meta.get("status", "unknown"))
    run.interrupted = None if v05 else interrupted_by(stop.meta.get("reason"))
    run.evals = [e for lineno, e in evals if lineno < stop.lineno]
    early = [r for r in stops if r.lineno < stop.lineno and any(r.lineno < n < stop.lineno for n, _ in evals)]
    if early:
        run.faults.append(f"{len(stops)} run_stop records, one (line {early[0].lineno}) before the run's evaluations: "
                          f"not scored (its time is read from the run_stop after the last one, line {stop.lineno})")
    elif len(stops) > 1:
        run.warnings.append(f"{len(stops)} run_stop records (lines {', '.join(str(r.lineno) for r in stops[:4])}"
                            f"{', ...' if len(stops) > 4 else ''}): the time to train is read from the first after "
                            "the last evaluation")


def _timing(run: RunSummary, v05: bool, records: list[Record]) -> None:
    if run.benchmark is None and not any(p.startswith("submission_benchmark is ") for p in run.problems):
        run.problems.append("no submission_benchmark")  # a badly typed one is named already: one line
    if run.run_start_ms is None:
        if run.interrupted is None:  # an interrupted run may stop before its timed region: that is no fault
            run.problems.append("no run_start: the run never started its timed region")
        run.status = INCOMPLETE if run.interrupted is None else run.status
    elif run.run_stop_ms is None:
        run.problems.append("no run_stop: the run did not finish (crashed, killed or still running)")
    else:
        elapsed = run.run_stop_ms - run.run_start_ms
        run.time_to_train_s = elapsed / 1000.0
        run.time_to_train_min = elapsed / 60 / 1000  # MLPerf's summarizer's own arithmetic, to the bit
    clock.judge(run, records)
    run.problems += run.faults
    if run.status == SUCCESS:
        epochs = [e for e, _ in run.evals if _number(e)]
        if epochs:
            run.epochs_to_converge = epochs[-1] + 1 if v05 else epochs[-1]
        else:
            run.warnings.append(NO_EPOCH)


def _typed(run: RunSummary, key: str, value: Any, as_key: Optional[str] = None) -> Any:
    """`value` as what runs are named, grouped and told apart by must be (a string for a name, an integer for
    a seed or batch size), or MISSING with one line in the run's problems: a list or an object there would reach
    every table and group key as it is. An integer written as 2048.0 or "2048" is read as 2048, with a warning."""
    count = (as_key or key) in COUNT_KEYS
    if value is None or (_number(value, int) if count else isinstance(value, str)):
        return value  # None: as if not logged
    text = "" if isinstance(value, (dict, list)) else one_line(json.dumps(value))  # a scalar, shown cut short
    shown = ("an object" if isinstance(value, dict) else "a list") if not text else \
        text if len(text) <= 24 else text[:21] + "..."
    if count and isinstance(value, (float, str)) and _INTEGER.fullmatch(str(value).strip()):
        run.warnings.append(f"{key} is {shown}: read as {int(float(value))}")
        return int(float(value))
    note = f"{key} is {shown}, not {'an integer' if count else 'a string'}: not read"
    if note not in run.problems:  # once however often the log repeats it
        run.problems.append(note)
    return formats.MISSING


def _number(x: Any, kind: type | tuple[type, ...] = (int, float)) -> bool:
    return isinstance(x, kind) and not isinstance(x, bool)
