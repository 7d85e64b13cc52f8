"""Throughput runs (result.json files of mode=throughput) -> groups, scaling over GPU counts, gains
over precisions, and the rows of their tables.

This module is the agreed throughput-table API (docs: the report's throughput tables); this is a
minimal implementation of exactly that API for `python -m harness.bench`. One addition: Scaling and
PrecisionGain also carry `model` (last, with a default), because one workload label can belong to
several models (BERT base and large both run "squad384") and their rows must not mix.

    python -c "from harness.results.throughput import read_runs, groups; print(groups(read_runs(['outputs'])))"
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence


@dataclass(frozen=True)
class ThroughputRun:
    path: str  # the result.json
    model: str
    workload: str  # hyperparameters["workload"] if present, else the model name
    precision: str
    world_size: int
    global_batch_size: Optional[int]
    unit: str  # "tokens/s", "samples/s", ...
    throughput: Optional[float]  # median window; None when failed
    windows: tuple[float, ...]
    platform: str
    accelerator: str
    status: str  # "success" | "failed"
    reason: Optional[str]


def _run_of(path: Path) -> Optional[ThroughputRun]:
    try:
        r = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(r, dict) or r.get("mode") != "throughput":
        return None
    hyper = r.get("hyperparameters") if isinstance(r.get("hyperparameters"), dict) else {}
    status = "success" if r.get("status") == "success" else "failed"
    windows = tuple(float(e["throughput"]) for e in r.get("epochs") or []
                    if isinstance(e, dict) and isinstance(e.get("throughput"), (int, float)))
    tput = r.get("throughput") if status == "success" and isinstance(r.get("throughput"), (int, float)) else None
    model = str(r.get("model") or "?")
    return ThroughputRun(
        path=str(path), model=model, workload=str(hyper.get("workload") or model),
        precision=str(r.get("precision") or "?"), world_size=int(r.get("world_size") or 1),
        global_batch_size=r.get("global_batch_size"), unit=str(r.get("throughput_unit") or ""),
        throughput=None if tput is None else float(tput), windows=windows, platform=str(r.get("platform") or ""),
        accelerator=str(r.get("accelerator") or ""), status=status, reason=r.get("reason"))


def read_runs(paths: Iterable[str | Path]) -> list[ThroughputRun]:
    """Every result.json with mode=throughput under the paths (files or folders), failed ones included."""
    runs = []
    for p in map(Path, paths):
        files = sorted(p.rglob("result.json")) if p.is_dir() else [p]
        runs += [r for r in map(_run_of, files) if r is not None]
    return runs


@dataclass(frozen=True)
class ThroughputGroup:
    workload: str
    model: str
    accelerator: str
    precision: str
    world_size: int
    global_batch_size: Optional[int]
    unit: str
    runs: int
    failed: int
    median: Optional[float]  # over the runs' medians
    min: Optional[float]
    max: Optional[float]
    std: Optional[float]


def groups(runs: Sequence[ThroughputRun]) -> list[ThroughputGroup]:
    by_key: dict[tuple, list[ThroughputRun]] = {}
    for r in runs:
        by_key.setdefault((r.workload, r.model, r.accelerator, r.precision, r.world_size), []).append(r)
    out = []
    for (workload, model, accelerator, precision, world), members in sorted(by_key.items(), key=lambda kv: kv[0]):
        values = [r.throughput for r in members if r.throughput is not None]
        batch = next((r.global_batch_size for r in members if r.global_batch_size is not None), None)
        out.append(ThroughputGroup(
            workload, model, accelerator, precision, world, batch, next((r.unit for r in members if r.unit), ""),
            len(members), sum(r.status == "failed" for r in members),
            statistics.median(values) if values else None, min(values) if values else None,
            max(values) if values else None, statistics.pstdev(values) if values else None))
    return out


@dataclass(frozen=True)
class Scaling:  # per (workload, accelerator, precision): each world size against the smallest
    workload: str
    accelerator: str
    precision: str
    base_world: int
    world: int
    speedup: Optional[float]
    efficiency: Optional[float]  # speedup / (world / base_world)
    model: str = ""


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def scaling(groups: Sequence[ThroughputGroup]) -> list[Scaling]:
    families: dict[tuple, list[ThroughputGroup]] = {}
    for g in groups:
        families.setdefault((g.workload, g.model, g.accelerator, g.precision), []).append(g)
    out = []
    for (workload, model, accelerator, precision), members in families.items():
        members = sorted(members, key=lambda g: g.world_size)
        base = members[0]
        for g in members[1:]:
            speedup = _ratio(g.median, base.median)
            out.append(Scaling(workload, accelerator, precision, base.world_size, g.world_size, speedup,
                               None if speedup is None else speedup / (g.world_size / base.world_size), model))
    return out


@dataclass(frozen=True)
class PrecisionGain:  # per (workload, accelerator, world): each precision against the baseline
    workload: str
    accelerator: str
    world_size: int
    precision: str
    baseline: str
    ratio: Optional[float]
    model: str = ""


def precision_gains(groups: Sequence[ThroughputGroup], baseline: str = "fp32") -> list[PrecisionGain]:
    base = {(g.workload, g.model, g.accelerator, g.world_size): g for g in groups if g.precision == baseline}
    return [PrecisionGain(g.workload, g.accelerator, g.world_size, g.precision, baseline,
                          _ratio(g.median, base[key].median), g.model)
            for g in groups if g.precision != baseline
            and (key := (g.workload, g.model, g.accelerator, g.world_size)) in base]


def _fmt(value: Optional[float], spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _label(workload: str, model: str) -> str:
    return workload if not model or model == workload else f"{model} {workload}"


def table_rows(groups: Sequence[ThroughputGroup]) -> tuple[list[str], list[list[str]]]:
    header = ["workload", "model", "accelerator", "precision", "world", "global batch", "runs", "failed",
              "median", "min", "max", "std", "unit"]
    return header, [[g.workload, g.model, g.accelerator, g.precision, str(g.world_size),
                     "n/a" if g.global_batch_size is None else str(g.global_batch_size), str(g.runs), str(g.failed),
                     _fmt(g.median, ",.1f"), _fmt(g.min, ",.1f"), _fmt(g.max, ",.1f"), _fmt(g.std, ",.1f"), g.unit]
                    for g in groups]


def scaling_rows(scalings: Sequence[Scaling]) -> tuple[list[str], list[list[str]]]:
    header = ["workload", "accelerator", "precision", "GPUs", "speedup", "efficiency"]
    return header, [[_label(s.workload, s.model), s.accelerator, s.precision, f"{s.world} vs {s.base_world}",
                     _fmt(s.speedup, ".3f") + ("x" if s.speedup is not None else ""), _fmt(s.efficiency, ".3f")]
                    for s in scalings]


def gain_rows(gains: Sequence[PrecisionGain]) -> tuple[list[str], list[list[str]]]:
    header = ["workload", "accelerator", "world", "precision", "vs", "ratio"]
    return header, [[_label(p.workload, p.model), p.accelerator, str(p.world_size), p.precision, p.baseline,
                     _fmt(p.ratio, ".3f") + ("x" if p.ratio is not None else "")] for p in gains]
