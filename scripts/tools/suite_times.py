"""The CPU suite's time per test file, from the JUnit XML of a run, written where tests/conftest.py reads it to
hand the slowest files out first (two pytest workers each take whole files; a slow file handed out last leaves
the other worker idle while it runs):

    python -m pytest -q --junitxml=/tmp/suite.xml
    python scripts/tools/suite_times.py /tmp/suite.xml                 # writes tests/file_times.json
    python scripts/tools/suite_times.py /tmp/suite.xml --show 20       # prints the 20 slowest files too

Several XML files are averaged file by file (runs of one tree at different hours of a shared host).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # harness/usage.py: the usage under python -OO

from harness.usage import module_doc  # noqa: E402
TIMES = REPO / "tests" / "file_times.json"


def file_of(classname: str) -> str:
    """tests/run/test_plan.py from the JUnit classname tests.run.test_plan (or tests.run.test_plan.TestX)."""
    parts = classname.split(".")
    while parts and not parts[-1].startswith("test_"):
        parts.pop()
    return "/".join(parts) + ".py"


def times_of(xml: Path) -> dict[str, float]:
    """Seconds per test file in one run (setup, call and teardown: module fixtures count where they run)."""
    per_file: dict[str, float] = defaultdict(float)
    for case in ET.parse(xml).getroot().iter("testcase"):
        per_file[file_of(case.get("classname", ""))] += float(case.get("time") or 0.0)
    return dict(per_file)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=module_doc(__name__).split("\n\n")[0])
    parser.add_argument("xml", nargs="+", type=Path, help="pytest --junitxml files of whole-suite runs")
    parser.add_argument("--out", type=Path, default=TIMES)
    parser.add_argument("--show", type=int, default=0, help="print this many of the slowest files")
    args = parser.parse_args(argv)
    try:
        runs = [times_of(x) for x in args.xml]
    except (OSError, ET.ParseError, ValueError) as err:  # a missing file, an XML cut short, a time that is no number
        print(f"error: {err}: pass the --junitxml file of a whole pytest run", file=sys.stderr)
        return 2
    files = sorted({f for run in runs for f in run})
    mean = {f: round(statistics.fmean(run[f] for run in runs if f in run), 1) for f in files}
    ordered = dict(sorted(mean.items(), key=lambda kv: (-kv[1], kv[0])))
    args.out.write_text(json.dumps(ordered, indent=1) + "\n")
    total = sum(ordered.values())
    print(f"{len(ordered)} files, {total:.0f} s of test time in all; written to {args.out}")
    for name, seconds in list(ordered.items())[:args.show]:
        print(f"{seconds:8.1f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
