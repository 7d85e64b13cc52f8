"""mode=throughput results (result.json without an MLPerf log): runs, groups, scaling and precision gains.

A throughput run measures `throughput_repeats` windows of synthetic batches after warm-up; its
figure is the median window. Runs group by (workload, model, accelerator, precision, world size,
global batch); a group's median, min, max and std are over its runs' medians. Scaling compares each
world size with the smallest of its (workload, accelerator, precision) at the same per-rank batch;
precision gains compare each precision with a baseline (fp32) at the same workload, accelerator and
world size. `python -m harness.report` prints these tables when such runs are present;
`python -m harness.bench` builds its suite table on them.

    python -m harness.results.throughput outputs/benchmark      # the three tables, as text
"""
from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union


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
    std: Optional[float]  # ddof=0
    windows_min: Optional[float] = None  # the slowest and fastest window of any run of the group
    windows_max: Optional[float] = None


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


def _number(x: Any) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 else None


def _run(path: Path, data: dict) -> ThroughputRun:
    hp: dict = data["hyperparameters"] if isinstance(data.get("hyperparameters"), dict) else {}
    epochs: list = data["epochs"] if isinstance(data.get("epochs"), list) else []
    windows = tuple(w for w in (_number(e.get("throughput")) for e in epochs if isinstance(e, dict)) if w)
    model = str(data.get("model") or "?")
    status = "success" if data.get("status") == "success" else "failed"
    tput = _number(data.get("throughput")) if status == "success" else None
    world = data.get("world_size")
    batch = data.get("global_batch_size", hp.get("global_batch_size"))
    return ThroughputRun(
        path=str(path), model=model, workload=str(hp.get("workload") or model), precision=str(data.get("precision") or "?"),
        world_size=world if isinstance(world, int) and not isinstance(world, bool) else 1,
        global_batch_size=batch if isinstance(batch, int) and not isinstance(batch, bool) else None,
        unit=str(data.get("throughput_unit") or "samples/s"), throughput=tput, windows=windows,
        platform=str(data.get("platform") or "?"), accelerator=str(data.get("accelerator") or "?"), status=status,
        reason=data.get("reason") if isinstance(data.get("reason"), str) else None,
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
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # not readable: harness.report names it among its orphan result files
        if isinstance(data, dict) and data.get("mode") == "throughput":
            runs.append(_run(path, data))
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
        out.append(ThroughputGroup(
            *key, runs=len(members), failed=len(members) - len(medians),
            median=statistics.median(medians) if medians else None, min=min(medians) if medians else None,
            max=max(medians) if medians else None, std=statistics.pstdev(medians) if medians else None,
            windows_min=min(windows) if windows else None, windows_max=max(windows) if windows else None,
        ))
    return out


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
    """Each precision's throughput over the baseline's, per workload, accelerator and GPU count.
    `baseline` may name several precisions in order of preference ("tf32", "fp32"): each model is
    compared with the first of them it ran in, and each gain names the one it was taken against."""
    preferred = [baseline] if isinstance(baseline, str) else list(baseline)
    by_key: dict[tuple, list[ThroughputGroup]] = {}
    for g in groups:  # a step replayed from a CUDA graph is held to the graphed baseline (tf32+graph)
        by_key.setdefault((g.workload, g.model, g.accelerator, g.world_size, g.unit, _graphed(g.precision)),
                          []).append(g)
    out = []
    for (workload, model, accel, world, _, graphed), members in sorted(by_key.items(), key=lambda kv: str(kv[0])):
        chosen = next((p + graphed for p in preferred if any(g.precision == p + graphed for g in members)), None)
        if chosen is None:
            continue
        bases = [g for g in members if g.precision == chosen]
        for g in sorted(members, key=lambda g: (g.precision, str(g.global_batch_size))):
            if g.precision == chosen:
                continue
            same_batch = [b for b in bases if b.global_batch_size == g.global_batch_size]
            base = same_batch[0] if same_batch else (bases[0] if len(bases) == 1 else None)
            if base is not None:
                out.append(PrecisionGain(workload, accel, world, g.precision, chosen, _ratio(g.median, base.median),
                                         model))
    return out


def _graphed(precision: str) -> str:
    """"+graph" for a run with cuda_graph=true (harness.run.precision.precision_name), else ""."""
    return "+graph" if precision.endswith("+graph") else ""


def _fmt(x: Optional[float]) -> str:
    return "n/a" if x is None else (f"{x:,.0f}" if x >= 100 else f"{x:.4g}")


def table_rows(groups: Sequence[ThroughputGroup]) -> tuple[list[str], list[list[str]]]:
    header = ["workload", "model", "accelerator", "precision", "GPUs", "global batch", "runs", "median",
              "unit", "spread of runs (min-max, std)", "windows (min-max)"]
    rows = []
    for g in groups:
        spread = "n/a" if g.median is None or g.min is None or g.max is None else \
            f"{_fmt(g.min)}-{_fmt(g.max)} ({(g.max - g.min) / g.median:.1%}), std {_fmt(g.std)}"
        runs = f"{g.runs}" + (f" ({g.failed} failed)" if g.failed else "")
        rows.append([g.workload, g.model, g.accelerator, g.precision, str(g.world_size),
                     "n/a" if g.global_batch_size is None else str(g.global_batch_size), runs, _fmt(g.median), g.unit,
                     spread, "n/a" if g.windows_min is None else f"{_fmt(g.windows_min)}-{_fmt(g.windows_max)}"])
    return header, rows


def label(workload: str, model: str = "") -> str:
    """'bert_large squad384' where one workload label belongs to several models, else the workload."""
    return workload if model in ("", workload) else f"{model} {workload}"


def scaling_rows(scalings: Sequence[Scaling]) -> tuple[list[str], list[list[str]]]:
    header = ["workload", "accelerator", "precision", "GPUs", "speedup", "efficiency"]
    return header, [[label(s.workload, s.model), s.accelerator, s.precision, f"{s.world} vs {s.base_world}",
                     "n/a" if s.speedup is None else f"{s.speedup:.2f}x",
                     "n/a" if s.efficiency is None else f"{s.efficiency:.0%}"] for s in scalings]


def gain_rows(gains: Sequence[PrecisionGain]) -> tuple[list[str], list[list[str]]]:
    header = ["workload", "accelerator", "GPUs", "precision", "vs", "throughput ratio"]
    return header, [[label(p.workload, p.model), p.accelerator, str(p.world_size), p.precision, p.baseline,
                     "n/a" if p.ratio is None else f"{p.ratio:.2f}x"] for p in gains]


def failures(runs: Sequence[ThroughputRun]) -> list[str]:
    from harness.results.render import rel

    return [f"{rel(r.path)}: {r.workload} {r.precision} {r.world_size} GPU(s) failed: {r.reason or 'no reason given'}"
            for r in runs if r.status != "success"]


def main(argv: list[str]) -> int:
    from harness.results.render import text_table

    runs = read_runs(argv)
    g = groups(runs)
    for header, rows in (table_rows(g), scaling_rows(scaling(g)), gain_rows(precision_gains(g))):
        if rows:
            print(text_table(header, rows) + "\n")
    for line in failures(runs):
        print(line)
    return 1 if failures(runs) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
