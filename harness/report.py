"""Report time to train, epochs to converge, throughput, MLPerf scores, spreads and speedups.

    python -m harness.report outputs/                           every run under outputs/
    python -m harness.report RESULTS/NVIDIA                     an official submission tree, any round from v0.5
    python -m harness.report outputs/sweeps/X --md report.md --csv runs.csv --json report.json --plots plots/
    python -m harness.report outputs/ --baseline-world 1 --baseline-precision fp32
    python -m harness.report A B --compare --md compare.md --plots plots/    platform A against platform B

Reads every mlperf.log and result_*.txt under the paths (v0.5's :::MLPv0.5.0, v0.6's :::MLL and
:::MLLOG logs; a submission tree's system descriptions give world size, accelerator and framework),
the result.json of harness runs that failed before their log began, and mode=throughput results.
It needs nothing else, so official submissions report like the harness's own runs. Runs are grouped
by (benchmark, platform, world size, precision, global batch, accelerator, framework).
--json, --csv and --md take a file name, or - for stdout (then the text table is not printed).
A file that cannot be read, or a run with a problem, is named on stderr and the exit status is 1;
the other runs are still reported. docs/report.md has the definitions and the JSON schema.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable, Optional

from harness.results import export, render
from harness.results.collect import Report, build, label_for, target_for
from harness.results.sections import render_text

SCHEMA = export.SCHEMA
to_json, to_csv = export.to_json, export.to_csv
__all__ = ["Report", "build", "render_text", "write_outputs", "to_json", "to_csv", "main"]


def _write(dest: Optional[str], text: Callable[[], str], written: list[str]) -> None:
    if dest == "-":
        sys.stdout.write(text())
    elif dest:
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        Path(dest).write_text(text())
        written.append(dest)


def write_outputs(report: Report, *, md: Optional[str] = None, json_out: Optional[str] = None,
                  csv_out: Optional[str] = None, plots: Optional[str] = None) -> list[str]:
    """Write the asked-for files ('-' is stdout); returns what was written."""
    written: list[str] = []
    _write(md, lambda: render_text(report, markdown=True), written)
    _write(json_out, lambda: json.dumps(to_json(report), indent=2, default=str) + "\n", written)
    _write(csv_out, lambda: to_csv(report), written)
    if plots and report.groups:
        from harness.results.plots import plot_all

        written += [str(p) for p in plot_all(report.groups, report.speedups, Path(plots), target_for,
                                             label_for(report))]
    return written


def _compare(args: argparse.Namespace) -> int:
    from harness.results import comparison

    c = comparison.compare([args.paths[0]], [args.paths[1]], args.jobs)
    for side, rep in (("A", c.a), ("B", c.b)):
        for path, message in rep.errors:
            print(f"{side}: {render.rel(path)}: {message}", file=sys.stderr)
    written: list[str] = []
    _write(args.md, lambda: comparison.render_compare(c, markdown=True), written)
    _write(args.json, lambda: json.dumps(export.compare_json(c), indent=2, default=str) + "\n", written)
    _write(args.csv, lambda: export.compare_csv(c), written)
    if args.plots:
        written += [str(p) for p in comparison.plot(c, Path(args.plots))]
    if "-" not in (args.md, args.json, args.csv):
        print(comparison.render_compare(c), end="")
        for path in written:
            print(f"wrote {path}")
    return 1 if c.empty or c.a.errors or c.b.errors else 0


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.report", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="run directories, sweep directories, submission trees, or log files")
    parser.add_argument("--md", metavar="FILE", help="write the report as Markdown to FILE (- for stdout)")
    parser.add_argument("--json", metavar="FILE", help="write the report as JSON to FILE (- for stdout)")
    parser.add_argument("--csv", metavar="FILE", help="write one CSV row per run to FILE (- for stdout)")
    parser.add_argument("--plots", metavar="DIR", help="write the PNG plots into DIR")
    parser.add_argument("--baseline-world", type=int, help="world size the speedups are against (default: smallest)")
    parser.add_argument("--baseline-precision", default="fp32", help="precision the others are compared with")
    parser.add_argument("--compare", action="store_true",
                        help="compare two platforms: the first path is A, the second B (A's speedup over B)")
    parser.add_argument("--jobs", type=int, help="processes that parse logs (default: one per core)")
    args = parser.parse_args(argv)
    if args.compare:
        if len(args.paths) != 2:
            parser.error(f"--compare takes two paths, platform A and platform B; got {len(args.paths)}")
        return _compare(args)

    report = build(args.paths, args.baseline_world, args.baseline_precision, args.jobs)
    for path, message in report.errors:
        print(f"{render.rel(path)}: {message}", file=sys.stderr)
    for run in report.runs:
        for problem in run.problems:
            print(f"{render.rel(run.path)}: {problem}", file=sys.stderr)
        if run.busy:
            print(f"{render.rel(run.path)}: warning: busy machine: {run.host_note or 'host_load.busy is true'}",
                  file=sys.stderr)
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    written = write_outputs(report, md=args.md, json_out=args.json, csv_out=args.csv, plots=args.plots)
    if "-" not in (args.md, args.json, args.csv):
        print(render_text(report), end="")
        for path in written:
            print(f"wrote {path}")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
