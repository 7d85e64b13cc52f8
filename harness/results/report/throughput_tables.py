"""mode=throughput results as tables (harness.results.analysis.throughput computes them): per workload,
scaling across GPU counts, precision against the baseline, fast path against the eager step, and the
cells that failed. `python -m harness.report` prints them when such runs are present; harness.bench's
tables (bench_tables) build on them.

    python -m harness.results.report.throughput_tables outputs/benchmark      # the four tables, as text
"""
from __future__ import annotations

import sys
from typing import Optional, Sequence

from harness.results.analysis import throughput as tp
from harness.results.analysis.throughput import FastGain, PrecisionGain, Scaling, ThroughputGroup, ThroughputRun
from harness.results.report.render import rel, text_table


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


def fast_rows(gains: Sequence[FastGain]) -> tuple[list[str], list[list[str]]]:
    header = ["workload", "accelerator", "GPUs", "precision", "path", "fast", "eager", "unit", "fast / eager"]
    return header, [[label(f.workload, f.model), f.accelerator, str(f.world_size), f.base, f.path, _fmt(f.fast),
                     _fmt(f.eager), f.unit, "n/a" if f.ratio is None else f"{f.ratio:.2f}x"] for f in gains]


def failures(runs: Sequence[ThroughputRun]) -> list[str]:
    return [f"{rel(r.path)}: {r.workload} {r.precision} {r.world_size} GPU(s) failed: {r.reason or 'no reason given'}"
            for r in runs if r.status != "success"]


def main(argv: list[str]) -> int:
    runs = tp.read_runs(argv)
    g = tp.groups(runs)
    for header, rows in (table_rows(g), scaling_rows(tp.scaling(g)), gain_rows(tp.precision_gains(g)),
                         fast_rows(tp.fast_vs_eager(g))):
        if rows:
            print(text_table(header, rows) + "\n")
    for line in failures(runs):
        print(line)
    return 1 if failures(runs) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
