"""mode=throughput results (result.json without an MLPerf log): runs, groups, scaling, precision gains, fast vs eager.

A throughput run measures `throughput_repeats` windows of synthetic batches after warm-up; its
figure is the median window. Its precision label names the base precision and then the path the step
ran ("amp", "tf32+graph", "amp+master+compile(reduce-overhead)"; split_label). Runs group by
(workload, model, accelerator, label, world size, global batch); a group's median, min, max and std
are over its runs' medians. Scaling compares each world size with the smallest of its (workload,
accelerator, label) at the same per-rank batch; precision gains compare each precision with a
baseline (fp32) at the same workload, accelerator, world size and path; fast_vs_eager each fast
path with the eager step of the same base precision. `python -m harness.report` prints their tables
(harness.results.report.sections) when such runs are present; `python -m harness.bench` builds
its suite table on them.

    python -m harness.check.show throughput outputs/benchmark      # the four tables, as text
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence, Union

from harness.record import RunRecord
from harness.results.read.runfiles import read_result
from harness.results.read.summary import EAGER, join_label, split_label


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
    status: str  # "success" | "aborted" (stopped before its windows ended) | "failed"
    reason: Optional[str]
    fallback: Optional[str] = None  # why a fast path fell back to the eager step, where the record says
    flops_per_sample: Optional[float] = None  # model FLOPs a sample (harness/run/flops.py), where recorded
    achieved_tflops: Optional[float] = None
    mfu: Optional[float] = None  # None: no peak for the GPU (mfu_note says why) or no FLOPs recorded
    mfu_note: Optional[str] = None


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
    failed: int  # runs without a figure that failed (crashed, NaN, full disk), or succeeded without one
    median: Optional[float]  # over the runs' medians
    min: Optional[float]
    max: Optional[float]
    std: Optional[float]  # ddof=0
    windows_min: Optional[float] = None  # the slowest and fastest window of any run of the group
    windows_max: Optional[float] = None
    flops_per_sample: Optional[float] = None  # the runs' median, as the figures below
    achieved_tflops: Optional[float] = None
    mfu: Optional[float] = None
    mfu_note: Optional[str] = None  # why no run of the group has an MFU, where none has
    aborted: int = 0  # runs stopped before their windows ended (a signal, a limit): not failures of the system


@dataclass(frozen=True)
class Scaling:  # per (workload, accelerator, precision): each world size against the smallest
    workload: str
    accelerator: str
    precision: str
    base_world: int
    world: int
    speedup: Optional[float]
    efficiency: Optional[float]  # speedup / (world / base_world)
    model: str = ""  # one workload label (squad384) can belong to several models (bert_base, bert_large)


@dataclass(frozen=True)
class PrecisionGain:  # per (workload, accelerator, world): each precision against the baseline
    workload: str
    accelerator: str
    world_size: int
    precision: str
    baseline: str
    ratio: Optional[float]
    model: str = ""


@dataclass(frozen=True)
class FastGain:  # per (workload, accelerator, world, base precision): a fast path against the eager step
    workload: str
    accelerator: str
    world_size: int
    base: str  # the base precision: "amp", "tf32", "amp+master"
    path: str  # the fast path: "graph", "compile(reduce-overhead)", "compile+graph"
    fast: Optional[float]  # the two medians
    eager: Optional[float]
    unit: str
    ratio: Optional[float]  # fast / eager
    model: str = ""


def _line(x: Optional[str]) -> Optional[str]:
    return x.strip().splitlines()[0] if x and x.strip() else None


def _positive(x: Optional[float]) -> Optional[float]:
    return float(x) if x is not None and x > 0 else None


def _run(path: Path, r: RunRecord) -> ThroughputRun:
    windows = tuple(w for w in (_positive(e.throughput) for e in r.epochs) if w)
    model = r.model or "?"
    status = r.status if r.status in ("success", "aborted") else "failed"
    batch = r.global_batch_size if r.global_batch_size is not None else r.hyperparameters.get("global_batch_size")
    base, step = split_label(r.precision or "?")
    recorded = _line(r.path)
    if step == EAGER and recorded:  # a label that names its base precision alone: the record's path key says
        step = split_label(f"{base}+{recorded}")[1]
    return ThroughputRun(
        path=str(path), model=model, workload=str(r.hyperparameters.get("workload") or model),
        precision=join_label(base, step), world_size=r.world_size, global_batch_size=batch,
        unit=r.throughput_unit or "samples/s", throughput=_positive(r.throughput) if status == "success" else None,
        windows=windows, platform=r.platform or "?", accelerator=r.accelerator or "?", status=status,
        reason=r.reason, fallback=_line(r.fallback), flops_per_sample=_positive(r.model_flops_per_sample),
        achieved_tflops=_positive(r.achieved_tflops), mfu=_positive(r.mfu), mfu_note=_line(r.mfu_note),
    )


def read_runs(paths: Iterable[str | Path]) -> list[ThroughputRun]:
    """Every result.json with mode=throughput under the paths (files or folders), failed ones included."""
    files: set[Path] = set()
    for name in paths:
        p = Path(name)
        if p.is_file() and p.name == "result.json":
            files.add(p)
        elif p.is_dir():
            files.update(p.rglob("result.json"))
    runs = []
    for path in sorted(files):
        result, _ = read_result(path)  # None: unreadable or badly typed, which harness.report names
        if result is not None and result.mode == "throughput":
            runs.append(_run(path, result))
    return runs


def groups(runs: Sequence[ThroughputRun]) -> list[ThroughputGroup]:
    by_key: dict[tuple, list[ThroughputRun]] = {}
    for r in runs:
        key = (r.workload, r.model, r.accelerator, r.precision, r.world_size, r.global_batch_size, r.unit)
        by_key.setdefault(key, []).append(r)
    out = []
    for key, members in sorted(by_key.items(), key=lambda kv: str(kv[0])):
        medians = [r.throughput for r in members if r.throughput is not None]
        windows = [w for r in members if r.throughput is not None for w in r.windows]
        aborted = sum(r.status == "aborted" for r in members)
        out.append(ThroughputGroup(
            *key, runs=len(members), failed=len(members) - len(medians) - aborted, aborted=aborted,
            median=statistics.median(medians) if medians else None, min=min(medians) if medians else None,
            max=max(medians) if medians else None, std=statistics.pstdev(medians) if medians else None,
            windows_min=min(windows) if windows else None, windows_max=max(windows) if windows else None,
            flops_per_sample=_median(r.flops_per_sample for r in members),
            achieved_tflops=_median(r.achieved_tflops for r in members if r.throughput is not None),
            mfu=_median(r.mfu for r in members if r.throughput is not None),
            mfu_note=next((r.mfu_note for r in members if r.mfu_note), None),
        ))
    return out


def _median(values: Iterable[Optional[float]]) -> Optional[float]:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def scaling(groups: Sequence[ThroughputGroup]) -> list[Scaling]:
    families: dict[tuple, list[ThroughputGroup]] = {}
    for g in groups:
        per_rank = g.global_batch_size // g.world_size if g.global_batch_size and g.world_size else None
        families.setdefault((g.workload, g.model, g.accelerator, g.precision, g.unit, per_rank), []).append(g)
    out = []
    for (workload, model, accel, precision, _, _), members in sorted(families.items(), key=lambda kv: str(kv[0])):
        members = sorted(members, key=lambda g: g.world_size)
        base = members[0]
        for g in members[1:]:
            if g.world_size == base.world_size:
                continue
            speedup = _ratio(g.median, base.median)
            ratio = g.world_size / base.world_size
            out.append(Scaling(workload, accel, precision, base.world_size, g.world_size, speedup,
                               None if speedup is None else speedup / ratio, model))
    return out


def precision_gains(groups: Sequence[ThroughputGroup], baseline: Union[str, Sequence[str]] = "fp32") -> list[PrecisionGain]:
    """Each precision's throughput over the baseline's, per workload, accelerator, GPU count and path.
    `baseline` may name several precisions in order of preference ("tf32", "fp32"): each model is
    compared with the first of them it ran in, and each gain names the one it was taken against. A
    fast step is held to the baseline on the same path (amp+graph / tf32+graph), never to an eager one:
    that ratio would be the path's gain called the precision's."""
    preferred = [baseline] if isinstance(baseline, str) else list(baseline)
    by_key: dict[tuple, list[ThroughputGroup]] = {}
    for g in groups:
        by_key.setdefault((g.workload, g.model, g.accelerator, g.world_size, g.unit, split_label(g.precision)[1]),
                          []).append(g)
    out = []
    for (workload, model, accel, world, _, path), members in sorted(by_key.items(), key=lambda kv: str(kv[0])):
        chosen = next((join_label(p, path) for p in preferred if any(g.precision == join_label(p, path)
                                                                      for g in members)), None)
        if chosen is None:
            continue
        bases = [g for g in members if g.precision == chosen]
        for g in sorted(members, key=lambda g: (g.precision, str(g.global_batch_size))):
            if g.precision == chosen:
                continue
            base = _same_batch(g, bases)
            if base is not None:
                out.append(PrecisionGain(workload, accel, world, g.precision, chosen, _ratio(g.median, base.median),
                                         model))
    return out


def fast_vs_eager(groups: Sequence[ThroughputGroup]) -> list[FastGain]:
    """Each fast path's median over the eager step's of the same cell (workload, model, accelerator,
    GPU count, base precision, batch), where both ran."""
    by_key: dict[tuple, list[ThroughputGroup]] = {}
    for g in groups:
        by_key.setdefault((g.workload, g.model, g.accelerator, g.world_size, g.unit, split_label(g.precision)[0]),
                          []).append(g)
    out = []
    for (workload, model, accel, world, unit, base), members in sorted(by_key.items(), key=lambda kv: str(kv[0])):
        eager = [g for g in members if g.precision == base]
        for g in sorted(members, key=lambda g: (g.precision, str(g.global_batch_size))):
            ref = None if g.precision == base else _same_batch(g, eager)
            if ref is not None:
                out.append(FastGain(workload, accel, world, base, split_label(g.precision)[1], g.median, ref.median,
                                    unit, _ratio(g.median, ref.median), model))
    return out


def _same_batch(g: ThroughputGroup, refs: Sequence[ThroughputGroup]) -> Optional[ThroughputGroup]:
    """The reference group of g's global batch, else the one reference there is."""
    same = [r for r in refs if r.global_batch_size == g.global_batch_size]
    return same[0] if same else (refs[0] if len(refs) == 1 else None)
