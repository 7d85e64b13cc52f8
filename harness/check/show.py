"""What the harness reads and decides, one piece at a time: the pieces harness.report, harness.check and
harness.train build on, each printed alone, so that a surprising figure can be traced to the line it came from.

    python -m harness.check.show log FILE...              # what each log says, one JSON object per file
    python -m harness.check.show checked FILE...          # and what the official checkers say of it, joined
    python -m harness.check.show format FILE...           # each log's format and round, and its first records
    python -m harness.check.show system RESULT_FILE...    # what its submission tree says about each file's system
    python -m harness.check.show submitters FOLDER...     # each benchmark folder's systems: submitter, category
    python -m harness.check.show family SYSTEM_NAME...    # the system family each name belongs to
    python -m harness.check.show throughput DIR...        # the four mode=throughput tables, as text
    python -m harness.check.show targets gnmt maskrcnn    # each benchmark's metric, rules file and target
    python -m harness.check.show rules RULES_FILE...      # the keys of rules files that choose further rules files
    python -m harness.check.show host                     # this machine's load now, and the threads a run would take
    python -m harness.check.show slurm [PARTITION]        # a SLURM partition's nodes, as the launcher sees them

Exit status 1 where a file cannot be read (named on stderr, the others still shown), 2 for a bad option,
130 on Ctrl-C (143 on SIGTERM), with one line.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Optional

from harness.interface.option_help import module_doc


def _runs(read: Callable, names: list[str]) -> int:
    """Each named log read by `read` as one JSON line; a log that cannot be read is one line on stderr."""
    from harness.results.read.parse import LogError

    code = 0
    for name in names:
        try:
            print(json.dumps(read(name).to_dict()))
        except LogError as err:
            print(f"{name}: {err}", file=sys.stderr)
            code = 1
    return code


def _there(names: list[str], kind: str = "file") -> tuple[list[str], int]:
    """The names that are a `kind` ("file" or "folder"), each other one said in a line on stderr, and the exit
    status that leaves (1 when one was not there)."""
    found = [n for n in names if (Path(n).is_file() if kind == "file" else Path(n).is_dir())]
    for name in names:
        if name not in found:
            print(f"{name}: no such {kind}", file=sys.stderr)
    return found, int(len(found) < len(names))


def log(names: list[str]) -> int:
    from harness.results.read.parse import parse_file

    return _runs(parse_file, names)


def checked(names: list[str]) -> int:
    from harness.results.read.checking import checked_file

    return _runs(checked_file, names)


def log_format(names: list[str]) -> int:
    from harness.results.read.formats import read

    code = 0
    for name in names:
        try:
            with open(name, encoding="latin-1") as f:
                got = read(f)
        except OSError as err:
            print(f"{name}: {err.strerror or err}", file=sys.stderr)
            code = 1
            continue
        print(f"{name}: {got.format or 'no MLPerf records'} ({got.round or '-'}), {len(got.records)} records")
        for r in got.records[:5]:
            print(f"  line {r.lineno}: {r.key} = {r.value!r} {r.meta or ''}")
    return code


def system(names: list[str]) -> int:
    from harness.results.read.tree import system_for

    found, code = _there(names)
    for name in found:
        print(f"{name}: {system_for(name)}")
    return code


def submitters(folders: list[str]) -> int:
    """Each benchmark folder's listing; a round, an organisation or a system folder is walked down to the
    benchmark folders it holds (results/<system>/<benchmark>)."""
    from harness.results.read.submission import listing

    found, code = _there(folders, "folder")
    for folder in found:
        here = Path(folder).resolve()
        benchmarks = [here] if any(here.glob("result_*.txt")) else sorted(
            {p.parent for p in here.rglob("result_*.txt") if p.parent.parent.parent.name == "results"})
        if not benchmarks:
            print(f"{folder}: no benchmark folder (results/<system>/<benchmark>/result_*.txt) under it", file=sys.stderr)
            code = 1
        for bench in benchmarks:
            print(f"{bench if bench != here else folder}: {listing(str(bench))}")
    return code


def family(names: list[str]) -> int:
    from harness.results.analysis.lineage import system_line

    for name in names:
        print(f"{name}: {system_line(name)}")
    return 0


def throughput(dirs: list[str]) -> int:
    from harness.results.analysis import throughput as tp
    from harness.results.report.render import text_table
    from harness.results.report.sections import failures, fast_rows, gain_rows, scaling_rows, table_rows

    found, code = _there(dirs, "folder")
    if not found:
        return code
    runs = tp.read_runs(found)
    g = tp.groups(runs)
    for header, rows in (table_rows(g), scaling_rows(tp.scaling(g)), gain_rows(tp.precision_gains(g)),
                         fast_rows(tp.fast_vs_eager(g))):
        if rows:
            print(text_table(header, rows) + "\n")
    failed = failures(runs)
    for line in failed:
        print(line)
    return 1 if failed or code else 0


def targets(benchmarks: list[str]) -> int:
    from harness.results.read.rules import metric_name, pick_rules, rules_target

    for benchmark in benchmarks:
        _, label, rules = pick_rules(benchmark)
        target = rules_target(benchmark)
        what = "no target" if target is None else f"{target.value} ({target.direction} is better) from {target.source}"
        print(f"{benchmark}: {metric_name(benchmark)}; rules {label} ({rules}); {what}")
    return 0


def rules(files: list[str]) -> int:
    from harness.results.read.screen import path_choosing_keys, rules_start

    found, code = _there([str(rules_start(name)) for name in files])
    for name in files:
        if str(rules_start(name)) not in found:
            continue
        for key, (allowed, templates) in sorted(path_choosing_keys(str(rules_start(name))).items()):
            print(f"{name} {key}: {', '.join(sorted(allowed)) if allowed else 'no value allowed'} -> "
                  f"{', '.join(templates)}")
    return code


def host(_: list[str]) -> int:
    from harness.observe.host_load import load_average, measure, summary
    from harness.run.threads import decide

    print(json.dumps({"load": summary(measure(window_s=1.0), None, load_average()), "threads": asdict(decide(1))},
                     indent=2))
    return 0


def slurm(names: list[str]) -> int:
    from harness.errors import ConfigError
    from harness.run.slurm_queue import partition

    try:
        p = partition(names[0] if names else None)
    except ConfigError as err:
        print(f"harness.check.show slurm: {err}", file=sys.stderr)
        return 1
    print(f"partition {p.name}: {len(p.nodes)} node(s), time limit {p.max_time_min or 'none'} min")
    for n in p.nodes:
        print(f"  {n.name}: {n.cpus} CPUs, {n.gpus} GPUs")
    return 0


# name -> (what it prints, what it takes, how many at least, the function)
SHOWN: dict[str, tuple[str, str, int, Callable[[list[str]], int]]] = {
    "log": ("what each log says, one JSON object per file", "FILE", 1, log),
    "checked": ("each log as the report has it: what it says and the official checkers' verdict", "FILE", 1, checked),
    "format": ("each log's format and round, and its first records", "FILE", 1, log_format),
    "system": ("what a submission tree says about each result file's system", "RESULT_FILE", 1, system),
    "submitters": ("each benchmark folder's systems: submitter, category", "FOLDER", 1, submitters),
    "family": ("the system family each system name belongs to", "SYSTEM_NAME", 1, family),
    "throughput": ("the mode=throughput tables of the runs under each folder", "DIR", 1, throughput),
    "targets": ("each benchmark's metric, rules file and quality target", "BENCHMARK", 1, targets),
    "rules": ("the keys of official rules files that choose further rules files", "RULES_FILE", 1, rules),
    "host": ("this machine's load now and the threads a run started now would take", "", 0, host),
    "slurm": ("a SLURM partition's nodes (the default partition without a name)", "PARTITION", 0, slurm),
}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.check.show", description=module_doc(__name__).split("\n\n")[0])
    pieces = parser.add_subparsers(dest="what", required=True, metavar="WHAT")
    for name, (what, takes, least, _) in SHOWN.items():
        sub = pieces.add_parser(name, help=what, description=what)
        if takes:
            sub.add_argument("args", nargs="+" if least else "?", metavar=takes)
    args = parser.parse_args(argv)
    from harness import registry
    from harness.signals import ended_by, stop_on_sigterm

    stop_on_sigterm()  # `timeout` ends it as Ctrl-C does: one line, no traceback
    given = getattr(args, "args", None)
    names = given if isinstance(given, list) else [given] if given else []
    try:
        registry.publish()  # the harness's own models as data: a log of one is read and checked by its rules
        return SHOWN[args.what][3](names)
    except KeyboardInterrupt as err:
        return ended_by("harness.check.show", err, "what it printed before is whole")
    except BrokenPipeError:  # the reader took what it wanted (`| head`): the rest goes nowhere, without a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
