"""Report time to train, epochs to converge, throughput and MLPerf scores over run directories.

    python -m harness.report outputs/                       every run under outputs/
    python -m harness.report RESULTS/nvidia_dgx1/gnmt       official result_*.txt files
    python -m harness.report outputs/ --json report.json --csv runs.csv   (- for stdout)

Reads every mlperf.log and result_*.txt under the given paths; it needs nothing else from a run,
so logs from other harnesses and official submissions report the same way. A file that cannot be
read, or a run with a problem, is named on stderr with the reason and the exit status is 1; the
other runs are still reported. The JSON schema is in docs/report.md.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterable, Optional

from harness.results.parse import LogError, RunSummary, parse_file
from harness.results.score import Score, olympic_score

SCHEMA = "harness.report/1"
LOG_NAMES = ("mlperf.log",)
LOG_GLOBS = ("result_*.txt",)


def find_logs(paths: Iterable[str]) -> tuple[list[Path], list[tuple[str, str]]]:
    found: list[Path] = []
    missing: list[tuple[str, str]] = []
    for name in paths:
        p = Path(name)
        if p.is_file():
            found.append(p)
        elif p.is_dir():
            hits = [q for n in LOG_NAMES for q in p.rglob(n)] + [q for g in LOG_GLOBS for q in p.rglob(g)]
            if not hits:
                missing.append((name, "no mlperf.log or result_*.txt under this folder"))
            found.extend(hits)
        else:
            missing.append((name, "no such file or folder"))
    return sorted(set(found)), missing


def group_key(run: RunSummary) -> tuple[str, str]:
    return (run.benchmark or "?", run.platform or "?")


def build(paths: list[str]) -> dict[str, Any]:
    files, errors = find_logs(paths)
    runs: list[RunSummary] = []
    for f in files:
        try:
            runs.append(parse_file(f))
        except LogError as err:
            errors.append((str(f), str(err)))
    groups: dict[tuple[str, str], list[RunSummary]] = {}
    for run in runs:
        groups.setdefault(group_key(run), []).append(run)
    scores = [(key, olympic_score(key[0], members)) for key, members in sorted(groups.items())]
    return {"runs": runs, "scores": scores, "errors": errors}


def _fmt(value: Optional[float], spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def _rel(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return path


def render_text(report: dict[str, Any]) -> str:
    runs: list[RunSummary] = report["runs"]
    out = []
    run_rows = [
        [
            r.benchmark or "?",
            r.status + ("" if r.scorable else "*"),
            _fmt(r.time_to_train_s, ".1f"),
            _fmt(r.time_to_train_min, ".4f"),
            _fmt(r.epochs_to_converge, "g"),
            _fmt(r.throughput, ",.0f"),
            "n/a" if r.seed is None else str(r.seed),
            "n/a" if r.world_size is None else str(r.world_size),
            _rel(r.path),
        ]
        for r in sorted(runs, key=lambda r: (group_key(r), r.path))
    ]
    out.append(_table(
        ["benchmark", "status", "ttt_s", "ttt_min", "epochs", "throughput/s", "seed", "world", "log"], run_rows))
    if any(not r.scorable for r in runs):
        out.append("* has a problem (listed on stderr): not scorable as it stands")
    score_rows = []
    for (bench, platform), s in report["scores"]:
        count = f"{s.runs}/{s.required}" if s.required else f"{s.runs}/?"
        ok = "yes" if s.count_ok else ("no" if s.required else "n/a")
        score_rows.append([bench, platform, str(s.runs), str(s.converged), _fmt(s.minutes, ".4f"),
                           f"{count} {ok}", s.note])
    out.append("")
    out.append(_table(["benchmark", "platform", "runs", "converged", "score_min", "runs/required",
                       "note"], score_rows))
    return "\n".join(out)


def to_json(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "runs": [r.to_dict() for r in report["runs"]],
        "groups": [
            {"benchmark": k[0], "platform": k[1], **asdict(s), "count_ok": s.count_ok}
            for k, s in report["scores"]
        ],
        "errors": [{"path": p, "message": m} for p, m in report["errors"]],
    }


CSV_FIELDS = ["path", "benchmark", "platform", "status", "scorable", "time_to_train_s", "time_to_train_min",
              "epochs_to_converge", "throughput", "seed", "world_size", "precision", "global_batch_size",
              "init_time_s", "problems"]


def to_csv(report: dict[str, Any]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore")
    writer.writeheader()
    for r in report["runs"]:
        row = r.to_dict()
        row["problems"] = "; ".join(r.problems)
        writer.writerow(row)
    return buf.getvalue()


def _emit(text: str, dest: str) -> None:
    if dest == "-":
        sys.stdout.write(text)
    else:
        Path(dest).write_text(text)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.report", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="run directories, sweep directories, or log files")
    parser.add_argument("--json", metavar="FILE", help="write the report as JSON (- for stdout)")
    parser.add_argument("--csv", metavar="FILE", help="write one CSV row per run (- for stdout)")
    args = parser.parse_args(argv)

    report = build(args.paths)
    for path, message in report["errors"]:
        print(f"{_rel(path)}: {message}", file=sys.stderr)
    for run in report["runs"]:
        for problem in run.problems:
            print(f"{_rel(run.path)}: {problem}", file=sys.stderr)
    if args.json:
        _emit(json.dumps(to_json(report), indent=2) + "\n", args.json)
    if args.csv:
        _emit(to_csv(report), args.csv)
    if "-" not in (args.json, args.csv):
        print(render_text(report))
    bad = report["errors"] or any(not r.scorable for r in report["runs"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
