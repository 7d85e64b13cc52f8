"""What a harness run directory adds to its mlperf.log: result.json and system.json.

result.json gives the GPU model, energy and power (telemetry), the quality metric, its direction and
target (a number or named parts), the epoch unit, the throughput unit, the data wait (the share of
training time rank 0 waited for batches) and the host's load (a run made while other processes used
the machine is marked busy: docs/report.md). A run that failed before its log began is read from
result.json alone. Official logs have none of these files.

Every field is checked for its type first (harness.record.problems, from the record's own
declaration) and the file read as the record it was written from: a result.json with a badly
typed field (`world_size: "one"`, `seed: [1]`, a throughput of `"fast"`) is named with the field and
skipped, so one bad file cannot take the other runs' report with it. Beside a good mlperf.log, the run
is then read from its log alone.
"""
from __future__ import annotations

import functools
import os
import stat
from json import dumps
from pathlib import Path
from typing import Any, Optional

import yaml

from harness import record
from harness.record import RunRecord
from harness.results.read.formats import loads
from harness.results.read.summary import LogError, RunSummary, interrupted_by, one_line

NOT_A_FILE = "not a regular file (a folder, a pipe or a device)"
MAX_NAMED = 3  # fields named per file; the rest are counted
problems = record.problems  # each badly typed field, named: the record declares what each field holds


def read_text(path: str | Path, max_bytes: Optional[int] = None, errors: str = "strict") -> str:
    """A run file's text. OSError, its strerror saying why, for a path that is not a regular file (opening a pipe
    waits for a writer for ever, a device never ends: both checked on the file opened, without blocking) or one
    larger than `max_bytes`."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # O_NONBLOCK: a FIFO opens at once; a regular file reads as usual
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, NOT_A_FILE)
        if max_bytes is not None and st.st_size > max_bytes:
            raise OSError(0, f"{st.st_size:,} bytes, over the {max_bytes:,} a run's file holds")
        return f.read().decode("utf-8", errors)


def describe(found: list[str]) -> str:
    """One line: the first fields named, the rest counted."""
    text = "; ".join(found[:MAX_NAMED])
    if len(found) > MAX_NAMED:
        text += f"; and {len(found) - MAX_NAMED} more"
    return text


@functools.lru_cache(maxsize=4096)
def _load(path: str, _mtime_ns: int, _size: int) -> tuple[Optional[RunRecord], tuple[str, ...]]:
    try:
        data = loads(read_text(path))
    except OSError as err:
        return None, (f"cannot be read: {err.strerror or err}",)
    except ValueError as err:
        return None, (f"not valid JSON: {err}",)
    found = problems(data)
    return (None, tuple(found)) if found else (record.from_dict(data), ())


def read_result(path: str | Path) -> tuple[Optional[RunRecord], list[str]]:
    """(the result.json's record, []) when every field is well typed; (None, problems)
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
    run.settings = settings_of(run_dir / "config.yaml")  # harness.report names a config that cannot be read
    if run.accelerator is None:
        name = _read_json(run_dir / "system.json").get("accelerator_model_name")
        run.accelerator = name if isinstance(name, str) and name else None


# what sets a run's experiment beyond its group key (precision, path, world, batch, target): the model's
# options, the dataset and its generator, and the harness options that change what is timed or when it ends
SETTINGS = ("ddp_bucket_mb", "max_epochs", "eval_every", "warm_up", "clear_caches")
LEFT_OUT = {"model.target", "model.name", "dataset.path", "dataset.model"}  # the group's own key, or a place
CONFIG_BYTES = 1 << 20  # a run's config.yaml is a few kB: a larger one is no harness config
CONFIG_DEPTH = 64  # levels of nesting: a harness config has four or five


class _ConfigLoader(yaml.SafeLoader):
    """yaml.safe_load's loader (plain data, never code), refusing anchors, aliases and deep nesting: a run's
    config.yaml is OmegaConf.to_yaml's dump of plain data, which shares no node and nests a few levels, while
    700 bytes of nested aliases expand to billions of nodes (a "billion laughs") and 3000 nested brackets
    overflow the composer's recursion."""

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise yaml.YAMLError(f"an anchor or alias at line {event.start_mark.line + 1}")
        if self.depth >= CONFIG_DEPTH:
            raise yaml.YAMLError(f"nested over {CONFIG_DEPTH} levels at line {event.start_mark.line + 1}")
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def settings_of(path: Path) -> tuple[tuple[str, str], ...]:
    """A harness run's settings from its resolved config.yaml, flattened to sorted (option, JSON value) pairs;
    () without a config, or with one that cannot be read (read_settings says why)."""
    return read_settings(path)[0]


def read_settings(path: Path) -> tuple[tuple[tuple[str, str], ...], Optional[str]]:
    """(settings, None); ((), why) for a config.yaml that cannot be read as one; ((), None) without one. Cached
    by path, mtime and size, as read_result is: the report names the problem apart from the run."""
    try:
        st = path.stat()
    except OSError:
        return (), None
    return _settings(str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=4096)
def _settings(path: str, _mtime_ns: int, _size: int) -> tuple[tuple[tuple[str, str], ...], Optional[str]]:
    try:
        data = yaml.load(read_text(path, CONFIG_BYTES), Loader=_ConfigLoader)  # safe_load, without aliases
    except OSError as err:
        return (), f"cannot be read: {err.strerror or err}"
    except (ValueError, yaml.YAMLError, RecursionError) as err:
        return (), f"not a config the harness writes ({' '.join(one_line(str(err)).split())[:200]})"
    if not isinstance(data, dict):
        return (), "not a config the harness writes (not a mapping of options)"
    picked = {k: data[k] for k in SETTINGS if k in data}
    flat: dict[str, str] = {k: dumps(v, sort_keys=True, default=str) for k, v in picked.items()}
    for part in ("model", "dataset"):
        if isinstance(data.get(part), dict):
            _flatten(data[part], part, flat)
    return tuple(sorted((k, v) for k, v in flat.items() if k not in LEFT_OUT)), None


def _flatten(node: dict, prefix: str, out: dict[str, str]) -> None:
    for k, v in node.items():
        if isinstance(v, dict):
            _flatten(v, f"{prefix}.{k}", out)
        else:
            out[f"{prefix}.{k}"] = dumps(v, sort_keys=True, default=str)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = loads(read_text(path))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _from_result(run: RunSummary, result: RunRecord) -> None:
    tele = result.telemetry or {}
    run.energy_j, run.power_w = _num(tele.get("energy_j")), _num(tele.get("power_mean_w"))
    run.accelerator = result.accelerator or None
    run.quality_metric = result.quality_metric or run.quality_metric
    run.quality_direction = result.quality_direction or run.quality_direction
    if result.target is not None:
        run.target = result.target
    run.epoch_unit = result.epoch_unit
    if run.throughput is not None and not run.throughput_derived:
        run.throughput_unit = result.throughput_unit or run.throughput_unit or "samples/s"
    if result.status == "aborted" and run.interrupted is None:  # a log cut off before its run_stop
        run.interrupted = interrupted_by(result.reason)
    load = result.host_load or {}
    if isinstance(load.get("busy"), bool):
        run.busy = load["busy"]
        run.host_note = load.get("note") or None
    run.data_wait_s, run.data_wait_share = _num(result.data_wait_s), _num(result.data_wait_share)
    run.data_wait_warmup_s = _num(result.data_wait_warmup_s)


def _num(x: Any) -> Optional[float]:
    return float(x) if record.number(x) else None


def from_result_json(path: str | Path) -> Optional[RunSummary]:
    """A harness run that failed before its MLPerf log began (bad data, a crash at start): its
    result.json is all there is. None for throughput measurements, which are not MLPerf runs
    (harness.results.analysis.throughput reads those). LogError names the fields of a badly typed file."""
    result, found = read_result(path)
    if result is None:
        raise LogError(describe(found) if found else "cannot be read")
    if result.mode == "throughput":
        return None
    reason = result.reason or "no MLPerf log"
    stopped = interrupted_by(reason) if result.status == "aborted" else None
    run = RunSummary(
        path=str(path), benchmark=result.benchmark or None, status=result.status, platform=result.platform or None,
        seed=result.seed, world_size=result.world_size, precision=result.precision or None,
        global_batch_size=result.global_batch_size,
        problems=[] if stopped else [f"no mlperf.log: the run ended before its log began ({reason})"],
        interrupted=stopped,
    )
    run.evals = [(e.epoch, e.quality) for e in result.evals]
    _from_result(run, result)
    return run
