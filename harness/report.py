"""Report time to train, epochs to converge, throughput, MLPerf scores, spreads and speedups.

    python -m harness.report outputs/                           every run under outputs/
    python -m harness.report RESULTS/NVIDIA                     an official submission tree, any round from v0.5
    python -m harness.report outputs/sweeps/X --md report.md --csv runs.csv --json report.json --plots plots/
    python -m harness.report outputs/ --baseline-world 1 --baseline-precision fp32
    python -m harness.report A B --compare --md compare.md --plots plots/    platform A against platform B
    python -m harness.report A B --compare --price "1xNVIDIA H200=3.5" --price T4=0.35 --rank cost
    python -m harness.report outputs/sweeps/X --html report.html              one self-contained page

Reads every mlperf.log and result_*.txt under the paths (v0.5's :::MLPv0.5.0, v0.6's :::MLL and
:::MLLOG logs; a submission tree's system descriptions give world size, accelerator and framework),
the result.json of harness runs that failed before their log began, and mode=throughput results.
It needs nothing else, so official submissions report like the harness's own runs. Runs are grouped
by (benchmark, platform, world size, precision, global batch, accelerator, framework).
--json, --csv and --md take a file name, or - for stdout (then the text table is not printed); --html
writes one self-contained page (tables, verdicts, notes and the plots inlined). Every group score and
every comparison carries a 95% interval, a verdict in words and the runs that would resolve it; every
speedup, the chances its epoch spreads give it; --price adds cost per run beside the energy per run.
A file that cannot be read, a badly typed result.json, or a run with a problem, is named on stderr and
the exit status is 1; the other runs are still reported. docs/report.md has the definitions and the
JSON schema.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable, Optional

from harness.interface.option_help import module_doc
from harness import registry
from harness.results.analysis import cost
from harness.results.report import export, render, sections
from harness.results.analysis.collect import Report, build, label_for, target_for
from harness.results.read.parse import MAX_LOG_BYTES
from harness.results.report.decision import render_decision
from harness.results.report.sections import notes
from harness.files import not_a_file, write_atomic
from harness.results.read.find import files_read
from harness.results.report.plots import WRITE_HINT
from harness.rounds import view as round_view
from harness.rounds.export import round_json
from harness.rounds.text import render_round, short_text
from harness.signals import ended_by, stop_on_sigterm

SCHEMA = export.SCHEMA
to_csv = export.to_csv
__all__ = ["Report", "build", "render_text", "write_outputs", "to_json", "to_csv", "main"]


def render_text(report: Report, markdown: bool = False) -> str:
    """The whole report as text or Markdown: a submission tree's round, ranked (harness.rounds.text), its
    tables (harness.results.report.sections), then the scores' intervals, the comparisons' verdicts and
    chances, and cost and energy (harness.results.report.decision)."""
    view = round_view.of(report)
    first = [render_round(view, markdown)] if view is not None else []
    return sections.render_text(report, markdown, first) + render_decision(report, markdown)


def to_json(report: Report) -> dict:
    """The report as JSON (docs/report.md): harness.results.report.export's, and a submission tree's
    systems ranked, families and chips under `round` (null elsewhere)."""
    return export.to_json(report) | {"round": round_json(round_view.of(report))}


def _write(dest: Optional[str], text: Callable[[], str], written: list[str]) -> None:
    """The text to stdout ('-') or replacing the file in one step: a full disk or a folder that cannot
    be written raises an OSError whose message names the file (harness.files.write_atomic)."""
    if dest == "-":
        sys.stdout.write(text())
    elif dest:
        write_atomic(dest, text(), hint=WRITE_HINT)
        written.append(dest)


def write_outputs(report: Report, *, md: Optional[str] = None, json_out: Optional[str] = None,
                  csv_out: Optional[str] = None, plots: Optional[str] = None, html: Optional[str] = None,
                  paths: Optional[list[str]] = None) -> list[str]:
    """Write the asked-for files ('-' is stdout); returns what was written."""
    written: list[str] = []
    _write(md, lambda: render_text(report, markdown=True), written)
    _write(json_out, lambda: export.dumps(to_json(report)), written)
    _write(csv_out, lambda: to_csv(report), written)
    pngs: list[Path] = []
    if plots and report.groups:
        pngs = _plots(report, Path(plots))
        written += [str(p) for p in pngs]
    if html:
        def text() -> str:
            from harness.results.report.decision import report_page
            from harness.rounds.page import round_page

            view, markdown = round_view.of(report), render_text(report, markdown=True)
            if view is not None:  # a submission tree: the round's page, tables first, a few light charts
                return round_page(report, view, markdown, paths or [])
            return report_page(report, markdown, pngs or (lambda d: _plots(report, d)), paths or [])

        _write(html, text, written)
    return written


OUTPUTS = ("md", "json", "csv", "html")


def refused_output(args: argparse.Namespace) -> Optional[str]:
    """Why an output file named on the command line cannot be written, checked before anything is read:
    a path that is there but is not a regular file (/dev/null, a pipe, a folder: the write would replace
    the node), one of the files the report reads (a run's mlperf.log or result.json: the next report
    would lack the run), or a file two options name, standard output (`-`) too: Markdown then JSON in one
    stream is neither. A link is written through to its file."""
    plots = getattr(args, "plots", None)
    if plots and os.path.lexists(plots) and not os.path.isdir(plots):
        return f"--plots {plots}: it is there and is not a folder; name a folder for the PNG plots"
    to_stdout = [f"--{flag}" for flag in OUTPUTS if getattr(args, flag) == "-"]
    if len(to_stdout) > 1:
        return f"{to_stdout[1]} -: {to_stdout[0]} writes to standard output already; give the other a file"
    named = [(f"--{flag}", getattr(args, flag)) for flag in OUTPUTS if getattr(args, flag) not in (None, "-")]
    if not named:
        return None
    read = files_read(args.paths)
    seen: dict[Path, str] = {}
    for flag, dest in named:
        why = not_a_file(dest)  # a link that loops is named here, before it is followed
        where = Path(dest).resolve() if why is None else Path(dest)
        if why is None and where in read:
            why = "it is one of the files this report reads; write the report elsewhere"
        if why is None and where in seen:
            why = f"{seen[where]} names the same file; give each output its own file"
        if why is not None:
            return f"{flag} {dest}: {why}"
        seen[where] = flag
    return None


def _plots(report: Report, out_dir: Path) -> list[Path]:
    from harness.results.report.plots import plot_all

    if not report.groups:
        return []
    return plot_all(report.groups, report.speedups, out_dir, target_for, label_for(report))


def _compare(args: argparse.Namespace) -> int:
    from harness.results.analysis import comparison
    from harness.results.report import comparison_render as shown

    c = comparison.compare([args.paths[0]], [args.paths[1]], args.jobs, prices=args.prices, rank_by=args.rank,
                           max_log_bytes=args.max_log_bytes)
    for side, rep in (("A", c.a), ("B", c.b)):
        for path, message in rep.errors:
            print(f"{side}: {render.rel(path)}: {message}", file=sys.stderr)
    written: list[str] = []
    try:
        _write(args.md, lambda: shown.render_compare(c, markdown=True), written)
        _write(args.json, lambda: export.dumps(export.compare_json(c)), written)
        _write(args.csv, lambda: export.compare_csv(c), written)
        pngs: list[Path] = []
        if args.plots:
            pngs = shown.plot(c, Path(args.plots))
            written += [str(p) for p in pngs]
        if args.html:
            def text() -> str:
                return shown.compare_page(c, shown.render_compare(c, markdown=True),
                                          pngs or (lambda d: shown.plot(c, d)))

            _write(args.html, text, written)
    except OSError as err:
        return _cannot_write(err, written)
    if "-" not in (args.md, args.json, args.csv, args.html):
        print(shown.render_compare(c), end="")
        for path in written:
            print(f"wrote {path}")
    return 1 if c.empty or c.a.errors or c.b.errors else 0


def _cannot_write(err: OSError, written: list[str]) -> int:
    """One line for a file the report could not write (each file it did write is whole)."""
    done = f" (written before it: {', '.join(written)})" if written else ""
    # the plots' folder is made by mkdir, whose error reads "[Errno 30] Read-only file system: 'plots'"
    what = f"cannot write {err.filename}: {err.strerror}" if err.filename and err.strerror else str(err)
    print(f"harness.report: error: {what}{done}", file=sys.stderr)
    return 1


def main(argv: Optional[list[str]] = None) -> int:
    stop_on_sigterm()  # `timeout` and `docker stop` end a report as Ctrl-C does
    try:
        return _main(argv)
    except KeyboardInterrupt as err:
        return ended_by("harness.report", err, "each file it writes is whole or not there")


def _main(argv: Optional[list[str]]) -> int:
    registry.publish()  # results/ reads the harness's own models' rules and categories through it
    parser = argparse.ArgumentParser(prog="python -m harness.report", description=module_doc(__name__).splitlines()[0])
    parser.add_argument("paths", nargs="+", help="run directories, sweep directories, submission trees, or log files")
    parser.add_argument("--md", metavar="FILE", help="write the report as Markdown to FILE (- for stdout)")
    parser.add_argument("--json", metavar="FILE", help="write the report as JSON to FILE (- for stdout)")
    parser.add_argument("--csv", metavar="FILE", help="write one CSV row per run to FILE (- for stdout)")
    parser.add_argument("--plots", metavar="DIR", help="write the PNG plots into DIR")
    parser.add_argument("--html", metavar="FILE", help="write one self-contained HTML page: tables, verdicts, notes "
                        "and plots (- for stdout)")
    parser.add_argument("--price", action="append", default=[], metavar="NAME=USD_PER_HOUR",
                        help="price per hour of a platform or system (or per accelerator-hour of an accelerator "
                        "such as H200), repeatable; or a YAML file of name: price lines")
    parser.add_argument("--rank", choices=cost.RANKS, default="time",
                        help="order of the cost and energy table within each benchmark (default: time)")
    parser.add_argument("--baseline-world", type=int, help="world size the speedups are against (default: smallest)")
    parser.add_argument("--baseline-precision", default="fp32", help="precision the others are compared with")
    parser.add_argument("--compare", action="store_true",
                        help="compare two platforms: the first path is A, the second B (A's speedup over B)")
    parser.add_argument("--jobs", type=int, help="processes that parse logs (default: one per core)")
    parser.add_argument("--max-log-mb", type=float, default=MAX_LOG_BYTES / 2**20,
                        help="a log larger than this is named and not read: one read and checked takes about 12 "
                        f"times its size in memory (default {MAX_LOG_BYTES >> 20})")
    args = parser.parse_args(argv)
    if not args.max_log_mb > 0:
        parser.error(f"--max-log-mb {args.max_log_mb:g} must be a positive number of MiB")
    args.max_log_bytes = int(min(args.max_log_mb, 2.0**40) * 2**20)
    try:
        args.prices = cost.parse_prices(args.price)
    except cost.PriceError as err:
        parser.error(str(err))
    refused = refused_output(args)
    if refused is not None:
        print(f"harness.report: error: {refused}", file=sys.stderr)
        return 2
    if args.compare:
        if len(args.paths) != 2:
            parser.error(f"--compare takes two paths, platform A and platform B; got {len(args.paths)}")
        if os.path.realpath(args.paths[0]) == os.path.realpath(args.paths[1]):
            parser.error(f"--compare: {args.paths[0]} and {args.paths[1]} are the same folder: give the runs of "
                         "platform A and those of platform B")
        return _compare(args)

    report = build(args.paths, args.baseline_world, args.baseline_precision, args.jobs, args.max_log_bytes)
    report.prices, report.rank_by = args.prices, args.rank
    for path, message in report.errors:
        print(f"{render.rel(path)}: {message}", file=sys.stderr)
    for run in report.runs:
        for problem in run.problems:
            print(f"{render.rel(run.path)}: {problem}", file=sys.stderr)
        if run.busy:
            print(f"{render.rel(run.path)}: warning: busy machine: {run.host_note or 'host_load.busy is true'}",
                  file=sys.stderr)
    for warning in notes(report):
        print(f"warning: {warning}", file=sys.stderr)
    if report.errors and not report.runs and not report.tput_runs:
        return 1  # nothing was read: the lines above say why; no empty tables, no files
    try:
        written = write_outputs(report, md=args.md, json_out=args.json, csv_out=args.csv, plots=args.plots,
                                html=args.html, paths=args.paths)
    except OSError as err:
        return _cannot_write(err, [])
    if "-" not in (args.md, args.json, args.csv, args.html):
        print(_terminal_text(report, bool(args.html)), end="")
        for path in written:
            print(f"wrote {path}")
    return 1 if report.failed else 0


def _terminal_text(report: Report, paged: bool) -> str:
    """The full tables, or, where a round's tables went to a page, its summary (a round's tables run to a
    megabyte, which no terminal is read for)."""
    short = short_text(round_view.of(report)) if paged else None
    return short if short is not None else render_text(report)


if __name__ == "__main__":
    sys.exit(main())
