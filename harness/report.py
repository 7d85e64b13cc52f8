"""Report time to train, epochs to converge, throughput, MLPerf scores, spreads and speedups.

    python -m harness.report outputs/                           every run under outputs/
    python -m harness.report RESULTS/nvidia_dgx1                official result_*.txt files
    python -m harness.report outputs/sweeps/X --md report.md --csv runs.csv --json report.json --plots plots/
    python -m harness.report outputs/ --baseline-world 1 --baseline-precision fp32

Reads every mlperf.log and result_*.txt under the paths (and the result.json of harness runs that
failed before their log began); it needs nothing else, so official submissions report like the
harness's own runs. Runs are grouped by (benchmark, platform, world size, precision, global batch).
A file that cannot be read, or a run with a problem, is named on stderr and the exit status is 1;
the other runs are still reported. docs/report.md has the definitions and the JSON schema.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

from harness.results import render
from harness.results.compare import PrecisionRatio, Speedup, precision_ratios, world_speedups
from harness.results.parse import LogError, RunSummary, from_result_json, parse_file
from harness.results.score import Score, olympic_score
from harness.results.stats import GroupKey, GroupStats, group_key, group_stats

SCHEMA = "harness.report/2"
LOG_NAMES = ("mlperf.log",)
LOG_GLOBS = ("result_*.txt",)
PARALLEL_FROM = 64  # files; below this, a worker pool costs more than it saves


def find_logs(paths: Iterable[str]) -> tuple[list[Path], list[Path], list[tuple[str, str]]]:
    """(MLPerf logs, result.json files of runs that have no log, (path, problem) for bad paths)."""
    logs: set[Path] = set()
    orphans: set[Path] = set()
    missing: list[tuple[str, str]] = []
    for name in paths:
        p = Path(name)
        if p.is_file():
            (orphans if p.name == "result.json" else logs).add(p)
        elif p.is_dir():
            hits = {q for n in LOG_NAMES for q in p.rglob(n)} | {q for g in LOG_GLOBS for q in p.rglob(g)}
            results = {q for q in p.rglob("result.json") if not (q.parent / "mlperf.log").exists()}
            if not hits and not results:
                missing.append((name, "no mlperf.log or result_*.txt under this folder"))
            logs |= hits
            orphans |= results
        else:
            missing.append((name, "no such file or folder"))
    return sorted(logs), sorted(orphans), missing


@dataclass
class Report:
    runs: list[RunSummary]
    groups: dict[GroupKey, list[RunSummary]]
    stats: list[GroupStats]
    scores: dict[GroupKey, Score]
    speedups: list[Speedup]
    precisions: list[PrecisionRatio]
    errors: list[tuple[str, str]] = field(default_factory=list)


def _parse(path: Path) -> tuple[Optional[RunSummary], Optional[str]]:
    try:
        return parse_file(path), None
    except LogError as err:
        return None, str(err)


def build(paths: list[str], baseline_world: Optional[int] = None, baseline_precision: str = "fp32",
          jobs: Optional[int] = None) -> Report:
    logs, orphans, errors = find_logs(paths)
    if len(logs) >= PARALLEL_FROM and (jobs is None or jobs > 1):
        with ProcessPoolExecutor(max_workers=jobs) as pool:  # parsing is CPU-bound: one process per core
            parsed = list(pool.map(_parse, logs, chunksize=16))
    else:
        parsed = [_parse(p) for p in logs]
    runs = []
    for path, (run, err) in zip(logs, parsed):
        if run is None:
            errors.append((str(path), err))
        else:
            runs.append(run)
    for path in orphans:
        run = from_result_json(path)
        if run is not None:
            runs.append(run)
    groups: dict[GroupKey, list[RunSummary]] = {}
    for run in runs:
        groups.setdefault(group_key(run), []).append(run)
    keys = sorted(groups, key=str)
    stats = [group_stats(k, groups[k]) for k in keys]
    scores = {k: olympic_score(k[0], groups[k]) for k in keys}
    minutes = {k: s.minutes for k, s in scores.items()}
    return Report(
        runs=sorted(runs, key=lambda r: (str(group_key(r)), r.path)), groups=groups, stats=stats, scores=scores,
        speedups=world_speedups(stats, minutes, baseline_world),
        precisions=precision_ratios(stats, minutes, baseline_precision), errors=errors,
    )


def render_text(report: Report, markdown: bool = False) -> str:
    table = render.markdown_table if markdown else render.text_table
    head = (lambda t: f"## {t}\n") if markdown else (lambda t: f"{t}\n{'=' * len(t)}")
    out = [head("Runs"), table(*render.run_rows(report.runs))]
    if any(not r.scorable for r in report.runs):
        out.append("\n* has a problem (listed on stderr): not scorable as it stands")
    out += ["", head("Groups: (benchmark, platform, world size, precision, global batch)"),
            table(*render.group_rows(report.stats, report.scores)), ""]
    out += [("- " if markdown else "  ") + n for n in render.score_notes(report.stats, report.scores)]
    if report.speedups:
        out += ["", head("Speedup over the smallest world size (time to train = throughput x epochs x rest)"),
                table(*render.speedup_rows(report.speedups)), ""]
        out += [("- " if markdown else "  ") + n for n in render.speedup_notes(report.speedups)]
    if report.precisions:
        out += ["", head("Precision against fp32"), table(*render.precision_rows(report.precisions))]
    return "\n".join(out) + "\n"


def to_json(report: Report) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "runs": [r.to_dict() for r in report.runs],
        "groups": [
            {"benchmark": g.key[0], "platform": g.key[1], "world_size": g.key[2], "precision": g.key[3],
             "global_batch_size": g.key[4], "score": {**asdict(report.scores[g.key]),
                                                     "count_ok": report.scores[g.key].count_ok},
             **{k: v for k, v in asdict(g).items() if k != "key"}}
            for g in report.stats
        ],
        "speedups": [{**asdict(s), "gpu_ratio": s.gpu_ratio} for s in report.speedups],
        "precision_ratios": [asdict(p) for p in report.precisions],
        "errors": [{"path": p, "message": m} for p, m in report.errors],
    }


CSV_FIELDS = ["path", "benchmark", "platform", "status", "scorable", "time_to_train_s", "time_to_train_min",
              "epochs_to_converge", "throughput", "seed", "world_size", "precision", "global_batch_size",
              "init_time_s", "accelerator", "energy_j", "power_w", "problems"]


def to_csv(report: Report) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore")
    writer.writeheader()
    for r in report.runs:
        row = r.to_dict()
        row["problems"] = "; ".join(r.problems)
        writer.writerow(row)
    return buf.getvalue()


def write_outputs(report: Report, *, md: Optional[str] = None, json_out: Optional[str] = None,
                  csv_out: Optional[str] = None, plots: Optional[str] = None) -> list[str]:
    """Write the asked-for files ('-' is stdout); returns what was written."""
    written = []
    for dest, text in ((md, lambda: render_text(report, markdown=True)),
                       (json_out, lambda: json.dumps(to_json(report), indent=2) + "\n"),
                       (csv_out, lambda: to_csv(report))):
        if dest == "-":
            sys.stdout.write(text())
        elif dest:
            Path(dest).parent.mkdir(parents=True, exist_ok=True)
            Path(dest).write_text(text())
            written.append(dest)
    if plots:
        from harness.check import quality_target
        from harness.results.plots import plot_all

        written += [str(p) for p in plot_all(report.groups, report.speedups, Path(plots), quality_target)]
    return written


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.report", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="run directories, sweep directories, or log files")
    parser.add_argument("--md", metavar="FILE", help="write the report as Markdown (- for stdout)")
    parser.add_argument("--json", metavar="FILE", help="write the report as JSON (- for stdout)")
    parser.add_argument("--csv", metavar="FILE", help="write one CSV row per run (- for stdout)")
    parser.add_argument("--plots", metavar="DIR", help="write the PNG plots into DIR")
    parser.add_argument("--baseline-world", type=int, help="world size the speedups are against (default: smallest)")
    parser.add_argument("--baseline-precision", default="fp32", help="precision the others are compared with")
    parser.add_argument("--jobs", type=int, help="processes that parse logs (default: one per core)")
    args = parser.parse_args(argv)

    report = build(args.paths, args.baseline_world, args.baseline_precision, args.jobs)
    for path, message in report.errors:
        print(f"{render.rel(path)}: {message}", file=sys.stderr)
    for run in report.runs:
        for problem in run.problems:
            print(f"{render.rel(run.path)}: {problem}", file=sys.stderr)
    written = write_outputs(report, md=args.md, json_out=args.json, csv_out=args.csv, plots=args.plots)
    if "-" not in (args.md, args.json, args.csv):
        print(render_text(report), end="")
        for path in written:
            print(f"wrote {path}")
    bad = report.errors or any(not r.scorable for r in report.runs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
